import Foundation
import Glibc
import LinkcondBase
import NetNamespace
import Sandboxing
import XCTest

/// The reliability suite, round two: the engine's control path cannot be held, the state never lies, a dead
/// or stopped engine is handled without touching what is healthy, and the engine refuses what it cannot do.
/// Each test runs the real `linkcond` executable (and the engine it starts) against a store of its own.
final class ControlPathReliabilityTests: SandboxTestCase {
    private func makeStore() throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lcctl-\(getpid())-\(UniqueName.next())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: directory) }
        return directory
    }

    private func makeName(store: String) -> String {
        let name = UniqueName.sandbox()
        addTeardownBlock { SandboxCleanup.remove(name: name, storeDirectory: store) }
        return name
    }

    private static var profilesDirectory: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("profiles").path
    }

    private func linkcond(_ arguments: [String], store: String) throws -> CommandResult {
        try Command.run(
            try linkcondExecutable(), arguments, environment: ["LINKCOND_STORE": store, "LINKCOND_PROFILES": Self.profilesDirectory])
    }

    private func upWithEdge(store: String, cellular: Bool = false) throws -> String {
        let name = makeName(store: store)
        let up = try linkcond(["up", "--name", name, "--backend", "userspace"] + (cellular ? ["--cellular"] : []), store: store)
        XCTAssertEqual(up.status, 0, up.errorOutput)
        let apply = try linkcond(["apply", "edge", "--name", name], store: store)
        XCTAssertEqual(apply.status, 0, apply.errorOutput)
        return name
    }

    private func engine(_ name: String, store: String) throws -> RecordedProcess {
        try XCTUnwrap(try SandboxStore(directory: store).load(name)?.engine, "no engine recorded")
    }

    /// Finding 1: a client that trickles its request a byte at a time does not hold up anyone else: an
    /// apply made meanwhile is answered while that client is still sending, and the trickling client is cut
    /// off without an answer once its time is up.
    func testASlowClientHoldsNobodyUp() throws {
        let store = try makeStore()
        let name = try upWithEdge(store: store)
        let socketPath = SandboxStore(directory: store).engineSocketPath(for: name)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(socketPath.utf8)) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        XCTAssertEqual(connected, 0)
        XCTAssertEqual(send(fd, "{", 1, Int32(MSG_NOSIGNAL)), 1)
        let apply = try linkcond(["apply", "3g", "--name", name], store: store)
        XCTAssertEqual(apply.status, 0, "an apply beside a slow client: \(apply.errorOutput)")
        // The slow client is still connected when the apply has been answered (it sends another byte fine)…
        XCTAssertEqual(send(fd, "\"", 1, Int32(MSG_NOSIGNAL)), 1, "the slow client was dropped before the apply was answered")
        // …and it never gets an answer: the engine closes on it once its deadline is past.
        var byte: UInt8 = 0
        XCTAssertEqual(recv(fd, &byte, 1, 0), 0, "a client that never sent a whole request got an answer")
        let show = try linkcond(["show", "--name", name], store: store)
        XCTAssertTrue(show.output.contains("profile '3g'"), show.output)
    }

    /// Findings 1 and 8: a stopped engine is named by `status` (which exits 1), `apply` refuses at once with
    /// what to do instead of waiting and failing late, and `down` still removes everything.
    func testAStoppedEngineIsNamedRefusedAndRemoved() throws {
        let store = try makeStore()
        let name = try upWithEdge(store: store)
        let process = try engine(name, store: store)
        XCTAssertEqual(kill(process.pid, SIGSTOP), 0)
        defer { kill(process.pid, SIGCONT) }
        while !process.isStopped { usleep(1_000) }
        let status = try linkcond(["status", "--name", name], store: store)
        XCTAssertEqual(status.status, 1, status.output)
        XCTAssertTrue(status.output.contains("is stopped"), status.output)
        let apply = try linkcond(["apply", "lte", "--name", name], store: store)
        XCTAssertEqual(apply.status, 1)
        XCTAssertTrue(apply.errorOutput.contains("pid \(process.pid) is stopped") && apply.errorOutput.contains("kill -CONT"), apply.errorOutput)
        let down = try linkcond(["down", "--name", name], store: store)
        XCTAssertEqual(down.status, 0, down.errorOutput)
        XCTAssertFalse(process.isRunning, "down left the stopped engine running")
        XCTAssertEqual(try linkcond(["status", "--name", name], store: store).status, 3, "status of a sandbox that is not up")
    }

    /// Finding 2: `apply` killed at any instant leaves a state that tells the truth: `show` names what the
    /// engine holds for the link, or says that a change did not finish and what the link holds; the next
    /// `apply` settles it and state and engine agree.
    func testApplyKilledAtAnyInstantLeavesAStateThatTellsTheTruth() throws {
        let store = try makeStore()
        let name = try upWithEdge(store: store)
        let executable = try linkcondExecutable()
        var environment = ProcessInfo.processInfo.environment
        environment["LINKCOND_STORE"] = store
        environment["LINKCOND_PROFILES"] = Self.profilesDirectory
        let socketPath = SandboxStore(directory: store).engineSocketPath(for: name)
        var profiles = ["lte", "3g"]
        for delay: UInt32 in [0, 1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 30] {
            let next = profiles[Int(delay) % 2]
            profiles.swapAt(0, 1)
            let apply = try NamedNamespaceHost.spawn(executable, ["apply", next, "--name", name], environment: environment)
            usleep(delay * 1000)
            kill(apply, SIGKILL)
            var status: Int32 = 0
            waitpid(apply, &status, 0)
            let held = try EngineWitness.show(socketPath).profile ?? "none"
            let show = try linkcond(["show", "--name", name], store: store)
            XCTAssertEqual(show.status, 0, show.errorOutput)
            let recorded = show.output.contains("wifi: profile '\(held)'")
            let explained = show.output.contains("note:") && (show.output.contains("wifi holds it") || show.output.contains("still holds '\(held)'"))
            XCTAssertTrue(recorded || explained, "killed at \(delay) ms: the engine holds '\(held)' and show says: \(show.output)")
            let settle = try linkcond(["apply", "edge", "--name", name], store: store)
            XCTAssertEqual(settle.status, 0, settle.errorOutput)
            XCTAssertEqual(try EngineWitness.show(socketPath).profile, "edge")
            XCTAssertNil(try SandboxStore(directory: store).load(name)?.pending, "an apply left its change pending")
            XCTAssertEqual(try SandboxStore(directory: store).load(name)?.conditions["wifi"]?.profile, "edge")
        }
    }

    /// Finding 3: each link keeps its own profile in the state, and a run on the sandbox puts each one back.
    func testEveryLinksProfileIsRecordedAndARunPutsEachBack() throws {
        let store = try makeStore()
        let name = makeName(store: store)
        XCTAssertEqual(try linkcond(["up", "--name", name, "--backend", "userspace", "--cellular"], store: store).status, 0)
        XCTAssertEqual(try linkcond(["apply", "edge", "--name", name, "--link", "ww0"], store: store).status, 0)
        XCTAssertEqual(try linkcond(["apply", "lte", "--name", name, "--link", "wl0"], store: store).status, 0)
        let state = try XCTUnwrap(try SandboxStore(directory: store).load(name))
        XCTAssertEqual(state.conditions["wifi"]?.profile, "lte")
        XCTAssertEqual(state.conditions["cellular"]?.profile, "edge")
        let reports = try makeStore()
        let scenario = URL(fileURLWithPath: Self.profilesDirectory).deletingLastPathComponent().appendingPathComponent("scenarios/handover.json").path
        let run = try linkcond(["run", scenario, "--name", name, "--report", reports], store: store)
        XCTAssertTrue(run.status == 0 || run.status == 1, "run: \(run.errorOutput)")
        let socketPath = SandboxStore(directory: store).engineSocketPath(for: name)
        XCTAssertEqual(try EngineWitness.show(socketPath, link: "wifi").profile, "lte", "the run did not put wifi's profile back")
        XCTAssertEqual(try EngineWitness.show(socketPath, link: "cellular").profile, "edge", "the run did not put cellular's profile back")
    }

    /// Finding 4: an apply on a sandbox whose engine died starts the engine alone again and puts the profile
    /// on it; the namespaces, and the user's processes in them, are left alone.
    func testADeadEngineIsRestartedAloneAndTheNamespacesAreLeftAlone() throws {
        let store = try makeStore()
        let name = try upWithEdge(store: store)
        let topology = try SandboxTopology(name: name)
        var before = stat()
        XCTAssertEqual(stat(NamedNamespace.runDirectory + "/" + topology.clientNamespace, &before), 0)
        let client = try NamedNamespace(existing: topology.clientNamespace)
        let sleeper = try client.spawn("/bin/sleep", arguments: ["60"])
        defer { sleeper.terminate(grace: 0) }
        let dead = try engine(name, store: store)
        XCTAssertEqual(kill(dead.pid, SIGKILL), 0)
        while dead.isRunning { usleep(1_000) }
        let apply = try linkcond(["apply", "lte", "--name", name], store: store)
        XCTAssertEqual(apply.status, 0, apply.errorOutput)
        XCTAssertTrue(apply.output.contains("started it again"), apply.output)
        var after = stat()
        XCTAssertEqual(stat(NamedNamespace.runDirectory + "/" + topology.clientNamespace, &after), 0)
        XCTAssertEqual(after.st_ino, before.st_ino, "the client namespace was made anew")
        XCTAssertEqual(kill(sleeper.pid, 0), 0, "the user's process in the client namespace is gone")
        let restarted = try engine(name, store: store)
        XCTAssertNotEqual(restarted.pid, dead.pid)
        XCTAssertEqual(try EngineWitness.show(SandboxStore(directory: store).engineSocketPath(for: name)).profile, "lte")
    }

    /// Finding 5: the engine reads what it is sent with the profile format's validator and refuses what no
    /// profile may hold, with a reason, changing nothing — and stays up.
    func testTheEngineRefusesWhatAProfileMayNotHold() throws {
        let store = try makeStore()
        let name = try upWithEdge(store: store)
        let socketPath = SandboxStore(directory: store).engineSocketPath(for: name)
        let cases = [
            (#"{"name":"x","downlink":{"delay":"18446744073709551615ns"}}"#, "$.profile.downlink.delay"),
            (#"{"name":"x","downlink":{"jitter":"18446744073709551615ns","delay":"1ms"}}"#, "$.profile.downlink.jitter"),
            (#"{"name":"x","uplink":{"rate":"0bit"}}"#, "$.profile.uplink.rate"),
            (#"{"name":"x","uplink":{"slot":{"min":"0ms"}}}"#, "$.profile.uplink.slot"),
            (#"{"name":"x","uplink":{"slot":{"min":"20ms","max":"10ms"}}}"#, "$.profile.uplink.slot.max"),
        ]
        for (profile, path) in cases {
            let answer = try EngineWitness.request(#"{"operation":"apply","profile":\#(profile)}"#, socketPath)
            let error = answer["error"] as? String ?? ""
            XCTAssertTrue(error.contains("refused") && error.contains(path), "\(profile): \(error)")
        }
        XCTAssertEqual(try EngineWitness.show(socketPath).profile, "edge", "a refused request changed the conditions")
        XCTAssertTrue(try engine(name, store: store).isRunning, "the engine died of a request")
    }

    /// Finding 8: `exec` exits as a shell does when the command cannot run (127 not found, 126 not
    /// executable), saying why.
    func testExecOfACommandThatCannotRunExitsAsAShellDoes() throws {
        let store = try makeStore()
        let name = makeName(store: store)
        XCTAssertEqual(try linkcond(["up", "--name", name, "--backend", "userspace"], store: store).status, 0)
        let missing = try linkcond(["exec", "--name", name, "--", "/nonexistent/command"], store: store)
        XCTAssertEqual(missing.status, 127, missing.errorOutput)
        XCTAssertTrue(missing.errorOutput.contains("/nonexistent/command"), missing.errorOutput)
        let notExecutable = try linkcond(["exec", "--name", name, "--", "/etc/hostname"], store: store)
        XCTAssertEqual(notExecutable.status, 126, notExecutable.errorOutput)
    }

    /// Finding 8, the small lies: a lock timeout that is not a number is refused rather than ignored; a lock
    /// a dead process left to its child names the child; `apply` says "no conditions" for a direction it
    /// leaves bare (it is not "unchanged"); `show` of a trace-driven direction says it is a trace, with its
    /// rate and length, not a delay "as if unlimited".
    func testTheSmallLiesAreTold() throws {
        let store = try makeStore()
        let name = makeName(store: store)
        XCTAssertEqual(try linkcond(["up", "--name", name, "--backend", "userspace"], store: store).status, 0)
        let environment = ["LINKCOND_STORE": store, "LINKCOND_PROFILES": Self.profilesDirectory, "LINKCOND_LOCK_TIMEOUT": "abc"]
        let badTimeout = try Command.run(try linkcondExecutable(), ["apply", "edge", "--name", name], environment: environment)
        XCTAssertEqual(badTimeout.status, 1)
        XCTAssertTrue(badTimeout.errorOutput.contains(#"LINKCOND_LOCK_TIMEOUT="abc" is not a number of seconds"#), badTimeout.errorOutput)

        // A process holds the lock, forks a child that keeps the locked descriptor, and exits.
        let lockPath = SandboxStore(directory: store).lockPath(for: name)
        let script = "exec 9>>\(lockPath); flock -n 9 || exit 3; echo \"$$ holder\" > \(lockPath); (sleep 30 <&- >&- 2>&- &) ; exit 0"
        let holder = try NamedNamespaceHost.spawn("/bin/sh", ["-c", script], environment: [:])
        var status: Int32 = 0
        XCTAssertEqual(waitpid(holder, &status, 0), holder)
        XCTAssertEqual(status, 0, "the lock holder's script failed")
        let heir = SandboxLock.processes(holding: lockPath)
        XCTAssertEqual(heir.count, 1, "the child does not hold the lock file")
        defer { heir.forEach { kill($0, SIGKILL) } }
        let waitEnvironment = ["LINKCOND_STORE": store, "LINKCOND_PROFILES": Self.profilesDirectory, "LINKCOND_LOCK_TIMEOUT": "0.2"]
        let busy = try Command.run(try linkcondExecutable(), ["apply", "edge", "--name", name], environment: waitEnvironment)
        XCTAssertEqual(busy.status, 1)
        XCTAssertTrue(busy.errorOutput.contains("pid \(heir[0]), which inherited it from pid"), busy.errorOutput)
        heir.forEach { kill($0, SIGKILL) }
        while !SandboxLock.processes(holding: lockPath).isEmpty { usleep(10_000) }

        let folder = try makeStore()
        try "0\n0\n1\n5\n9\n12\n".write(toFile: "\(folder)/drive.trace", atomically: false, encoding: .utf8)
        try #"{"name": "driven", "downlink": {"trace": "drive.trace", "delay": "10ms"}}"#.write(toFile: "\(folder)/driven.json", atomically: false, encoding: .utf8)
        let apply = try linkcond(["apply", "\(folder)/driven.json", "--name", name], store: store)
        XCTAssertEqual(apply.status, 0, apply.errorOutput)
        XCTAssertTrue(apply.output.contains("uplink:   no conditions"), apply.output)
        let show = try linkcond(["show", "--name", name], store: store)
        XCTAssertTrue(show.output.contains("drive.trace (6mbit mean over 12ms, 6 opportunities)"), show.output)
    }

    /// Output that cannot be written is a failure, not a crash nor a success: with stdout on `/dev/full`
    /// (every write fails with ENOSPC) `linkcond profiles` and `linkcond --help` exit 1 and say why on
    /// stderr (before, Foundation's FileHandle trapped: exit 132, a stack trace).
    func testOutputThatCannotBeWrittenIsAFailure() throws {
        let executable = try linkcondExecutable()
        for arguments in ["profiles", "--help"] {
            let result = try Command.run("/bin/sh", ["-c", "exec \"$0\" \(arguments) >/dev/full", executable], environment: [:])
            XCTAssertEqual(result.status, 1, "linkcond \(arguments) >/dev/full: \(result.errorOutput)")
            XCTAssertTrue(
                result.errorOutput.contains("linkcond: could not write the output to stdout: No space left on device"), result.errorOutput)
        }
    }
}

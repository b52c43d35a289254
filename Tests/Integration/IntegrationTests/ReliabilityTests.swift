import Foundation
import Glibc
import LinkcondBase
import NetNamespace
import Sandboxing
import XCTest

/// The reliability suite: linkcond driven as a hostile user would — killed at any instant, raced, fed a
/// corrupted or forged state file, interfered with from outside — must leave nothing behind, touch nothing
/// foreign, and always have a way out. Each test runs the real `linkcond` executable against a store of its
/// own (`LINKCOND_STORE`) and uniquely named sandboxes.
final class ReliabilityTests: SandboxTestCase {
    private func linkcond(_ arguments: [String], store: String, environment: [String: String] = [:]) throws -> CommandResult {
        try Command.run(
            try linkcondExecutable(), arguments,
            environment: ["LINKCOND_STORE": store, "LINKCOND_PROFILES": Self.profilesDirectory].merging(environment) { _, new in new })
    }

    private static var profilesDirectory: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("profiles").path
    }

    /// Everything of sandbox `name` that exists: namespaces, /etc/netns directories, marked processes, files
    /// in the store. Empty when nothing is left.
    private func remains(_ name: String, store: String) throws -> [String] {
        let topology = try SandboxTopology(name: name)
        var found = topology.allNamespaces.filter { NamedNamespace.exists($0) }
        found += topology.allNamespaces.filter { access("\(NamedNamespace.etcDirectory)/\($0)", F_OK) == 0 }.map { "/etc/netns/\($0)" }
        let marker = RecordedProcess.marker(store: SandboxStore(directory: store), sandbox: name)
        found += RecordedProcess.discover(marker: marker).map { "process \($0.pid)" }
        let files = (try? FileManager.default.contentsOfDirectory(atPath: store)) ?? []
        found += files.filter { $0.contains(name) }.map { "\(store)/\($0)" }
        return found
    }

    // MARK: Crashes

    /// `kill -9` of `up` at many instants, from before the first namespace to after the server started:
    /// `down --name` then removes everything (namespaces, /etc/netns, the server, half-written files), and
    /// the next `up` succeeds.
    func testUpKilledAtAnyInstantLeavesNothingDownCannotRemove() throws {
        let store = try makeStore(prefix: "lcrel")
        let executable = try linkcondExecutable()
        let delays: [UInt32] = [0, 2, 5, 10, 15, 20, 25, 35, 50, 80, 120, 200, 300, 450]
        for delay in delays {
            let name = makeName(store: store)
            var environment = ProcessInfo.processInfo.environment
            environment["LINKCOND_STORE"] = store
            let up = try NamedNamespaceHost.spawn(executable, ["up", "--name", name], environment: environment)
            usleep(delay * 1000)
            kill(up, SIGKILL)
            var status: Int32 = 0
            waitpid(up, &status, 0)
            let down = try linkcond(["down", "--name", name], store: store)
            XCTAssertEqual(down.status, 0, "down after a kill at \(delay) ms: \(down.errorOutput)")
            XCTAssertEqual(try remains(name, store: store), [], "left after a kill at \(delay) ms and a down")
            let again = try linkcond(["up", "--name", name, "--backend", "userspace"], store: store)
            XCTAssertEqual(again.status, 0, "up after a kill at \(delay) ms: \(again.errorOutput)")
            XCTAssertEqual(try linkcond(["down", "--name", name], store: store).status, 0)
            XCTAssertEqual(try remains(name, store: store), [], "left after up and down (kill at \(delay) ms)")
        }
    }

    /// The sandbox's server gets standard input, output and error only: a descriptor the caller left open
    /// without close-on-exec (a netlink socket, a pipe) does not reach it, so a leaked server cannot keep
    /// anything of the caller alive.
    func testSpawnedProcessesKeepOnlyStandardDescriptors() throws {
        let sandbox = try makeSandbox()
        var fds: [Int32] = [-1, -1]
        XCTAssertEqual(pipe(&fds), 0)
        defer { fds.forEach { close($0) } }
        let inheritable = socket(AF_NETLINK, Int32(SOCK_RAW.rawValue), 0)  // deliberately not close-on-exec
        XCTAssertGreaterThanOrEqual(inheritable, 0)
        defer { close(inheritable) }
        XCTAssertEqual(try sandbox.up(server: try serverLaunch(sandbox)), .created)
        let server = try XCTUnwrap(try sandbox.store.load(sandbox.topology.name)?.server)
        let theirs = Set(try FileManager.default.contentsOfDirectory(atPath: "/proc/\(server.pid)/fd").compactMap {
            try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(server.pid)/fd/\($0)")
        })
        for fd in [fds[0], fds[1], inheritable] {
            let mine = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")
            XCTAssertFalse(theirs.contains(mine), "the server holds this process's \(mine)")
        }
        XCTAssertTrue(try sandbox.down())
    }

    // MARK: One writer at a time

    /// Two `up` of one sandbox at once: both succeed, one builds it and the other finds it up.
    func testConcurrentUpsBothSucceed() throws {
        let store = try makeStore(prefix: "lcrel")
        let name = makeName(store: store)
        let results = try runConcurrently([["up", "--name", name, "--backend", "userspace"], ["up", "--name", name, "--backend", "userspace"]], store: store)
        for result in results { XCTAssertEqual(result.status, 0, result.errorOutput) }
        let outputs = results.map(\.output).joined()
        XCTAssertTrue(outputs.contains("is up ("), outputs)
        XCTAssertTrue(outputs.contains("is up already"), outputs)
        let status = try linkcond(["status", "--name", name, "--json"], store: store)
        XCTAssertTrue(status.output.contains("\"healthy\" : true"), status.output)
        XCTAssertEqual(try linkcond(["down", "--name", name], store: store).status, 0)
    }

    /// `up` and `down` at once, and `up` right after `down`: whatever order they run in, `status` agrees with
    /// what exists, and nothing fails for want of a cause.
    func testUpAndDownTogetherLeaveAConsistentSandbox() throws {
        let store = try makeStore(prefix: "lcrel")
        let name = makeName(store: store)
        XCTAssertEqual(try linkcond(["up", "--name", name, "--backend", "userspace"], store: store).status, 0)
        for _ in 0..<3 {
            let results = try runConcurrently([["down", "--name", name], ["up", "--name", name, "--backend", "userspace"]], store: store)
            for result in results { XCTAssertEqual(result.status, 0, result.errorOutput) }
            let topology = try SandboxTopology(name: name)
            let exists = NamedNamespace.exists(topology.clientNamespace)
            let status = try linkcond(["status", "--name", name, "--json"], store: store)
            if exists {
                XCTAssertTrue(status.output.contains("\"healthy\" : true"), "namespaces exist but status says: \(status.output)")
            } else {
                XCTAssertEqual(try remains(name, store: store), [], "down won, but something is left")
            }
        }
        // up a few milliseconds after down.
        XCTAssertEqual(try linkcond(["down", "--name", name], store: store).status, 0)
        let up = try linkcond(["up", "--name", name, "--backend", "userspace"], store: store)
        XCTAssertEqual(up.status, 0, up.errorOutput)
        XCTAssertEqual(try linkcond(["down", "--name", name], store: store).status, 0)
        XCTAssertEqual(try remains(name, store: store), [])
    }

    /// A command waits for the lock another holds, says so when the bound passes, and names the holder.
    func testASecondCommandWaitsForTheLockWithABound() throws {
        let store = try makeStore(prefix: "lcrel")
        let name = makeName(store: store)
        let lock = try SandboxLock.acquire(name, store: SandboxStore(directory: store), command: "test holds it")
        let busy = try linkcond(["down", "--name", name], store: store, environment: ["LINKCOND_LOCK_TIMEOUT": "0.3"])
        XCTAssertEqual(busy.status, 1)
        XCTAssertTrue(busy.errorOutput.contains("is busy: pid \(getpid()) (test holds it)"), busy.errorOutput)
        // Released while the second command waits: it proceeds.
        let executable = try linkcondExecutable()
        var environment = ProcessInfo.processInfo.environment
        environment["LINKCOND_STORE"] = store
        let waiter = try NamedNamespaceHost.spawn(executable, ["down", "--name", name], environment: environment)
        usleep(200_000)
        XCTAssertNotNil(ProcessInspector.startTime(waiter), "down did not wait for the lock")
        lock.release()
        var status: Int32 = 0
        waitpid(waiter, &status, 0)
        XCTAssertEqual((status >> 8) & 0xff, 0)
        XCTAssertFalse(FileManager.default.fileExists(atPath: SandboxStore(directory: store).lockPath(for: name)), "down leaves its lock file")
    }

    // MARK: Distrust of the state file

    /// A forged state file naming a foreign namespace, another sandbox's name and an unrelated process: `down`
    /// touches none of them.
    func testDownTouchesNothingAForgedStateNames() throws {
        let store = try makeStore(prefix: "lcrel")
        let name = makeName(store: store)
        let other = makeName(store: store)
        let foreign = try makeNamespace("foreign")
        XCTAssertEqual(try linkcond(["up", "--name", other, "--backend", "userspace"], store: store).status, 0)
        let sleeper = try NamedNamespaceHost.spawn("/bin/sleep", ["30"], environment: ProcessInfo.processInfo.environment)
        defer {
            kill(sleeper, SIGKILL)
            var status: Int32 = 0
            waitpid(sleeper, &status, 0)
        }
        let otherTopology = try SandboxTopology(name: other)
        var forged = SandboxState(name: name, cellular: false)
        forged.namespaces = [foreign.name, otherTopology.clientNamespace]
        forged.processes = [RecordedProcess(
            role: .server, pid: sleeper, startTime: ProcessInspector.startTime(sleeper) ?? 0,
            executable: ProcessInspector.executable(sleeper) ?? "/bin/sleep", marker: "forged")]
        forged.complete = true
        try SandboxStore(directory: store).save(forged)

        let down = try linkcond(["down", "--name", name], store: store)
        XCTAssertEqual(down.status, 0, down.errorOutput)
        XCTAssertTrue(NamedNamespace.exists(foreign.name), "down deleted a foreign namespace")
        XCTAssertTrue(NamedNamespace.exists(otherTopology.clientNamespace), "down deleted another sandbox's namespace")
        XCTAssertNotNil(ProcessInspector.startTime(sleeper), "down killed an unrelated process")
        XCTAssertTrue(FileManager.default.fileExists(atPath: SandboxStore(directory: store).path(for: other)), "down removed another sandbox's state")
        XCTAssertTrue(down.output.contains("left pid \(sleeper) alone"), down.output)
        XCTAssertEqual(try linkcond(["down", "--name", other], store: store).status, 0)
    }

    /// A truncated, garbage or `{}` state file: `status` still lists every sandbox and says what is wrong,
    /// `down` cleans up from the names alone and says so, and `up` works afterwards.
    func testCorruptStateHasAWayOut() throws {
        let store = try makeStore(prefix: "lcrel")
        let healthy = makeName(store: store)
        XCTAssertEqual(try linkcond(["up", "--name", healthy, "--backend", "userspace"], store: store).status, 0)
        for garbage in ["{\"version\": 2, \"na", "\u{1}\u{2}garbage", "{}", "   \n"] {
            let name = makeName(store: store)
            XCTAssertEqual(try linkcond(["up", "--name", name, "--backend", "userspace"], store: store).status, 0)
            try garbage.write(toFile: SandboxStore(directory: store).path(for: name), atomically: false, encoding: .utf8)

            let status = try linkcond(["status"], store: store)
            XCTAssertEqual(status.status, 1, "status exits 1 while a sandbox is damaged (LSB): \(status.errorOutput)")
            XCTAssertTrue(status.output.contains("sandbox \(name): the state file"), status.output)
            XCTAssertTrue(status.output.contains("sandbox \(healthy): healthy"), "one broken sandbox hid another: \(status.output)")

            let down = try linkcond(["down", "--name", name], store: store)
            XCTAssertEqual(down.status, 0, down.errorOutput)
            XCTAssertTrue(down.output.contains("cleaned up by the sandbox's names"), down.output)
            XCTAssertEqual(try remains(name, store: store), [], "garbage \(garbage.debugDescription)")
            XCTAssertEqual(try linkcond(["up", "--name", name, "--backend", "userspace"], store: store).status, 0)
            XCTAssertEqual(try linkcond(["down", "--name", name], store: store).status, 0)
        }
        XCTAssertEqual(try linkcond(["down", "--name", healthy], store: store).status, 0)
    }

    // MARK: Outside interference

    /// A link deleted behind linkcond's back: `status` names it, and `up` rebuilds the sandbox.
    func testHealthCheckSeesALinkDeletedFromOutside() throws {
        let store = try makeStore(prefix: "lcrel")
        let name = makeName(store: store)
        XCTAssertEqual(try linkcond(["up", "--name", name, "--backend", "userspace"], store: store).status, 0)
        let topology = try SandboxTopology(name: name)
        XCTAssertEqual(try Command.ip(["-n", topology.routerNamespace, "link", "del", "c-wl0"]).status, 0)
        let status = try linkcond(["status", "--name", name], store: store)
        XCTAssertTrue(status.output.contains("c-wl0 is missing in \(topology.routerNamespace)"), status.output)
        XCTAssertFalse(status.output.contains(": healthy"), status.output)
        XCTAssertEqual(status.status, 1, "a broken sandbox's status exits 1, as LSB's does")
        XCTAssertEqual(try linkcond(["status", "--name", name, "--json"], store: store).status, 1)
        let up = try linkcond(["up", "--name", name], store: store)
        XCTAssertEqual(up.status, 0, up.errorOutput)
        XCTAssertTrue(up.output.contains("rebuilt"), up.output)
        let healthy = try linkcond(["status", "--name", name], store: store)
        XCTAssertTrue(healthy.output.contains(": healthy"), healthy.output)
        XCTAssertEqual(healthy.status, 0)
        XCTAssertEqual(try linkcond(["down", "--name", name], store: store).status, 0)
    }

    /// After the router's end of the wifi link goes down and up (as `flaky-wifi` does), IPv6 works again.
    func testRouterSideFlapKeepsIPv6() throws {
        let sandbox = try makeSandbox()
        XCTAssertEqual(try sandbox.up(server: try serverLaunch(sandbox)), .created)
        try sandbox.setLink(.wifi, side: .router, up: false)
        try sandbox.setLink(.wifi, side: .router, up: true)
        XCTAssertNotNil(try waitUntilReachable(try sandbox.clientNamespace(), SandboxPlan.serverIPv6, port: SandboxPlan.httpPort),
                        "IPv6 is dead after a router-side flap")
        let state = try XCTUnwrap(try sandbox.store.load(sandbox.topology.name))
        XCTAssertEqual(sandbox.problems(state), [])
        XCTAssertTrue(try sandbox.down())
    }

    // MARK: Smaller defects

    /// `--name -x` is a bad name, not a missing value; a run that cannot start (a sandbox of another shape than
    /// the scenario's) leaves no report folder; hints name the sandbox; doctor fails when the backend asked for
    /// cannot work. (A run on a missing sandbox brings it up: CommandLineAdditionsTests.)
    func testCommandLineEdges() throws {
        let store = try makeStore(prefix: "lcrel")
        let bad = try linkcond(["up", "--name", "-x"], store: store)
        XCTAssertEqual(bad.status, 2)
        XCTAssertTrue(bad.errorOutput.contains("'-x' is not a usable sandbox name"), bad.errorOutput)

        let name = makeName(store: store)
        let show = try linkcond(["show", "--name", name], store: store)
        XCTAssertEqual(show.status, 1)
        XCTAssertTrue(show.errorOutput.contains("linkcond up --name \(name)"), "the hint omits --name: \(show.errorOutput)")
        XCTAssertEqual(try linkcond(["up", "--name", name], store: store).status, 0)
        let reports = "\(store)/reports"
        let run = try linkcond(["run", "handover", "--name", name, "--report", reports], store: store)
        XCTAssertEqual(run.status, 1)
        XCTAssertTrue(run.errorOutput.contains("sandbox '\(name)' has wifi alone"), run.errorOutput)
        XCTAssertFalse(FileManager.default.fileExists(atPath: reports), "a run that could not start made its report folder")

        let netem = try linkcond(["doctor", "--backend", "netem"], store: store)
        let userspace = try linkcond(["doctor", "--backend", "userspace"], store: store)
        XCTAssertEqual(userspace.status, 0, userspace.output)
        XCTAssertEqual(netem.status, KernelDoctorWitness.hasNetem ? 0 : 1, netem.output)
    }

    /// An observed app started through `sh -c` that starts children of its own: ending it ends them all.
    func testEndingAProcessGroupEndsItsChildren() throws {
        let namespace = try makeNamespace("group")
        let tag = "lcrel-\(getpid())-\(UniqueName.next())"
        let process = try namespace.spawn("/bin/sh", arguments: ["-c", "sleep 300 & sleep 301 & echo \(tag) >/dev/null; wait"], grouping: .newGroup)
        XCTAssertTrue(eventually(timeout: 3) { processesInGroup(process.pid).count >= 3 }, "the children did not start")
        process.terminate(grace: 1)
        XCTAssertTrue(eventually(timeout: 3) { processesInGroup(process.pid).isEmpty }, "left: \(processesInGroup(process.pid))")
    }

    /// `monitor` on a sandbox that is then removed: it says so and exits 1 instead of watching a dead
    /// namespace forever.
    func testMonitorExitsWhenItsSandboxGoesAway() throws {
        let store = try makeStore(prefix: "lcrel")
        let name = makeName(store: store)
        XCTAssertEqual(try linkcond(["up", "--name", name, "--backend", "userspace"], store: store).status, 0)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try linkcondExecutable())
        process.arguments = ["monitor", "--name", name]
        process.environment = ProcessInfo.processInfo.environment.merging(["LINKCOND_STORE": store]) { _, new in new }
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        usleep(500_000)
        XCTAssertTrue(process.isRunning, "monitor ended before the sandbox went away")
        XCTAssertEqual(try linkcond(["down", "--name", name], store: store).status, 0)
        XCTAssertTrue(eventually(timeout: 5) { !process.isRunning }, "monitor still watches a removed sandbox")
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 1)
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertTrue(message.contains("went away"), message)
    }

    // MARK: Helpers

    private func runConcurrently(_ commands: [[String]], store: String) throws -> [CommandResult] {
        let executable = try linkcondExecutable()
        let results = ResultsBox(count: commands.count)
        let group = DispatchGroup()
        for (index, arguments) in commands.enumerated() {
            group.enter()
            Thread {
                let result = try? Command.run(executable, arguments, environment: ["LINKCOND_STORE": store])
                results.set(index, result ?? CommandResult(status: -1, output: "", errorOutput: "could not run"))
                group.leave()
            }.start()
        }
        group.wait()
        return results.all
    }
}

/// Results of concurrent commands, in order.
private final class ResultsBox: @unchecked Sendable {
    private var values: [CommandResult?]
    private let lock = NSLock()
    init(count: Int) { values = Array(repeating: nil, count: count) }
    func set(_ index: Int, _ value: CommandResult) { lock.withLock { values[index] = value } }
    var all: [CommandResult] { lock.withLock { values.compactMap { $0 } } }
}

/// Starting a program in the host's namespace (posix_spawn), for processes a test kills at will.
enum NamedNamespaceHost {
    static func spawn(_ executable: String, _ arguments: [String], environment: [String: String]) throws -> pid_t {
        var pid: pid_t = 0
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let code = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard code == 0 else { throw NamespaceError.system(operation: "posix_spawn \(executable)", errno: code) }
        return pid
    }
}

/// The kernel's answer to "has netem?", asked the way a test can trust: `tc` in a throwaway namespace.
enum KernelDoctorWitness {
    static var hasNetem: Bool {
        let name = "lcrel-netem-\(getpid())"
        guard (try? Command.ip(["netns", "add", name]))?.status == 0 else { return false }
        defer { _ = try? Command.ip(["netns", "del", name]) }
        let result = try? Command.tc(["-n", name, "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"])
        return result?.status == 0
    }
}

/// Every process whose process group is `group`.
func processesInGroup(_ group: pid_t) -> [pid_t] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return entries.compactMap(Int32.init).filter { pid in
        guard let stat = ProcessInspector.stat(pid), stat.state != "Z" else { return false }
        return stat.group == group
    }
}

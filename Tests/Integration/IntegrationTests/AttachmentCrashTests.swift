import Foundation
import Glibc
import LinkcondBase
import NetNamespace
import Sandboxing
import Synchronization
import XCTest

/// `kill -9` of `linkcond attach`, `apply` and `detach` at every step of their journal, then
/// `linkcond detach`: the target is exactly as it was before the attach (`ip -j link/addr/route/-6 route`,
/// every table, its interface's sysctls), its peer's namespace too, nothing of linkcond's is left, and a TCP
/// connection opened before the attach talks again.
///
/// The commands run as processes with a store of their own. Each write of the attachment's state (a rename
/// into the store, seen through inotify) stops the process at once (`SIGSTOP`); when the state names the
/// step sought, it is killed there (`SIGKILL`), otherwise continued — so every step is hit, whatever the
/// machine's speed.
final class AttachmentCrashTests: SandboxTestCase {
    static let attachSteps = ["naming the target", "making the wire", "moving eth0 out", "making the stand-in", "configuring the stand-in", "joining the wire", "attached"]
    static let detachSteps = ["detach: stopping the wire", "detach: removing the stand-in", "detach: moving eth0 home", "detach: configuring eth0", "detach: removing the wire"]

    /// Runs `linkcond ARGUMENTS` with `LINKCOND_STORE=store` and kills it with SIGKILL as soon as the state of
    /// attachment `name` satisfies `killWhen`; returns whether it was killed (false: it ended first) and its
    /// exit status.
    private func run(
        _ arguments: [String], store: String, name: String, killWhen: @escaping ([String: Any]) -> Bool
    ) throws -> (killed: Bool, status: Int32, output: String) {
        let attached = "\(store)/attached"
        try FileManager.default.createDirectory(atPath: attached, withIntermediateDirectories: true)
        let watch = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard watch >= 0 else { throw NamespaceError.system(operation: "inotify_init1", errno: errno) }
        defer { close(watch) }
        guard inotify_add_watch(watch, attached, UInt32(IN_MOVED_TO | IN_CLOSE_WRITE)) >= 0 else {
            throw NamespaceError.system(operation: "inotify_add_watch \(attached)", errno: errno)
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try linkcondExecutable())
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(["LINKCOND_STORE": store]) { _, new in new }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let pid = process.processIdentifier
        var killed = false
        var buffer = [UInt8](repeating: 0, count: 4096)
        while process.isRunning && !killed {
            var descriptor = pollfd(fd: watch, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 5) > 0 else { continue }
            kill(pid, SIGSTOP)
            while read(watch, &buffer, buffer.count) > 0 {}
            if let data = FileManager.default.contents(atPath: "\(attached)/\(name).json"),
                let state = try? JSONSerialization.jsonObject(with: data) as? [String: Any], killWhen(state)
            {
                kill(pid, SIGKILL)
                killed = true
            }
            kill(pid, SIGCONT)
        }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (killed, process.terminationStatus, text)
    }

    private static func step(_ state: [String: Any]) -> String? { (state["attachment"] as? [String: Any])?["step"] as? String }

    /// One case: a fresh topology, a connection, the command killed when `killWhen` holds, `linkcond detach`,
    /// the checks. `prepare` runs commands before the one killed (an attach before a killed detach).
    private func crash(
        _ label: String, prepare: [[String]] = [], kill arguments: [String], when killWhen: @escaping ([String: Any]) -> Bool,
        file: StaticString = #filePath, line: UInt = #line
    ) throws -> String {
        let topology = try ContainerLikeTopology.make(in: self, tag: "c", extras: true)
        for namespace in [topology.app, topology.gateway] { try NamespaceSnapshot.settle(namespace) }
        let before = try NamespaceSnapshot.take(topology.app)
        let gatewayBefore = try NamespaceSnapshot.take(topology.gateway, interfaces: ["app0"])
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("lcit-store-\(getpid())-\(UniqueName.next())").path
        let name = UniqueName.sandbox()
        addTeardownBlock {
            if let attachment = try? Attachment(name: name, store: SandboxStore(directory: store)), attachment.exists { _ = try? attachment.detach() }
            try? FileManager.default.removeItem(atPath: store)
        }
        let connection = try TalkingConnection(from: topology.app, to: topology.server, address: ContainerLikeTopology.serverIPv4.address)
        defer { connection.stop() }
        XCTAssertTrue(connection.flows(), "\(label): no traffic before", file: file, line: line)
        let substitute = { (words: [String]) in words.map { $0 == "TARGET" ? topology.app.name : ($0 == "NAME" ? name : $0) } }
        for command in prepare {
            let result = try run(substitute(command), store: store, name: name) { _ in false }
            XCTAssertEqual(result.status, 0, "\(label): \(command.joined(separator: " ")): \(result.output)", file: file, line: line)
        }
        let result = try run(substitute(arguments), store: store, name: name, killWhen: killWhen)
        // The watcher stops the command when the journal changes and reads it then: a command quicker than
        // that read (the last steps of detach) has written its next step or finished by then. That is a kill
        // that did not happen, not a failure of linkcond: the case is made again (the teardown detaches).
        guard result.killed else { throw MissedStep(output: result.output) }
        let state = FileManager.default.contents(atPath: "\(store)/attached/\(name).json")
            .flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] }.flatMap(Self.step) ?? "no state"

        let detach = try run(["detach", "--name", name], store: store, name: name) { _ in false }
        XCTAssertEqual(detach.status, 0, "\(label): linkcond detach: \(detach.output)", file: file, line: line)
        var after = try NamespaceSnapshot.take(topology.app)
        _ = try eventually(timeout: 5) {
            after = try NamespaceSnapshot.take(topology.app)
            return after == before
        }
        XCTAssertTrue(before == after, "\(label): the target differs after detach:\n\(before.differences(after))", file: file, line: line)
        var gatewayAfter = try NamespaceSnapshot.take(topology.gateway, interfaces: ["app0"])
        _ = try eventually(timeout: 5) {
            gatewayAfter = try NamespaceSnapshot.take(topology.gateway, interfaces: ["app0"])
            return gatewayAfter == gatewayBefore
        }
        XCTAssertTrue(gatewayBefore == gatewayAfter, "\(label): the peer's namespace differs:\n\(gatewayBefore.differences(gatewayAfter))", file: file, line: line)
        let attachment = try Attachment(name: name, store: SandboxStore(directory: store))
        XCTAssertFalse(attachment.exists, "\(label): left \(attachment.leftovers())", file: file, line: line)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: "\(store)/attached"), [], "\(label): files left", file: file, line: line)
        XCTAssertTrue(connection.flows(timeout: 30), "\(label): the connection does not talk again: \(connection.failure ?? "stalled")", file: file, line: line)
        return "\(label): killed at '\(state)', detach: \(detach.output.split(separator: "\n").last ?? "")"
    }

    /// The command finished (or passed the step) before the watcher could kill it there.
    private struct MissedStep: Error {
        var output: String
    }

    /// ``crash(_:prepare:kill:when:file:line:)``, made again (up to five times) when the kill missed its step.
    private func crashAtStep(
        _ label: String, prepare: [[String]] = [], kill arguments: [String], when killWhen: @escaping ([String: Any]) -> Bool,
        file: StaticString = #filePath, line: UInt = #line
    ) throws -> String {
        var missed: [String] = []
        for _ in 0..<5 {
            do {
                return try crash(label, prepare: prepare, kill: arguments, when: killWhen, file: file, line: line)
            } catch let error as MissedStep {
                missed.append(error.output)
            }
        }
        XCTFail("\(label): the command ended before the step 5 times (\(missed.last ?? ""))", file: file, line: line)
        return "\(label): never killed there"
    }

    func testKillingAttachAtEveryStepThenDetachPutsTheTargetBack() throws {
        var lines: [String] = []
        for step in Self.attachSteps {
            lines.append(try crashAtStep("attach at '\(step)'", kill: ["attach", "--netns", "TARGET", "--name", "NAME", "--backend", "userspace"]) {
                Self.step($0) == step
            })
        }
        print(lines.map { "linkcond-attach: kill -9 \($0)" }.joined(separator: "\n"))
    }

    func testKillingDetachAtEveryStepThenDetachPutsTheTargetBack() throws {
        var lines: [String] = []
        let attach = ["attach", "--netns", "TARGET", "--name", "NAME", "--backend", "userspace"]
        for step in Self.detachSteps {
            lines.append(try crashAtStep("detach at '\(step)'", prepare: [attach], kill: ["detach", "--name", "NAME"]) { Self.step($0) == step })
        }
        print(lines.map { "linkcond-attach: kill -9 \($0)" }.joined(separator: "\n"))
    }

    /// `apply` killed once its change is journalled (sent or not); the next command finds out what the engine
    /// holds, and detach puts the target back whatever it holds.
    func testKillingApplyThenDetachPutsTheTargetBack() throws {
        let attach = ["attach", "--netns", "TARGET", "--name", "NAME", "--backend", "userspace"]
        let line = try crashAtStep("apply once its change is journalled", prepare: [attach, ["apply", "lte", "--name", "NAME"]], kill: ["apply", "edge", "--name", "NAME"]) {
            $0["pending"] != nil
        }
        print("linkcond-attach: kill -9 \(line)")
    }

    /// `run` killed while its scenario has the target's cable pulled (its next step, an apply, journalled):
    /// detach plugs it back and puts the target back.
    func testKillingARunWithTheCableOutThenDetachPutsTheTargetBack() throws {
        let attach = ["attach", "--netns", "TARGET", "--name", "NAME", "--backend", "userspace"]
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lcit-cable-run-\(getpid())-\(UniqueName.next())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: directory) }
        let scenario = "\(directory)/cable-out.json"
        try #"""
            {"name": "cable-out", "description": "the cable pulled, then edge applied while it is out",
             "steps": [{"name": "pulled", "link": "down", "side": "router", "interface": "wifi", "hold": "2s"},
                       {"name": "edge", "apply": "edge", "hold": "5s"},
                       {"name": "plugged", "link": "up", "side": "router", "interface": "wifi", "hold": "1s"}],
             "expectations": []}
            """#.write(toFile: scenario, atomically: true, encoding: .utf8)
        // What `ip -j link show` said of the wire's end when the run was killed.
        let seen = Mutex<String?>(nil)
        let line = try crashAtStep(
            "run with the cable out", prepare: [attach], kill: ["run", scenario, "--name", "NAME", "--report", "\(directory)/reports"]
        ) { state in
            guard state["pending"] != nil, let record = state["attachment"] as? [String: Any], record["linkDown"] as? Bool == true,
                let wire = record["wireNamespace"] as? String, let end = record["wireEnd"] as? String
            else { return false }
            let shown = try? Command.ip(["-j", "-n", wire, "link", "show", "dev", end])
            seen.withLock { $0 = shown?.output }
            return true
        }
        let shown = try XCTUnwrap(seen.withLock { $0 }, "the run was not killed with the cable out")
        XCTAssertTrue(shown.contains("\"operstate\":\"DOWN\"") && !shown.contains("\"UP\""), "the wire's end was not down when the run was killed: \(shown)")
        print("linkcond-attach: kill -9 \(line)")
    }
}

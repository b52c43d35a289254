import Conditioning
import Foundation
import Glibc
import LinkcondBase
import NetNamespace
import Sandboxing
import XCTest

/// The userspace engine dying (`kill -9`): frames stop crossing the wire, as on a cut cable; `linkcond
/// status` and `Sandbox.problems` name the engine as not running; `show` says the engine is not running;
/// and `down` still removes everything — namespaces (the wire's included), `/etc/netns` files, processes,
/// the store's files (the engine's socket and log included).
final class EngineFailureTests: ConditioningTestCase {
    override class var backendKind: BackendKind { .userspace }

    /// A store directory of this test's own, removed at the end.
    private func makeStore() throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lceng-\(getpid())-\(UniqueName.next())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: directory) }
        return directory
    }

    private func linkcond(_ arguments: [String], store: String) throws -> CommandResult {
        try Command.run(try linkcondExecutable(), arguments, environment: ["LINKCOND_STORE": store])
    }

    /// UDP round trips between the client and server namespaces answered out of `count`.
    private func answered(_ topology: SandboxTopology, count: Int = 3) throws -> Int {
        try LinkMeasurement(sandbox: topology).roundTrips(count: count, timeout: 0.5).samples.count
    }

    /// Kills the engine of sandbox `name` recorded in `store` with SIGKILL and waits until it has ended;
    /// returns its pid.
    private func killEngine(_ name: String, store: SandboxStore) throws -> Int32 {
        let state = try XCTUnwrap(try store.load(name), "no state file for \(name)")
        let engine = try XCTUnwrap(state.engine, "the state records no engine")
        XCTAssertTrue(engine.isRunning, "the recorded engine does not run before the kill")
        XCTAssertEqual(enginePIDs(name), [engine.pid], "the recorded engine is not the one running for \(name)")
        XCTAssertEqual(kill(engine.pid, SIGKILL), 0, "kill -9 \(engine.pid): \(String(cString: strerror(errno)))")
        XCTAssertTrue(eventually(timeout: 3) { !engine.isRunning }, "the engine survived SIGKILL")
        return engine.pid
    }

    /// Through the command line, as a user meets it: `up --backend userspace`, `kill -9` of the engine,
    /// then `status`, `show` and `down`.
    func testKilledEngineStopsTrafficStatusNamesItAndDownRemovesEverything() throws {
        let store = try makeStore()
        let name = UniqueName.sandbox()
        addTeardownBlock { SandboxCleanup.remove(name: name, storeDirectory: store) }
        let topology = try SandboxTopology(name: name)
        let up = try linkcond(["up", "--name", name, "--backend", "userspace"], store: store)
        XCTAssertEqual(up.status, 0, up.errorOutput)
        let apply = try linkcond(["apply", "lte", "--name", name], store: store)
        XCTAssertEqual(apply.status, 0, apply.errorOutput)
        XCTAssertEqual(try answered(topology), 3, "the sandbox carries nothing before the kill")
        let healthy = try linkcond(["status", "--name", name, "--json"], store: store)
        XCTAssertTrue(healthy.output.contains("\"healthy\" : true"), healthy.output)

        let pid = try killEngine(name, store: SandboxStore(directory: store))

        // Nothing crosses the wire any more: the probes go out of wl0 and nobody forwards them.
        XCTAssertEqual(try answered(topology), 0, "UDP probes were answered after the engine died")
        // status, as text and as JSON, names the engine.
        let status = try linkcond(["status", "--name", name], store: store)
        XCTAssertEqual(status.status, 1, "status exits 1 for a broken sandbox (LSB): \(status.errorOutput)")
        XCTAssertTrue(status.output.contains("broken"), status.output)
        XCTAssertTrue(status.output.contains("the engine (pid \(pid)) is not running"), status.output)
        let json = try linkcond(["status", "--name", name, "--json"], store: store)
        let entry = try XCTUnwrap((try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [[String: Any]])?.first, json.output)
        XCTAssertEqual(entry["healthy"] as? Bool, false)
        let processes = entry["processes"] as? [[String: Any]] ?? []
        let engine = processes.first { $0["role"] as? String == "engine" }
        XCTAssertEqual(engine?["running"] as? Bool, false, "status --json: \(processes)")
        XCTAssertEqual((engine?["pid"] as? NSNumber)?.int32Value, pid)
        XCTAssertTrue((entry["problems"] as? [String] ?? []).contains { $0.contains("engine (pid \(pid)) is not running") }, "\(entry)")
        // The library says the same.
        let sandbox = Sandbox(topology: topology, store: SandboxStore(directory: store))
        let state = try XCTUnwrap(try sandbox.store.load(name))
        XCTAssertTrue(sandbox.problems(state).contains { $0.contains("engine (pid \(pid)) is not running") }, "\(sandbox.problems(state))")
        // show cannot read the conditions back, and says why.
        let show = try linkcond(["show", "--name", name], store: store)
        XCTAssertEqual(show.status, 1, show.output)
        XCTAssertTrue(show.errorOutput.contains("the engine is not running"), show.errorOutput)

        let down = try linkcond(["down", "--name", name], store: store)
        XCTAssertEqual(down.status, 0, down.errorOutput)
        XCTAssertTrue(down.output.contains(topology.wireNamespace), "down did not delete the wire namespace: \(down.output)")
        XCTAssertEqual(try SandboxRemains.of(name, store: store), [], "left after down")
    }

    /// Through the library, in this process (the engine is this process's child here): `Sandbox.problems`
    /// names the engine, `remove()` stops the server, collects the dead engine (no zombie is left) and
    /// deletes every namespace and file.
    func testKilledEngineOfALibrarySandboxIsCollectedByDown() throws {
        let measured = try makeMeasuredSandbox(server: true)
        let name = measured.topology.name
        let pid = try killEngine(name, store: measured.sandbox.store)
        XCTAssertEqual(try answered(measured.topology), 0, "UDP probes were answered after the engine died")
        let state = try XCTUnwrap(try measured.sandbox.store.load(name))
        XCTAssertFalse(measured.sandbox.isHealthy(state))
        XCTAssertTrue(measured.sandbox.problems(state).contains { $0.contains("engine (pid \(pid)) is not running") },
                      "\(measured.sandbox.problems(state))")
        XCTAssertThrowsError(try measured.backend.installed(), "the backend read conditions from a dead engine") { error in
            XCTAssertTrue("\(error)".contains("engine"), "\(error)")
        }
        let report = try measured.sandbox.remove()
        XCTAssertTrue(report.stoppedProcesses.contains { $0.hasPrefix("server") }, "\(report)")
        XCTAssertEqual(Set(report.removedNamespaces), Set(measured.topology.allNamespaces), "\(report)")
        XCTAssertEqual(try SandboxRemains.of(name, store: measured.sandbox.store.directory), [], "left after down")
        assertNoZombieChildren("the dead engine was not collected by down")
    }
}

/// Everything of sandbox `name` that exists: namespaces (the wire's included), `/etc/netns` directories,
/// processes carrying the sandbox's marker or naming it on their command line, files of it in the store.
/// Empty when nothing is left.
enum SandboxRemains {
    static func of(_ name: String, store: String) throws -> [String] {
        let topology = try SandboxTopology(name: name)
        var found = topology.allNamespaces.filter { NamedNamespace.exists($0) }
        found += topology.allNamespaces.filter { access("\(NamedNamespace.etcDirectory)/\($0)", F_OK) == 0 }.map { "/etc/netns/\($0)" }
        let marker = RecordedProcess.marker(store: SandboxStore(directory: store), sandbox: name)
        found += RecordedProcess.discover(marker: marker).map { "\($0.role.rawValue) process \($0.pid)" }
        found += (processes(commandLineContaining: "engine --name \(name) ") + processes(commandLineContaining: "serve --name \(name) "))
            .filter { ProcessInspector.startTime($0) != nil }.map { "process \($0): \(describeProcess($0))" }
        let files = (try? FileManager.default.contentsOfDirectory(atPath: store)) ?? []
        found += files.filter { $0.hasPrefix(name + ".") }.map { "\(store)/\($0)" }
        return found
    }
}

import Conditioning
import Foundation
import Glibc
import Profiles
import Sandboxing
import Scenarios
import Timeline
import XCTest

/// The shipped scenarios (`scenarios/*.json`), each run end to end through the userspace engine with
/// `ScenarioRunner.run` — what `linkcond run SCENARIO --backend userspace` does: a fresh sandbox of the
/// run's own (in a store of this test's own), the path monitor, the prober, the timeline, the expectations
/// and the reports. Each must pass every expectation on this machine, with the scenario's own numbers.
///
/// They take 30–60 s each (4.5 minutes together): one method per scenario, so the log names the one that
/// failed, and each prints a summary (`SCENARIO` lines) with every expectation's evidence.
final class EngineScenarioTests: ConditioningTestCase {
    override class var backendKind: BackendKind { .userspace }

    private static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path
    /// The scenarios with a method of their own.
    static let covered = ["captive-portal", "flaky-wifi", "handover", "ipv6-outage", "slow-dns", "tunnel", "wifi-to-3g"]

    func testCaptivePortal() throws { try runScenario("captive-portal") }
    func testFlakyWifi() throws { try runScenario("flaky-wifi") }
    func testHandover() throws { try runScenario("handover") }
    func testIPv6Outage() throws { try runScenario("ipv6-outage") }
    func testSlowDNS() throws { try runScenario("slow-dns") }
    func testTunnel() throws { try runScenario("tunnel") }
    func testWifiTo3g() throws { try runScenario("wifi-to-3g") }

    /// A scenario added to `scenarios/` runs here until it gets a method of its own.
    func testEveryShippedScenarioRuns() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.repository + "/scenarios").filter { $0.hasSuffix(".json") }
        let names = files.map { String($0.dropLast(5)) }.sorted()
        XCTAssertFalse(names.isEmpty, "no scenarios in \(Self.repository)/scenarios")
        for name in names where !Self.covered.contains(name) {
            print("SCENARIO note: '\(name)' has no test method of its own; running it here")
            try runScenario(name)
        }
    }

    /// Runs `scenarios/NAME.json` through the engine in a sandbox of the run's own and asserts that it passed.
    private func runScenario(_ name: String, file: StaticString = #filePath, line: UInt = #line) throws {
        try measuredAgainIfTheMachineStalled { try runScenarioOnce(name, file: file, line: line) }
    }

    private func runScenarioOnce(_ name: String, file: StaticString, line: UInt) throws {
        let catalog = ProfileCatalog(directory: Self.repository + "/profiles")
        let scenario = try ScenarioParser.load(path: "\(Self.repository)/scenarios/\(name).json", catalog: catalog)
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("lcscn-\(getpid())-\(UniqueName.next())").path
        let store = SandboxStore(directory: work + "/store")
        try FileManager.default.createDirectory(atPath: store.directory, withIntermediateDirectories: true)
        // The run makes and removes its own sandbox (LinkLab names it lab<pid>x<n>); whatever a failed run left
        // in this store is removed here, and the directory with it.
        addTeardownBlock {
            for left in store.names() { SandboxCleanup.remove(name: left, storeDirectory: store.directory) }
            try? FileManager.default.removeItem(atPath: work)
        }
        let started = Date()
        let outcome = try ScenarioRunner.run(
            scenario,
            options: ScenarioRunOptions(
                reportDirectory: work + "/report", catalogDirectory: catalog.directory, store: store, backend: .userspace))
        let seconds = Date().timeIntervalSince(started)
        let results = outcome.report.expectations
        let passed = results.filter(\.passed).count
        var lines = ["SCENARIO [userspace] \(name): \(passed)/\(results.count) expectations passed in \(String(format: "%.1f", seconds)) s "
            + "(sandbox \(outcome.report.metadata.sandbox))"]
        lines += results.map { "SCENARIO   \($0.passed ? "PASS" : "FAIL")  \($0.name): \($0.evidence)" }
        lines += outcome.report.errors.map { "SCENARIO   ERROR \($0.step.map { "step '\($0)': " } ?? "")\($0.message)" }
        print(lines.joined(separator: "\n"))
        fflush(nil)

        XCTAssertTrue(outcome.passed, "scenario \(name) through the engine: \(passed)/\(results.count) expectations passed, "
            + "errors \(outcome.report.errors.map(\.message)); failed: "
            + results.filter { !$0.passed }.map { "\($0.name) (\($0.evidence))" }.joined(separator: "; "), file: file, line: line)
        XCTAssertEqual(results.count, scenario.expectations.count, "not every expectation was judged", file: file, line: line)
        XCTAssertFalse(outcome.interrupted, file: file, line: line)
        for report in ["events.jsonl", "timeline.json", "junit.xml", "timeline.html", "summary.md"] {
            let path = work + "/report/" + report
            XCTAssertGreaterThan((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0, 0,
                                 "\(name): \(report) missing or empty", file: file, line: line)
        }
        // The conditions lane says which backend held the conditions: the engine, every time.
        let changes = outcome.report.events.filter { $0.lane == .conditions }
        let backends = Set(changes.map { $0.details[TimelineDetail.backend]?.string ?? "none" })
        if !changes.isEmpty {
            XCTAssertEqual(backends, ["userspace"], "\(name): conditions held by \(backends)", file: file, line: line)
        }
        XCTAssertEqual(store.names(), [], "\(name): the run left its sandbox in the store", file: file, line: line)
        let labPrefix = "lc-\(outcome.report.metadata.sandbox)-"
        XCTAssertEqual(try Command.ipNetnsList().filter { $0.hasPrefix(labPrefix) }, [], "\(name): the run left namespaces", file: file, line: line)
    }
}

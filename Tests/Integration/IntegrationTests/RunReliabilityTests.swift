import Conditioning
import Foundation
import Glibc
import LinkcondBase
import NetNamespace
import Profiles
import Sandboxing
import Scenarios
import Synchronization
import Timeline
import XCTest

/// Runs that end badly: interrupted in the middle of a change, stopped by a step that fails, or leaving an
/// observed app behind. The sandbox must be put back, the evidence written, and nothing left running.
final class RunReliabilityTests: SandboxTestCase {
    private var profilesDirectory: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("profiles").path
    }

    private func reportDirectory() throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lcrun-\(getpid())-\(UniqueName.next())").path
        addTeardownBlock { try? FileManager.default.removeItem(atPath: directory) }
        return directory
    }

    /// A run interrupted while the wifi link is down (as Ctrl-C during `flaky-wifi` does) puts the link, its
    /// addresses and routes back: the sandbox is whole again and the timeline says what was restored.
    func testAnInterruptedRunPutsBackWhatItChanged() throws {
        let sandbox = try makeSandbox()
        XCTAssertEqual(try sandbox.up(server: try serverLaunch(sandbox)), .created)
        let scenario = try ScenarioParser.parse(
            text: """
            {"name": "cut", "description": "wifi down, then interrupted",
             "steps": [{"name": "drop", "link": "down", "side": "client", "interface": "wifi", "hold": "10s"}],
             "expectations": []}
            """, source: "cut.json", profileExists: { _ in true })
        let started = MonotonicClock.seconds()
        let outcome = try ScenarioRunner.run(
            scenario,
            options: ScenarioRunOptions(
                sandboxName: sandbox.topology.name, reportDirectory: try reportDirectory(), catalogDirectory: profilesDirectory,
                store: sandbox.store, isCancelled: { MonotonicClock.seconds() - started > 1.5 }))
        XCTAssertTrue(outcome.interrupted)
        let state = try XCTUnwrap(try sandbox.store.load(sandbox.topology.name))
        XCTAssertEqual(sandbox.problems(state), [], "the interrupted run left the sandbox degraded")
        let restored = outcome.report.events.filter { $0.lane == .conditions && $0.kind == "restored" }
        XCTAssertEqual(restored.count, 1, "\(outcome.report.events.map(\.summary))")
        XCTAssertNotNil(try waitUntilReachable(try sandbox.clientNamespace(), SandboxPlan.serverIPv4, port: SandboxPlan.httpPort))
        XCTAssertTrue(try sandbox.down())
    }

    /// A step that fails (here: a sandbox recorded for netem on a kernel without it, or any refusal) ends
    /// the run with the failure in every report: an error event, an error test case in junit.xml, the
    /// verdict in summary.md, and the hint to run `linkcond doctor`.
    func testAFailedStepIsInEveryReport() throws {
        guard !KernelDoctor.hasNetem() else {
            throw XCTSkip("needs a kernel without netem, so that a netem apply fails (the VM has netem)")
        }
        let sandbox = try makeSandbox()
        XCTAssertEqual(try sandbox.up(Sandbox.Configuration(backend: BackendKind.netem.rawValue, server: try serverLaunch(sandbox))), .created)
        let scenario = try ScenarioParser.parse(
            text: """
            {"name": "doomed", "description": "applies a profile this kernel cannot hold",
             "steps": [{"name": "start", "clear": true, "hold": "1s"}, {"name": "edge", "apply": "edge", "hold": "2s"}],
             "expectations": [{"name": "online", "lane": "reachability", "reaches": "online", "within": "3s", "after": "start"}]}
            """, source: "doomed.json", catalog: ProfileCatalog(directory: profilesDirectory))
        let directory = try reportDirectory()
        let outcome = try ScenarioRunner.run(
            scenario,
            options: ScenarioRunOptions(
                sandboxName: sandbox.topology.name, reportDirectory: directory, catalogDirectory: profilesDirectory, store: sandbox.store))
        XCTAssertFalse(outcome.passed)
        let error = try XCTUnwrap(outcome.report.errors.first)
        XCTAssertEqual(error.step, "edge")
        XCTAssertTrue(error.message.contains("qdisc kind is unknown"), error.message)
        XCTAssertEqual(error.hint?.contains("linkcond doctor"), true)
        XCTAssertTrue(outcome.report.events.contains { $0.kind == TimelineKind.error && $0.summary.contains("step 'edge' failed") })
        for file in ["events.jsonl", "timeline.json", "junit.xml", "timeline.html", "summary.md"] {
            XCTAssertTrue(FileManager.default.fileExists(atPath: "\(directory)/\(file)"), "\(file) was not written")
        }
        let junit = try String(contentsOfFile: "\(directory)/junit.xml", encoding: .utf8)
        XCTAssertTrue(junit.contains("errors=\"1\""), junit)
        XCTAssertTrue(junit.contains("<error message=\"tc -n"), junit)
        XCTAssertTrue(junit.contains("hint: this kernel lacks a feature the step needs"), junit)
        let summary = try String(contentsOfFile: "\(directory)/summary.md", encoding: .utf8)
        XCTAssertTrue(summary.contains("ERROR"), summary)
        XCTAssertTrue(try sandbox.down())
    }

    /// The observed app, started through `sh -c` with children of its own, ends with the lab: nothing of it
    /// keeps running in the removed client namespace.
    func testTheObservedAppEndsWithTheLab() throws {
        let tag = "lcobs\(getpid())x\(UniqueName.next())"
        let directory = try reportDirectory()
        let lab = try LinkLab.open(LinkLab.Options(reportDirectory: directory + "/reports", store: SandboxStore(directory: directory)))
        do {
            try lab.observe(command: "sleep 300 & sleep 301 & echo '{\"state\": \"\(tag)\"}'; wait")
            XCTAssertTrue(eventually(timeout: 5) { processes(commandLineContaining: "sleep 30").count >= 2 }, "the app did not start")
            XCTAssertTrue(eventually(timeout: 5) { (try? lab.events().contains { $0.state == tag }) == true }, "the app's line was not recorded")
        } catch {
            lab.close()
            throw error
        }
        lab.close()
        XCTAssertTrue(eventually(timeout: 5) { processes(commandLineContaining: "sleep 30").isEmpty },
                      "left running: \(processes(commandLineContaining: "sleep 30").map(describeProcess))")
    }
}

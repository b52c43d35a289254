import Conditioning
import Foundation
import NetNamespace
import Sandboxing
import Scenarios
import Timeline
import XCTest

/// A lab writes the reports `linkcond run` writes, keeps a temporary folder only when it failed (and says
/// where), can name the sandbox it makes, and says where it looked for the engine.
final class LinkLabReportTests: IntegrationTestCase {
    private func makeStore() -> SandboxStore {
        let store = SandboxStore(directory: NSTemporaryDirectory() + "lcit-labrep-\(getpid())-\(UniqueName.next())")
        addTeardownBlock { try? FileManager.default.removeItem(atPath: store.directory) }
        return store
    }

    func testALabWritesTheReportsOfARun() async throws {
        let store = makeStore()
        let folder = store.directory + "/reports"
        try await LinkLab.with(LinkLab.Options(profile: "lte", reportDirectory: folder, store: store, name: "my-test")) { lab in
            try await lab.waitForReachability(.online, within: 10, everyFamily: true)
            XCTAssertEqual(lab.prober.currentFamilies.map(\.family), [.ipv4, .ipv6])
            XCTAssertEqual(lab.prober.currentFamilies.map(\.state), [.online, .online])
            // Every family online now, but never "offline" of every family on a link that works: the wait names both.
            do {
                try await lab.waitForReachability(.offline, within: 0.2, everyFamily: true)
                XCTFail("every family offline on a working link")
            } catch let error as LabError {
                XCTAssertTrue("\(error)".contains("reachability offline of every family was not reached within 0.2 s (last seen: ipv4 online, ipv6 online)"), "\(error)")
            }
        }
        for file in ["events.jsonl", "timeline.json", "junit.xml", "timeline.html", "summary.md"] {
            XCTAssertTrue(FileManager.default.fileExists(atPath: "\(folder)/\(file)"), "\(file) is missing")
        }
        let html = try String(contentsOfFile: folder + "/timeline.html", encoding: .utf8)
        XCTAssertTrue(html.contains("my-test"), "the run's name is not in the report")
        XCTAssertTrue(html.contains(">lte</span>") || html.contains(">lte<"), "the conditions lane lacks lte")
        XCTAssertTrue(try String(contentsOfFile: folder + "/summary.md", encoding: .utf8).hasPrefix("# linkcond run: my-test"))
    }

    func testATemporaryFolderGoesWhenTheLabPassedAndStaysWhenItFailed() async throws {
        let store = makeStore()
        var passedFolder = ""
        try await LinkLab.with(LinkLab.Options(store: store)) { lab in passedFolder = lab.reportDirectory }
        XCTAssertTrue(passedFolder.hasPrefix("/tmp/linkcond-lab."), passedFolder)
        XCTAssertFalse(FileManager.default.fileExists(atPath: passedFolder), "a lab that passed left its temporary reports")

        struct Broken: Error, CustomStringConvertible { var description: String { "the app crashed" } }
        var failedFolder = ""
        do {
            try await LinkLab.with(LinkLab.Options(store: store)) { lab in
                failedFolder = lab.reportDirectory
                throw Broken()
            }
            XCTFail("the body's error must come out")
        } catch is Broken {}
        addTeardownBlock { try? FileManager.default.removeItem(atPath: failedFolder) }
        let html = try String(contentsOfFile: failedFolder + "/timeline.html", encoding: .utf8)
        XCTAssertTrue(html.contains("the app crashed"), "the failure is not in the report")
        XCTAssertTrue(try String(contentsOfFile: failedFolder + "/junit.xml", encoding: .utf8).contains("the app crashed"))

        // A wait that runs out names where the reports are.
        var timedOutFolder = ""
        do {
            try await LinkLab.with(LinkLab.Options(store: store)) { lab in
                timedOutFolder = lab.reportDirectory
                try await lab.waitForPath(.unsatisfied, within: 0.2)
            }
        } catch let error as LabError {
            XCTAssertTrue(error.description.hasSuffix("the lab's reports: \(timedOutFolder)/timeline.html"), error.description)
        }
        addTeardownBlock { try? FileManager.default.removeItem(atPath: timedOutFolder) }
        XCTAssertTrue(FileManager.default.fileExists(atPath: timedOutFolder + "/timeline.html"))
    }

    func testALabCanNameTheSandboxItMakesAndRemoves() async throws {
        let store = makeStore()
        let name = UniqueName.sandbox()
        addTeardownBlock { SandboxCleanup.remove(name: name, storeDirectory: store.directory) }
        let client = try SandboxTopology(name: name).clientNamespace
        try await LinkLab.with(LinkLab.Options(store: store, newSandboxName: name)) { lab in
            XCTAssertEqual(lab.sandbox.topology.name, name)
            XCTAssertTrue(NamedNamespace.exists(client))
        }
        XCTAssertFalse(NamedNamespace.exists(client), "the lab did not remove the sandbox it made")

        // A name that is taken is refused: the lab would remove a sandbox it did not make.
        let existing = Sandbox(topology: try SandboxTopology(name: name), store: store)
        try existing.up()
        do {
            _ = try LinkLab.open(LinkLab.Options(store: store, newSandboxName: name))
            XCTFail("a lab took over an existing sandbox")
        } catch let error as LabError {
            XCTAssertTrue(error.description.hasPrefix("sandbox '\(name)' exists already"), error.description)
        }
        XCTAssertTrue(NamedNamespace.exists(client), "the refused lab removed the sandbox")
        XCTAssertThrowsError(try LinkLab.open(LinkLab.Options(sandboxName: name, store: store, newSandboxName: "x")))
    }

    /// The engine is found beside the test binary (as a package whose tests depend on the `linkcond` product
    /// has it); a search that finds none says where it looked and what to do.
    func testTheEngineSearchSaysWhereItLooked() throws {
        let search = EngineExecutable.search()
        let found = try XCTUnwrap(search.found, search.explanation)
        XCTAssertTrue(found.hasSuffix("/linkcond"))
        XCTAssertEqual(search.explanation, "")
        let none = EngineExecutable.Search(found: nil, tried: ["LINKCOND_EXECUTABLE (not set)", "/x/linkcond (beside this program: missing)"])
        XCTAssertEqual(
            none.explanation,
            "no linkcond executable found (looked at LINKCOND_EXECUTABLE (not set), /x/linkcond (beside this program: missing)): add "
                + "`.product(name: \"linkcond\", package: \"linkcond\")` to your test target's dependencies so SwiftPM builds it beside your "
                + "tests, install linkcond on PATH, or set LINKCOND_EXECUTABLE to its path")
    }
}

import Foundation
import XCTest

@testable import Timeline

/// `summary.md`, `junit.xml` and `timeline.html` of the constructed runs, compared byte for byte with the files in
/// `Tests/TimelineTests/Snapshots/`.
///
/// To regenerate them after an intended change of a writer:
///
///     LINKCOND_UPDATE_SNAPSHOTS=1 swift test --scratch-path /tmp/build-reports --filter TimelineTests.SnapshotTests
///
/// which writes the files into the source folder (found through `#filePath`); review the diff, then run the
/// tests again without the variable (the bundle copy of the snapshots is refreshed by the build).
final class SnapshotTests: XCTestCase {
    private static let sourceFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Snapshots")

    private func assertSnapshot(_ actual: String, named name: String, file: StaticString = #filePath, line: UInt = #line) throws {
        if ProcessInfo.processInfo.environment["LINKCOND_UPDATE_SNAPSHOTS"] == "1" {
            try FileManager.default.createDirectory(at: Self.sourceFolder, withIntermediateDirectories: true)
            try Data(actual.utf8).write(to: Self.sourceFolder.appendingPathComponent(name))
            return
        }
        guard let folder = Bundle.module.url(forResource: "Snapshots", withExtension: nil),
            let data = FileManager.default.contents(atPath: folder.appendingPathComponent(name).path)
        else {
            XCTFail("snapshot \(name) is missing; run with LINKCOND_UPDATE_SNAPSHOTS=1 to create it", file: file, line: line)
            return
        }
        let expected = String(decoding: data, as: UTF8.self)
        if expected != actual {
            let expectedLines = expected.split(separator: "\n", omittingEmptySubsequences: false)
            let actualLines = actual.split(separator: "\n", omittingEmptySubsequences: false)
            let first = zip(expectedLines, actualLines).enumerated().first { $0.element.0 != $0.element.1 }?.offset
                ?? min(expectedLines.count, actualLines.count)
            let shown = { (lines: [Substring]) in first < lines.count ? String(lines[first]) : "<end of file>" }
            XCTFail(
                "\(name) differs from its snapshot at line \(first + 1):\n  expected: \(shown(expectedLines))\n  actual:   \(shown(actualLines))\n"
                    + "(LINKCOND_UPDATE_SNAPSHOTS=1 regenerates it)", file: file, line: line)
        }
    }

    /// A page with its stylesheet left out: every page inlines the same one, which has a snapshot of its own.
    private func page(_ report: RunReport) -> String {
        HTMLReportWriter.render(report).replacingOccurrences(of: "<style>\n\(HTMLReportWriter.css)</style>", with: "<style>/* timeline.css */</style>")
    }

    func testStylesheetSnapshot() throws {
        XCTAssertTrue(HTMLReportWriter.render(ReportFixtures.tunnel()).contains("<style>\n\(HTMLReportWriter.css)</style>"))
        try assertSnapshot(HTMLReportWriter.css, named: "timeline.css")
    }

    func testSummaryMarkdownSnapshot() throws {
        try assertSnapshot(MarkdownWriter.render(ReportFixtures.tunnel()), named: "summary.md")
    }

    func testJUnitSnapshot() throws {
        try assertSnapshot(JUnitWriter.render(ReportFixtures.tunnel()), named: "junit.xml")
    }

    func testHostileSummarySnapshot() throws {
        try assertSnapshot(MarkdownWriter.render(ReportFixtures.hostileReport()), named: "hostile-summary.md")
    }

    func testHostileJUnitSnapshot() throws {
        try assertSnapshot(JUnitWriter.render(ReportFixtures.hostileReport()), named: "hostile-junit.xml")
    }

    func testTimelineHTMLSnapshot() throws {
        try assertSnapshot(page(ReportFixtures.tunnel()), named: "timeline.html")
    }

    func testHostileTimelineHTMLSnapshot() throws {
        try assertSnapshot(page(ReportFixtures.hostileReport()), named: "hostile-timeline.html")
    }

    // Scoped conditions with a trace, per-family reachability, a failed step.

    func testScopedTraceSnapshots() throws {
        let report = ReportFixtures.scopedTrace()
        try assertSnapshot(page(report), named: "scoped-trace-timeline.html")
        try assertSnapshot(MarkdownWriter.render(report), named: "scoped-trace-summary.md")
        try assertSnapshot(JSONReportWriter.render(report), named: "scoped-trace-timeline.json")
    }

    func testDualStackSnapshots() throws {
        let report = ReportFixtures.dualStack()
        try assertSnapshot(page(report), named: "dual-stack-timeline.html")
        try assertSnapshot(MarkdownWriter.render(report), named: "dual-stack-summary.md")
    }

    func testFailedStepSnapshots() throws {
        let report = ReportFixtures.failedStep()
        try assertSnapshot(page(report), named: "failed-step-timeline.html")
        try assertSnapshot(MarkdownWriter.render(report), named: "failed-step-summary.md")
        try assertSnapshot(JUnitWriter.render(report), named: "failed-step-junit.xml")
    }
}

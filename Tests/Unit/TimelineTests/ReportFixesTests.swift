import Foundation
import XCTest

@testable import Timeline

/// What the reports show of a run, beyond their snapshots: expectation markers where each verdict was settled,
/// the path lane following the interface in use, an intended "did not react" not styled as a warning, and
/// labels that never cut a word.
final class ReportFixesTests: XCTestCase {
    private func ns(_ seconds: Double) -> UInt64 { UInt64((seconds * 1e9).rounded()) }

    /// Three expectations judged at 14.102 s, 20 s and 22.5 s of a 40 s run are drawn there, not all at the end
    /// where the run recorded its verdicts.
    func testExpectationMarkersSitWhereEachVerdictWasSettled() {
        var report = ReportFixtures.tunnel()
        let end = report.metadata.duration
        // As a run records them: every verdict at the end.
        report.events.removeAll { $0.kind == TimelineKind.expectation }
        for result in report.expectations {
            report.events.append(TimelineEvent(
                t: end, lane: .scenario, kind: TimelineKind.expectation, summary: "PASS \(result.name)", details: ["name": .string(result.name)]))
        }
        let chart = TimelineChart(report: report, metrics: TimelineMetrics(report), palette: StatePalette(events: report.events))
        XCTAssertEqual(TimelineChart.expectationTimes(report, events: chart.events), [ns(14.102), ns(20), ns(22.5)])
        let svg = chart.render()
        for t in [14.102, 20, 22.5] {
            XCTAssertTrue(svg.contains(#"class="expline" x1="\#(Fmt.coord(chart.x(ns(t))))""#), "no marker line at \(t) s")
        }
        XCTAssertFalse(svg.contains(#"class="expline" x1="\#(Fmt.coord(chart.x(end)))""#), "a marker at the end of the run")
        // A result without a time (an older report) falls back to when the timeline recorded it.
        report.expectations[0].at = nil
        XCTAssertEqual(TimelineChart.expectationTimes(report, events: TimelineMetrics.ordered(report.events))[0], end)
    }

    /// A handover keeps the path satisfied; the lane still shows the move from both links to cellular alone,
    /// and that it became expensive, as segments of their own with a seam between them.
    func testThePathLaneShowsInterfaceAndExpensiveChanges() {
        var report = ReportFixtures.tunnel()
        report.events.removeAll { $0.lane == .path }
        report.events += [
            ReportFixtures.path(0.05, "satisfied", baseline: true, interfaces: "wl0,ww0"),
            ReportFixtures.path(12, "satisfied", interfaces: "ww0", expensive: true),
            ReportFixtures.path(26, "satisfied", interfaces: "wl0,ww0"),
        ]
        report.events.sort { $0.t < $1.t }
        let chart = TimelineChart(report: report, metrics: TimelineMetrics(report), palette: StatePalette(events: report.events))
        XCTAssertEqual(
            chart.segments(.path).map(\.label), ["satisfied · wl0, ww0", "satisfied · ww0 · expensive", "satisfied · wl0, ww0"])
        XCTAssertEqual(chart.segments(.path).map(\.start), [ns(0.05), ns(12), ns(26)])
        let svg = chart.render()
        XCTAssertTrue(svg.contains(">satisfied · ww0 · expensive</text>"), "the move to cellular is not labelled")
        XCTAssertEqual(svg.components(separatedBy: #"class="seam""#).count - 1, 2, "one seam at each move")
        // Repeated updates with the same interfaces stay one segment.
        report.events.append(ReportFixtures.path(13, "satisfied", interfaces: "ww0", expensive: true))
        report.events.sort { $0.t < $1.t }
        XCTAssertEqual(TimelineChart(report: report, metrics: TimelineMetrics(report), palette: StatePalette(events: report.events)).segments(.path).count, 3)
    }

    /// The path not reacting to 100% loss is what "path-stays-satisfied" asks for: green, named, no warning;
    /// without that expectation the same cell is the warning it was.
    func testAnIntendedNonReactionIsNotAWarning() {
        let report = ReportFixtures.tunnel()
        XCTAssertEqual(report.intendedStillness(of: .path, during: "tunnel")?.name, "path-stays-satisfied")
        XCTAssertNil(report.intendedStillness(of: .path, during: "lte"))
        XCTAssertNil(report.intendedStillness(of: .reachability, during: "tunnel"))
        let html = HTMLReportWriter.render(report)
        XCTAssertTrue(html.contains(#"<td class="intended">did not react <span class="small">(as expected: path-stays-satisfied)</span></td>"#))
        XCTAssertTrue(MarkdownWriter.render(report).contains("did not react (as expected: path-stays-satisfied)"))

        var unexpected = report
        unexpected.expectations.remove(at: 1)
        let plain = HTMLReportWriter.render(unexpected)
        XCTAssertFalse(plain.contains(#"class="intended""#))
        XCTAssertTrue(plain.contains(#"<td class="noreact">did not react"#))
        // A failed expectation of stillness does not excuse anything either.
        var failed = report
        failed.expectations[1].passed = false
        XCTAssertNil(failed.intendedStillness(of: .path, during: "tunnel"))
    }

    func testLabelsNeverCutAWord() {
        let width = SVG.charWidth
        func room(_ characters: Double) -> Double { width * (characters + 0.5) }
        XCTAssertEqual(SVG.fit("3g · 100-loss", width: room(13)), "3g · 100-loss")
        XCTAssertEqual(SVG.fit("3g · 100-loss", width: room(12)), "3g…")
        XCTAssertEqual(SVG.fit("satisfied · ww0 · expensive", width: room(20)), "satisfied · ww0…")
        XCTAssertEqual(SVG.fit("satisfied · ww0 · expensive", width: room(12)), "satisfied…")
        XCTAssertNil(SVG.fit("satisfied · ww0", width: room(9)), "not even the first word and its ellipsis fit")
        XCTAssertEqual(SVG.fit("1. very-long-step-name", width: room(6)), "1.…")
    }
}

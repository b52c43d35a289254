import Foundation
import XCTest

@testable import Timeline

/// Reports of scoped and trace-driven conditions, per-family reachability and failed steps. Expected values
/// are written out by hand from the inputs (coordinates from the chart's geometry: lanes from x = 132 to
/// 1304, 40 px a lane, plots under them).
final class BeyondPresetsReportTests: XCTestCase {
    typealias F = ReportFixtures

    private func report(_ events: [TimelineEvent], duration: Double, errors: [RunError] = []) -> RunReport {
        RunReport(
            metadata: RunMetadata(name: "t", description: "", sandbox: "lc", startedAt: "x", duration: F.ns(duration), steps: []),
            events: events, expectations: [], errors: errors)
    }

    private func trace(_ t: Double, up: String?, down: String?) -> TimelineEvent {
        var event = F.conditions(t, "walk", profile: "walk", action: "apply walk")
        if let up { event.details["traceUplinkRates"] = .string(up) }
        if let down { event.details["traceDownlinkRates"] = .string(down) }
        return event
    }

    private typealias Point = TraceRateSeries.Point

    private func points(_ pairs: [(Double, Double)]) -> [Point] { pairs.map { Point(t: F.ns($0.0), bps: $0.1) } }

    // MARK: - Trace rate series

    func testTraceLoopsFromItsChangeUntilTheNextChangeOrTheEnd() {
        let events = [
            trace(2, up: "1000,2000,3000", down: "500,1500"),
            F.conditions(9.5, "lte", profile: "lte", action: "apply lte"),  // ends both traces
            trace(12, up: nil, down: "700"),  // downlink only, until the end of the run
        ]
        let uplink = TraceRateSeries(.uplink, events: events, end: F.ns(14.2))
        XCTAssertEqual(uplink.runs.count, 1)
        XCTAssertEqual(uplink.runs[0].start, F.ns(2))
        XCTAssertEqual(uplink.runs[0].end, F.ns(9.5))
        XCTAssertEqual(
            uplink.runs[0].points, points([(2, 1000), (3, 2000), (4, 3000), (5, 1000), (6, 2000), (7, 3000), (8, 1000), (9, 2000)]))

        let downlink = TraceRateSeries(.downlink, events: events, end: F.ns(14.2))
        XCTAssertEqual(downlink.runs.count, 2)
        XCTAssertEqual(downlink.runs[0].points, points([(2, 500), (3, 1500), (4, 500), (5, 1500), (6, 500), (7, 1500), (8, 500), (9, 1500)]))
        XCTAssertEqual(downlink.runs[1].start, F.ns(12))
        XCTAssertEqual(downlink.runs[1].end, F.ns(14.2))
        XCTAssertEqual(downlink.runs[1].points, points([(12, 700), (13, 700), (14, 700)]))
    }

    func testTraceRatesLeaveOutWhatIsNotARate() {
        XCTAssertEqual(TraceRateSeries.rates("1000, x, -5, nan, 2000,, 3e6"), [1000, 2000, 3_000_000])
        // No usable rate, or no time left before the next change: no run.
        let events = [trace(1, up: "x,y", down: "100"), trace(1, up: "5", down: "5"), trace(3, up: nil, down: nil)]
        XCTAssertTrue(TraceRateSeries(.uplink, events: events, end: F.ns(10)).runs.allSatisfy { !$0.points.isEmpty })
        XCTAssertEqual(TraceRateSeries(.uplink, events: events, end: F.ns(10)).runs.map(\.start), [F.ns(1)])
        XCTAssertEqual(TraceRateSeries(.uplink, events: events, end: F.ns(10)).runs[0].points, points([(1, 5), (2, 5)]))
        XCTAssertTrue(TraceRateSeries(.downlink, events: [trace(10, up: nil, down: "1")], end: F.ns(10)).isEmpty)
    }

    func testTracePlotFollowsTheRates() {
        // cellular-trace: 30 s, x(t) = 132 + t / 30 * 1172. Four plain lanes, so the trace plot spans y 528…618;
        // the highest rate, 12 Mbit/s, gives a scale to 15 Mbit/s (ticks every 5), y(r) = 618 - r / 15M * 90.
        // Downlink starts at x(10.02) = 523.4 with 12M (y 546), steps at x(11.02) = 562.5 to 8M (y 570), and its
        // fifteenth second (24.02 s) is 4M (y 594), held to the clear at x(25) = 1108.7.
        let html = HTMLReportWriter.render(F.scopedTrace())
        XCTAssertTrue(html.contains("<g class=\"plot trace\">"))
        XCTAssertTrue(html.contains("d=\"M523.4 546H562.5V570"), "downlink")
        XCTAssertTrue(html.contains("V594H1108.7\" stroke=\"#1971c2\""), "downlink end")
        XCTAssertTrue(html.contains("d=\"M523.4 612H562.5V606"), "uplink: 1M then 2M")
        for tick in [">0<", ">5M<", ">10M<", ">15M<"] { XCTAssertTrue(html.contains(tick), tick) }
        XCTAssertTrue(html.contains("<title>downlink trace from 10.020 s to 25.000 s: 4 Mbit/s to 12 Mbit/s per second</title>"))
        XCTAssertTrue(html.contains("downlink trace rate"), "legend")
    }

    func testALongTraceStaysBounded() {
        // Two hours of a ten-second trace: 7200 points for 1172 pixel columns.
        let rates = (0..<10).map { String(1_000_000 * ($0 + 1)) }.joined(separator: ",")
        let html = HTMLReportWriter.render(report([trace(0, up: nil, down: rates)], duration: 7200))
        let start = html.range(of: "<path class=\"traceline\" d=\"")!.upperBound
        let d = html[start..<html[start...].firstIndex(of: "\"")!]
        let commands = d.filter { "MHV".contains($0) }.count
        XCTAssertLessThanOrEqual(commands, 2 + 5 * 1173, "M, then per pixel column at most H, V and three V for its range, then H")
        XCTAssertGreaterThan(commands, 1172)
    }

    // MARK: - Scope of conditions

    func testMetricsCarryTheScopeOfEachChange() throws {
        let metrics = TimelineMetrics(F.scopedTrace())
        XCTAssertEqual(metrics.changes.map(\.links), [["wifi"], ["cellular"], nil])
        XCTAssertEqual(metrics.changes.map(\.targets), [nil, "tcp 198.19.0.0/24 port 443; icmp 2001:2::/48", nil])
        XCTAssertEqual(metrics.changes.map(\.backend), ["netem", "userspace", "userspace"])
        XCTAssertEqual(metrics.changes.map(\.traceUplinkMeanBps), [nil, 2_000_000, nil])
        XCTAssertEqual(metrics.changes.map(\.traceDownlinkMeanBps), [nil, 8_500_000, nil])
        XCTAssertEqual(ConditionScope.links("wifi, cellular"), ["wifi", "cellular"])
        XCTAssertNil(ConditionScope.links(" , "))
        // Old event files: no scope keys anywhere in timeline.json's metrics.
        let json = try JSONReportWriter.render(F.tunnel())
        for key in ["\"links\"", "\"targets\"", "\"backend\"", "traceUplinkMeanBps", "\"singleFamily\""] {
            XCTAssertFalse(json.contains(key), key)
        }
    }

    func testScopeInLanesTablesAndSummary() {
        let html = HTMLReportWriter.render(F.scopedTrace())
        XCTAssertTrue(html.contains(">lte (wifi)<"))
        XCTAssertTrue(html.contains(">trace-walk (cellular)<"))
        XCTAssertTrue(
            html.contains(
                "<title>Conditions: trace-walk (cellular) from 10.020 s to 25.000 s (14.980 s) — on cellular · only tcp 198.19.0.0/24 port 443; "
                    + "icmp 2001:2::/48 · userspace · trace mean ↑ 2 Mbit/s ↓ 8.5 Mbit/s</title>"))
        // Reaction table and event log.
        XCTAssertEqual(html.components(separatedBy: "<div class=\"small scope\">on cellular · only tcp 198.19.0.0/24 port 443").count - 1, 2)
        let markdown = MarkdownWriter.render(F.scopedTrace())
        XCTAssertTrue(markdown.contains("## Conditions applied"))
        XCTAssertTrue(
            markdown.contains("| 2 | 10.020 | trace-walk | cellular | tcp 198.19.0.0/24 port 443; icmp 2001:2::/48 | userspace | 2 Mbit/s | 8.5 Mbit/s |"))
        XCTAssertTrue(markdown.contains("| 1 | 0.050 | lte | wifi | all | netem | — | — |"))
        XCTAssertFalse(MarkdownWriter.render(F.tunnel()).contains("Conditions applied"))
    }

    func testEqualProfilesOnDifferentLinksAreTwoSegments() {
        var wifi = F.conditions(1, "lte", profile: "lte", action: "apply lte")
        wifi.details["links"] = .string("wifi")
        var cellular = F.conditions(5, "lte", profile: "lte", action: "apply lte")
        cellular.details["links"] = .string("cellular")
        let scoped = report([wifi, cellular], duration: 10)
        let chart = TimelineChart(report: scoped, metrics: TimelineMetrics(scoped), palette: StatePalette(events: scoped.events))
        XCTAssertEqual(chart.segments(.conditions).map(\.label), ["lte (wifi)", "lte (cellular)"])
        XCTAssertEqual(chart.segments(.conditions).map(\.start), [F.ns(1), F.ns(5)])
        // Without links they are one.
        let plain = report([F.conditions(1, "lte", profile: "lte", action: "a"), F.conditions(5, "lte", profile: "lte", action: "a")], duration: 10)
        let plainChart = TimelineChart(report: plain, metrics: TimelineMetrics(plain), palette: StatePalette(events: plain.events))
        XCTAssertEqual(plainChart.segments(.conditions).map(\.label), ["lte"])
    }

    // MARK: - Address families

    func testFamilySpansFollowEachFamily() {
        var events = F.dualStack().events
        // An update without family details changes neither family.
        events.append(F.reachability(20, "online", previous: "online", quality: "good", rttMs: 50, loss: 0))
        events.sort { $0.t < $1.t }
        let end = F.ns(22)
        typealias Span = FamilyReachability.Span
        XCTAssertEqual(
            FamilyReachability.spans(.ipv4, events: events, end: end),
            [Span(start: F.ns(0.9), end: F.ns(15.5), state: "online"), Span(start: F.ns(15.5), end: F.ns(18), state: "offline"),
             Span(start: F.ns(18), end: end, state: "portal")])
        XCTAssertEqual(
            FamilyReachability.spans(.ipv6, events: events, end: end),
            [Span(start: F.ns(0.9), end: F.ns(5.4), state: "online"), Span(start: F.ns(5.4), end: F.ns(12.6), state: "offline"),
             Span(start: F.ns(12.6), end: F.ns(15.5), state: "online"), Span(start: F.ns(15.5), end: F.ns(18), state: "offline"),
             Span(start: F.ns(18), end: end, state: "online")])
    }

    func testSingleFamilyPeriods() {
        typealias Period = TimelineMetrics.SingleFamilyPeriod
        XCTAssertEqual(
            TimelineMetrics(F.dualStack()).singleFamily,
            [Period(start: F.ns(5.4), end: F.ns(12.6), family: "ipv4", otherState: "offline"),
             Period(start: F.ns(18), end: F.ns(22), family: "ipv6", otherState: "portal")])
        // Without `singleFamily`, both families known and exactly one online decides; a switch of the family
        // online is a new period.
        func update(_ t: Double, _ ipv4: String?, _ ipv6: String?) -> TimelineEvent {
            var event = F.reachability(t, "online", previous: "online", quality: "good", rttMs: 50, loss: 0)
            if let ipv4 { event.details["ipv4"] = .string(ipv4) }
            if let ipv6 { event.details["ipv6"] = .string(ipv6) }
            return event
        }
        let events = [update(1, "online", nil), update(2, nil, "offline"), update(4, "offline", "online"), update(6, "online", "online")]
        XCTAssertEqual(
            TimelineMetrics(report(events, duration: 8)).singleFamily,
            [Period(start: F.ns(2), end: F.ns(4), family: "ipv4", otherState: "offline"),
             Period(start: F.ns(4), end: F.ns(6), family: "ipv6", otherState: "offline")])
        XCTAssertNil(TimelineMetrics(F.tunnel()).singleFamily)
    }

    func testFamilyLanesOnlyWhenReported() {
        let html = HTMLReportWriter.render(F.dualStack())
        XCTAssertTrue(html.contains("<g class=\"lane lane-reachability-ipv4\"><text class=\"lanesub\" x=\"8\" y=\"153.5\">reachability IPv4</text>"))
        XCTAssertTrue(html.contains("<g class=\"lane lane-reachability-ipv6\"><text class=\"lanesub\" x=\"8\" y=\"173.5\">reachability IPv6</text>"))
        XCTAssertTrue(html.contains("<title>Reachability IPv6: offline from 5.400 s to 12.600 s (7.200 s)</title>"))
        XCTAssertTrue(html.contains("<title>Reachability IPv4: portal from 18.000 s to 22.000 s (4.000 s)</title>"))
        let markdown = MarkdownWriter.render(F.dualStack())
        XCTAssertTrue(markdown.contains("- online over IPv4 only (IPv6 offline) from 5.400 s to 12.600 s (7.200 s)\n"))
        XCTAssertTrue(markdown.contains("- online over IPv6 only (IPv4 portal) from 18.000 s to 22.000 s (4.000 s)\n"))

        let tunnel = HTMLReportWriter.render(F.tunnel())
        XCTAssertFalse(tunnel.contains("reachability IPv4"))
        XCTAssertFalse(tunnel.contains("plot trace"))
        XCTAssertFalse(MarkdownWriter.render(F.tunnel()).contains("address family"))
    }

    // MARK: - Errors

    func testErrorBoxInHTML() {
        let html = HTMLReportWriter.render(F.failedStep())
        XCTAssertTrue(html.contains("class=\"badge fail\">ERROR<"))
        XCTAssertTrue(html.contains("<div class=\"errorbox\" role=\"alert\">\n<p class=\"errorhead\">Step ‘tunnel’ failed at 8.041 s</p>"))
        XCTAssertTrue(html.contains("<dt>Step</dt><dd>tunnel</dd><dt>At</dt><dd>8.041 s into the run</dd>"))
        XCTAssertTrue(html.contains("<dt>Error</dt><dd class=\"message\">cannot apply 100-loss on c-wl0: RTNETLINK answers: Specified qdisc kind is unknown &lt;netem&gt;</dd>"))
        XCTAssertTrue(html.contains("<dt>What to do</dt><dd>this kernel has no sch_netem: run `linkcond doctor`, or use --backend userspace</dd>"))

        // Outside a step, without a hint, with hostile text.
        let hostile = report([], duration: 5, errors: [RunError(step: nil, message: F.hostile + "\nline two", t: F.ns(3.5))])
        let page = HTMLReportWriter.render(hostile)
        XCTAssertTrue(page.contains("<p class=\"errorhead\">The run failed at 3.500 s</p>\n<dl><dt>At</dt>"))
        XCTAssertFalse(page.contains("<dt>What to do</dt>"))
        XCTAssertFalse(page.contains("<script"))
        XCTAssertTrue(page.contains("&lt;script&gt;alert(&quot;x&amp;y&quot;)&lt;/script&gt;"))
    }

    func testErrorBoxInMarkdown() {
        let markdown = MarkdownWriter.render(F.failedStep())
        XCTAssertTrue(markdown.contains("**Verdict: ERROR** — the run stopped: step 'tunnel' failed.\n"))
        XCTAssertTrue(
            markdown.contains(
                "> [!CAUTION]\n> **Step 'tunnel' failed at 8.041 s**\n>\n"
                    + "> **Error:** cannot apply 100-loss on c-wl0: RTNETLINK answers: Specified qdisc kind is unknown &lt;netem&gt;\n>\n"
                    + "> **What to do:** this kernel has no sch\\_netem: run \\`linkcond doctor\\`, or use --backend userspace\n\n"))

        // A hostile message with a line break stays inside the quote, and without a hint there is no hint line.
        let hostile = report([], duration: 5, errors: [RunError(step: nil, message: F.hostile + "\n# heading", t: F.ns(3.5))])
        let text = MarkdownWriter.render(hostile)
        XCTAssertTrue(text.contains("**Verdict: ERROR** — the run stopped: it failed outside a step.\n"))
        let box = text.components(separatedBy: "> [!CAUTION]\n")[1].components(separatedBy: "\n\n")[0]
        XCTAssertEqual(box.split(separator: "\n").count, 3)
        XCTAssertTrue(box.split(separator: "\n").allSatisfy { $0.hasPrefix(">") }, box)
        XCTAssertTrue(box.hasPrefix("> **The run failed at 3.500 s**"))
        XCTAssertFalse(text.contains("<script"))
        XCTAssertFalse(text.contains("What to do"))
    }

    // MARK: - Formatting

    func testBitRates() {
        XCTAssertEqual(Fmt.bitRate(850), "850 bit/s")
        XCTAssertEqual(Fmt.bitRate(512_000), "512 kbit/s")
        XCTAssertEqual(Fmt.bitRate(2_400_000), "2.4 Mbit/s")
        XCTAssertEqual(Fmt.bitRate(12_000_000), "12 Mbit/s")
        XCTAssertEqual(Fmt.bitRate(150_000_000), "150 Mbit/s")
        XCTAssertEqual(Fmt.bitRate(1_200_000_000), "1.2 Gbit/s")
        XCTAssertEqual(Fmt.bitRateTick(0), "0")
        XCTAssertEqual(Fmt.bitRateTick(500_000), "500k")
        XCTAssertEqual(Fmt.bitRateTick(2_500_000), "2.5M")
        XCTAssertEqual(Fmt.bitRateTick(15_000_000), "15M")
    }
}

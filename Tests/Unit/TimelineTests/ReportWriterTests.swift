import Foundation
import XCTest

#if canImport(FoundationXML)
    import FoundationXML
#endif

@testable import Timeline

/// The writers: well-formedness, content, escaping, self-containment, speed.
final class ReportWriterTests: XCTestCase {
    // MARK: - JUnit

    /// Parses JUnit XML with Foundation's XMLParser and collects what a CI reads.
    final class JUnitReader: NSObject, XMLParserDelegate {
        struct TestCase {
            var name: String
            var classname: String
            var time: String
            var failureMessage: String?
            var failureText = ""
        }

        var suites: [[String: String]] = []
        var cases: [TestCase] = []
        var properties: [String: String] = [:]
        private var inFailure = false
        var error: Error?

        static func parse(_ xml: String) -> JUnitReader {
            let reader = JUnitReader()
            let parser = XMLParser(data: Data(xml.utf8))
            parser.delegate = reader
            if !parser.parse() { reader.error = parser.parserError ?? NSError(domain: "xml", code: 1) }
            return reader
        }

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
            switch name {
            case "testsuite": suites.append(attributes)
            case "testcase": cases.append(TestCase(name: attributes["name"] ?? "", classname: attributes["classname"] ?? "", time: attributes["time"] ?? ""))
            case "failure":
                cases[cases.count - 1].failureMessage = attributes["message"]
                inFailure = true
            case "property": properties[attributes["name"] ?? ""] = attributes["value"]
            default: break
            }
        }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            if name == "failure" { inFailure = false }
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            if inFailure { cases[cases.count - 1].failureText += string }
        }
    }

    func testJUnitIsWellFormedWithOneCasePerExpectation() throws {
        let report = ReportFixtures.tunnel()
        let xml = JUnitWriter.render(report)
        let reader = JUnitReader.parse(xml)
        XCTAssertNil(reader.error, "\(String(describing: reader.error))")
        XCTAssertEqual(reader.suites.count, 1)
        XCTAssertEqual(reader.suites[0]["name"], "tunnel")
        XCTAssertEqual(reader.suites[0]["tests"], "3")
        XCTAssertEqual(reader.suites[0]["failures"], "1")
        XCTAssertEqual(reader.suites[0]["errors"], "0")
        XCTAssertEqual(reader.suites[0]["time"], "40.000")
        XCTAssertEqual(reader.cases.map(\.name), ["offline-in-tunnel", "path-stays-satisfied", "online-after-3g"])
        // The measured time of "within" rules, 0 for the others.
        XCTAssertEqual(reader.cases.map(\.time), ["6.102", "0.000", "3.108"])
        XCTAssertEqual(reader.cases.map(\.classname), Array(repeating: "linkcond.tunnel", count: 3))
        XCTAssertEqual(reader.cases.map(\.failureMessage), [nil, nil, "online at 23.108 s, 3.108 s after 'exit-3g' started (limit 2.500 s)"])
        XCTAssertTrue(reader.cases[2].failureText.contains("rule: reachability reaches online within 2.5 s of step 'exit-3g'"))
        XCTAssertTrue(reader.cases[2].failureText.contains("measured: 3.108 s"))
        XCTAssertTrue(reader.cases[2].failureText.contains("limit: 2.500 s"))
        XCTAssertEqual(reader.properties["sandbox"], "lc")
    }

    func testJUnitEscapesHostileStrings() {
        let report = ReportFixtures.hostileReport()
        let xml = JUnitWriter.render(report)
        XCTAssertFalse(xml.contains("<script"))
        let reader = JUnitReader.parse(xml)
        XCTAssertNil(reader.error, "\(String(describing: reader.error))\n\(xml)")
        // Names, messages (with a line break) and properties come back exactly.
        XCTAssertEqual(reader.cases.map(\.name), report.expectations.map(\.name))
        XCTAssertEqual(reader.suites.first?["name"], report.metadata.name)
        XCTAssertEqual(reader.cases[0].failureMessage, report.expectations[0].evidence)
        XCTAssertTrue(reader.cases[0].failureText.contains(report.expectations[0].rule))
        XCTAssertEqual(reader.properties["description"], report.metadata.description)
        XCTAssertEqual(reader.properties["observe"], report.metadata.observeCommand)
    }

    func testJUnitDropsCharactersXMLCannotHold() {
        var report = ReportFixtures.tunnel()
        report.expectations[2].evidence = "bell \u{07} nul \u{00} esc \u{1B} end"
        let xml = JUnitWriter.render(report)
        let reader = JUnitReader.parse(xml)
        XCTAssertNil(reader.error)
        XCTAssertEqual(reader.cases[2].failureMessage, "bell \u{FFFD} nul \u{FFFD} esc \u{FFFD} end")
    }

    func testJUnitWithoutExpectationsIsAnEmptySuite() {
        var report = ReportFixtures.tunnel()
        report.expectations = []
        let reader = JUnitReader.parse(JUnitWriter.render(report))
        XCTAssertNil(reader.error)
        XCTAssertEqual(reader.suites.first?["tests"], "0")
        XCTAssertTrue(reader.cases.isEmpty)
    }

    // MARK: - HTML

    func testHTMLIsSelfContained() {
        let report = ReportFixtures.tunnel()
        let html = HTMLReportWriter.render(report)
        XCTAssertFalse(html.contains("http://"), "no URL may appear when no event text has one")
        XCTAssertFalse(html.contains("https://"))
        XCTAssertFalse(html.contains("//"), "not even protocol-relative references")
        for forbidden in ["<script", "<link", "<iframe", "<img", "src=", "href=", "@import", "<object", "<embed"] {
            XCTAssertFalse(html.lowercased().contains(forbidden), forbidden)
        }
        // The only url() is the inline hatch pattern.
        var rest = html[...]
        while let range = rest.range(of: "url(") {
            XCTAssertTrue(rest[range.upperBound...].hasPrefix("#"), "url( must reference an inline fragment")
            rest = rest[range.upperBound...]
        }
    }

    func testHTMLURLsFromEventsStayText() {
        var report = ReportFixtures.tunnel()
        report.metadata.description = "probes http://server.linkcond.test/generate_204 and https://example.test/x?a=1&b=\"2\""
        report.events.append(ReportFixtures.app(30.5, "GET https://api.example.test/sync failed"))
        report.expectations[0].evidence = "portal at http://portal.linkcond.test/"
        let html = HTMLReportWriter.render(report)
        // Every URL occurrence is element text: preceded by text, never by an attribute or url(.
        for scheme in ["http://", "https://"] {
            var rest = html[...]
            while let range = rest.range(of: scheme) {
                let before = html[html.startIndex..<range.lowerBound].suffix(12)
                XCTAssertFalse(before.hasSuffix("\"") || before.hasSuffix("'") || before.hasSuffix("=") || before.hasSuffix("url("), "\(before)\(scheme)")
                rest = rest[range.upperBound...]
            }
        }
        XCTAssertTrue(html.contains("https://example.test/x?a=1&amp;b=&quot;2&quot;") || html.contains("https://example.test/x?a=1&amp;b=\"2\""))
        for forbidden in ["src=", "href=", "<script", "<link"] { XCTAssertFalse(html.contains(forbidden)) }
    }

    func testHTMLShowsLanesExpectationsAndMetrics() {
        let report = ReportFixtures.tunnel()
        let html = HTMLReportWriter.render(report)
        XCTAssertTrue(html.hasPrefix("<!DOCTYPE html>"))
        XCTAssertTrue(html.contains("<svg"))
        XCTAssertTrue(html.contains("</svg>"))
        for lane in ["Conditions", "Path", "Reachability", "App", "RTT (ms)", "Loss (%)"] {
            XCTAssertTrue(html.contains(">\(lane)<"), lane)
        }
        for expectation in report.expectations { XCTAssertTrue(html.contains(expectation.name), expectation.name) }
        for step in report.metadata.steps { XCTAssertTrue(html.contains(step.name), step.name) }
        XCTAssertTrue(html.contains("did not react"))
        XCTAssertTrue(html.contains("class=\"badge fail\">FAIL<"))
        XCTAssertTrue(html.contains("Drive into a tunnel: LTE, then 100 % loss for 12 s, out on 3G, back to LTE."))
        XCTAssertTrue(html.contains("offline</span> after <b>6.061 s</b>"), "reachability's reaction to the tunnel")
        XCTAssertTrue(html.contains("online after <b>3.072 s</b>"), "reachability's recovery after 3G")
        // Segments of the tunnel run are labelled.
        for label in [">lte<", ">100-loss<", ">3g<", ">satisfied<", ">offline<", ">online<"] {
            XCTAssertTrue(html.contains(label), label)
        }
        // Balanced SVG groups.
        XCTAssertEqual(html.components(separatedBy: "<g").count, html.components(separatedBy: "</g>").count)
    }

    func testHTMLPassBadge() {
        var report = ReportFixtures.tunnel()
        report.expectations.removeAll { !$0.passed }
        XCTAssertTrue(HTMLReportWriter.render(report).contains("class=\"badge pass\">PASS<"))
    }

    func testHTMLEscapesHostileStrings() {
        let report = ReportFixtures.hostileReport()
        let html = HTMLReportWriter.render(report)
        XCTAssertFalse(html.contains("<script"))
        XCTAssertFalse(html.contains("alert(\""))
        XCTAssertTrue(html.contains("&lt;script&gt;alert(&quot;x&amp;y&quot;)&lt;/script&gt; &#39;q&#39;"))
        // Every tag that opens is one of ours.
        let allowed: Set<String> = [
            "html", "head", "meta", "title", "style", "body", "header", "div", "h1", "h2", "span", "p", "dl", "dt", "dd", "section", "b", "em", "i",
            "br", "svg", "defs", "pattern", "rect", "g", "line", "text", "path", "circle", "table", "thead", "tbody", "tr", "th", "td", "details",
            "summary", "footer", "!DOCTYPE",
        ]
        var rest = html[...]
        while let open = rest.firstIndex(of: "<") {
            let after = rest[rest.index(after: open)...]
            let name = after.prefix { $0.isLetter || $0.isNumber || $0 == "!" || $0 == "/" }
            let tag = name.hasPrefix("/") ? String(name.dropFirst()) : String(name)
            XCTAssertTrue(allowed.contains(tag), "unexpected tag <\(name)")
            rest = after
        }
    }

    func testHTMLWithoutEventsStillRenders() {
        let report = RunReport(
            metadata: RunMetadata(name: "empty", description: "", sandbox: "lc", startedAt: "now", duration: 0, steps: []), events: [], expectations: [])
        let html = HTMLReportWriter.render(report)
        XCTAssertTrue(html.contains("<svg"))
        XCTAssertTrue(html.contains("no probe samples recorded"))
        XCTAssertTrue(html.contains("no expectations"))
    }

    func testLargeReportRendersQuicklyAndStaysSmall() throws {
        let report = ReportFixtures.large(count: 10_000)
        XCTAssertEqual(report.events.count, 10_000)
        let start = Date()
        let metrics = TimelineMetrics(report)
        let html = HTMLReportWriter.render(report, metrics: metrics)
        let elapsed = Date().timeIntervalSince(start)
        XCTAssertLessThan(elapsed, 1.0, "metrics + HTML of 10k events took \(elapsed) s")
        // Segments are merged and plots downsampled: the chart stays bounded, whatever the event count.
        let svg = html[html.range(of: "<svg")!.lowerBound..<html.range(of: "</svg>")!.upperBound]
        XCTAssertLessThan(svg.utf8.count, 1_500_000, "SVG is \(svg.utf8.count) bytes")
        XCTAssertLessThan(svg.components(separatedBy: "<rect").count, 4 * 700 + 200)
        XCTAssertTrue(html.contains("first \(HTMLReportWriter.eventLogLimit) shown"))
        XCTAssertTrue(html.contains("url(#flap)"), "merged segments are hatched")
        XCTAssertTrue(html.contains("min–max, median"), "RTT is downsampled")
    }

    // MARK: - Markdown

    func testMarkdownContent() {
        let report = ReportFixtures.tunnel()
        let markdown = MarkdownWriter.render(report)
        XCTAssertTrue(markdown.hasPrefix("# linkcond run: tunnel\n"))
        XCTAssertTrue(markdown.contains("**Verdict: FAIL** — 2 of 3 expectations passed."))
        XCTAssertTrue(markdown.contains("## Reaction times"))
        XCTAssertTrue(markdown.contains("| 2 | 8.041 | tunnel | lte → 100-loss | did not react (as expected: path-stays-satisfied) | offline after 6.061 s | offline after 6.959 s |"))
        for expectation in report.expectations { XCTAssertTrue(markdown.contains(expectation.name)) }
        XCTAssertTrue(markdown.contains("State changes over the run: conditions 3 · path 0 · reachability 3 · app 2."))
    }

    func testMarkdownEscapesHostileStrings() {
        let report = ReportFixtures.hostileReport()
        let markdown = MarkdownWriter.render(report)
        XCTAssertFalse(markdown.contains("<script"))
        XCTAssertTrue(markdown.contains("&lt;script&gt;alert(\"x&amp;y\")&lt;/script&gt;"))
        // A `|` in a name cannot add a column: every table row has as many unescaped bars as its header.
        var columns = 0
        var rows = 0
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            guard line.hasPrefix("|") else {
                columns = 0
                continue
            }
            let bars = unescapedBars(line)
            if columns == 0 {
                columns = bars  // the header
            } else {
                XCTAssertEqual(bars, columns, String(line))
                rows += 1
            }
        }
        XCTAssertGreaterThan(rows, 8)
        // A line break in the evidence stays in its row.
        XCTAssertFalse(markdown.contains("\nsecond line"))
    }

    private func unescapedBars(_ line: Substring) -> Int {
        var count = 0
        var escaped = false
        for character in line {
            if escaped { escaped = false; continue }
            if character == "\\" { escaped = true } else if character == "|" { count += 1 }
        }
        return count
    }

    // MARK: - JSON

    struct TimelineDocument: Decodable {
        var format: String
        var passed: Bool
        var metadata: RunMetadata
        var metrics: TimelineMetrics
        var expectations: [ExpectationResult]
        var events: [TimelineEvent]
    }

    func testJSONRoundTripsAndKeepsKeyOrder() throws {
        let report = ReportFixtures.tunnel()
        let json = try JSONReportWriter.render(report)
        let document = try JSONDecoder().decode(TimelineDocument.self, from: Data(json.utf8))
        XCTAssertEqual(document.format, "linkcond-timeline/1")
        XCTAssertFalse(document.passed)
        XCTAssertEqual(document.metadata, report.metadata)
        XCTAssertEqual(document.expectations, report.expectations)
        XCTAssertEqual(document.events, report.events)
        XCTAssertEqual(document.metrics, TimelineMetrics(report))
        // Fixed top-level order, and byte-identical on a second rendering.
        let keys = ["\"format\"", "\"passed\"", "\"metadata\"", "\"metrics\"", "\"expectations\"", "\"events\""]
        let positions = keys.map { json.range(of: "\n  \($0):")!.lowerBound }
        XCTAssertEqual(positions, positions.sorted())
        XCTAssertEqual(try JSONReportWriter.render(report), json)
        // One event a line.
        XCTAssertEqual(json.split(separator: "\n").filter { $0.hasPrefix("    {\"details\"") }.count, report.events.count)
    }

    func testJSONEscapesHostileStrings() throws {
        let report = ReportFixtures.hostileReport()
        let json = try JSONReportWriter.render(report)
        let document = try JSONDecoder().decode(TimelineDocument.self, from: Data(json.utf8))
        XCTAssertEqual(document.metadata, report.metadata)
        XCTAssertEqual(document.expectations, report.expectations)
        XCTAssertEqual(document.events, report.events)
    }

    // MARK: - All of them

    func testWriteProducesEveryReport() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("linkcond-reports-\(UUID().uuidString)/nested").path
        defer { try? FileManager.default.removeItem(atPath: (directory as NSString).deletingLastPathComponent) }
        let report = ReportFixtures.tunnel()
        let written = try ReportWriter.write(report, to: directory)
        XCTAssertEqual(written.map { ($0 as NSString).lastPathComponent }, ReportWriter.fileNames)
        for path in written {
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            XCTAssertGreaterThan(attributes[.size] as? Int ?? 0, 100, path)
        }
        XCTAssertEqual(try String(contentsOfFile: written[1], encoding: .utf8), JUnitWriter.render(report))
        XCTAssertEqual(try String(contentsOfFile: written[3], encoding: .utf8), MarkdownWriter.render(report))
        XCTAssertFalse(FileManager.default.fileExists(atPath: written[0] + ".tmp"))
        // Writing again replaces the files.
        XCTAssertEqual(try ReportWriter.write(report, to: directory), written)
    }

    func testWriteIntoAFileFails() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("linkcond-not-a-dir-\(UUID().uuidString)").path
        XCTAssertTrue(FileManager.default.createFile(atPath: file, contents: Data()))
        defer { try? FileManager.default.removeItem(atPath: file) }
        XCTAssertThrowsError(try ReportWriter.write(ReportFixtures.tunnel(), to: file)) { error in
            XCTAssertTrue("\(error)".contains(file), "\(error)")
        }
    }

    /// Renders the tunnel example. `LINKCOND_EXAMPLE_REPORT=/tmp/report-example swift test --filter
    /// TimelineTests.ReportWriterTests/testExampleReport` writes it where you can open it; otherwise it goes
    /// to a temporary directory that is removed. Screenshot it with
    /// `chromium --headless --no-sandbox --screenshot=/tmp/report-example/shot.png --window-size=1400,1800
    /// file:///tmp/report-example/timeline.html`.
    func testExampleReport() throws {
        let target = ProcessInfo.processInfo.environment["LINKCOND_EXAMPLE_REPORT"]
        let directory = target ?? FileManager.default.temporaryDirectory.appendingPathComponent("linkcond-example-\(UUID().uuidString)").path
        defer { if target == nil { try? FileManager.default.removeItem(atPath: directory) } }
        let written = try ReportWriter.write(ReportFixtures.tunnel(), to: directory)
        XCTAssertEqual(written.count, 4)
        // LINKCOND_EXAMPLE_REPORT_LARGE=DIR also writes the ten-minute, 10k-event run.
        if let large = ProcessInfo.processInfo.environment["LINKCOND_EXAMPLE_REPORT_LARGE"] {
            XCTAssertEqual(try ReportWriter.write(ReportFixtures.large(), to: large).count, 4)
        }
    }

    // MARK: - Helpers

    func testMarkupEscaping() {
        XCTAssertEqual(Markup.text("a<b>&\"c'"), "a&lt;b&gt;&amp;\"c'")
        XCTAssertEqual(Markup.attribute("a<b>&\"c'\n\t"), "a&lt;b&gt;&amp;&quot;c&#39;&#10;&#9;")
        XCTAssertEqual(Markup.text("plain text, ünïcode ✓"), "plain text, ünïcode ✓")
        XCTAssertEqual(Markup.text("x\u{01}y\u{FFFE}z\u{FEFF}"), "x\u{FFFD}y\u{FFFD}z\u{FEFF}")
        XCTAssertEqual(Markup.markdownCell("a|b\nc<d>"), "a\\|b c&lt;d&gt;")
        XCTAssertEqual(Markup.markdownText("# *x* [y]"), "\\# \\*x\\* \\[y\\]")
    }

    func testNumberFormatting() {
        XCTAssertEqual(Fmt.fixed(6.0124, 3), "6.012")
        XCTAssertEqual(Fmt.fixed(6.0125, 2), "6.01")
        XCTAssertEqual(Fmt.fixed(0.0006, 3), "0.001")
        XCTAssertEqual(Fmt.fixed(-1.25, 1), "-1.3")
        XCTAssertEqual(Fmt.fixed(-0.0001, 2), "0.00")
        XCTAssertEqual(Fmt.fixed(12, 0), "12")
        XCTAssertEqual(Fmt.runTime(8_041_000_000), "8.041")
        XCTAssertEqual(Fmt.duration(598_300_000_000), "9 min 58.3 s")
        XCTAssertEqual(Fmt.coord(12.0), "12")
        XCTAssertEqual(Fmt.coord(12.25), "12.3")
        XCTAssertEqual(TimeAxis.ticks(duration: 40).first, 0)
        XCTAssertEqual(TimeAxis.ticks(duration: 40).last, 40)
        XCTAssertEqual(TimeAxis.ticks(duration: 600).count, 11)
    }
}

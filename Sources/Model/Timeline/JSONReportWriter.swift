import Foundation

/// `timeline.json`: one JSON document with the run's metadata, metrics, expectations and events, for CIs
/// and scripts.
///
/// Top-level keys come in a fixed order — `format`, `passed`, `metadata`, `metrics`, `expectations`,
/// `events` — and every object below them has its keys sorted, so two reports of the same run are
/// byte-identical. Events are written one per line.
public enum JSONReportWriter {
    /// The format's version, bumped when a key changes meaning.
    public static let formatVersion = 1

    /// The document of `report`, its metrics computed here.
    public static func render(_ report: RunReport) throws(TimelineError) -> String {
        try render(report, metrics: TimelineMetrics(report))
    }

    /// The document of `report` with metrics already computed; throws when a value cannot be encoded.
    public static func render(_ report: RunReport, metrics: TimelineMetrics) throws(TimelineError) -> String {
        let pretty = JSONEncoder()
        pretty.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        let compact = JSONEncoder()
        compact.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]

        func encode<T: Encodable>(_ value: T, with encoder: JSONEncoder) throws(TimelineError) -> String {
            do {
                return String(decoding: try encoder.encode(value), as: UTF8.self)
            } catch {
                throw .encoding("\(error)")
            }
        }
        /// Pretty JSON nested one level: every line after the first indented by two spaces.
        func nested(_ json: String) -> String {
            json.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: "\n  ")
        }

        var out = "{\n"
        out += "  \"format\": \"linkcond-timeline/\(formatVersion)\",\n"
        out += "  \"passed\": \(report.passed),\n"
        out += "  \"metadata\": " + nested(try encode(report.metadata, with: pretty)) + ",\n"
        out += "  \"metrics\": " + nested(try encode(metrics, with: pretty)) + ",\n"
        out += "  \"expectations\": " + nested(try encode(report.expectations, with: pretty)) + ",\n"
        if report.events.isEmpty {
            out += "  \"events\": []\n"
        } else {
            out += "  \"events\": [\n"
            for (index, event) in report.events.enumerated() {
                out += "    " + (try encode(event, with: compact))
                out += index == report.events.count - 1 ? "\n" : ",\n"
            }
            out += "  ]\n"
        }
        out += "}\n"
        return out
    }
}

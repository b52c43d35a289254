import Foundation

/// One update of the path monitor or the prober as a line of JSON, the way `linkcond monitor --json` and the
/// control API's event stream write it: `{"event":{…},"lane":"path","t":1.234}` — the update as it encodes,
/// its lane (`path`, `reachability`), and `t`, seconds from `origin` to the update (`CLOCK_MONOTONIC`).
public enum UpdateLine {
    /// The line, without its newline; nil when the update cannot be encoded.
    public static func json<Update: Encodable>(lane: String, update: Update, time: UInt64, origin: UInt64) -> String? {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let seconds = Double(Int64(bitPattern: time &- origin)) / 1e9
        return (try? encoder.encode(Line(t: seconds, lane: lane, event: update))).map { String(decoding: $0, as: UTF8.self) }
    }
}

private struct Line<Event: Encodable>: Encodable {
    let t: Double
    let lane: String
    let event: Event
}

import Foundation

/// Detail keys of the events other layers record, as the report writers read them. All are optional:
/// event files written before a key existed render as they always did.
public enum TimelineDetail {
    /// `conditions-changed`: the client links the change applies to, comma-separated (`wifi`,
    /// `wifi,cellular`); absent means every link.
    public static let links = "links"
    /// `conditions-changed`: the traffic the change targets (`tcp 198.19.0.0/24 port 443; icmp 2001:2::/48`);
    /// absent means all traffic.
    public static let targets = "targets"
    /// `conditions-changed`: the backend that put it on the wire, `netem` or `userspace`.
    public static let backend = "backend"
    /// `conditions-changed` of a trace-driven profile: mean uplink rate of the trace (bits per second).
    public static let traceUplinkMeanBps = "traceUplinkMeanBps"
    /// `conditions-changed` of a trace-driven profile: mean downlink rate of the trace (bits per second).
    public static let traceDownlinkMeanBps = "traceDownlinkMeanBps"
    /// `conditions-changed` of a trace-driven profile: the uplink rate of each second of the trace, comma-separated
    /// bits per second; the trace loops from the event on until the next change of conditions.
    public static let traceUplinkRates = "traceUplinkRates"
    /// Like `traceUplinkRates`, downlink.
    public static let traceDownlinkRates = "traceDownlinkRates"
    /// `reachability-update`: the prober's state over IPv4 (`online`, `offline`, `portal`, `limited`, `unknown`).
    public static let ipv4 = "ipv4"
    /// `reachability-update`: the prober's state over IPv6.
    public static let ipv6 = "ipv6"
    /// `reachability-update`: true while online over one address family only.
    public static let singleFamily = "singleFamily"
}

/// A direction of a link, for trace rates.
public enum TraceDirection: String, Sendable, Codable, CaseIterable {
    /// Client to router.
    case uplink
    /// Router to client.
    case downlink

    /// The detail key holding this direction's per-second rates.
    var ratesKey: String { self == .uplink ? TimelineDetail.traceUplinkRates : TimelineDetail.traceDownlinkRates }
    /// The detail key holding this direction's mean rate.
    var meanKey: String { self == .uplink ? TimelineDetail.traceUplinkMeanBps : TimelineDetail.traceDownlinkMeanBps }
}

/// Where a change of conditions applies and how it was put on the wire, read from a `conditions-changed`
/// event's details.
struct ConditionScope: Equatable {
    /// The client links it applies to; nil: every link.
    var links: [String]?
    /// The traffic it targets; nil: all traffic.
    var targets: String?
    /// `netem` or `userspace`, when recorded.
    var backend: String?
    /// Mean rates of a trace-driven profile (bits per second).
    var uplinkMeanBps: Double?
    var downlinkMeanBps: Double?

    init(_ event: TimelineEvent) {
        let details = event.details
        links = Self.links(details[TimelineDetail.links]?.string)
        targets = details[TimelineDetail.targets]?.string.flatMap { $0.isEmpty ? nil : $0 }
        backend = details[TimelineDetail.backend]?.string.flatMap { $0.isEmpty ? nil : $0 }
        uplinkMeanBps = details[TimelineDetail.traceUplinkMeanBps]?.number
        downlinkMeanBps = details[TimelineDetail.traceDownlinkMeanBps]?.number
    }

    /// The scope a change of the metrics carries (read from its event).
    init(_ change: TimelineMetrics.ConditionChange) {
        links = change.links
        targets = change.targets
        backend = change.backend
        uplinkMeanBps = change.traceUplinkMeanBps
        downlinkMeanBps = change.traceDownlinkMeanBps
    }

    /// `"wifi, cellular"` → `["wifi", "cellular"]`; nil for nil, an empty string or only commas.
    static func links(_ text: String?) -> [String]? {
        guard let text else { return nil }
        let names = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        return names.isEmpty ? nil : names
    }

    /// True when the event says nothing beyond its profile: no links, targets, backend or trace.
    var isEmpty: Bool { links == nil && targets == nil && backend == nil && uplinkMeanBps == nil && downlinkMeanBps == nil }

    /// `wifi`, `wifi + cellular`; nil when the change applies to every link.
    var linksText: String? { links?.joined(separator: " + ") }

    /// A short line for tables and tooltips: `on wifi · tcp 198.19.0.0/24 port 443 · userspace · trace ↑ 2.4 Mbit/s ↓ 12 Mbit/s`.
    var summary: String? {
        var parts: [String] = []
        if let linksText { parts.append("on \(linksText)") }
        if let targets { parts.append("only \(targets)") }
        if let backend { parts.append(backend) }
        if let trace = traceText { parts.append(trace) }
        return parts.isEmpty ? nil : parts.joined(separator: " · ")
    }

    /// `trace ↑ 2.4 Mbit/s ↓ 12 Mbit/s` (either direction may be missing); nil without trace means.
    var traceText: String? {
        guard uplinkMeanBps != nil || downlinkMeanBps != nil else { return nil }
        var text = "trace mean"
        if let up = uplinkMeanBps { text += " ↑ " + Fmt.bitRate(up) }
        if let down = downlinkMeanBps { text += " ↓ " + Fmt.bitRate(down) }
        return text
    }
}

/// The rate a trace-driven profile allowed over the run, one value per second of the trace: from the
/// change that applied it, looping, until the next change of conditions or the end of the run.
struct TraceRateSeries: Equatable {
    /// One second of the trace: the rate from `t` until the next point (or the end of its run).
    struct Point: Equatable {
        var t: UInt64
        var bps: Double
    }

    /// One application of a trace.
    struct Run: Equatable {
        /// Run time (ns) of the change that applied it.
        var start: UInt64
        /// Run time (ns) of the next change of conditions, or the end of the run.
        var end: UInt64
        /// The per-second rates, in time order, the first at `start`.
        var points: [Point]
    }

    var direction: TraceDirection
    var runs: [Run]

    var isEmpty: Bool { runs.isEmpty }

    /// The series of `direction` from `events` (time-ordered), up to `end` (ns).
    init(_ direction: TraceDirection, events: [TimelineEvent], end: UInt64) {
        self.direction = direction
        let changes = events.filter { $0.lane == .conditions && $0.kind == TimelineKind.conditionsChanged }
        var runs: [Run] = []
        for (index, change) in changes.enumerated() {
            guard let text = change.details[direction.ratesKey]?.string else { continue }
            let rates = Self.rates(text)
            let stop = index + 1 < changes.count ? changes[index + 1].t : Swift.max(end, change.t)
            guard !rates.isEmpty, stop > change.t else { continue }
            var points: [Point] = []
            var second: UInt64 = 0
            while change.t + second * 1_000_000_000 < stop {
                points.append(Point(t: change.t + second * 1_000_000_000, bps: rates[Int(second % UInt64(rates.count))]))
                second += 1
            }
            runs.append(Run(start: change.t, end: stop, points: points))
        }
        self.runs = runs
    }

    /// `"12000000, 11500000"` → `[12000000, 11500000]`; entries that are not a finite, non-negative number are
    /// left out.
    static func rates(_ text: String) -> [Double] {
        text.split(separator: ",").compactMap { entry in
            guard let value = Double(entry.trimmingCharacters(in: .whitespaces)), value.isFinite, value >= 0 else { return nil }
            return value
        }
    }
}

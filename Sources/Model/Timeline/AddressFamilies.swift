/// An IP address family, as `reachability-update` events report it.
enum AddressFamily: String, CaseIterable {
    case ipv4
    case ipv6

    /// `IPv4`, `IPv6`.
    var title: String { self == .ipv4 ? "IPv4" : "IPv6" }
    /// The detail key holding the family's state.
    var key: String { self == .ipv4 ? TimelineDetail.ipv4 : TimelineDetail.ipv6 }
    /// The other family.
    var other: AddressFamily { self == .ipv4 ? .ipv6 : .ipv4 }
}

extension TimelineMetrics {
    /// A period in which the prober was online over one address family only.
    public struct SingleFamilyPeriod: Sendable, Codable, Equatable {
        /// Run time (ns) it began: the update that reported it.
        public var start: UInt64
        /// Run time (ns) it ended: the next update that did not report it, or the end of the run.
        public var end: UInt64
        /// The family that was online (`ipv4`, `ipv6`), nil when the update did not say which.
        public var family: String?
        /// The other family's state at the start (`offline`, `portal`, …), nil when not reported.
        public var otherState: String?

        /// A period as given.
        public init(start: UInt64, end: UInt64, family: String?, otherState: String?) {
            self.start = start
            self.end = end
            self.family = family
            self.otherState = otherState
        }

        /// `online over IPv4 only (IPv6 offline)`, `online over one family only`.
        public var text: String {
            guard let family = family.flatMap(AddressFamily.init(rawValue:)) else { return "online over one family only" }
            return "online over \(family.title) only" + (otherState.map { " (\(family.other.title) \($0))" } ?? "")
        }
    }
}

/// Reachability per address family, from the `ipv4`, `ipv6` and `singleFamily` details of
/// `reachability-update` events. An update that does not carry a family's state leaves it as it was.
enum FamilyReachability {
    /// One state of one family, from the update that reported it to the next different one (or the end).
    struct Span: Equatable {
        var start: UInt64
        var end: UInt64
        var state: String
    }

    static func isUpdate(_ event: TimelineEvent) -> Bool {
        event.lane == .reachability && event.kind == TimelineKind.reachabilityUpdate
    }

    /// The non-empty state of `family` an event reports, if any.
    static func state(_ family: AddressFamily, of event: TimelineEvent) -> String? {
        guard let state = event.details[family.key]?.string, !state.isEmpty else { return nil }
        return state
    }

    /// True when any update carries a family's state or `singleFamily`.
    static func isRecorded(in events: [TimelineEvent]) -> Bool {
        events.contains { isUpdate($0) && carriesFamilies($0) }
    }

    static func carriesFamilies(_ event: TimelineEvent) -> Bool {
        state(.ipv4, of: event) != nil || state(.ipv6, of: event) != nil || event.details[TimelineDetail.singleFamily]?.bool != nil
    }

    /// The states of `family` over the run, equal consecutive states merged; `events` in time order.
    static func spans(_ family: AddressFamily, events: [TimelineEvent], end: UInt64) -> [Span] {
        var spans: [Span] = []
        for event in events where isUpdate(event) {
            guard let state = state(family, of: event) else { continue }
            if let last = spans.last, last.state == state { continue }
            if !spans.isEmpty { spans[spans.count - 1].end = event.t }
            spans.append(Span(start: event.t, end: Swift.max(end, event.t), state: state))
        }
        return spans
    }

    /// The periods online over one family only. An update's `singleFamily` decides; without it, an update
    /// that leaves both families known decides by whether exactly one of them is `online`.
    static func singleFamilyPeriods(events: [TimelineEvent], end: UInt64) -> [TimelineMetrics.SingleFamilyPeriod] {
        var current: [AddressFamily: String] = [:]
        var periods: [TimelineMetrics.SingleFamilyPeriod] = []
        var open: TimelineMetrics.SingleFamilyPeriod?
        for event in events where isUpdate(event) && carriesFamilies(event) {
            for family in AddressFamily.allCases {
                if let state = state(family, of: event) { current[family] = state }
            }
            let online = AddressFamily.allCases.filter { current[$0] == "online" }
            let bothKnown = current.count == AddressFamily.allCases.count
            let single = event.details[TimelineDetail.singleFamily]?.bool ?? (bothKnown && online.count == 1)
            let family = online.count == 1 ? online[0] : nil
            if let period = open, !single || period.family != family?.rawValue {
                periods.append(TimelineMetrics.SingleFamilyPeriod(start: period.start, end: event.t, family: period.family, otherState: period.otherState))
                open = nil
            }
            if single && open == nil {
                open = TimelineMetrics.SingleFamilyPeriod(
                    start: event.t, end: end, family: family?.rawValue, otherState: family.flatMap { current[$0.other] })
            }
        }
        if let period = open {
            periods.append(TimelineMetrics.SingleFamilyPeriod(start: period.start, end: Swift.max(end, period.start), family: period.family, otherState: period.otherState))
        }
        return periods
    }
}

import CMnl

/// Why an active queue's packets were dropped, from its own counters (`TCA_STATS_APP`), in the terms
/// `tc -s qdisc show` prints them: for codel `drop_overlimit` and `ecn_mark`, for pie `dropped`,
/// `overlimit` and `ecn_mark`, for red `early`, `pdrop`, `other` and `marked`.
public struct QdiscDropReasons: Sendable, Equatable {
    /// Packets dropped because the queue was full (its limit): codel's `drop_overlimit`, pie's
    /// `overlimit`, red's `pdrop`.
    public var limit: UInt64
    /// Packets the discipline itself dropped to keep the queue short: codel's drops besides those at the
    /// limit (its `drops` less `drop_overlimit`), pie's `dropped`, red's `early` (with its `other`).
    public var early: UInt64
    /// Packets marked ECN Congestion Experienced instead of dropped: `ecn_mark`, red's `marked`.
    public var ecnMarked: UInt64

    /// The reasons.
    public init(limit: UInt64, early: UInt64, ecnMarked: UInt64) {
        self.limit = limit
        self.early = early
        self.ecnMarked = ecnMarked
    }
}

extension Qdisc {
    /// The drop reasons of a `codel`, `pie` or `red` qdisc from its ``applicationStatistics``; nil for
    /// other kinds, or when the kernel sent none (or fewer bytes than the kind's struct).
    public var dropReasons: QdiscDropReasons? {
        let bytes = applicationStatistics
        switch kind {
        case "codel":
            guard let stats = bytes.load(tc_codel_xstats.self, at: 0) else { return nil }
            let limit = UInt64(stats.drop_overlimit)
            let drops = UInt64(statistics.drops)
            return QdiscDropReasons(limit: limit, early: drops > limit ? drops - limit : 0, ecnMarked: UInt64(stats.ecn_mark))
        case "pie":
            guard let stats = bytes.load(tc_pie_xstats.self, at: 0) else { return nil }
            return QdiscDropReasons(limit: UInt64(stats.overlimit), early: UInt64(stats.dropped), ecnMarked: UInt64(stats.ecn_mark))
        case "red":
            guard let stats = bytes.load(tc_red_xstats.self, at: 0) else { return nil }
            return QdiscDropReasons(limit: UInt64(stats.pdrop), early: UInt64(stats.early) + UInt64(stats.other), ecnMarked: UInt64(stats.marked))
        default:
            return nil
        }
    }
}

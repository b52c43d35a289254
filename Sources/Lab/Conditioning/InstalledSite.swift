import JSONDocument
import Profiles

/// What one site holds, read back from where the conditions live (the kernel's qdiscs, or the engine), in
/// profile terms whichever backend holds it: what `linkcond show` prints.
public struct InstalledSite: Sendable, Equatable {
    /// One stage of the site: a qdisc (netem, prio, pfifo) or one of the engine's classes (`main`, `dns`).
    public struct Stage: Sendable, Equatable {
        /// `netem`, `prio`, `pfifo`, `engine`.
        public var kind: String
        /// The qdisc's handle, or the engine class's name.
        public var handle: String
        /// The qdisc's parent, or `-` for the engine.
        public var parent: String
        /// What the stage does to packets, in the profile's terms; nil for a stage that only sorts (prio)
        /// or passes (pfifo). For netem, decoded from what the kernel reports — and, when that is exactly
        /// what the recorded profile maps to, that profile's own conditions (its distribution, which the
        /// kernel does not report, and its loss as written). The DNS class holds the DNS delay in its delay.
        public var conditions: LinkConditions?
        /// The queue limit in force, in packets.
        public var limit: UInt32?
        /// Whether the stage holds what the state file records for its link: true when it does, false when
        /// the kernel or the engine holds something else (changed behind linkcond's back, or an apply that
        /// did not finish), nil when nothing is recorded to compare with.
        public var agreesWithRecord: Bool?
        /// Frames sent on.
        public var sentPackets: UInt64
        /// Bytes sent on.
        public var sentBytes: UInt64
        /// Frames dropped (lost and queue-dropped together, as netem counts them).
        public var dropped: UInt64
        /// Frames the shaper held back (netem's overlimits); 0 for the engine.
        public var overlimits: UInt64
        /// Bytes waiting now.
        public var backlogBytes: UInt64
        /// Frames waiting now.
        public var backlogPackets: UInt64
        /// The engine's own counters, which netem does not keep apart; nil for qdiscs.
        public var engine: EngineCounters?

        /// A stage with its counters.
        public init(
            kind: String, handle: String, parent: String, conditions: LinkConditions?, limit: UInt32? = nil, agreesWithRecord: Bool? = nil,
            sentPackets: UInt64, sentBytes: UInt64, dropped: UInt64, overlimits: UInt64, backlogBytes: UInt64, backlogPackets: UInt64,
            engine: EngineCounters? = nil
        ) {
            self.kind = kind
            self.handle = handle
            self.parent = parent
            self.conditions = conditions
            self.limit = limit
            self.agreesWithRecord = agreesWithRecord
            self.sentPackets = sentPackets
            self.sentBytes = sentBytes
            self.dropped = dropped
            self.overlimits = overlimits
            self.backlogBytes = backlogBytes
            self.backlogPackets = backlogPackets
            self.engine = engine
        }

        /// The conditions as `show` prints them (``ConditionsText``).
        public var text: String? { conditions.map { ConditionsText.describe($0, limit: limit) } }
    }

    /// Counters the userspace engine keeps per direction beyond netem's.
    public struct EngineCounters: Sendable, Equatable {
        /// Frames the loss model dropped.
        public var lost: UInt64
        /// Frames tail-dropped by a full queue.
        public var queueDropped: UInt64
        /// Extra copies sent.
        public var duplicated: UInt64
        /// Frames with a flipped bit.
        public var corrupted: UInt64
        /// Frames sent ahead of earlier ones.
        public var reordered: UInt64
        /// Frames marked ECN Congestion Experienced instead of dropped.
        public var ecnMarked: UInt64
        /// Frames the kernel dropped before the engine read them (its receive ring was full: the engine
        /// fell behind the arrivals). Zero on a link the engine keeps up with.
        public var receiveOverruns: UInt64
        /// Frames the kernel refused to send on (the far end was down).
        public var sendFailures: UInt64
        /// Frames longer than the engine's receive slots that could not be read whole either, dropped.
        public var truncated: UInt64
        /// Frames longer than the sending end's MTU lets through, dropped.
        public var oversized: UInt64

        /// The engine's extra counters.
        public init(
            lost: UInt64, queueDropped: UInt64, duplicated: UInt64, corrupted: UInt64, reordered: UInt64, ecnMarked: UInt64,
            receiveOverruns: UInt64 = 0, sendFailures: UInt64 = 0, truncated: UInt64 = 0, oversized: UInt64 = 0
        ) {
            self.lost = lost
            self.queueDropped = queueDropped
            self.duplicated = duplicated
            self.corrupted = corrupted
            self.reordered = reordered
            self.ecnMarked = ecnMarked
            self.receiveOverruns = receiveOverruns
            self.sendFailures = sendFailures
            self.truncated = truncated
            self.oversized = oversized
        }
    }

    /// The site.
    public var site: ConditionSite
    /// Its stages, in order.
    public var stages: [Stage]

    /// What `site` holds.
    public init(site: ConditionSite, stages: [Stage]) {
        self.site = site
        self.stages = stages
    }

    /// The site as `show --json` writes it: the conditions in the profile format's own words.
    public var json: JSONValue {
        .object([
            ("direction", .string(site.direction.rawValue)), ("link", .string(site.link)), ("namespace", .string(site.namespace)),
            ("interface", .string(site.interface)), ("stages", .array(stages.map(\.json))),
        ])
    }
}

extension InstalledSite.Stage {
    /// The stage as `show --json` writes it.
    public var json: JSONValue {
        func count(_ value: UInt64) -> JSONValue { .number(JSONNumber(value: Double(value), literal: String(value))) }
        var members: [(key: String, value: JSONValue)] = [("kind", .string(kind)), ("handle", .string(handle)), ("parent", .string(parent))]
        if let conditions {
            members.append(("conditions", ProfileParser.json(of: conditions)))
            members.append(("text", .string(ConditionsText.describe(conditions, limit: limit))))
        }
        if let limit { members.append(("limit", count(UInt64(limit)))) }
        if let agreesWithRecord { members.append(("agreesWithRecord", .bool(agreesWithRecord))) }
        members += [
            ("sentPackets", count(sentPackets)), ("sentBytes", count(sentBytes)), ("dropped", count(dropped)),
            ("overlimits", count(overlimits)), ("backlogPackets", count(backlogPackets)), ("backlogBytes", count(backlogBytes)),
        ]
        if let engine {
            var counters: [(key: String, value: JSONValue)] = [
                ("lost", count(engine.lost)), ("queueDropped", count(engine.queueDropped)), ("duplicated", count(engine.duplicated)),
                ("corrupted", count(engine.corrupted)), ("reordered", count(engine.reordered)), ("ecnMarked", count(engine.ecnMarked)),
                ("receiveOverruns", count(engine.receiveOverruns)), ("sendFailures", count(engine.sendFailures)),
            ]
            // The I/O's drops for length, only when there were any.
            if engine.truncated > 0 { counters.append(("truncated", count(engine.truncated))) }
            if engine.oversized > 0 { counters.append(("oversized", count(engine.oversized))) }
            members.append(("engine", .object(counters)))
        }
        return .object(members)
    }
}

/// Link conditions as `linkcond show` writes them for either backend: tc's order and words, with the
/// profile's own forms — `delay 30ms ± 10ms uniform`, `loss 3% 25%` as a profile writes a correlated loss,
/// `rate 240kbit`, `limit 120`.
public enum ConditionsText {
    /// `conditions` in one line; `limit` is the queue limit in force when the conditions leave it derived.
    public static func describe(_ conditions: LinkConditions, limit: UInt32? = nil) -> String {
        let percent = Quantity.formatPercentage
        func chance(_ probability: Double, _ correlation: Double) -> String {
            percent(probability) + (correlation > 0 ? " " + percent(correlation) : "")
        }
        var words: [String] = []
        if let trace = conditions.trace {
            let summary = trace.summary
            words.append(
                "trace \(trace.file ?? trace.path ?? "(in memory)") (\(Quantity.formatRate(UInt64(summary.meanRate.rounded()))) mean over "
                    + "\(Quantity.formatTime(summary.duration)), \(summary.opportunities) opportunities)")
        }
        if let rate = conditions.rate { words.append("rate \(Quantity.formatRate(rate))") }
        var delay = "delay \(Quantity.formatTime(conditions.delay))"
        if conditions.jitter > 0 {
            delay += " ± \(Quantity.formatTime(conditions.jitter)) \((conditions.distribution ?? .uniform).rawValue)"
            if conditions.delayCorrelation > 0 { delay += " \(percent(conditions.delayCorrelation))" }
        }
        words.append(delay)
        switch conditions.loss {
        case nil: break
        case let .random(probability, correlation)?: words.append("loss \(chance(probability, correlation))")
        case let .gilbertElliott(p, r, oneMinusH, oneMinusK)?:
            words.append("loss gilbert-elliott p \(percent(p)) r \(percent(r)) 1-h \(percent(oneMinusH)) 1-k \(percent(oneMinusK))")
        case let .fourState(p13, p31, p32, p23, p14)?:
            words.append("loss 4-state p13 \(percent(p13)) p31 \(percent(p31)) p32 \(percent(p32)) p23 \(percent(p23)) p14 \(percent(p14))")
        }
        if conditions.ecn { words.append("ecn") }
        if let duplicate = conditions.duplicate { words.append("duplicate \(chance(duplicate.probability, duplicate.correlation))") }
        if let corrupt = conditions.corrupt { words.append("corrupt \(chance(corrupt.probability, corrupt.correlation))") }
        if let reorder = conditions.reorder, reorder.probability > 0 {
            words.append("reorder \(chance(reorder.probability, reorder.correlation))" + (reorder.gap > 1 ? " gap \(reorder.gap)" : ""))
        }
        if let slot = conditions.slot {
            var text = "slot \(Quantity.formatTime(slot.minDelay))"
            if slot.maxDelay != slot.minDelay { text += "–\(Quantity.formatTime(slot.maxDelay))" }
            if let packets = slot.packets { text += " packets \(packets)" }
            if let bytes = slot.bytes { text += " bytes \(bytes)" }
            words.append(text)
        }
        if let queueLimit = conditions.queueLimit ?? limit { words.append("limit \(queueLimit)") }
        return words.joined(separator: " ")
    }
}

import EngineControl
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
        /// Why an active queue qdisc (codel, pie, red) dropped, from its own counters; nil for other stages.
        public var queueDrops: QueueDrops?
        /// What the reader should know about this stage (the backend cannot hold part of the profile as
        /// written, for example).
        public var notes: [String] = []

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

    /// Why a kernel queue discipline dropped packets (`tc -s qdisc show`'s `drop_overlimit`/`overlimit`/`pdrop`,
    /// its early drops, `ecn_mark`/`marked`), since the qdisc was made: each apply makes it anew.
    public struct QueueDrops: Sendable, Equatable {
        /// `codel`, `pie` or `red`: the name its own drops go by, as in the engine's queue drops.
        public var discipline: String
        /// Packets dropped because the queue was full.
        public var tail: UInt64
        /// Packets the discipline dropped to keep the queue short.
        public var early: UInt64
        /// Packets marked ECN Congestion Experienced instead.
        public var ecnMarked: UInt64

        /// The reasons of `discipline`.
        public init(discipline: String, tail: UInt64, early: UInt64, ecnMarked: UInt64) {
            self.discipline = discipline
            self.tail = tail
            self.early = early
            self.ecnMarked = ecnMarked
        }

        /// `queue drops: tail 3, codel 12, ECN-marked 0`.
        public var text: String { "queue drops: tail \(tail), \(discipline) \(early), ECN-marked \(ecnMarked)" }
    }

    /// Counters the userspace engine keeps per direction beyond netem's, since the conditions were last
    /// applied (``totals``: since the engine started).
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
        /// Of ``queueDropped``, arriving frames a full queue dropped (its limit; the held-bytes bound included).
        public var tailDropped: UInt64 = 0
        /// Of ``queueDropped``, the oldest frames a DropHead queue dropped to make room.
        public var headDropped: UInt64 = 0
        /// Of ``queueDropped``, frames CoDel dropped.
        public var codelDropped: UInt64 = 0
        /// Of ``queueDropped``, frames PIE dropped early.
        public var pieDropped: UInt64 = 0
        /// Of ``queueDropped``, frames RED dropped.
        public var redDropped: UInt64 = 0
        /// Frames that waited for an earlier one so as not to overtake it (ordered jitter).
        public var orderHolds: UInt64 = 0
        /// Frames that left before an earlier one (the netem jitter model).
        public var jitterReordered: UInt64 = 0
        /// How long frames waited in the queue since the conditions were applied (frames measured, median,
        /// 99th percentile, maximum, nanoseconds); nil when none has.
        public var sojourn: EngineLateness?
        /// The main counters since the engine started, for comparison with those since the last apply:
        /// frames offered, sent on, lost and queue-dropped; nil when the engine does not report them.
        public var totals: Totals?

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

        /// The main counters since the engine started.
        public struct Totals: Sendable, Equatable {
            /// Frames offered.
            public var offered: UInt64
            /// Frames sent on.
            public var sent: UInt64
            /// Frames the loss model dropped.
            public var lost: UInt64
            /// Frames the queue dropped.
            public var queueDropped: UInt64

            /// The totals.
            public init(offered: UInt64, sent: UInt64, lost: UInt64, queueDropped: UInt64) {
                self.offered = offered
                self.sent = sent
                self.lost = lost
                self.queueDropped = queueDropped
            }
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
            counters.append((
                "queueDrops",
                .object([
                    ("tail", count(engine.tailDropped)), ("head", count(engine.headDropped)), ("codel", count(engine.codelDropped)),
                    ("pie", count(engine.pieDropped)), ("red", count(engine.redDropped)),
                ])))
            counters += [("orderHolds", count(engine.orderHolds)), ("jitterReordered", count(engine.jitterReordered))]
            if let sojourn = engine.sojourn {
                counters.append((
                    "sojourn",
                    .object([
                        ("count", count(sojourn.count)), ("median", count(sojourn.median)), ("p99", count(sojourn.p99)),
                        ("maximum", count(sojourn.maximum)),
                    ])))
            }
            if let totals = engine.totals {
                counters.append((
                    "sinceUp",
                    .object([
                        ("offered", count(totals.offered)), ("sent", count(totals.sent)), ("lost", count(totals.lost)),
                        ("queueDropped", count(totals.queueDropped)),
                    ])))
            }
            members.append(("engine", .object(counters)))
        }
        if let queueDrops {
            members.append((
                "queueDrops",
                .object([("tail", count(queueDrops.tail)), (queueDrops.discipline, count(queueDrops.early)), ("ecnMarked", count(queueDrops.ecnMarked))])))
        }
        if !notes.isEmpty { members.append(("notes", .array(notes.map(JSONValue.string)))) }
        return .object(members)
    }
}

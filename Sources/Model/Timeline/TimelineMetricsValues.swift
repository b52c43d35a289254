/// The values `TimelineMetrics` is made of: reactions, recoveries, changes of conditions, counts, RTT
/// statistics and intervals.
extension TimelineMetrics {
    /// How one lane answered one change of conditions.
    public struct Reaction: Sendable, Codable, Equatable {
        /// The lane that reacted (or did not).
        public var lane: TimelineLane
        /// The lane's state when conditions changed (nil: it had reported none yet).
        public var before: String?
        /// The state it changed to; nil when it did not react.
        public var state: String?
        /// Seconds from the change to the reaction.
        public var delay: Double?
        /// Run time (ns) of the reaction.
        public var t: UInt64?

        /// A reaction; without `state` it is "did not react".
        public init(lane: TimelineLane, before: String?, state: String? = nil, delay: Double? = nil, t: UInt64? = nil) {
            self.lane = lane
            self.before = before
            self.state = state
            self.delay = delay
            self.t = t
        }

        /// True when the lane changed state within the window.
        public var reacted: Bool { state != nil }

        /// "offline after 6.012 s" or "did not react".
        public var text: String {
            guard let state, let delay else { return "did not react" }
            return "\(state) after \(Fmt.seconds(delay))"
        }
    }

    /// Whether, and how fast, a lane got back to its good state after a change of conditions.
    public struct Recovery: Sendable, Codable, Equatable {
        /// How a recovery ended.
        public enum Outcome: String, Sendable, Codable, Equatable {
            /// Back in the good state `delay` seconds after the change.
            case recovered
            /// Not in the good state at the end of the window.
            case notRecovered = "not-recovered"
            /// In the good state throughout the window: nothing to recover from.
            case stayedGood = "stayed-good"
            /// The lane reported no state at all up to the end of the window.
            case noData = "no-data"
        }

        /// The lane that recovered (or did not).
        public var lane: TimelineLane
        /// The state it recovers to (`satisfied`, `online`).
        public var goodState: String
        /// Whether it recovered.
        public var outcome: Outcome
        /// Seconds from the change until the lane was back in its good state.
        public var delay: Double?
        /// Run time (ns) it was back.
        public var t: UInt64?

        /// A recovery; `delay` and `t` only when `outcome` is `.recovered`.
        public init(lane: TimelineLane, goodState: String, outcome: Outcome, delay: Double? = nil, t: UInt64? = nil) {
            self.lane = lane
            self.goodState = goodState
            self.outcome = outcome
            self.delay = delay
            self.t = t
        }

        /// "online after 3.004 s", "not online by the next change", "stayed online", "no data".
        public var text: String {
            switch outcome {
            case .recovered: "\(goodState) after \(Fmt.seconds(delay ?? 0))"
            case .notRecovered: "not \(goodState) before the next change"
            case .stayedGood: "stayed \(goodState)"
            case .noData: "no data"
            }
        }
    }

    /// One change of conditions and what followed it.
    public struct ConditionChange: Sendable, Codable, Equatable {
        /// 1-based, in run order.
        public var index: Int
        /// Run time (ns) of the change.
        public var t: UInt64
        /// End of the window the reactions are looked for in: the next change, or the end of the run (ns).
        public var windowEnd: UInt64
        /// The step it happened in.
        public var step: String?
        /// What was on the wire before (nil for the first change).
        public var from: String?
        /// What is on the wire now.
        public var to: String
        /// The profile the event names, nil when none (a link taken down).
        public var profile: String?
        /// What caused it, e.g. `apply 3g`.
        public var action: String?
        /// How long the netlink transaction took (ms), when recorded.
        public var netlinkMs: Double?
        /// One per `TimelineMetrics.reactionLanes`.
        public var reactions: [Reaction]
        /// One per reaction lane that has a good state (path, reachability).
        public var recoveries: [Recovery]
        /// The client links it applies to (`wifi`, `cellular`); nil: every link.
        public var links: [String]?
        /// The traffic it targets (`tcp 198.19.0.0/24 port 443`); nil: all traffic.
        public var targets: String?
        /// The backend that put it on the wire (`netem`, `userspace`), when recorded.
        public var backend: String?
        /// Mean uplink rate of a trace-driven profile (bits per second).
        public var traceUplinkMeanBps: Double?
        /// Mean downlink rate of a trace-driven profile (bits per second).
        public var traceDownlinkMeanBps: Double?

        /// The reaction of `lane`, nil for a lane whose reactions are not measured.
        public func reaction(_ lane: TimelineLane) -> Reaction? { reactions.first { $0.lane == lane } }
        /// The recovery of `lane`, nil for a lane without a good state.
        public func recovery(_ lane: TimelineLane) -> Recovery? { recoveries.first { $0.lane == lane } }
    }

    /// State changes of one lane.
    public struct LaneCount: Sendable, Codable, Equatable {
        /// The lane counted.
        public var lane: TimelineLane
        /// Its state changes.
        public var count: Int

        /// A count of `lane`.
        public init(lane: TimelineLane, count: Int) {
            self.lane = lane
            self.count = count
        }
    }

    /// RTT statistics (milliseconds) of successful samples.
    public struct RTTStats: Sendable, Codable, Equatable {
        /// Successful samples.
        public var count: Int
        /// Lowest RTT.
        public var min: Double
        /// Median RTT (interpolated).
        public var median: Double
        /// 95th percentile (interpolated).
        public var p95: Double
        /// Highest RTT.
        public var max: Double

        /// Statistics as given.
        public init(count: Int, min: Double, median: Double, p95: Double, max: Double) {
            self.count = count
            self.min = min
            self.median = median
            self.p95 = p95
            self.max = max
        }

        /// Statistics of `values`, nil when there are none.
        public init?(_ values: [Double]) {
            guard !values.isEmpty else { return nil }
            let sorted = values.sorted()
            self.init(
                count: sorted.count, min: sorted[0], median: Self.quantile(sorted, 0.5), p95: Self.quantile(sorted, 0.95),
                max: sorted[sorted.count - 1])
        }

        /// Linear interpolation between closest ranks (position `q * (n - 1)`), `sorted` ascending.
        public static func quantile(_ sorted: [Double], _ q: Double) -> Double {
            precondition(!sorted.isEmpty)
            let position = q * Double(sorted.count - 1)
            let lower = Int(position.rounded(.down))
            let upper = Swift.min(lower + 1, sorted.count - 1)
            let fraction = position - Double(lower)
            return sorted[lower] + (sorted[upper] - sorted[lower]) * fraction
        }
    }

    /// Probe statistics and state changes within one step (or the whole run).
    public struct Interval: Sendable, Codable, Equatable {
        /// The step's name, or `whole run`.
        public var name: String
        /// Run time (ns).
        public var start: UInt64
        /// Run time (ns) of the end; the last step and the whole run include it.
        public var end: UInt64
        /// Probe samples in the interval.
        public var samples: Int
        /// Failed probe samples in the interval.
        public var failures: Int
        /// failures / samples, nil without samples.
        public var loss: Double?
        /// RTT of the successful samples, nil without any.
        public var rtt: RTTStats?
        /// One per `TimelineMetrics.flapLanes`.
        public var flaps: [LaneCount]

        /// State changes of `lane` in the interval.
        public func flaps(_ lane: TimelineLane) -> Int { flaps.first { $0.lane == lane }?.count ?? 0 }
    }
}

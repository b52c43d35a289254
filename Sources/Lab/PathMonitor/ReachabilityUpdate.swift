/// One delivered reachability update: sent after every round of every family, so RTT and loss samples are
/// visible even while the state stays the same.
///
/// The overall fields (``state``, ``previousState``, ``quality``, ``medianRTT``, ``lossFraction``,
/// ``windowRounds``) combine the families (``OverallReachability``): online when either family works, with
/// ``isSingleFamily`` set when only one does; the samples are the best family's. The round fields
/// (``family``, ``outcome``, ``results``, ``consecutiveFailures``, ``nextRoundIn``) are those of the round
/// that produced this update. ``ipv4`` and ``ipv6`` hold each probed family's latest conclusion.
public struct ReachabilityUpdate: Sendable, Codable, Equatable {
    /// The overall state.
    public var state: ReachabilityState
    /// The overall state before this round (equal to ``state`` when the round changed nothing).
    public var previousState: ReachabilityState
    /// What this round found.
    public var outcome: ProbeOutcome
    /// The link quality of the best family (``OverallReachability/primary``).
    public var quality: LinkQuality
    /// The best family's median TCP connect time, in seconds, over the rounds in its quality window that got one.
    public var medianRTT: Double?
    /// Fraction of the best family's rounds in its quality window that were failures (0 ... 1).
    public var lossFraction: Double
    /// Rounds in the best family's quality window so far (up to ``ReachabilitySettings/qualityWindow``).
    public var windowRounds: Int
    /// This round's probes, in the order they ended.
    public var results: [ProbeResult]
    /// This round's family's failed rounds in a row, this one included (0 after a success).
    public var consecutiveFailures: Int
    /// Seconds until this round's family starts its next round.
    public var nextRoundIn: Double
    /// Monotonic time (CLOCK_MONOTONIC, nanoseconds) when the update was made, just after the round ended.
    public var time: UInt64
    /// The prober's generation: bumped by every `start`, so updates of an earlier run can be told apart.
    public var generation: UInt64
    /// Counts updates (rounds of any family) within a generation, from 0.
    public var round: UInt64
    /// The family whose round this is.
    public var family: ReachabilityFamily
    /// IPv4's latest conclusion; nil when IPv4 is not probed or has not finished a round yet.
    public var ipv4: FamilyReachability?
    /// IPv6's latest conclusion; nil when IPv6 is not probed or has not finished a round yet.
    public var ipv6: FamilyReachability?
    /// True when the overall online rests on one family while the other has concluded it is not online
    /// (``OverallReachability/isSingleFamily``).
    public var isSingleFamily: Bool

    /// True when this round changed the overall state.
    public var isStateChange: Bool { state != previousState }

    /// The latest conclusion of `family`, if it has one.
    public func reachability(of family: ReachabilityFamily) -> FamilyReachability? {
        family == .ipv4 ? ipv4 : ipv6
    }

    /// An update, field by field. The per-family fields default to a single IPv4 round without conclusions,
    /// as updates were before the prober probed each family.
    public init(
        state: ReachabilityState, previousState: ReachabilityState, outcome: ProbeOutcome, quality: LinkQuality,
        medianRTT: Double?, lossFraction: Double, windowRounds: Int, results: [ProbeResult], consecutiveFailures: Int,
        nextRoundIn: Double, time: UInt64, generation: UInt64, round: UInt64, family: ReachabilityFamily = .ipv4,
        ipv4: FamilyReachability? = nil, ipv6: FamilyReachability? = nil, isSingleFamily: Bool = false
    ) {
        self.state = state
        self.previousState = previousState
        self.outcome = outcome
        self.quality = quality
        self.medianRTT = medianRTT
        self.lossFraction = lossFraction
        self.windowRounds = windowRounds
        self.results = results
        self.consecutiveFailures = consecutiveFailures
        self.nextRoundIn = nextRoundIn
        self.time = time
        self.generation = generation
        self.round = round
        self.family = family
        self.ipv4 = ipv4
        self.ipv6 = ipv6
        self.isSingleFamily = isSingleFamily
    }
}

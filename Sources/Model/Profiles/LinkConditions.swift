/// The conditions on one direction of a link, as the user meant them: rates in bits per second, times
/// in nanoseconds, probabilities as fractions from 0 to 1. Turning them into netem's wire values
/// (scaled 32-bit probabilities, bytes per second) is the backend's job.
public struct LinkConditions: Sendable, Equatable {
    /// The bandwidth in bits per second; `nil` leaves it unlimited.
    public var rate: UInt64?
    /// The delay added to every packet, in nanoseconds.
    public var delay: UInt64
    /// How far the delay varies either way, in nanoseconds (it may exceed `delay`; packets are then
    /// sent with no delay rather than a negative one).
    public var jitter: UInt64
    /// How much each delay depends on the previous one, 0 to 1; needs `jitter`.
    public var delayCorrelation: Double
    /// The shape of the jitter; `nil` is netem's default (uniform). Needs `delay` and `jitter`.
    public var distribution: DelayDistribution?
    /// How the jitter varies from frame to frame; `nil` is the default, ``JitterModel/ordered`` (see
    /// ``effectiveJitterModel``). Needs `jitter`.
    public var jitterModel: JitterModel?
    /// Which packets are dropped; `nil` drops none.
    public var loss: LossModel?
    /// How often a packet is sent twice.
    public var duplicate: Chance?
    /// How often a packet gets a flipped bit.
    public var corrupt: Chance?
    /// How often a packet is sent at once, ahead of the delayed ones; needs `delay`.
    public var reorder: Reorder?
    /// Packets leave in bursts ("slots"), as on Wi-Fi or cellular links.
    public var slot: Slot?
    /// The queue length in packets (a DropTail queue); `nil` lets the backend derive it from the
    /// bandwidth-delay product. Not with ``queue``.
    public var queueLimit: UInt32?
    /// The queue's discipline and limit (see ``LinkQueue``); `nil` for a DropTail of ``queueLimit``
    /// packets (see ``effectiveQueue(extraDelay:)``). Needs a `rate` or a `trace` (a `slot` for DropTail).
    public var queue: LinkQueue?
    /// Mark packets with ECN Congestion Experienced instead of dropping them (ECN-capable traffic only);
    /// needs `loss`.
    public var ecn: Bool
    /// Deliveries follow a recorded trace (Mahimahi's format) instead of `rate`: each opportunity carries
    /// 1500 bytes. Only the userspace engine has it.
    public var trace: DeliveryTrace?
    /// The delay follows a trace in steps instead of `delay` (jitter, if any, varies around it). Only the
    /// userspace engine has it.
    public var delayTrace: StepTrace?
    /// The random loss follows a trace in steps instead of `loss`. Only the userspace engine has it.
    public var lossTrace: StepTrace?

    /// Conditions with the given values; the defaults add nothing.
    public init(
        rate: UInt64? = nil, delay: UInt64 = 0, jitter: UInt64 = 0, delayCorrelation: Double = 0,
        distribution: DelayDistribution? = nil, jitterModel: JitterModel? = nil, loss: LossModel? = nil, duplicate: Chance? = nil,
        corrupt: Chance? = nil, reorder: Reorder? = nil, slot: Slot? = nil, queueLimit: UInt32? = nil,
        queue: LinkQueue? = nil, ecn: Bool = false, trace: DeliveryTrace? = nil, delayTrace: StepTrace? = nil,
        lossTrace: StepTrace? = nil
    ) {
        self.rate = rate
        self.delay = delay
        self.jitter = jitter
        self.delayCorrelation = delayCorrelation
        self.distribution = distribution
        self.jitterModel = jitterModel
        self.loss = loss
        self.duplicate = duplicate
        self.corrupt = corrupt
        self.reorder = reorder
        self.slot = slot
        self.queueLimit = queueLimit
        self.queue = queue
        self.ecn = ecn
        self.trace = trace
        self.delayTrace = delayTrace
        self.lossTrace = lossTrace
    }

    /// The jitter model in force: ``jitterModel``, or ``JitterModel/ordered`` when the profile names none.
    public var effectiveJitterModel: JitterModel { jitterModel ?? .ordered }

    /// No conditions at all.
    public static let unconditioned = LinkConditions()

    /// Whether these conditions change nothing a packet would notice: no rate, delay, jitter or slot,
    /// and no loss, duplication, corruption or reordering with a probability above 0. A queue limit, a
    /// queue, `ecn`, a distribution, a jitter model or a correlation alone are neutral.
    public var isNeutral: Bool {
        rate == nil && trace == nil && delayTrace == nil && (lossTrace?.maximum ?? 0) == 0 && delay == 0 && jitter == 0 && slot == nil && (loss?.dropsNothing ?? true)
            && (duplicate?.probability ?? 0) == 0 && (corrupt?.probability ?? 0) == 0
            && (reorder?.probability ?? 0) == 0
    }
}

/// The shape of the delay variation (netem's `distribution`).
public enum DelayDistribution: String, Sendable, Equatable, CaseIterable {
    /// Evenly spread over delay ± jitter (netem's default).
    case uniform
    /// A normal distribution with standard deviation `jitter`.
    case normal
    /// A Pareto distribution: a long tail of large delays.
    case pareto
    /// A mix of Pareto and normal.
    case paretonormal
}

/// How a direction's delay varies from one frame to the next (`"jitterModel"`).
public enum JitterModel: String, Sendable, Equatable, CaseIterable {
    /// The delay follows a smooth random process in time whose value at any instant has the profile's
    /// distribution (mean `delay`, spread `jitter`): frames close together get close delays, so they stay in
    /// order, and the measured mean and spread are the profile's at any packet rate. The jitter correlation
    /// lengthens the process's correlation time. Only the userspace engine has it.
    case ordered
    /// netem's model: every packet draws its delay independently (with netem's correlation), and a packet
    /// may leave before an earlier one whose delay was longer (netem reorders on jitter).
    case netem
}

/// Which packets are dropped. All probabilities are fractions from 0 to 1.
public enum LossModel: Sendable, Equatable {
    /// Each packet is dropped with `probability`; `correlation` (0 to 1) makes a drop more likely right
    /// after a drop (netem's `loss random PERCENT CORRELATION`).
    case random(probability: Double, correlation: Double)
    /// The Gilbert-Elliott model: a good and a bad state; `p` moves from good to bad, `r` from bad to good,
    /// `oneMinusH` is the loss probability in the bad state and `oneMinusK` in the good state
    /// (netem's `loss gemodel p r 1-h 1-k`).
    case gilbertElliott(p: Double, r: Double, oneMinusH: Double, oneMinusK: Double)
    /// The 4-state Markov model: 1 = received in a gap, 2 = received in a burst, 3 = lost in a burst,
    /// 4 = isolated loss; `pXY` moves from state X to state Y (netem's `loss state p13 p31 p32 p23 p14`).
    case fourState(p13: Double, p31: Double, p32: Double, p23: Double, p14: Double)

    /// Whether the model can never drop a packet.
    public var dropsNothing: Bool {
        switch self {
        case .random(let probability, _): probability == 0
        case .gilbertElliott(let p, _, _, let oneMinusK): p == 0 && oneMinusK == 0
        case .fourState(let p13, _, _, _, let p14): p13 == 0 && p14 == 0
        }
    }
}

/// A probability with a correlation, for duplication and corruption. Both are fractions from 0 to 1.
public struct Chance: Sendable, Equatable {
    /// How often it happens.
    public var probability: Double
    /// How much each decision depends on the previous one; 0 means independent.
    public var correlation: Double

    /// A chance of `probability` with `correlation`.
    public init(_ probability: Double, correlation: Double = 0) {
        self.probability = probability
        self.correlation = correlation
    }
}

/// Reordering: some packets skip the delay and overtake the ones before them.
public struct Reorder: Sendable, Equatable {
    /// How often an eligible packet is sent at once, 0 to 1.
    public var probability: Double
    /// How much each decision depends on the previous one, 0 to 1.
    public var correlation: Double
    /// Every `gap`-th packet is eligible (1: every packet), netem's `gap`.
    public var gap: UInt32

    /// Reordering with `probability`, `correlation` and `gap`.
    public init(_ probability: Double, correlation: Double = 0, gap: UInt32 = 1) {
        self.probability = probability
        self.correlation = correlation
        self.gap = gap
    }
}

/// Slotting (netem's `slot`): packets wait for the next slot, which opens after a delay between
/// `minDelay` and `maxDelay`, and each slot carries at most `packets` packets and `bytes` bytes.
public struct Slot: Sendable, Equatable {
    /// The shortest time between slots, in nanoseconds.
    public var minDelay: UInt64
    /// The longest time between slots, in nanoseconds; at least `minDelay`.
    public var maxDelay: UInt64
    /// The most packets a slot carries; `nil` for no limit.
    public var packets: UInt32?
    /// The most bytes a slot carries; `nil` for no limit.
    public var bytes: UInt32?

    /// A slot every `minDelay` to `maxDelay` nanoseconds (`maxDelay` defaults to `minDelay`).
    public init(minDelay: UInt64, maxDelay: UInt64? = nil, packets: UInt32? = nil, bytes: UInt32? = nil) {
        self.minDelay = minDelay
        self.maxDelay = maxDelay ?? minDelay
        self.packets = packets
        self.bytes = bytes
    }
}

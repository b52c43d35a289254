#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A direction's queue: where frames wait for the link's rate (or trace), how much it holds, and what it
/// drops (the profile's `"queue"`).
///
/// The queue is the transmitter's: frames in the propagation delay line are not in it. Its discipline
/// decides which frames are dropped and when: DropTail and DropHead when it is full, CoDel (RFC 8289) by
/// the time frames spend in it, PIE (RFC 8033) by a drop probability steered by that time, RED (Floyd and
/// Jacobson, 1993; ARED: Floyd, Gummadi and Shenker, 2001) by the average queue length. Every discipline
/// also has a hard limit, beyond which arriving frames are tail-dropped.
public struct LinkQueue: Sendable, Equatable {
    /// How frames are dropped.
    public var discipline: QueueDiscipline
    /// The most the queue holds.
    public var limit: QueueCapacity

    /// A queue with `discipline` and `limit`; the limit defaults to the discipline's (1000 packets for CoDel
    /// and PIE, as Linux; four times the maximum threshold for RED; DropTail and DropHead have none).
    public init(_ discipline: QueueDiscipline, limit: QueueCapacity? = nil) {
        self.discipline = discipline
        self.limit = limit ?? discipline.defaultLimit ?? .packets(1000)
    }

    /// A DropTail queue of `limit`.
    public static func dropTail(_ limit: QueueCapacity) -> LinkQueue { LinkQueue(.dropTail, limit: limit) }
}

/// How much a queue holds.
public enum QueueCapacity: Sendable, Equatable, CustomStringConvertible {
    /// Frames (`"1000 packets"`), whatever their size.
    case packets(UInt32)
    /// Bytes of whole frames, Ethernet header included (`"64KB"`).
    case bytes(UInt64)
    /// Time: a frame is dropped on arrival when it would wait longer than this before the transmitter
    /// takes it (`"250ms"`); the equivalent of a byte limit of rate × time that follows a changing rate.
    case time(UInt64)

    /// Whether the limit counts packets.
    public var isPackets: Bool {
        if case .packets = self { return true }
        return false
    }

    /// As a profile writes it: `1000 packets`, `64KB`, `250ms`.
    public var description: String {
        switch self {
        case .packets(let count): count == 1 ? "1 packet" : "\(count) packets"
        case .bytes(let bytes): Quantity.formatSize(bytes)
        case .time(let nanoseconds): Quantity.formatTime(nanoseconds)
        }
    }

    /// What a capacity looks like, for messages.
    public static let expectation =
        "a queue limit such as \"1000 packets\", \"64KB\" (B, KB, MB, KiB or MiB) or \"250ms\""

    /// Reads `"1000 packets"` (or `"1 packet"`), a size (`"64KB"`, see ``Quantity/size(_:)``) or a time
    /// (`"250ms"`).
    public static func parse(_ text: String) throws(QuantityError) -> QueueCapacity {
        for suffix in [" packets", " packet"] where text.hasSuffix(suffix) {
            let digits = text.dropLast(suffix.count)
            guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else {
                throw QuantityError(.invalid, problem: "\(Quantity.quoted(text)) is not a number of packets", expected: expectation)
            }
            guard let count = UInt32(digits) else {
                throw QuantityError(.outOfRange, problem: "\(Quantity.quoted(text)) is out of range", expected: "at most \(UInt32.max) packets")
            }
            return .packets(count)
        }
        if text.hasSuffix("packets") || text.hasSuffix("packet") {
            throw QuantityError(
                .invalid, problem: "\(Quantity.quoted(text)) has no space before the unit",
                expected: "a number of packets with a space: \(Quantity.quoted(text.replacingPacketsUnit()))")
        }
        let unit = String(text.drop { ($0.isASCII && $0.isNumber) || $0 == "." })
        if ["ns", "us", "ms", "s"].contains(unit) || text == "0" { return .time(try Quantity.time(text)) }
        return .bytes(try Quantity.size(text))
    }
}

extension String {
    fileprivate func replacingPacketsUnit() -> String {
        let digits = prefix { $0.isASCII && $0.isNumber }
        return "\(digits) \(digits == "1" ? "packet" : "packets")"
    }
}

/// How a queue drops frames.
public enum QueueDiscipline: Sendable, Equatable {
    /// Drops the arriving frame when the queue is full (`pfifo`, `bfifo`; netem's `limit`).
    case dropTail
    /// Drops the oldest waiting frame to make room for the arriving one (`pfifo_head_drop`; Mahimahi's
    /// `drophead`).
    case dropHead
    /// CoDel (RFC 8289): drops at the head once frames have waited more than `target` for an `interval`,
    /// then more often (interval/√count) until the waiting time falls below the target.
    case codel(CoDelSettings)
    /// PIE (RFC 8033, as Linux's `sch_pie`): drops arriving frames with a probability updated every
    /// `tupdate` from the queueing delay's distance to `target` and its trend.
    case pie(PIESettings)
    /// RED or, when adaptive, ARED: drops arriving frames with a probability that grows with the average
    /// queue length between two thresholds (bytes).
    case red(REDSettings)

    /// The name a profile uses: `droptail`, `drophead`, `codel`, `pie`, `red`.
    public var name: String {
        switch self {
        case .dropTail: "droptail"
        case .dropHead: "drophead"
        case .codel: "codel"
        case .pie: "pie"
        case .red: "red"
        }
    }

    /// The names, in the order a profile's error lists them.
    public static let names = ["droptail", "drophead", "codel", "pie", "red"]

    /// The limit when a profile gives none: 1000 packets for CoDel and PIE (Linux's defaults), four times
    /// the maximum threshold for RED; none for DropTail and DropHead (a limit is their whole meaning).
    public var defaultLimit: QueueCapacity? {
        switch self {
        case .dropTail, .dropHead: nil
        case .codel, .pie: .packets(1000)
        case .red(let settings): .bytes(4 * settings.maximum)
        }
    }
}

/// CoDel's parameters (RFC 8289, section 4.2; Linux's `codel` defaults).
public struct CoDelSettings: Sendable, Equatable {
    /// The acceptable standing queueing delay, nanoseconds (default 5 ms).
    public var target: UInt64
    /// How long the delay must stay above the target before dropping starts, and the base of the drop
    /// schedule, nanoseconds (default 100 ms).
    public var interval: UInt64

    /// CoDel with `target` and `interval` (RFC 8289's 5 ms and 100 ms by default).
    public init(target: UInt64 = 5_000_000, interval: UInt64 = 100_000_000) {
        self.target = target
        self.interval = interval
    }
}

/// PIE's parameters (RFC 8033, section 5; Linux's `pie` defaults).
public struct PIESettings: Sendable, Equatable {
    /// The target queueing delay, nanoseconds (QDELAY_REF, default 15 ms).
    public var target: UInt64
    /// How often the drop probability is updated, nanoseconds (T_UPDATE, default 15 ms).
    public var updateInterval: UInt64
    /// The weight of the delay's distance to the target, per second (default 0.125).
    public var alpha: Double
    /// The weight of the delay's trend, per second (default 1.25).
    public var beta: Double

    /// PIE with RFC 8033's defaults unless given.
    public init(target: UInt64 = 15_000_000, updateInterval: UInt64 = 15_000_000, alpha: Double = 0.125, beta: Double = 1.25) {
        self.target = target
        self.updateInterval = updateInterval
        self.alpha = alpha
        self.beta = beta
    }
}

/// RED's parameters, as tc's `red` takes them (thresholds in bytes, `avpkt` 1000 bytes).
public struct REDSettings: Sendable, Equatable {
    /// The average queue length in bytes below which nothing is dropped (tc's `min`).
    public var minimum: UInt64
    /// The average queue length in bytes above which every arriving frame is dropped (tc's `max`).
    public var maximum: UInt64
    /// The drop probability at the maximum threshold (tc's `probability`, default 2%); ARED adapts it
    /// between 1% and 50%.
    public var probability: Double
    /// ARED: every 500 ms the probability rises (by at most 1%) while the average is above the middle
    /// fifth of the thresholds' range and falls (× 0.9) while it is below.
    public var adaptive: Bool
    /// The burst the average may absorb, in average packets (tc's `burst`); `nil` for tc's default,
    /// (2 × min + max) / (3 × avpkt). It sets the averaging weight (see ``weightLog``).
    public var burst: UInt32?

    /// The average packet size RED assumes, bytes (tc's default `avpkt`).
    public static let averagePacket: UInt64 = 1000

    /// RED between `minimum` and `maximum` bytes.
    public init(minimum: UInt64, maximum: UInt64, probability: Double = 0.02, adaptive: Bool = false, burst: UInt32? = nil) {
        self.minimum = minimum
        self.maximum = maximum
        self.probability = probability
        self.adaptive = adaptive
        self.burst = burst
    }

    /// The burst in force: ``burst`` or tc's default.
    public var effectiveBurst: UInt32 {
        burst ?? UInt32(clamping: (2 * minimum + maximum) / (3 * Self.averagePacket))
    }

    /// The averaging weight W = 2^−weightLog, chosen as tc does (`tc_red_eval_ewma`): the smallest log
    /// for which a burst of `burst` packets into an empty queue keeps the average below `min`, i.e.
    /// burst + 1 − min/avpkt ≤ (1 − (1 − W)^burst) / W. `nil` when no weight qualifies (the burst is below
    /// min/avpkt).
    public var weightLog: Int? {
        let burst = Double(effectiveBurst)
        let a = burst + 1 - Double(minimum) / Double(Self.averagePacket)
        guard a >= 1 else { return nil }
        var weight = 0.5
        for log in 1..<32 {
            if a <= (1 - pow(1 - weight, burst)) / weight { return log }
            weight /= 2
        }
        return nil
    }

    /// The burst that gives the averaging weight 2^−`weightLog` (what a kernel's red reports, its `Wlog`;
    /// the burst itself is not kept): `nil` when tc's default burst gives it, else the smallest burst that
    /// does — every burst tc maps to the same weight makes the same queue. Still `nil` when no burst does.
    public func burst(givingWeightLog weightLog: Int) -> UInt32? {
        var probe = self
        probe.burst = nil
        if probe.weightLog == weightLog { return nil }
        // The weight's log never falls as the burst grows: the first burst that reaches it.
        var low = UInt32(clamping: 1 + minimum / Self.averagePacket)
        var high = UInt32.max
        while low < high {
            let middle = low + (high - low) / 2
            probe.burst = middle
            // No weight at all for a burst this large: past every log there is.
            if probe.weightLog.map({ $0 >= weightLog }) ?? true { high = middle } else { low = middle + 1 }
        }
        probe.burst = low
        return probe.weightLog == weightLog ? low : nil
    }
}

extension LinkConditions {
    /// The queue in force: ``queue``, or a DropTail of ``queueLimit`` packets (derived from the
    /// bandwidth-delay product when the profile sets neither, see ``derivedQueueLimit(extraDelay:)``).
    public func effectiveQueue(extraDelay: UInt64 = 0) -> LinkQueue {
        queue ?? .dropTail(.packets(effectiveQueueLimit(extraDelay: extraDelay)))
    }
}

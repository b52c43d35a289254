#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Profiles

/// RED's state, as Linux's `sch_red` runs it (`include/net/red.h`): an exponentially weighted average of
/// the queue length in bytes, taken at each arrival (W = 2^−Wlog, see ``REDSettings/weightLog``) and
/// decayed over idle time as if small packets had been sent; between the thresholds an arriving frame is
/// dropped once (avg − min) × count reaches a uniform draw from [0, (max − min)/maxP) — Floyd's count
/// method, which spreads drops evenly —, above the maximum always. With `adaptive` (ARED), maxP moves
/// every 500 ms towards keeping the average in the middle fifth of the range.
struct REDController {
    /// What RED decided for an arriving frame.
    enum Decision {
        case enqueue
        /// Dropped between the thresholds.
        case probabilistic
        /// Dropped above the maximum threshold.
        case forced
    }

    let minimum: Double
    let maximum: Double
    let weight: Double
    let adaptive: Bool
    /// The time to send one average packet (1000 bytes) at the link's rate, nanoseconds: the unit of idle
    /// decay.
    let averagePacketTime: Double
    /// The drop probability at the maximum threshold; ARED moves it.
    private(set) var maxProbability: Double
    /// The average queue length, bytes.
    private(set) var average = 0.0
    private var count = -1
    private var threshold = 0.0
    private var idleSince: MonotonicNanoseconds?
    /// When ARED next adapts maxP; nil without ARED or before the first frame.
    private(set) var nextAdaptation: MonotonicNanoseconds?

    /// ARED's period.
    static let adaptationPeriod: UInt64 = 500_000_000

    /// RED with `settings` on a link of `rate` bits/s (10 Mbit/s, tc's default `bandwidth`, without one).
    init(_ settings: REDSettings, rate: UInt64?) {
        minimum = Double(settings.minimum)
        maximum = Double(settings.maximum)
        weight = 1 / Double(UInt64(1) << UInt64(settings.weightLog ?? 9))
        adaptive = settings.adaptive
        maxProbability = settings.probability
        averagePacketTime = Double(REDSettings.averagePacket * 8) * 1e9 / Double(max(rate ?? 10_000_000, 1))
        idleSince = 0
    }

    /// The average after `now`'s idle time (if the queue is idle): ×(1 − W)^m, m the average packets the
    /// link could have sent.
    private func decayed(at now: MonotonicNanoseconds) -> Double {
        guard let idleSince, now > idleSince, average > 0 else { return average }
        let packets = Double(now - idleSince) / averagePacketTime
        return average * pow(1 - weight, packets)
    }

    /// The decision for a frame arriving at `now` with `backlogBytes` queued.
    mutating func arrival(backlogBytes: UInt64, at now: MonotonicNanoseconds, _ random: inout EmulatorRandom) -> Decision {
        if adaptive, nextAdaptation == nil { nextAdaptation = now + Self.adaptationPeriod }
        average = decayed(at: now)
        idleSince = nil
        average += weight * (Double(backlogBytes) - average)
        if average < minimum {
            count = -1
            return .enqueue
        }
        if average >= maximum {
            count = -1
            return .forced
        }
        count += 1
        if count == 0 {
            threshold = draw(&random)
            return .enqueue
        }
        if (average - minimum) * Double(count) < threshold { return .enqueue }
        count = 0
        threshold = draw(&random)
        return .probabilistic
    }

    private func draw(_ random: inout EmulatorRandom) -> Double {
        Double(random.next() >> 11) * 0x1p-53 * (maximum - minimum) / maxProbability
    }

    /// The queue went empty at `now`.
    mutating func becameIdle(at now: MonotonicNanoseconds) {
        if idleSince == nil { idleSince = now }
    }

    /// ARED's step at ``nextAdaptation``: up by min(1%, maxP/4) above the band (while maxP ≤ 50%), down
    /// by 10% below it (while maxP ≥ 1%).
    mutating func adapt() {
        guard let due = nextAdaptation else { return }
        nextAdaptation = due + Self.adaptationPeriod
        let current = decayed(at: due)
        let band = maximum - minimum
        if current > minimum + 0.6 * band && maxProbability <= 0.5 {
            maxProbability += min(0.01, maxProbability / 4)
        } else if current < minimum + 0.4 * band && maxProbability >= 0.01 {
            maxProbability *= 0.9
        }
    }

    /// Runs the adaptations of an idle queue due before `time` in few steps: the average only decays, so
    /// maxP falls by 10% a step until it reaches 1% (or the average is back in the band, which idle time
    /// never does), then nothing changes.
    mutating func idle(until time: MonotonicNanoseconds) {
        while let due = nextAdaptation, due <= time {
            let before = maxProbability
            adapt()
            if maxProbability == before, let next = nextAdaptation, next <= time {
                nextAdaptation = next + (time - next) / Self.adaptationPeriod * Self.adaptationPeriod
                if nextAdaptation! <= time { nextAdaptation! += Self.adaptationPeriod }
                return
            }
        }
    }
}

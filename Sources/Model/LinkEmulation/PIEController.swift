#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Profiles

/// PIE's state, as Linux's `sch_pie` runs RFC 8033 with timestamps (its default, `dq_rate_estimator` off):
/// the queueing delay is the sojourn of the frame last taken from the queue; every `tupdate` the drop
/// probability moves by alpha × (delay − target) + beta × (delay − previous delay), scaled down while it
/// is small; arriving frames are dropped with that probability, de-randomized by an accumulator, except
/// during the burst allowance (150 ms after an idle start), below half the target with a low probability,
/// or with fewer than two full frames queued.
struct PIEController {
    let settings: PIESettings
    /// The drop probability, 0 to 1.
    private(set) var probability = 0.0
    private var accumulated = 0.0
    /// The current and previous queueing delay estimates, nanoseconds.
    private(set) var delay: UInt64 = 0
    private var previousDelay: UInt64 = 0
    private var burstTime: UInt64 = PIEController.maximumBurst
    private var lastDequeue: MonotonicNanoseconds?
    /// When the next probability update is due; nil before the first frame.
    private(set) var nextUpdate: MonotonicNanoseconds?

    /// The burst allowance (RFC 8033's MAX_BURST).
    static let maximumBurst: UInt64 = 150_000_000

    init(_ settings: PIESettings) {
        self.settings = settings
    }

    /// Starts the update clock at the first frame.
    mutating func start(at now: MonotonicNanoseconds) {
        if nextUpdate == nil { nextUpdate = now + settings.updateInterval }
    }

    /// `pie_drop_early`: whether the frame arriving with `backlogBytes` already queued is dropped.
    mutating func dropsArrival(backlogBytes: UInt64, maxPacket: UInt64, _ random: inout EmulatorRandom) -> Bool {
        if burstTime > 0 { return false }
        if delay < settings.target / 2 && probability < 0.2 { return false }
        if backlogBytes < 2 * maxPacket { return false }
        if probability == 0 { accumulated = 0 } else { accumulated += probability }
        if accumulated < 0.85 { return false }
        if accumulated >= 8.5 { return dropped() }
        let draw = Double(random.next() >> 11) * 0x1p-53
        return draw < probability ? dropped() : false
    }

    private mutating func dropped() -> Bool {
        accumulated = 0
        return true
    }

    /// A frame dropped at arrival for another reason (a full queue) resets the accumulator, as Linux does.
    mutating func droppedAtLimit() { accumulated = 0 }

    /// `pie_process_dequeue`: the frame taken at `now` waited `sojourn`; `queueEmpty` when none is left.
    mutating func dequeued(sojourn: UInt64, at now: MonotonicNanoseconds, queueEmpty: Bool) {
        delay = queueEmpty ? 0 : sojourn
        let elapsed = lastDequeue.map { now > $0 ? now - $0 : 0 } ?? 0
        lastDequeue = now
        burstTime = burstTime > elapsed ? burstTime - elapsed : 0
    }

    /// `calculate_probability`, due at ``nextUpdate``, with `backlogBytes` queued.
    mutating func update(backlogBytes: UInt64) {
        guard let due = nextUpdate else { return }
        nextUpdate = due + settings.updateInterval
        let current = delay
        var updateProbability = !(current == 0 && backlogBytes != 0)
        var scale = 1.0
        if probability < 0.1 {
            scale = 0.5
            var power = 0.01
            while probability < power && power >= 1e-6 {
                scale /= 4
                power /= 10
            }
        }
        let seconds = 1e-9
        var delta = scale * (settings.alpha * (Double(current) - Double(settings.target)) * seconds
            + settings.beta * (Double(current) - Double(previousDelay)) * seconds)
        // No step above 2% once the probability is 10% or more, and 2% more above 250 ms of delay.
        if delta > 0.02 && probability >= 0.1 { delta = 0.02 }
        if current > 250_000_000 { delta += 0.02 }
        probability += delta
        if delta > 0, probability > 1 {
            probability = 1
            updateProbability = false
        } else if probability < 0 {
            probability = 0
        }
        // Two updates in a row with no delay: decay by 1/64.
        if current == 0 && previousDelay == 0 && updateProbability { probability -= probability / 64 }
        if probability < 1e-15 { probability = 0 }
        delay = current
        if current < settings.target / 2 && previousDelay < settings.target / 2 && probability == 0 {
            // pie_vars_init: the burst allowance is back; the measurement restarts.
            burstTime = Self.maximumBurst
            lastDequeue = nil
            accumulated = 0
        }
        previousDelay = current
    }

    /// Runs the updates of an idle queue due before `time` at once: with no delay, each one only decays
    /// the probability by 1/64, and once it is 0 the state is what ``update(backlogBytes:)`` resets it to.
    mutating func idle(until time: MonotonicNanoseconds) {
        guard delay == 0, previousDelay == 0, let due = nextUpdate, due <= time else { return }
        let steps = (time - due) / settings.updateInterval + 1
        probability *= pow(63.0 / 64.0, Double(steps))
        if probability < 1e-15 {
            probability = 0
            burstTime = Self.maximumBurst
            lastDequeue = nil
            accumulated = 0
        }
        nextUpdate = due + steps * settings.updateInterval
    }
}

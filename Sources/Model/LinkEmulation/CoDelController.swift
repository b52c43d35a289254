import Profiles

/// CoDel's state (RFC 8289, the pseudocode of section 5; Linux's `codel_impl.h`): whether frames have
/// waited above the target for a whole interval, and when the next drop is due while dropping.
///
/// The queue calls ``okToDrop(sojourn:at:backlogAfter:maxPacket:)`` for each frame it takes from its head
/// and drives the drop schedule with ``startDropping(at:)`` and ``nextDrop()``; the control law is exact
/// (interval/√count), where Linux approximates 1/√count by Newton steps.
struct CoDelController {
    /// The target and the interval, nanoseconds.
    let target: UInt64
    let interval: UInt64
    /// When the delay first stayed above the target plus an interval; 0 when it is below.
    private(set) var firstAboveTime: MonotonicNanoseconds = 0
    /// When the next drop is due while dropping.
    private(set) var dropNext: MonotonicNanoseconds = 0
    /// Drops since dropping started (with the carry-over of section 5.5).
    private(set) var count: UInt32 = 0
    private var lastCount: UInt32 = 0
    /// Whether CoDel is in its dropping state.
    var dropping = false

    init(_ settings: CoDelSettings) {
        target = settings.target
        interval = settings.interval
    }

    /// RFC 8289's `dodequeue`: whether the frame just taken from the head, which waited `sojourn`, may be
    /// dropped at `now`, with `backlogAfter` bytes still queued behind it. Below the target, or with at
    /// most one maximum-size frame left, the clock stops; above it, dropping is allowed once an interval
    /// has passed.
    mutating func okToDrop(sojourn: UInt64, at now: MonotonicNanoseconds, backlogAfter: UInt64, maxPacket: UInt64) -> Bool {
        if sojourn < target || backlogAfter <= maxPacket {
            firstAboveTime = 0
            return false
        }
        if firstAboveTime == 0 {
            firstAboveTime = now + interval
            return false
        }
        return now >= firstAboveTime
    }

    /// Enters the dropping state at `now` after a drop: the count restarts at 1, or carries on from the
    /// last dropping state's excess when that ended less than 16 intervals ago (section 5.5).
    mutating func startDropping(at now: MonotonicNanoseconds) {
        dropping = true
        let delta = count &- lastCount
        count = delta > 1 && delta < UInt32.max / 2 && now &- dropNext < 16 * interval ? delta : 1
        lastCount = count
        dropNext = controlLaw(now)
    }

    /// Counts a drop made in the dropping state and schedules the next one.
    mutating func countDrop() {
        count &+= 1
    }

    /// Schedules the next drop after one made at the scheduled time.
    mutating func scheduleNext() {
        dropNext = controlLaw(dropNext)
    }

    /// t + interval/√count.
    func controlLaw(_ time: MonotonicNanoseconds) -> MonotonicNanoseconds {
        time + UInt64((Double(interval) / Double(max(count, 1)).squareRoot()).rounded())
    }
}

/// The link's transmitter at a fixed rate (netem's `rate`): one frame at a time, each taking
/// length × 8 / rate, the whole frame counted as it is (Ethernet header included, what netem counts as
/// `skb->len`; no packet or cell overhead).
///
/// A frame starts when the previous one has finished, or on arrival when the link is idle. Times are exact
/// to the nanosecond: the fraction of a nanosecond left over by one frame is carried into the next, so the
/// k-th frame of a burst finishes at ⌊start + k × length × 8 / rate⌋ however long the burst.
struct RateSerializer {
    /// The rate in bits per second (at most 2^63, far beyond any link, so the arithmetic cannot overflow).
    private(set) var rate: UInt64
    /// When the last frame accepted finishes.
    private(set) var busyUntil: MonotonicNanoseconds = 0
    /// The part of a nanosecond beyond ``busyUntil``, in units of 1/rate ns.
    private var remainder: UInt64 = 0

    /// A transmitter at `rate` bits per second.
    init(rate: UInt64) {
        self.rate = min(max(rate, 1), 1 << 63)
    }

    /// Changes the rate for frames accepted from now on; frames already accepted keep their times.
    mutating func change(rate newRate: UInt64) {
        let clamped = min(max(newRate, 1), 1 << 63)
        if clamped != rate {
            rate = clamped
            remainder = 0
        }
    }

    /// Continues after `time` (another transmitter's last frame), if that is later than ``busyUntil``.
    mutating func continueAfter(_ time: MonotonicNanoseconds) {
        if time > busyUntil {
            busyUntil = time
            remainder = 0
        }
    }

    /// Accepts a frame of `length` bytes arriving at `now` and returns when its last bit has left.
    @inline(__always)
    mutating func transmit(length: Int, at now: MonotonicNanoseconds) -> MonotonicNanoseconds {
        if now > busyUntil {
            busyUntil = now
            remainder = 0
        }
        // length <= 2^31, so length × 8e9 < 2^66 would overflow only for frames beyond 2 GiB; frames are
        // at most 64 KiB here (2^49 bit-nanoseconds), and remainder < rate <= 2^63.
        let total = UInt64(length) * 8_000_000_000 + remainder
        let (quotient, newRemainder) = total.quotientAndRemainder(dividingBy: rate)
        busyUntil += quotient
        remainder = newRemainder
        return busyUntil
    }
}

/// The frames that have not left the transmitter yet (waiting for the serializer or the trace, being
/// transmitted, or waiting for a slot): what the queue limit counts. Frames propagating in the delay line
/// are not in it.
///
/// Frames leave the transmitter in the order they entered it, so a ring of their leaving times is enough:
/// entries whose time has come are removed before each count.
struct TransmitBacklog: ~Copyable {
    private struct Entry {
        var leavesAt: MonotonicNanoseconds
        var length: UInt32
    }

    private var entries = RingBuffer<Entry>()
    /// Frames in the transmitter.
    private(set) var frames = 0
    /// Bytes in the transmitter.
    private(set) var bytes: UInt64 = 0

    init() {}

    /// When the last frame in the transmitter leaves it; 0 when it is empty.
    var lastLeavesAt: MonotonicNanoseconds { entries.isEmpty ? 0 : entries.last.leavesAt }

    /// Forgets the frames that have left by `now`.
    @inline(__always)
    mutating func advance(to now: MonotonicNanoseconds) {
        while !entries.isEmpty, entries.first.leavesAt <= now {
            let entry = entries.removeFirst()
            frames -= 1
            bytes -= UInt64(entry.length)
        }
    }

    /// Records a frame of `length` bytes that leaves the transmitter at `leavesAt` (not before the last).
    @inline(__always)
    mutating func add(length: Int, leavesAt: MonotonicNanoseconds) {
        entries.append(Entry(leavesAt: leavesAt, length: UInt32(truncatingIfNeeded: length)))
        frames += 1
        bytes += UInt64(length)
    }
}

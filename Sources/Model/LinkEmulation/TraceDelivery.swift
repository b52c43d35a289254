import Profiles

/// Trace-driven delivery with Mahimahi's `mm-link` semantics (`LinkQueue::rationalize` in
/// `link_queue.cc`), in place of the rate serializer.
///
/// Each opportunity of the ``DeliveryTrace`` carries 1500 bytes of the queue, in order: several small
/// frames can share one, a large frame spans several (it leaves with the opportunity that carries its
/// last byte), and bytes an opportunity could not use are lost, never saved for later. A frame can only
/// use opportunities after its arrival: one at the very nanosecond of arrival has already passed (Mahimahi
/// burns every opportunity up to "now" before it queues a packet).
///
/// The trace's time 0 is the arrival of the first frame it carries. Everything is decided when the frame
/// is offered, since the queue is first-in first-out and nothing later can change an earlier frame's fate.
struct TraceDelivery {
    /// The trace in force.
    let trace: DeliveryTrace
    private let times: [UInt64]
    private let period: UInt64
    private let bytesPerOpportunity: Int

    /// Where the trace's loop 0 starts; `nil` until the first frame.
    private(set) var origin: MonotonicNanoseconds?
    /// The last opportunity used: its loop and index in the trace, its time, and its unused bytes.
    private var loop: UInt64 = 0
    private var index = -1
    private var usedAt: MonotonicNanoseconds = 0
    private var bytesLeft = 0

    /// Delivery along `trace`.
    init(_ trace: DeliveryTrace) {
        self.trace = trace
        times = trace.milliseconds.map { UInt64($0) * 1_000_000 }
        period = trace.periodMilliseconds * 1_000_000
        bytesPerOpportunity = DeliveryTrace.bytesPerOpportunity
    }

    /// When a frame of `length` bytes arriving at `now` has been delivered. Frames must be passed in
    /// arrival order.
    mutating func delivery(length: Int, at now: MonotonicNanoseconds) -> MonotonicNanoseconds {
        let origin = self.origin ?? now
        self.origin = origin
        var needed = length
        if index >= 0 && usedAt > now {
            // The queue is busy: the frame was waiting when the last opportunity came, and takes what the
            // frame before it left over.
            if bytesLeft >= needed {
                bytesLeft -= needed
                return usedAt
            }
            needed -= bytesLeft
        } else {
            // The queue is idle: start from the last opportunity at or before `now`, which has passed.
            positionBefore(now, origin: origin)
        }
        // Each further opportunity brings a full 1500 bytes; a frame of 0 bytes still needs one.
        let opportunities = max(1, (needed + bytesPerOpportunity - 1) / bytesPerOpportunity)
        for _ in 0..<opportunities { step() }
        usedAt = origin + loop * period + times[index]
        bytesLeft = opportunities * bytesPerOpportunity - needed
        return usedAt
    }

    /// Moves to the next opportunity.
    @inline(__always)
    private mutating func step() {
        index += 1
        if index == times.count {
            index = 0
            loop += 1
        }
    }

    /// Puts the cursor on the last opportunity at or before `now` (or just before the trace's first one),
    /// so that ``step()`` reaches the first one after `now`.
    private mutating func positionBefore(_ now: MonotonicNanoseconds, origin: MonotonicNanoseconds) {
        let elapsed = now > origin ? now - origin : 0
        loop = elapsed / period
        let offset = elapsed - loop * period
        // The first opportunity of this loop later than `offset` (binary search: the trace is sorted).
        var low = 0
        var high = times.count
        while low < high {
            let middle = (low + high) / 2
            if times[middle] <= offset { low = middle + 1 } else { high = middle }
        }
        if low == 0 {
            // Nothing in this loop is at or before `offset`: the previous position is the previous loop's
            // last opportunity (or "before the start" in loop 0).
            if loop == 0 {
                index = -1
            } else {
                loop -= 1
                index = times.count - 1
            }
        } else {
            index = low - 1
        }
        bytesLeft = 0
    }
}

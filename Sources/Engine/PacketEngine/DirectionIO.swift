import LinkcondBase
import LinkEmulation

// What a ``DirectionLoop`` is given to do its I/O: a source of frames, a sink for them, a clock, and a
// waiter that sleeps until there is something to do. The engine plugs in a `TPACKET_V2` ring, `sendmmsg`,
// `CLOCK_MONOTONIC` and epoll over a timerfd and an eventfd; the unit tests an embedded wire with a
// virtual clock. The loop is generic over all four (no existential boxes, nothing allocated per frame),
// and uses each from its own thread only, except ``DirectionWaiter/wake()``.

/// What trying to read a batch gave.
package enum ReceiveResult: Equatable, Sendable {
    /// This many frames are in the batch (0 when the source read frames but kept none of them); `more`
    /// when more may be waiting (the batch was full).
    case frames(Int, more: Bool)
    /// Nothing is waiting (`EAGAIN`).
    case empty
    /// A signal interrupted the read (`EINTR`); reading again may find frames.
    case interrupted
    /// The read failed with this errno (`ENETDOWN` once when the receiving end went down).
    case failed(Int32)
}

/// Where a direction's frames come from: one batch at a time, valid until ``release()``.
package protocol FrameSource: AnyObject {
    /// Takes a batch of waiting frames without blocking.
    func receive() -> ReceiveResult
    /// The bytes of frame `index` of the batch (Ethernet header first).
    func frame(_ index: Int) -> UnsafeMutableRawBufferPointer
    /// True when frame `index` was cut short because it did not fit.
    func isTruncated(_ index: Int) -> Bool
    /// True when frame `index` was one the interface sent (`PACKET_OUTGOING`), not one it received.
    func isOutgoing(_ index: Int) -> Bool
    /// When frame `index` arrived. `readAt` is the loop's clock, read right after the batch was taken: a
    /// source with no stamps of its own returns it; one that has them returns an earlier time on the
    /// same clock.
    func arrival(_ index: Int, readAt: MonotonicNanoseconds) -> MonotonicNanoseconds
    /// Gives the batch's buffers back, once nothing refers to its frames any more (after the send).
    func release()
    /// Takes the error the source reports besides reads (a socket's `SO_ERROR`, after the waiter saw
    /// ``WaitEvent/sourceError``); 0 when there is none.
    func takeError() -> Int32
    /// Frames lost before the source could hand them over (a full ring) since the last call.
    func takeOverruns() -> UInt64
    /// Lets go of the source's descriptors and memory, when the direction ends.
    func close()

    /// The longest frame the source's slots hold whole (its headroom left out). A longer one is read whole
    /// another, slower way (``takeCopied()``) or cut short (``isTruncated(_:)``).
    var slotBytes: Int { get }
    /// Frames longer than a slot that were read whole another way, since the last call.
    func takeCopied() -> UInt64
    /// The receiving end's MTU now (`SIOCGIFMTU`); 0 when unknown.
    func currentMTU() -> Int
    /// Makes the slots hold frames of up to `slotBytes`, losing and repeating no frame (those already
    /// waiting are handed over first). Returns a descriptor the waiter must watch from now on as well, or
    /// nil when nothing was rebuilt (the slots are large enough, or a rebuild is under way).
    func grow(toSlotBytes slotBytes: Int) throws(PacketEngineError) -> Int32?
}

/// A source whose slots are fixed and large enough for any frame: nothing is copied, nothing grows.
extension FrameSource {
    package var slotBytes: Int { .max }
    package func takeCopied() -> UInt64 { 0 }
    package func currentMTU() -> Int { 0 }
    package func grow(toSlotBytes slotBytes: Int) throws(PacketEngineError) -> Int32? { nil }
}

/// What sending part of a batch gave.
package enum SendResult: Equatable, Sendable {
    /// This many frames (at least one) left, from the first one asked for on.
    case sent(Int)
    /// A signal interrupted the call before anything left (`EINTR`); try again.
    case interrupted
    /// The first frame asked for was refused with this errno (`ENETDOWN`, `ENOBUFS`, `EMSGSIZE`).
    case failed(Int32)
}

/// Where a direction's frames go.
package protocol FrameSink: AnyObject {
    /// Sends entries `start..<batch.count` of `batch`, in order, or as many of them as leave at once.
    func send(_ batch: SendBatch, from start: Int) -> SendResult
    /// Lets go of the sink's descriptors, when the direction ends.
    func close()
    /// The sending end's MTU now (`SIOCGIFMTU`); 0 when unknown.
    func currentMTU() -> Int
}

extension FrameSink {
    package func currentMTU() -> Int { 0 }
}

/// The time the loop goes by: `CLOCK_MONOTONIC` nanoseconds, or a virtual clock in tests.
package protocol EngineClock {
    func now() -> MonotonicNanoseconds
}

/// `CLOCK_MONOTONIC` (``MonotonicClock``).
package struct SystemClock: EngineClock {
    package init() {}

    @inline(__always)
    package func now() -> MonotonicNanoseconds { MonotonicClock.nanoseconds() }
}

/// Why a waiting direction woke up.
package enum WaitEvent: Equatable, Sendable {
    /// The source has frames.
    case readable
    /// The source reports an error (epoll's `EPOLLERR`): take it with ``FrameSource/takeError()``.
    case sourceError
    /// The departure timer fired (it is disarmed now).
    case timer
    /// Another thread called ``DirectionWaiter/wake()``.
    case woken
}

/// How a direction sleeps: until its source has frames, its departure timer fires or another thread
/// wakes it. The waiter owns the timer; the loop decides when to arm it.
package protocol DirectionWaiter: AnyObject {
    /// Arms the departure timer to fire at `deadline` (absolute, on the loop's clock; at least 1),
    /// replacing any earlier arming.
    func armTimer(at deadline: MonotonicNanoseconds)
    /// Sleeps until something of ``WaitEvent`` happens and reports each that did. Returns false, without
    /// sleeping, when nothing is ready and the waiter cannot block (an embedded wire: control goes back to
    /// the test).
    func wait(_ report: (WaitEvent) -> Void) -> Bool
    /// Wakes the direction; any thread may call it.
    func wake()
    /// Wakes the direction when `descriptor` is readable as well, reported as ``WaitEvent/readable`` (the
    /// socket of a source's rebuilt slots; a descriptor that is closed leaves the set by itself).
    func watchSource(_ descriptor: Int32) throws(PacketEngineError)
    /// Lets go of the timer and the other descriptors, when the direction ends.
    func close()
}

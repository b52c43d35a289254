/// A point in time on `CLOCK_MONOTONIC`, in nanoseconds. The engine never reads the wall clock.
public typealias MonotonicNanoseconds = UInt64

/// What a direction's model did with a frame it was offered.
public enum FrameVerdict: Sendable, Equatable {
    /// Send the frame now, as it is in the buffer (the model may have changed bytes in place: a corrupted
    /// bit, an ECN mark). The caller sends it before any frame offered after it.
    case forwardNow
    /// The model copied the frame (and any duplicate of it) and hands it out from
    /// ``FrameScheduler/departDue(at:_:)`` when it is due.
    case held
    /// The frame is gone (lost, or tail-dropped by a full queue); the model counted it.
    case dropped
}

/// The contract between the engine's packet I/O and one direction's impairment model.
///
/// One instance per direction, used only by that direction's thread: nothing in it needs to be
/// thread-safe. Time is always passed in (`now`), never read inside, so the model runs under an injected
/// clock in tests.
public protocol FrameScheduler: AnyObject {
    /// Offers a frame that arrived at `now` (Ethernet header first). The buffer is valid only during the
    /// call; a model that holds the frame copies it.
    func offer(_ frame: UnsafeMutableRawBufferPointer, at now: MonotonicNanoseconds) -> FrameVerdict
    /// The earliest time a held frame is due to leave; nil when nothing is held. Read it again after every
    /// `offer`: a `.held` frame may be due at once, and a `.forwardNow` may come with a held duplicate.
    var nextDeparture: MonotonicNanoseconds? { get }
    /// Hands every held frame whose departure time is at or before `now` to `send`, in departure order.
    /// `due` is the time the frame was scheduled to leave (the I/O measures its lateness against it);
    /// the buffer is valid only during the call.
    func departDue(at now: MonotonicNanoseconds, _ send: (_ frame: UnsafeRawBufferPointer, _ due: MonotonicNanoseconds) -> Void)
}

/// Forwards every frame at once, untouched: an unconditioned wire.
public final class PassThroughScheduler: FrameScheduler {
    /// Frames forwarded.
    public private(set) var forwarded: UInt64 = 0

    /// A wire that forwards everything.
    public init() {}

    /// Always `.forwardNow`.
    public func offer(_ frame: UnsafeMutableRawBufferPointer, at now: MonotonicNanoseconds) -> FrameVerdict {
        forwarded &+= 1
        return .forwardNow
    }

    /// Always nil: nothing is ever held.
    public var nextDeparture: MonotonicNanoseconds? { nil }

    /// Sends nothing: nothing is ever held.
    public func departDue(at now: MonotonicNanoseconds, _ send: (UnsafeRawBufferPointer, MonotonicNanoseconds) -> Void) {}
}

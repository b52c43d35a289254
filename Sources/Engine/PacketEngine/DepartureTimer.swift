import CPacket
import Glibc
import LinkEmulation

/// A `CLOCK_MONOTONIC` timerfd armed with absolute deadlines, for the next departure of a direction.
///
/// It is re-armed only when the wanted deadline is earlier than the armed one (or nothing is armed): a
/// wake-up for a deadline that has moved later is harmless, and saves a system call per frame.
final class DepartureTimer {
    private(set) var fileDescriptor: Int32
    /// The deadline the timer is armed for, nil when disarmed or expired.
    private(set) var armed: MonotonicNanoseconds?

    init(place: String) throws(PacketEngineError) {
        fileDescriptor = timerfd_create(CLOCK_MONOTONIC, Int32(TFD_CLOEXEC | TFD_NONBLOCK))
        guard fileDescriptor >= 0 else { throw .system("timerfd_create for \(place)") }
    }

    deinit {
        close()
    }

    func close() {
        if fileDescriptor >= 0 { Glibc.close(fileDescriptor) }
        fileDescriptor = -1
    }

    /// Makes sure the timer fires at or before `deadline`.
    @inline(__always)
    func ensure(firesBy deadline: MonotonicNanoseconds) {
        if let armed, armed <= deadline { return }
        // A zero deadline would disarm; a deadline of 1 ns is long past and fires at once.
        _ = cpk_timerfd_arm_absolute(fileDescriptor, max(deadline, 1))
        armed = deadline
    }

    /// Consumes an expiry (after the descriptor polled readable).
    func acknowledge() {
        var expirations: UInt64 = 0
        _ = read(fileDescriptor, &expirations, 8)
        armed = nil
    }
}

/// An eventfd that wakes a direction's thread: for a stop request or for work another thread queued.
final class WakeSignal: @unchecked Sendable {
    // Written only by close(), which runs after the woken thread has ended and no waker remains.
    private(set) var fileDescriptor: Int32

    init(place: String) throws(PacketEngineError) {
        fileDescriptor = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        guard fileDescriptor >= 0 else { throw .system("eventfd for \(place)") }
    }

    deinit {
        close()
    }

    func close() {
        if fileDescriptor >= 0 { Glibc.close(fileDescriptor) }
        fileDescriptor = -1
    }

    /// Wakes the thread polling the descriptor (from any thread).
    func wake() {
        var one: UInt64 = 1
        _ = write(fileDescriptor, &one, 8)
    }

    /// Resets the counter (by the woken thread).
    func acknowledge() {
        var value: UInt64 = 0
        _ = read(fileDescriptor, &value, 8)
    }
}

/// An epoll instance over a direction's descriptors: its receive socket, its timer and its wake signal.
final class Poller {
    private(set) var fileDescriptor: Int32
    private var tokens = [UInt64](repeating: 0, count: 8)
    private var events = [UInt32](repeating: 0, count: 8)

    init(place: String) throws(PacketEngineError) {
        fileDescriptor = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard fileDescriptor >= 0 else { throw .system("epoll_create1 for \(place)") }
    }

    deinit {
        close()
    }

    func close() {
        if fileDescriptor >= 0 { Glibc.close(fileDescriptor) }
        fileDescriptor = -1
    }

    /// Watches `fd` for input (errors and hang-ups are always reported); events carry `token`.
    func add(_ fd: Int32, token: UInt64, operation: String) throws(PacketEngineError) {
        guard cpk_epoll_add(fileDescriptor, fd, UInt32(EPOLLIN.rawValue), token) == 0 else { throw .system(operation) }
    }

    /// Waits up to `timeoutMilliseconds` (-1: no limit) and calls `handle` with each ready token and its
    /// events (`EPOLLIN`, `EPOLLERR`…).
    @inline(__always)
    func wait(timeoutMilliseconds: Int32, _ handle: (_ token: UInt64, _ events: UInt32) -> Void) {
        let ready = tokens.withUnsafeMutableBufferPointer { tokens in
            events.withUnsafeMutableBufferPointer { events in
                cpk_epoll_wait(fileDescriptor, tokens.baseAddress, events.baseAddress, Int32(tokens.count), timeoutMilliseconds)
            }
        }
        guard ready > 0 else { return }
        for index in 0..<Int(ready) { handle(tokens[index], events[index]) }
    }
}

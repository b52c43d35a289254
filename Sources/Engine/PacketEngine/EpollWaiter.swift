import CPacket
import Glibc
import LinkEmulation

/// How the engine's directions sleep: epoll over the receive socket, a `CLOCK_MONOTONIC` timerfd armed
/// with absolute deadlines, and an eventfd other threads write to wake the direction.
final class EpollWaiter: DirectionWaiter, @unchecked Sendable {
    private static var sourceToken: UInt64 { 0 }
    private static var timerToken: UInt64 { 1 }
    private static var wakeToken: UInt64 { 2 }

    private let timer: DepartureTimer
    private let wakeSignal: WakeSignal
    private let poller: Poller

    /// A waiter for the source reading `sourceDescriptor` (which stays the source's). `place` names the
    /// direction in messages.
    init(sourceDescriptor: Int32, place: String) throws(PacketEngineError) {
        timer = try DepartureTimer(place: place)
        wakeSignal = try WakeSignal(place: place)
        poller = try Poller(place: place)
        try poller.add(sourceDescriptor, token: Self.sourceToken, operation: "epoll_ctl ADD the receive socket of \(place)")
        try poller.add(timer.fileDescriptor, token: Self.timerToken, operation: "epoll_ctl ADD the timer of \(place)")
        try poller.add(wakeSignal.fileDescriptor, token: Self.wakeToken, operation: "epoll_ctl ADD the wake signal of \(place)")
    }

    @inline(__always)
    func armTimer(at deadline: MonotonicNanoseconds) {
        timer.arm(at: deadline)
    }

    /// Sleeps in `epoll_wait` with no time limit; always true.
    @inline(__always)
    func wait(_ report: (WaitEvent) -> Void) -> Bool {
        poller.wait(timeoutMilliseconds: -1) { token, events in
            switch token {
            case Self.sourceToken:
                // A pending socket error (ENETDOWN when the end goes down) keeps epoll reporting it until it is
                // taken; recvmmsg takes it, a ring never does.
                report(events & UInt32(EPOLLERR.rawValue) != 0 ? .sourceError : .readable)
            case Self.timerToken:
                timer.acknowledge()
                report(.timer)
            default:
                wakeSignal.acknowledge()
                report(.woken)
            }
        }
        return true
    }

    func wake() {
        wakeSignal.wake()
    }

    func watchSource(_ descriptor: Int32) throws(PacketEngineError) {
        try poller.add(descriptor, token: Self.sourceToken, operation: "epoll_ctl ADD a rebuilt receive socket")
    }

    func close() {
        poller.close()
        timer.close()
        wakeSignal.close()
    }
}

/// A `CLOCK_MONOTONIC` timerfd armed with absolute deadlines, for the next departure of a direction.
final class DepartureTimer {
    private(set) var fileDescriptor: Int32

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

    /// Arms the timer for `deadline` (`timerfd_settime` with `TFD_TIMER_ABSTIME`; 0 would disarm it).
    @inline(__always)
    func arm(at deadline: MonotonicNanoseconds) {
        _ = cpk_timerfd_arm_absolute(fileDescriptor, max(deadline, 1))
    }

    /// Consumes an expiry (after the descriptor polled readable).
    func acknowledge() {
        var expirations: UInt64 = 0
        _ = read(fileDescriptor, &expirations, 8)
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

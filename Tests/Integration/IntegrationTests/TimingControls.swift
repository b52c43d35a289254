import Foundation
import NetNamespace
import Netlink
import RouteNetlink
import Glibc
import LinkcondBase
import Synchronization
import XCTest

// Controls for timing checks: what the machine itself does right now, measured alongside a measurement, so
// that load (other tests running beside this one, other work on a shared host, a TCG guest) moves the bound
// with the measurement instead of a fixed allowance for "a slow machine" that is too loose on a quiet one and
// too tight on a busy one.

/// Sorted samples in seconds, with robust summaries.
struct Samples: Sendable {
    let sorted: [Double]

    init(_ values: [Double]) { sorted = values.sorted() }

    var count: Int { sorted.count }
    var median: Double { quantile(0.5) }

    /// The q-quantile (nearest rank); 0 without samples.
    func quantile(_ q: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        let rank = Int((q * Double(sorted.count)).rounded(.up)) - 1
        return sorted[min(max(rank, 0), sorted.count - 1)]
    }
}

/// How late a timer fires on this machine while a measurement runs: a thread that sleeps to absolute
/// CLOCK_MONOTONIC deadlines every 2 ms (`clock_nanosleep` with TIMER_ABSTIME; the default 50 µs of timer
/// slack is in what it records) and records how long after each deadline it ran. Every timed hop of a conditioned path — netem's hrtimer
/// watchdog, the engine's timerfd — waits for the same kernel timers and the same scheduler, so this is the
/// lateness a hop can have right now; the thread runs during the measurement itself, so a burst of load
/// during the measurement shows in both.
enum TimerLatenessControl {
    static let period: UInt64 = 2_000_000

    /// Runs `body` with the control thread running beside it; returns body's result and the lateness samples.
    static func during<T>(_ body: () throws -> T) throws -> (T, Samples) {
        let stop = Atomic<Bool>(false)
        let samples = Mutex<[Double]>([])
        let finished = DispatchSemaphore(value: 0)
        let thread = Thread {
            var deadline = MonotonicClock.nanoseconds() + period
            var collected: [Double] = []
            while !stop.load(ordering: .relaxed) {
                var time = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
                while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &time, nil) == EINTR {}
                let now = MonotonicClock.nanoseconds()
                collected.append(Double(now &- deadline) / 1e9)
                // The next deadline is a period after this wake-up: a late wake-up is one sample, not a run of them.
                deadline = now + period
            }
            samples.withLock { $0 = collected }
            finished.signal()
        }
        thread.start()
        let result = Result { try body() }
        stop.store(true, ordering: .relaxed)
        finished.wait()
        return (try result.get(), Samples(samples.withLock { $0 }))
    }
}

/// When a link change could first be heard in a namespace on this machine: a bare rtnetlink socket
/// (RTNLGRP_LINK) read by a thread that does nothing but stamp each notification with CLOCK_MONOTONIC. The
/// control for a reaction time: the kernel's own part (linkwatch turns a peer's change into a carrier change
/// asynchronously: 5.5 ms once on a loaded host) and the scheduler's (waking a blocked reader) are in its
/// stamps as they are in the monitor's, so a bound of "this much after the control heard it" judges what
/// the code under test adds.
final class LinkNotificationControl: @unchecked Sendable {
    private let listener: NetlinkListener
    private let stamps = Mutex<[UInt64]>([])
    private let stop = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    /// Starts listening in `namespace` (the socket is opened there and stays bound to it).
    init(_ namespace: NamedNamespace) throws {
        listener = try namespace.run { try NetlinkListener(groups: [RouteNetlinkGroup.link]) }
        let fd = listener.socket.fileDescriptor
        var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let thread = Thread { [self] in
            var buffer = [UInt8](repeating: 0, count: 65536)
            while !stop.load(ordering: .relaxed) {
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if count > 0 {
                    let now = MonotonicClock.nanoseconds()
                    stamps.withLock { $0.append(now) }
                }
            }
            finished.signal()
        }
        thread.start()
    }

    deinit { cancel() }

    /// Stops the thread (once); the socket closes with the listener.
    func cancel() {
        guard !stop.exchange(true, ordering: .relaxed) else { return }
        finished.wait()
    }

    /// The first notification read at or after `t0`, waiting up to `timeout` seconds for one; nil if none came.
    func first(after t0: UInt64, timeout: Double = 0.5) -> UInt64? {
        let deadline = MonotonicClock.nanoseconds() + UInt64(timeout * 1e9)
        repeat {
            if let stamp = stamps.withLock({ $0.first { $0 >= t0 } }) { return stamp }
            usleep(200)
        } while MonotonicClock.nanoseconds() < deadline
        return nil
    }
}

/// Latencies of the same change made several times, each with when a control first heard it: the check is
/// on the median, over the trials, of how long after the control the thing measured came (a robust
/// statistic: a machine that holds up one wake-up in a few does not decide it; code that is slow is slow
/// every time).
final class LatencyTrials: @unchecked Sendable {
    private let trials = Mutex<[(label: String, latency: UInt64, control: UInt64)]>([])

    /// One trial of `label`: nanoseconds from the change to what was measured, and to the control hearing it.
    func record(_ label: String, _ latency: UInt64, control: UInt64) {
        trials.withLock { $0.append((label, latency, control)) }
    }

    /// Prints every trial and asserts, per label, that the median of latency − control is below `bound`.
    func check(bound: UInt64, file: StaticString = #filePath, line: UInt = #line) {
        let all = trials.withLock { $0 }
        var labels: [String] = []
        for trial in all where !labels.contains(trial.label) { labels.append(trial.label) }
        for label in labels {
            let mine = all.filter { $0.label == label }
            let excess = Samples(mine.map { Double(Int64($0.latency) - Int64($0.control)) / 1e6 }).median
            let trialsText = mine.map { String(format: "%.3f (control %.3f)", Double($0.latency) / 1e6, Double($0.control) / 1e6) }
                .joined(separator: ", ")
            print(String(format: "latency %@: median %.3f ms after the control; trials, ms: %@", label, excess, trialsText))
            XCTAssertLessThan(
                excess, Double(bound) / 1e6,
                "\(label): the median of \(mine.count) trials came \(excess) ms after a bare listener heard the change; the bound is "
                    + "\(Double(bound) / 1e6) ms. Trials (ms after the change): \(trialsText)", file: file, line: line)
        }
    }
}

import Foundation
import Glibc
import LinkcondBase
import Synchronization
import XCTest

/// Times the machine did not run a thread that was ready: a thread that sleeps to absolute CLOCK_MONOTONIC
/// deadlines every 10 ms and notes each wake-up at least ``threshold`` late. On a busy host an ordinary wake-up
/// is late by microseconds to a few milliseconds (TimerLatenessControl's p99); a tenth of a second is the
/// machine itself stopping — a co-tenant, reclaim, a burst of builds — not anything a test measures.
final class MachineStallWatch: @unchecked Sendable {
    struct Stall: Sendable, CustomStringConvertible {
        /// When the late wake-up came, CLOCK_MONOTONIC nanoseconds.
        var at: UInt64
        /// How late it came, nanoseconds.
        var length: UInt64
        var description: String { String(format: "%.0f ms", Double(length) / 1e6) }
    }

    static let threshold: UInt64 = 100_000_000
    static let period: UInt64 = 10_000_000

    private let stopRequested = Atomic<Bool>(false)
    private let stalls = Mutex<[Stall]>([])
    private let finished = DispatchSemaphore(value: 0)

    /// Starts watching at once.
    init() {
        let thread = Thread { [self] in
            var deadline = MonotonicClock.nanoseconds() + Self.period
            while !stopRequested.load(ordering: .relaxed) {
                var time = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
                while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &time, nil) == EINTR {}
                let now = MonotonicClock.nanoseconds()
                if now &- deadline >= Self.threshold { stalls.withLock { $0.append(Stall(at: now, length: now &- deadline)) } }
                deadline = now + Self.period
            }
            finished.signal()
        }
        thread.start()
    }

    /// Stops the thread and returns the stalls it saw.
    func stop() -> [Stall] {
        stopRequested.store(true, ordering: .relaxed)
        finished.wait()
        return stalls.withLock { $0 }
    }
}

/// What one attempt of ``IntegrationTestCase/measuredAgainIfTheMachineStalled(attempts:_:)`` recorded.
struct MeasurementAttempt {
    struct Failure {
        var description: String
        var file: String
        var line: Int
        var expected: Bool
    }

    var failures: [Failure] = []
    var cleanups: [() -> Void] = []
}

extension IntegrationTestCase {
    /// Runs a timing measurement and its judgement (`body`). When it fails while the machine itself stalled
    /// (``MachineStallWatch``: a ready thread not run for 100 ms or more), the attempt is void: its teardown
    /// blocks run at once, the failures are printed as voided, and the measurement is made again, up to
    /// `attempts` times in all. An attempt that fails with no stall, and the last one in any case, is judged as
    /// it came: no bound moves, and code that is slow is slow on every attempt. Failures of a judged attempt
    /// name the stalls seen during it, if any.
    func measuredAgainIfTheMachineStalled(attempts: Int = 3, _ body: () throws -> Void) throws {
        for attempt in 1...attempts {
            let watch = MachineStallWatch()
            beginAttempt()
            var thrown: Error?
            do { try body() } catch { thrown = error }
            let record = endAttempt()
            for cleanup in record.cleanups.reversed() { cleanup() }
            let stalls = watch.stop()
            if let thrown, thrown is XCTSkip { throw thrown }
            let failed = !record.failures.isEmpty || thrown != nil
            if failed && !stalls.isEmpty && attempt < attempts {
                let what = record.failures.map(\.description) + (thrown.map { ["threw \($0)"] } ?? [])
                print("\(name): attempt \(attempt) of \(attempts) voided, the machine stalled (\(stalls.map(\.description).joined(separator: ", "))); "
                    + "measuring again. It failed with: \(what.joined(separator: " | "))")
                continue
            }
            if failed {
                let note = stalls.isEmpty
                    ? "no stall of the machine during this attempt"
                    : "the machine stalled during this attempt, the last of \(attempts): \(stalls.map(\.description).joined(separator: ", "))"
                print("\(name): attempt \(attempt) failed; \(note)")
            }
            for failure in record.failures {
                recordFailure(withDescription: failure.description, inFile: failure.file, atLine: failure.line, expected: failure.expected)
            }
            if let thrown { throw thrown }
            return
        }
    }
}

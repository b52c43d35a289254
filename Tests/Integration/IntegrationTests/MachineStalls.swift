import Foundation
import Glibc
import LinkcondBase
import LinkcondSystem
import Synchronization
import XCTest

/// Times the machine did not run a thread that was ready, seen two ways:
/// - a stall: a thread that sleeps to absolute CLOCK_MONOTONIC deadlines every 10 ms notes each wake-up at least
///   ``threshold`` late. On a busy host an ordinary wake-up is late by microseconds to a few milliseconds
///   (TimerLatenessControl's p99); a tenth of a second is the machine itself stopping — a co-tenant, reclaim, a
///   burst of builds — not anything a test measures;
/// - a starved engine: a forwarding thread of a `linkcond engine` (`lc-uplink`, `lc-downlink`) that waited on
///   a run queue, ready but not running, for ``threshold`` or more in all within a second (the kernel's own
///   account: the second field of /proc/PID/task/TID/schedstat, sampled every 100 ms). That is the machine
///   giving the CPU to others while the engine had frames to move, in short waits that no single late
///   wake-up shows (measured here: 12–35 ms a second on an idle machine while the engine forwards 250 mbit/s,
///   140 ms and more with four busy loops beside it). Code that is slow shows as time *on* the CPU, which
///   this does not count: an engine too slow for its rate is slow on every attempt.
final class MachineStallWatch: @unchecked Sendable {
    struct Stall: Sendable, CustomStringConvertible {
        /// When the late wake-up came (or the starved second ended), CLOCK_MONOTONIC nanoseconds.
        var at: UInt64
        /// How late it came, or how long the engine thread waited within the second, nanoseconds.
        var length: UInt64
        /// The starved engine thread (`lc-downlink of pid 123`), or nil for a late wake-up of the watch.
        var starvedThread: String? = nil
        var description: String {
            let time = String(format: "%.0f ms", Double(length) / 1e6)
            return starvedThread.map { "\($0) waited \(time) within a second for a CPU" } ?? time
        }
    }

    static let threshold: UInt64 = 100_000_000
    static let period: UInt64 = 10_000_000
    /// Engine threads are sampled every this many periods (100 ms).
    static let samplingPeriods = 10

    private let stopRequested = Atomic<Bool>(false)
    private let stalls = Mutex<[Stall]>([])
    private let finished = DispatchSemaphore(value: 0)

    /// Starts watching at once.
    init() {
        let thread = Thread { [self] in
            var engines = EngineThreadWaits()
            var tick = 0
            var deadline = MonotonicClock.nanoseconds() + Self.period
            while !stopRequested.load(ordering: .relaxed) {
                var time = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
                while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &time, nil) == EINTR {}
                let now = MonotonicClock.nanoseconds()
                if now &- deadline >= Self.threshold { stalls.withLock { $0.append(Stall(at: now, length: now &- deadline)) } }
                tick += 1
                if tick % Self.samplingPeriods == 0 {
                    let starved = engines.sample(at: now, threshold: Self.threshold)
                    if !starved.isEmpty { stalls.withLock { $0.append(contentsOf: starved) } }
                }
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

/// The run-queue waits of the machine's engine forwarding threads, sampled over time (``MachineStallWatch``).
struct EngineThreadWaits {
    private struct Sample {
        var at: UInt64
        var waited: UInt64
    }

    private struct Followed {
        var label: String
        var samples: [Sample]
        /// The end of the last second reported as starved: a second is reported once, not at every sample in it.
        var reportedUntil: UInt64 = 0
    }

    /// The pids that are a `linkcond engine` (named `linkcond`, its command line `…linkcond` then `engine`), for
    /// good once seen.
    private var engines: Set<Int32> = []
    /// The pids that were not, and when that was read: read again after a second, as a process that was
    /// between its fork and its exec becomes one. (Only a process named `linkcond` has its command line read.)
    private var others: [Int32: UInt64] = [:]
    /// "pid/tid" → the thread's samples within the last second.
    private var followed: [String: Followed] = [:]

    /// Reads every engine forwarding thread's run-queue wait; returns a stall for each thread whose wait grew by
    /// `threshold` or more within the last second.
    mutating func sample(at now: UInt64, threshold: UInt64) -> [MachineStallWatch.Stall] {
        var seen = Set<String>()
        var starved: [MachineStallWatch.Stall] = []
        let running = Self.processes()
        others = others.filter { now &- $0.value < 1_000_000_000 }
        for pid in running where engine(pid, now) {
            for tid in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? [] {
                let key = "\(pid)/\(tid)"
                let path = "/proc/\(pid)/task/\(tid)"
                if followed[key] == nil {
                    guard let comm = Self.read("\(path)/comm")?.trimmingCharacters(in: .whitespacesAndNewlines),
                        comm == "lc-uplink" || comm == "lc-downlink"
                    else { continue }
                    followed[key] = Followed(label: "\(comm) of pid \(pid)", samples: [])
                }
                guard let fields = Self.read("\(path)/schedstat")?.split(separator: " "), fields.count >= 2,
                    let waited = UInt64(fields[1])
                else { continue }
                seen.insert(key)
                var thread = followed[key]!
                thread.samples.append(Sample(at: now, waited: waited))
                thread.samples.removeAll { now &- $0.at > 1_000_000_000 }
                if let oldest = thread.samples.first, oldest.at > thread.reportedUntil, waited &- oldest.waited >= threshold {
                    starved.append(.init(at: now, length: waited &- oldest.waited, starvedThread: thread.label))
                    thread.reportedUntil = now
                }
                followed[key] = thread
            }
        }
        followed = followed.filter { seen.contains($0.key) }
        engines.formIntersection(running)
        return starved
    }

    private mutating func engine(_ pid: Int32, _ now: UInt64) -> Bool {
        if engines.contains(pid) { return true }
        if others[pid] != nil { return false }
        guard Self.read("/proc/\(pid)/comm") == "linkcond\n", let commandLine = Self.read("/proc/\(pid)/cmdline") else {
            others[pid] = now
            return false
        }
        let arguments = commandLine.split(separator: "\0").map(String.init)
        guard (arguments.first?.hasSuffix("linkcond") ?? false) && arguments.dropFirst().contains("engine") else {
            others[pid] = now
            return false
        }
        engines.insert(pid)
        return true
    }

    private static func processes() -> [Int32] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap(Int32.init)
    }

    /// A small /proc file (they report a size of 0, so it is read until the end, not to a size).
    private static func read(_ path: String) -> String? {
        guard let file = try? FileDescriptor.open(path, .readOnly),
            let bytes = try? file.closeAfter({ () throws(SystemError) in try file.readToEnd(maximumCount: 4096) }), !bytes.isEmpty
        else { return nil }
        return String(decoding: bytes, as: UTF8.self)
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
    /// (``MachineStallWatch``: a ready thread not run for 100 ms or more, or an engine thread kept waiting for a
    /// CPU 100 ms or more within a second), the attempt is void: its teardown
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

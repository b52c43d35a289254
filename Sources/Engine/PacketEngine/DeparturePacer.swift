import LinkEmulation

/// How early a direction's thread wakes for a departure and spins the rest on the clock
/// (``DepartureTiming``), and when it must not spin at all.
///
/// A spin is only worth its CPU while the thread keeps the CPU: two readings of the clock in a spin loop
/// more than ``preemptionGap`` apart mean the kernel ran something else in between (the machine is
/// busier than its CPUs), and then a spinning thread only loses the head start a sleeping one gets on
/// its wake-up. So after a preempted spin the direction neither spins for departures nor polls for
/// traffic for ``backoff``: it sleeps on its timer (armed at the due time) and in epoll, as with
/// `timerOnly`, and tries again afterwards.
final class DeparturePacer {
    /// Two clock readings of a spin this far apart: the thread was not running in between.
    static let preemptionGap: UInt64 = 20_000
    /// How long a direction does not spin after a preempted spin.
    static let backoff: UInt64 = 100_000_000
    /// The lead an adaptive timing starts with, before it has measured its timer.
    static let initialLead: UInt64 = 50_000

    private let fixedLead: UInt64
    /// The measured lead of an adaptive timing.
    let estimator: WakeLatencyEstimator?
    /// Until when the direction does not spin.
    private(set) var backoffUntil: MonotonicNanoseconds = 0

    init(timing: DepartureTiming) {
        switch timing {
        case .timerOnly:
            fixedLead = 0
            estimator = nil
        case .fixedLead(let lead):
            fixedLead = lead
            estimator = nil
        case .adaptiveLead(let maximum):
            fixedLead = 0
            estimator = WakeLatencyEstimator(initialLead: Self.initialLead, maximumLead: maximum)
        }
    }

    /// The lead as of now: how long before a departure the timer fires and the spin begins (0 while
    /// backing off).
    @inline(__always)
    func lead(at now: MonotonicNanoseconds) -> UInt64 {
        now < backoffUntil ? 0 : estimator?.lead ?? fixedLead
    }

    /// The lead when the direction may spin (whatever the back-off).
    var configuredLead: UInt64 { estimator?.lead ?? fixedLead }

    /// Whether the direction may spin now (for a departure or for traffic).
    @inline(__always)
    func maySpin(at now: MonotonicNanoseconds) -> Bool { now >= backoffUntil }

    /// Learns from a wake-up by the timer `latency` nanoseconds after the deadline it was armed for.
    @inline(__always)
    func recordWakeup(_ latency: UInt64) {
        estimator?.record(latency)
    }

    /// Notes that a spin was preempted at `now`: no spinning for ``backoff``.
    func preempted(at now: MonotonicNanoseconds) {
        backoffUntil = now &+ Self.backoff
    }
}

import LinkEmulation

/// How early a direction's thread wakes for a departure and spins the rest on the clock
/// (``DepartureTiming``), and when it must not spin at all.
///
/// Two readings of the clock in a spin loop more than ``preemptionGap`` apart mean the kernel (or the
/// hypervisor) ran something else in between. One such spin says little (a tick landed in it), and the
/// direction goes on spinning. A run of them says the machine is busier than its CPUs, and then a
/// thread that keeps spinning loses the head start the scheduler gives one that sleeps: in
/// OneWayTimingTests on this 2-CPU machine at a load of 12, spinning through every preemption kept the
/// median excess at 11–14 µs but made the 90th percentile 1.5–2.3 ms (the thread's wake-ups waited for
/// other tasks' time slices), where at a load of 5 backing off as below gave a median of 38–43 µs and a
/// 90th percentile of 75–83 µs. So the pacer keeps the share of recent spins (for departures and
/// polls) that were preempted, an average over about the last eight, and while it is at least
/// ``backoffShare`` the direction neither spins for departures nor polls for traffic for ``backoff``:
/// it sleeps on its timer (armed at the due time) and in epoll, as with `timerOnly`, and afterwards
/// starts again with a clean slate (the share kept over the back-off, one preempted spin right after it
/// stopped them again: at a load of 8, back-offs then took the lead from most departures).
final class DeparturePacer {
    /// Two clock readings of a spin this far apart: the thread was not running in between.
    static let preemptionGap: UInt64 = 20_000
    /// How long a direction does not spin once too many of its spins were preempted.
    static let backoff: UInt64 = 100_000_000
    /// The share of preempted spins (out of 256) that makes a direction back off: three preempted in a row
    /// from none, or one in four or so for a while.
    static let backoffShare: UInt32 = 64
    /// The lead an adaptive timing starts with, before it has measured its timer.
    static let initialLead: UInt64 = 50_000

    private let fixedLead: UInt64
    /// The measured lead of an adaptive timing.
    let estimator: WakeLatencyEstimator?
    /// Until when the direction does not spin.
    private(set) var backoffUntil: MonotonicNanoseconds = 0
    /// The share of recent spins that were preempted, out of 256.
    private(set) var preemptedShare: UInt32 = 0

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
        now < backoffUntil ? 0 : configuredLead
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

    /// Notes how a spin ended at `now`: `preempted` or not; too many preempted ones stop spinning for
    /// ``backoff``.
    @inline(__always)
    func spinEnded(preempted: Bool, at now: MonotonicNanoseconds) {
        if preempted {
            preemptedShare += (256 - preemptedShare) / 8
            if preemptedShare >= Self.backoffShare {
                backoffUntil = now &+ Self.backoff
                // Judged afresh afterwards: one preempted spin then does not stop them again at once.
                preemptedShare = 0
            }
        } else {
            preemptedShare -= preemptedShare / 8
        }
    }
}

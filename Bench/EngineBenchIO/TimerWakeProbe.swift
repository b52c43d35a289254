import CPacket
import Foundation
import Glibc
import PacketEngine

/// The floor of the engine's departure timing: how late a `CLOCK_MONOTONIC` timerfd armed for an absolute
/// deadline wakes a thread on this machine, measured as cyclictest does (the time the blocking `read`
/// returned minus the deadline), on a thread set up as the engine's are (timer slack 1 ns). The engine's
/// own timers measure the same on every departure (`DirectionStatistics.timerWakeups`).
package enum TimerWakeProbe {
    /// `count` wake-ups, armed `period` nanoseconds after the previous one returned; their lateness.
    package static func measure(count: Int, period: UInt64) -> LatencyHistogram {
        let outcome = Outcome()
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            _ = cpk_set_timer_slack(1)
            var histogram = LatencyHistogram()
            let fd = timerfd_create(CLOCK_MONOTONIC, Int32(TFD_CLOEXEC))
            if fd >= 0 {
                var deadline = cpk_monotonic_ns() + period
                for _ in 0..<count {
                    _ = cpk_timerfd_arm_absolute(fd, deadline)
                    var expirations: UInt64 = 0
                    _ = read(fd, &expirations, 8)
                    let now = cpk_monotonic_ns()
                    histogram.record(now > deadline ? now - deadline : 0)
                    deadline = now + period
                }
                close(fd)
            }
            outcome.histogram = histogram
            done.signal()
        }
        thread.start()
        done.wait()
        return outcome.histogram
    }

    private final class Outcome: @unchecked Sendable {
        var histogram = LatencyHistogram()
    }
}

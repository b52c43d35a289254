import CPacket
import LinkEmulation

/// `CLOCK_MONOTONIC`, the engine's only clock.
public enum MonotonicClock {
    /// Now, in nanoseconds.
    @inline(__always)
    public static func now() -> MonotonicNanoseconds {
        cpk_monotonic_ns()
    }
}

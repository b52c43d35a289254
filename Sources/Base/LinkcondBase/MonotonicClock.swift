import Glibc

/// `CLOCK_MONOTONIC`: the one clock linkcond measures with. It never jumps with the wall clock.
public enum MonotonicClock {
    /// Now, in nanoseconds since an arbitrary point (boot). Inlinable: the engine reads it per batch.
    @inlinable
    public static func nanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    /// Now, in seconds since an arbitrary point (boot).
    public static func seconds() -> Double {
        Double(nanoseconds()) / 1e9
    }
}

import Glibc

/// The kernel's packet-scheduler clock as `tc` sees it (`/proc/net/psched`), for converting times into
/// the "ticks" that `struct tc_netem_qopt` carries.
///
/// `tc` reads three hex numbers — t2us, us2t, clock resolution — and derives how many ticks make a
/// microsecond (15.625 on every kernel since 2.6.x: one tick is 64 ns). linkcond does the same, so its
/// requests are the bytes `tc` would send.
public struct PacketSchedulerClock: Sendable, Equatable {
    /// Ticks per microsecond.
    public let ticksPerMicrosecond: Double

    /// A clock with a known tick rate (tests inject 15.625).
    public init(ticksPerMicrosecond: Double) {
        self.ticksPerMicrosecond = ticksPerMicrosecond
    }

    /// The modern kernels' clock: 64 ns a tick.
    public static let standard = PacketSchedulerClock(ticksPerMicrosecond: 15.625)

    /// The running kernel's clock, from `/proc/net/psched`; ``standard`` when it cannot be read.
    public static func current() -> PacketSchedulerClock {
        guard let file = fopen("/proc/net/psched", "r") else { return .standard }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 128)
        guard fgets(&line, 128, file) != nil else { return .standard }
        let fields = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            .split(whereSeparator: { $0.isWhitespace }).compactMap { UInt32($0, radix: 16) }
        guard fields.count >= 3, fields[1] != 0 else { return .standard }
        var t2us = Double(fields[0])
        let us2t = Double(fields[1])
        let clockResolution = Double(fields[2])
        // tc's compatibility rule: a nanosecond-resolution clock advertises a multiplier it does not mean.
        if fields[2] == 1_000_000_000 { t2us = us2t }
        let clockFactor: Double = clockResolution / 1_000_000.0
        return PacketSchedulerClock(ticksPerMicrosecond: t2us / us2t * clockFactor)
    }

    /// `tc_core_time2tick`: whole microseconds times ticks per microsecond, truncated, as tc computes it.
    /// Nil when the result does not fit 32 bits (more than about 274 s): such delays go in the 64-bit
    /// nanosecond attributes instead.
    public func ticks(nanoseconds: UInt64) -> UInt32? {
        let microseconds = nanoseconds / 1000
        let ticks = Double(microseconds) * ticksPerMicrosecond
        guard ticks < Double(UInt32.max) else { return nil }
        return UInt32(ticks)
    }

    /// Nanoseconds for `ticks` (the kernel's `PSCHED_TICKS2NS`, for the standard clock).
    public func nanoseconds(ticks: UInt32) -> UInt64 {
        UInt64((Double(ticks) / ticksPerMicrosecond * 1000).rounded())
    }
}


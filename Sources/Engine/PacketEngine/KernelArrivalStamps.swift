import CPacket
import LinkEmulation

/// The time a frame arrived, as the kernel stamped it in the receive ring (`tp_sec`/`tp_nsec` of its
/// `tpacket2_hdr`), on the engine's `CLOCK_MONOTONIC`: every delay counts from it, not from the moment the
/// direction's thread got round to reading the batch (its wake-up and whatever it was doing before).
///
/// What the stamp is (`net/packet/af_packet.c`, `net/core/dev.c`; checked on this project's 6.18 kernel):
/// - `tpacket_rcv` always writes one, `CLOCK_REALTIME`. It is the frame's software stamp
///   (`skb->tstamp`, with `TP_STATUS_TS_SOFTWARE` in `tp_status`) when the frame has one, else
///   `ktime_get_real()` taken while the frame is written into the ring (no `TP_STATUS_TS_*` bit).
/// - A frame crossing a veth into the wire's namespace loses the sender's stamp (`skb_scrub_packet`
///   clears it across namespaces; a TCP departure time, `CLOCK_MONOTONIC`, is kept but `skb_tstamp()`
///   hides it from the ring). It is stamped again in `netif_rx` on the wire's veth, as it is queued for
///   the receiving softirq, when any socket on the machine asked for receive stamps
///   (`netstamp_needed_key`). The engine's receive socket asks (`SO_TIMESTAMPNS`, see
///   ``enableOnSocket(_:)``), so the stamp is the moment the frame reached the wire's veth, before the
///   softirq (which may be deferred to `ksoftirqd` on a busy machine) and before the engine's thread
///   is woken.
/// - Measured here with a UDP sender two namespaces away stamping its payload just before `sendto`: the
///   ring's stamp 9–16 µs after it (the sender's system call), whether the reader read the frame 24 µs
///   or 1.4 ms later; a stamp taken at the ring write (no software stamp) came 29 µs after it.
///
/// The conversion uses `CLOCK_REALTIME − CLOCK_MONOTONIC`, which changes only when the wall clock is
/// stepped (NTP's slewing moves both clocks alike). It is read once per batch (``refresh()``) and kept
/// from the tightest reading: a reading the thread was preempted in the middle of is off by half the
/// preemption, and is taken only when it disagrees with the kept one by more than that (a step). A stamp is
/// not used, and the read time stands in for it (counted as a fallback), when it is missing (zero), later
/// than the read (the wall clock was stepped back since), or more than ``oldest`` before it (stepped
/// forward: no frame waits a second in the ring of a running engine).
struct KernelArrivalStamps {
    /// How much earlier than its read a stamp may be before it is taken for a clock step.
    static let oldest: UInt64 = 1_000_000_000

    /// How far a reading of the offset may be off (half the time between its monotonic readings) to be
    /// taken as it is.
    static let tight: Int64 = 1000

    /// `CLOCK_REALTIME − CLOCK_MONOTONIC`, as of the last batch.
    private(set) var offset: Int64 = 0
    /// How far ``offset`` may be off.
    private(set) var uncertainty: Int64 = .max
    /// Frames whose stamp was not used, since the last ``takeFallbacks()``.
    private(set) var fallbacks: UInt64 = 0

    /// Asks the kernel to stamp the frames of `socket` as they are queued on their interface
    /// (`setsockopt SO_TIMESTAMPNS`, which turns on `netstamp_needed_key` while the socket is open); false
    /// when it refused (the ring's stamps are then taken as frames are written into it).
    @discardableResult
    static func enableOnSocket(_ socket: Int32) -> Bool {
        cpk_enable_receive_stamps(socket) == 0
    }

    /// Reads the clocks' offset again (once per batch: a step of the wall clock is seen by the next one).
    @inline(__always)
    mutating func refresh() {
        var width: Int64 = 0
        let reading = cpk_realtime_offset_ns(&width)
        take(reading, uncertainty: width / 2)
    }

    /// Keeps `reading` (off by at most `uncertainty`) when it is tight, tighter than the kept offset, or
    /// disagrees with it by more than both could be off: the wall clock was stepped.
    @inline(__always)
    mutating func take(_ reading: Int64, uncertainty readingUncertainty: Int64) {
        if readingUncertainty <= Self.tight || readingUncertainty <= uncertainty
            || abs(reading &- offset) > readingUncertainty &+ uncertainty
        {
            offset = reading
            uncertainty = readingUncertainty
        }
    }

    /// The arrival of a frame stamped `seconds`/`nanoseconds` (`CLOCK_REALTIME`) and read at `readAt`
    /// (`CLOCK_MONOTONIC`): the stamp on the monotonic clock, or `readAt` (counted) when it cannot be used.
    @inline(__always)
    mutating func arrival(seconds: UInt32, nanoseconds: UInt32, readAt: MonotonicNanoseconds) -> MonotonicNanoseconds {
        if let stamp = Self.monotonic(seconds: seconds, nanoseconds: nanoseconds, offset: offset, readAt: readAt) { return stamp }
        fallbacks &+= 1
        return readAt
    }

    /// The stamp converted with `offset`, or nil when it is missing, after `readAt` or more than
    /// ``oldest`` before it.
    @inline(__always)
    static func monotonic(seconds: UInt32, nanoseconds: UInt32, offset: Int64, readAt: MonotonicNanoseconds) -> MonotonicNanoseconds? {
        guard seconds != 0 || nanoseconds != 0 else { return nil }
        let realtime = Int64(seconds) * 1_000_000_000 + Int64(nanoseconds)
        let stamp = realtime &- offset
        guard stamp > 0 else { return nil }
        let monotonic = UInt64(stamp)
        guard monotonic <= readAt, readAt - monotonic <= oldest else { return nil }
        return monotonic
    }

    /// The fallbacks since the last call.
    mutating func takeFallbacks() -> UInt64 {
        defer { fallbacks = 0 }
        return fallbacks
    }
}

import NetNamespace

/// One way through the wire.
public enum Direction: String, Sendable, CaseIterable, CustomStringConvertible {
    /// Client to router: read from the client-side wire end, sent out of the router-side end.
    case uplink
    /// Router to client: read from the router-side wire end, sent out of the client-side end.
    case downlink

    public var description: String { rawValue }
}

/// The wire's two veth ends, in the wire namespace: `cl-wl0` (peer of the client's `wl0`) and `rt-wl0`
/// (peer of the router's `c-wl0`).
public struct WireEnds: Sendable, Equatable {
    /// The namespace both ends live in; nil for the calling thread's own (an engine process started inside it).
    public var namespace: NamedNamespace?
    /// The end whose peer is the client's interface.
    public var clientSide: String
    /// The end whose peer is the router's interface.
    public var routerSide: String

    /// The ends `clientSide` and `routerSide` in `namespace`.
    public init(namespace: NamedNamespace?, clientSide: String, routerSide: String) {
        self.namespace = namespace
        self.clientSide = clientSide
        self.routerSide = routerSide
    }

    /// The end a direction reads from.
    public func receiving(_ direction: Direction) -> String {
        direction == .uplink ? clientSide : routerSide
    }

    /// The end a direction sends out of.
    public func sending(_ direction: Direction) -> String {
        direction == .uplink ? routerSide : clientSide
    }
}

/// Who cuts TCP super-frames into MTU-sized frames and completes checksums: the peers' kernels before the
/// frames enter the wire, or the reader of the wire after it reads them. The engine forwards plain frames
/// only (``disabled``) — except an attached engine, which cannot change the target's peer and reads both
/// ends with `PACKET_VNET_HDR`, cutting super-frames itself (``SegmentingSource``); ``segmentInEngine``
/// prepares peers for such a reader, which linkcond-bench measures.
public enum OffloadMode: Sendable, Equatable {
    /// The peers send plain frames (their offloads are off, see ``WirePreparation/preparePeer(_:in:mode:)``):
    /// at most one MTU, checksums complete. What the engine needs.
    case disabled
    /// The peers keep TSO and checksum offload; only the segmentation a reader cannot do itself (UDP,
    /// tunnels, fraglists) is off. For linkcond-bench's segmenting reader on a sandbox's wire.
    case segmentInEngine
}

/// How a direction's thread is on time for a departure.
public enum DepartureTiming: Sendable, Equatable {
    /// The departure timer (a timerfd) fires at the due time; the frame leaves when the kernel has the
    /// thread running again, a wake-up later.
    case timerOnly
    /// The timer fires this many nanoseconds before the due time and the thread spins on the clock for the
    /// rest (a departure due sooner than that is spun for rather than slept on).
    case fixedLead(UInt64)
    /// The timer fires early by the wake-up latency the direction measures on its own timer (a high
    /// percentile of its recent wake-ups, see ``DirectionStatistics/timerWakeups``), at most `maximum`
    /// nanoseconds, and the thread spins on the clock for the rest. The thread spins only when a frame is
    /// due that soon: with nothing held it sleeps.
    case adaptiveLead(maximum: UInt64)

    /// The default: an adaptive lead of at most 200 µs.
    public static let standard = DepartureTiming.adaptiveLead(maximum: 200_000)
}

/// Tuning of the engine's I/O. The defaults suit a wire at up to a few Gbit/s.
public struct EngineOptions: Sendable, Equatable {
    /// Frames read per batch from the receive ring and sent per `sendmmsg`.
    public var batchSize: Int = 64
    /// Whether a frame's arrival (what its delay counts from) is the kernel's receive stamp in the ring
    /// (true), or the time the direction's thread read its batch (false: the thread's wake-up is then added
    /// to every delay; for comparison only).
    public var kernelArrivalStamps = true
    /// How departures are timed: by default the timer is armed early by the measured wake-up latency and
    /// the last microseconds are spun. Spinning trades CPU for punctuality.
    public var departureTiming = DepartureTiming.standard
    /// Whether a direction polls its ring for a while after traffic (by default not for replies) before it sleeps.
    public var polling = TrafficPolling.standard
    /// Receive and send buffer of each packet socket, in bytes.
    public var socketBufferBytes: Int32 = 4 << 20
    /// When set, both direction threads run `SCHED_FIFO` at this priority (1…99), so departures are not
    /// held up behind other work on a busy machine. The kernel's real-time throttling still leaves other
    /// tasks 5 % of each CPU. Needs `CAP_SYS_NICE`.
    public var realtimePriority: Int32?

    /// Options; every parameter defaults to the value documented on its property.
    public init(
        batchSize: Int = 64, kernelArrivalStamps: Bool = true, departureTiming: DepartureTiming = .standard, polling: TrafficPolling = .standard,
        socketBufferBytes: Int32 = 4 << 20, realtimePriority: Int32? = nil
    ) {
        self.batchSize = batchSize
        self.kernelArrivalStamps = kernelArrivalStamps
        self.departureTiming = departureTiming
        self.polling = polling
        self.socketBufferBytes = socketBufferBytes
        self.realtimePriority = realtimePriority
    }
}

/// What one direction did, counted by its own thread (read with ``EngineRuntime/statistics(of:)``).
public struct DirectionStatistics: Sendable, Equatable, CustomStringConvertible {
    /// Frames offered to the scheduler, and their bytes.
    public var received: UInt64 = 0
    public var receivedBytes: UInt64 = 0
    /// Verdicts of the scheduler: sent at once, held for later, dropped.
    public var forwardedAtOnce: UInt64 = 0
    public var held: UInt64 = 0
    public var dropped: UInt64 = 0
    /// Held frames the scheduler handed out when due.
    public var departed: UInt64 = 0
    /// Frames the kernel accepted on the sending end, and their bytes.
    public var sent: UInt64 = 0
    public var sentBytes: UInt64 = 0
    /// Frames the kernel refused to send for another reason than their length (`ENETDOWN` while the far end
    /// is down, `ENOBUFS`), and the last errno.
    public var sendFailures: UInt64 = 0
    public var lastSendError: Int32 = 0
    /// Receive errors (`ENETDOWN` once per link-down of the receiving end), and the last errno.
    public var receiveErrors: UInt64 = 0
    public var lastReceiveError: Int32 = 0
    /// Frames longer than a receive slot that could not be read whole another way either (the socket's
    /// queue was full; or GSO super-frames, with offloads left on), dropped.
    public var truncated: UInt64 = 0
    /// Frames longer than a receive slot that crossed all the same, read whole from the socket (the MTU
    /// grew past the ring's slots; the first such frame has the ring rebuilt).
    public var copied: UInt64 = 0
    /// Times the receive ring was rebuilt with larger slots (the MTU grew), and rebuilds that failed (the
    /// long frames then keep crossing the slower way), with the last failure.
    public var ringRebuilds: UInt64 = 0
    public var rebuildFailures: UInt64 = 0
    public var lastRebuildFailure: PacketEngineError?
    /// Frames the kernel dropped before the engine saw them, because the receive ring (or socket buffer)
    /// was full: the thread fell behind the arrivals (`PACKET_STATISTICS`' `tp_drops`, summed; read when
    /// the statistics are).
    public var receiveOverruns: UInt64 = 0
    /// Frames whose arrival was taken as the time they were read, their kernel stamp being missing or
    /// implausible (a step of the wall clock; see ``EngineOptions/kernelArrivalStamps``).
    public var stampFallbacks: UInt64 = 0
    /// Frames the kernel reported as outgoing (never expected with `PACKET_IGNORE_OUTGOING`), skipped.
    public var outgoingSkipped: UInt64 = 0
    /// Frames too long for the sending end, dropped: held frames longer than a send slot, and frames the
    /// kernel refused with `EMSGSIZE` (longer than the sending end's MTU allows).
    public var oversized: UInt64 = 0
    /// Times the thread slept in epoll.
    public var waits: UInt64 = 0
    /// How late the departure timer woke the thread: the time its wait returned minus the deadline the
    /// timer was armed for, for each wake-up by the timer that found the thread asleep.
    public var timerWakeups = LatencyHistogram()
    /// Time the thread spent spinning on the clock for departures, in nanoseconds (CPU it used to be on
    /// time; ``DepartureTiming``).
    public var departureSpin: UInt64 = 0
    /// Time the thread spent polling its ring after traffic or for a reply, in nanoseconds, and the polls
    /// that found a frame (each a wake-up saved; ``TrafficPolling``).
    public var pollSpin: UInt64 = 0
    public var pollHits: UInt64 = 0
    /// Spins the kernel preempted (a run of them stops the direction's spinning for a while; ``DeparturePacer``).
    public var spinPreemptions: UInt64 = 0
    /// CPU time the direction's thread has used, user and system, in nanoseconds (`getrusage(RUSAGE_THREAD)`,
    /// taken when the statistics are read and when the thread ends).
    public var userCPU: UInt64 = 0
    public var systemCPU: UInt64 = 0
    /// Departure lateness of held frames: the time the `sendmmsg` carrying a frame returned minus the time the
    /// frame was due (an upper bound on how late it crossed the veth).
    public var lateness = LatencyHistogram()

    /// All zero.
    public init() {}

    public var description: String {
        "received \(received) (\(receivedBytes) B), at once \(forwardedAtOnce), held \(held), dropped \(dropped), "
            + "departed \(departed), sent \(sent) (\(sentBytes) B), send failures \(sendFailures) (errno \(lastSendError)), "
            + "receive errors \(receiveErrors) (errno \(lastReceiveError)), truncated \(truncated), copied \(copied), ring rebuilds \(ringRebuilds) "
            + "(failed \(rebuildFailures)\(lastRebuildFailure.map { ": \($0)" } ?? "")), receive overruns \(receiveOverruns), stamp fallbacks \(stampFallbacks), outgoing \(outgoingSkipped), "
            + "oversized \(oversized), waits \(waits), timer wake-ups \(timerWakeups.summary), departure spin \(departureSpin / 1000) µs, poll spin \(pollSpin / 1000) µs (\(pollHits) found a frame), spins preempted \(spinPreemptions), CPU \(userCPU / 1_000_000) ms user \(systemCPU / 1_000_000) ms system, "
            + "lateness \(lateness.summary)"
    }
}

import Glibc
import LinkEmulation
import Synchronization

/// The userspace wire: two directions, each a plain pthread forwarding frames between the wire's two veth
/// ends through its own ``FrameScheduler``.
///
/// ```swift
/// let runtime = try EngineRuntime(wire: wire, uplink: PassThroughScheduler(), downlink: PassThroughScheduler())
/// try runtime.start()
/// let forwarded = try runtime.perform(on: .uplink) { scheduler in scheduler.forwarded }
/// runtime.stop()
/// ```
///
/// The sockets are opened by `init` (so a missing interface fails there), the threads start with
/// ``start()`` and end with ``stop()`` (or when the runtime is released), which also closes every
/// descriptor. Each direction reads its end's `TPACKET_V2` ring, sends with `sendmmsg`, goes by
/// `CLOCK_MONOTONIC` and sleeps in epoll on the ring's socket, a timerfd and an eventfd.
///
/// The scheduler type is a generic parameter: one concrete model type per runtime, no boxing. (The loop is
/// not specialized across modules, so a call costs what one through an existential does — a few
/// nanoseconds, measured by linkcond-bench, against about a microsecond of system calls per frame.) A
/// model that must change its kind at run time keeps its parts behind one class of its own, or is
/// replaced whole through ``perform(on:_:)``.
public final class EngineRuntime<Scheduler: FrameScheduler>: Sendable {
    private enum Phase {
        case ready
        case running([pthread_t])
        case stopped
    }

    /// The wire ends the runtime forwards between.
    public let wire: WireEnds
    /// The I/O options in force.
    public let options: EngineOptions
    private let uplink: any DirectionControl<Scheduler>
    private let downlink: any DirectionControl<Scheduler>
    private let phase = Mutex(Phase.ready)

    /// Opens the four packet sockets (a receiving and a sending one on each wire end) and prepares both
    /// directions, each reading its end's receive ring. Nothing is forwarded before ``start()``.
    public convenience init(
        wire: WireEnds, options: EngineOptions = EngineOptions(), uplink: sending Scheduler, downlink: sending Scheduler
    ) throws(PacketEngineError) {
        try self.init(wire: wire, options: options, uplink: uplink, downlink: downlink) { (socket, sizes) throws(PacketEngineError) in
            try ReceiveRing(socket: socket, frameBytes: sizes.frameBytes, slots: 2048, batch: sizes.batchSize)
        }
    }

    /// Opens the four packet sockets and prepares both directions, each reading from the source
    /// `makeSource` builds on its receive socket (which the source then owns). For readers other than the
    /// engine's ring (linkcond-bench's).
    package init<Source: FrameSource>(
        wire: WireEnds, options: EngineOptions, uplink: sending Scheduler, downlink: sending Scheduler,
        source makeSource: (_ socket: PacketSocket, _ sizes: SourceSizes) throws(PacketEngineError) -> Source
    ) throws(PacketEngineError) {
        guard options.batchSize > 0, options.batchSize <= 1024 else {
            throw PacketEngineError(operation: "configure the engine", detail: "a batch holds 1 to 1024 frames, not \(options.batchSize)")
        }
        self.wire = wire
        self.options = options
        let buffer = options.socketBufferBytes
        let clientReceive = try PacketSocket.open(interface: wire.clientSide, in: wire.namespace, role: .receive, bufferBytes: buffer)
        let clientSend = try PacketSocket.open(interface: wire.clientSide, in: wire.namespace, role: .send, bufferBytes: buffer)
        let routerReceive = try PacketSocket.open(interface: wire.routerSide, in: wire.namespace, role: .receive, bufferBytes: buffer)
        let routerSend = try PacketSocket.open(interface: wire.routerSide, in: wire.namespace, role: .send, bufferBytes: buffer)
        self.uplink = try Self.direction(
            .uplink, scheduler: uplink, receiver: clientReceive, sender: routerSend, options: options, makeSource: makeSource)
        self.downlink = try Self.direction(
            .downlink, scheduler: downlink, receiver: routerReceive, sender: clientSend, options: options, makeSource: makeSource)
    }

    /// One direction's loop: `receiver`'s source, `sender`'s sink, the system clock, epoll.
    private static func direction<Source: FrameSource>(
        _ direction: Direction, scheduler: sending Scheduler, receiver: PacketSocket, sender: PacketSocket, options: EngineOptions,
        makeSource: (PacketSocket, SourceSizes) throws(PacketEngineError) -> Source
    ) throws(PacketEngineError) -> any DirectionControl<Scheduler> {
        // Room for a full-MTU frame with a VLAN tag. A longer one (the MTU grew) is read whole from the
        // socket and has the slots grown (DirectionLoop.adaptToMTU).
        let frameBytes = Self.frameBytes(mtu: Int(max(receiver.mtu, sender.mtu)))
        let place = "the \(direction) of \(receiver.place) to \(sender.interface)"
        let waiter = try EpollWaiter(sourceDescriptor: receiver.fileDescriptor, place: place)
        let source = try makeSource(receiver, SourceSizes(frameBytes: frameBytes, batchSize: options.batchSize))
        return DirectionLoop(
            direction: direction, scheduler: scheduler, source: source, sink: PacketSink(socket: sender),
            batch: SendBatch(capacity: options.batchSize, slotSize: frameBytes), clock: SystemClock(), waiter: waiter, spin: options.spin)
    }

    /// The longest frame an MTU lets onto an Ethernet link: the MTU, an Ethernet header and a VLAN tag.
    static func frameBytes(mtu: Int) -> Int { mtu + 14 + VLANTag.size }

    deinit {
        stop()
    }

    /// Reads the wire ends' MTU again and, in each direction between two batches, gives the receive ring and
    /// the send slots room for a full frame of it (a larger ring takes over without losing a frame). Each
    /// direction does this by itself when a frame longer than its slots arrives; call it when the MTU was
    /// raised (an rtnetlink link notification) to have the ring grown before the first such frame.
    public func adaptToMTU() {
        for direction in Direction.allCases {
            let loop = self.loop(direction)
            loop.mailbox.submit(DirectionJob<Scheduler> { loop, _ in loop.adaptToMTU() }, loop: loop)
        }
    }

    private func loop(_ direction: Direction) -> any DirectionControl<Scheduler> {
        direction == .uplink ? uplink : downlink
    }

    /// True between ``start()`` and ``stop()``.
    public var isRunning: Bool {
        phase.withLock { if case .running = $0 { return true } else { return false } }
    }

    /// Starts both directions' threads. A runtime starts once; after ``stop()`` make a new one.
    public func start() throws(PacketEngineError) {
        try phase.withLock { (phase: inout Phase) throws(PacketEngineError) in
            guard case .ready = phase else {
                throw PacketEngineError(operation: "start the engine on \(wire.clientSide)/\(wire.routerSide)", detail: "it was started before")
            }
            var threads: [pthread_t] = []
            for loop: any DirectionControl<Scheduler> in [uplink, downlink] {
                loop.mailbox.open()
                do throws(PacketEngineError) {
                    let thread: pthread_t
                    do throws(PacketEngineError) {
                        thread = try EngineThread.start(loop, operation: "start the \(loop.direction) thread")
                    } catch {
                        loop.mailbox.close(loop)  // no thread will close it
                        throw error
                    }
                    threads.append(thread)
                    if let priority = options.realtimePriority {
                        try EngineThread.makeRealtime(thread, priority: priority, name: "the \(loop.direction) thread")
                    }
                } catch {
                    // The other loop's mailbox, never opened, is closed already.
                    Self.end([uplink, downlink], threads: threads)
                    phase = .stopped
                    throw error
                }
            }
            phase = .running(threads)
        }
    }

    /// Stops both directions and waits for their threads to end, then closes every descriptor. Frames still
    /// held by a scheduler stay in it (and can be inspected with ``perform(on:_:)``). Idempotent.
    public func stop() {
        phase.withLock { phase in
            switch phase {
            case .running(let threads):
                Self.end([uplink, downlink], threads: threads)
            case .ready:
                uplink.close()
                downlink.close()
            case .stopped:
                break
            }
            phase = .stopped
        }
    }

    private static func end(_ loops: [any DirectionControl<Scheduler>], threads: [pthread_t]) {
        for loop in loops { loop.requestStop() }
        for thread in threads { pthread_join(thread, nil) }
        for loop in loops { loop.close() }
    }

    /// Runs `body` with a direction's scheduler on that direction's own thread, between two batches, and
    /// returns its result; the caller waits. Use it to swap or reconfigure a model (assign to the `inout`
    /// parameter to replace it) or to read its counters, without locks in the forwarding path. Before
    /// ``start()`` and after ``stop()`` the body runs on the calling thread. The body must not call back
    /// into the runtime.
    public func perform<T: Sendable>(on direction: Direction, _ body: @Sendable (inout Scheduler) throws -> T) throws -> T {
        try withoutActuallyEscaping(body) { body in
            let outcome = Outcome<T>()
            let loop = self.loop(direction)
            let job = DirectionJob<Scheduler> { loop, _ in
                outcome.result = Result { try body(&loop.scheduler) }
            }
            loop.mailbox.submit(job, loop: loop)
            return try outcome.result!.get()
        }
    }

    /// A direction's counters and departure-lateness histogram, read by its own thread (or directly when
    /// not running).
    public func statistics(of direction: Direction) -> DirectionStatistics {
        let outcome = Outcome<DirectionStatistics>()
        let loop = self.loop(direction)
        let job = DirectionJob<Scheduler> { loop, onDirectionThread in
            if onDirectionThread { loop.recordThreadCounters() }
            outcome.result = .success(loop.statistics)
        }
        loop.mailbox.submit(job, loop: loop)
        return (try? outcome.result?.get()) ?? DirectionStatistics()
    }
}

extension EngineRuntime {
    /// Runs `body` on both directions' threads at the same time — each with its own scheduler and its
    /// statistics (its thread's counters copied in first) — and returns when both have run: one wake-up of
    /// each thread, side by side, where a ``perform(on:_:)`` and a ``statistics(of:)`` per direction would
    /// wake them four times in a row (on a loaded machine each wake-up waits for a CPU). Before ``start()``
    /// and after ``stop()`` the bodies run on the calling thread. The body must not call back into the runtime.
    public func performOnBoth<T: Sendable>(
        _ body: @escaping @Sendable (_ direction: Direction, _ scheduler: inout Scheduler, _ statistics: DirectionStatistics) throws -> T
    ) -> (uplink: Result<T, any Error>, downlink: Result<T, any Error>) {
        let outcomes = [Outcome<T>(), Outcome<T>()]
        var queued: [DirectionJob<Scheduler>] = []
        for (index, direction) in [Direction.uplink, .downlink].enumerated() {
            let loop = self.loop(direction)
            let outcome = outcomes[index]
            let job = DirectionJob<Scheduler> { loop, onDirectionThread in
                if onDirectionThread { loop.recordThreadCounters() }
                let statistics = loop.statistics
                outcome.result = Result { try body(loop.direction, &loop.scheduler, statistics) }
            }
            if loop.mailbox.enqueue(job, loop: loop) { queued.append(job) }
        }
        for job in queued { job.wait() }
        return (outcomes[0].result!, outcomes[1].result!)
    }
}

/// Where a job leaves its result for the thread that waits on it (the job's completion orders the accesses).
private final class Outcome<T>: @unchecked Sendable {
    var result: Result<T, any Error>?
}

/// The sizes a direction's source is built for.
package struct SourceSizes: Sendable {
    /// The longest frame the direction forwards whole: the larger MTU of its two ends plus an Ethernet
    /// header and a VLAN tag.
    package var frameBytes: Int
    /// Frames per batch (``EngineOptions/batchSize``).
    package var batchSize: Int
}

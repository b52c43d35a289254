import CPacket
import Glibc
import LinkcondBase
import LinkEmulation
import Synchronization

/// One direction of the wire: read frames from a source, offer each to the direction's scheduler, send
/// what it lets through (at once, or when its departure time comes) to a sink.
///
/// Every iteration: run queued control jobs, send the departures that are due, read one batch and offer
/// its frames, send everything queued in one call, give the batch back. When there is nothing more to
/// read it arms the waiter's timer for the next departure (only when that is earlier than the deadline
/// already armed) and sleeps until the source is readable, the timer fires or another thread wakes it.
/// The scheduler, the batch and the statistics belong to the thread that runs the loop.
///
/// A frame longer than the slots it was meant for is never lost for that alone: one the source read whole
/// the slow way, or a held one longer than a send slot, crosses, and the ends' MTU is read again before the
/// next batch (``adaptToMTU()``) to grow the send slots and the source's. What cannot cross is counted by
/// its reason: `truncated` (cut short on the way in), `oversized` (the sending end refused it for its
/// length, `EMSGSIZE`), `sendFailures` (refused for another reason).
///
/// The I/O is given, not built: the engine gives a `TPACKET_V2` ring, `sendmmsg`, `CLOCK_MONOTONIC` and
/// epoll (``EngineRuntime``); unit tests give an embedded wire and a virtual clock, and drive ``run()``
/// from the test's thread. All four are generic parameters: no existential boxes, and nothing is
/// allocated per frame.
final class DirectionLoop<
    Scheduler: FrameScheduler, Source: FrameSource, Sink: FrameSink, Clock: EngineClock, Waiter: DirectionWaiter
>: DirectionControl, @unchecked Sendable {
    let direction: Direction
    let mailbox = DirectionMailbox<Scheduler>()
    // The scheduler and the counters are touched for every frame. Kept behind pointers, they are reached
    // without the dynamic exclusivity checks a class's stored properties get (one thread owns them at a
    // time; the mailbox hands them over).
    private let schedulerSlot: UnsafeMutablePointer<Scheduler>
    private let counters: UnsafeMutablePointer<DirectionStatistics>

    /// The direction's model (its own thread's while it runs; see ``DirectionMailbox``).
    var scheduler: Scheduler {
        get { schedulerSlot.pointee }
        _modify { yield &schedulerSlot.pointee }
    }

    /// The direction's counters (same ownership as the scheduler).
    var statistics: DirectionStatistics {
        get { counters.pointee }
        _modify { yield &counters.pointee }
    }

    private let source: Source
    private let sink: Sink
    private let batch: SendBatch
    private let clock: Clock
    private let waiter: Waiter
    private let spin: UInt64
    private let stopRequested = Atomic<Bool>(false)
    /// True while the source may hold frames: its last batch was full, or the waiter said it is readable.
    @exclusivity(unchecked) private var receiveReady = true
    /// The deadline the waiter's timer is armed for; nil when it is not armed or has fired.
    @exclusivity(unchecked) private(set) var armedDeadline: MonotonicNanoseconds?
    /// True when a frame did not fit a receive or a send slot: the ends' MTU is read again before the next
    /// batch (``adaptToMTU()``).
    @exclusivity(unchecked) private var slotsOutgrown = false
    /// The slot size a rebuild of the source failed for (not tried again for the same size).
    private var failedSlotBytes = 0

    /// A loop forwarding from `source` to `sink` through `scheduler`, queueing up to `batch.capacity` frames
    /// per send. With `spin` > 0 it wakes that many nanoseconds before a departure and spins on the clock.
    init(
        direction: Direction, scheduler: Scheduler, source: Source, sink: Sink, batch: SendBatch, clock: Clock, waiter: Waiter,
        spin: UInt64 = 0
    ) {
        self.direction = direction
        schedulerSlot = .allocate(capacity: 1)
        schedulerSlot.initialize(to: scheduler)
        counters = .allocate(capacity: 1)
        counters.initialize(to: DirectionStatistics())
        self.source = source
        self.sink = sink
        self.batch = batch
        self.clock = clock
        self.waiter = waiter
        self.spin = spin
    }

    deinit {
        schedulerSlot.deinitialize(count: 1)
        schedulerSlot.deallocate()
        counters.deinitialize(count: 1)
        counters.deallocate()
    }

    func requestStop() {
        stopRequested.store(true, ordering: .relaxed)
        waiter.wake()
    }

    func wake() {
        waiter.wake()
    }

    func runThread() {
        EngineThread.configureCurrent(name: "lc-\(direction)")
        run()
    }

    /// Forwards until a stop is requested (then records the thread's counters, closes the mailbox and
    /// returns true), or until the waiter has nothing to report and cannot block (returns false; an
    /// embedded wire's waiter does that, the engine's never does).
    @discardableResult
    func run() -> Bool {
        while true {
            if mailbox.hasPending { mailbox.runPending(self) }
            if slotsOutgrown { adaptToMTU() }
            if stopRequested.load(ordering: .relaxed) {
                recordThreadCounters()
                mailbox.close(self)
                return true
            }
            var now = clock.now()
            // Departures go out before the next batch is read, so reading never delays them.
            if departDue(&now) { flush() }
            if receiveReady { receiveReady = receive() }
            flush()
            source.release()
            // A frame that did not fit has the slots grown before the thread sleeps.
            if receiveReady || slotsOutgrown { continue }
            if let next = scheduler.nextDeparture {
                if next <= clock.now() &+ spin { continue }
                armTimer(firesBy: next - spin)
            }
            statistics.waits &+= 1
            let woke = waiter.wait { event in
                switch event {
                case .readable: receiveReady = true
                case .sourceError:
                    takeSourceError()
                    receiveReady = true
                case .timer: armedDeadline = nil
                case .woken: break
                }
            }
            if !woke { return false }
        }
    }

    /// Copies this thread's CPU time and the source's overruns into the statistics (on the direction's
    /// own thread only).
    func recordThreadCounters() {
        var user: UInt64 = 0
        var system: UInt64 = 0
        if cpk_thread_cpu_time(&user, &system) == 0 {
            statistics.userCPU = user
            statistics.systemCPU = system
        }
        statistics.receiveOverruns &+= source.takeOverruns()
    }

    /// Reads the two ends' MTU and gives the send slots and the source's slots room for a full frame of the
    /// larger one with a VLAN tag, when they have less (between batches, on the direction's thread: the
    /// batch is empty). Growing the source hands over to new slots without losing a frame; when that
    /// fails, longer frames still cross, read whole the slower way.
    func adaptToMTU() {
        slotsOutgrown = false
        let mtu = max(source.currentMTU(), sink.currentMTU())
        guard mtu > 0 else { return }
        let wanted = EngineRuntime<Scheduler>.frameBytes(mtu: mtu)
        if wanted > batch.slotSize { batch.grow(toSlotSize: wanted) }
        guard wanted > source.slotBytes, wanted != failedSlotBytes else { return }
        do throws(PacketEngineError) {
            if let descriptor = try source.grow(toSlotBytes: wanted) {
                statistics.ringRebuilds &+= 1
                try waiter.watchSource(descriptor)
            }
        } catch {
            failedSlotBytes = wanted
            statistics.rebuildFailures &+= 1
            statistics.lastRebuildFailure = error
        }
    }

    /// Lets go of the source's, the sink's and the waiter's descriptors (after the thread has ended).
    func close() {
        waiter.close()
        source.close()
        sink.close()
    }

    /// Makes sure the timer fires by `deadline`: arms it only when nothing is armed or the armed deadline
    /// is later (a wake-up for a deadline that moved later is harmless, and saves a system call per frame).
    @inline(__always)
    private func armTimer(firesBy deadline: MonotonicNanoseconds) {
        if let armedDeadline, armedDeadline <= deadline { return }
        // A deadline of 0 would disarm a timerfd; 1 ns is long past and fires at once.
        waiter.armTimer(at: max(deadline, 1))
        armedDeadline = deadline
    }

    /// Counts the error the source reports besides reads.
    private func takeSourceError() {
        let code = source.takeError()
        if code != 0 {
            statistics.receiveErrors &+= 1
            statistics.lastReceiveError = code
        }
    }

    /// Hands out the held frames that are due (spinning up to `spin` for one that is nearly due); true when
    /// the scheduler was asked.
    @inline(__always)
    @discardableResult
    private func departDue(_ now: inout MonotonicNanoseconds) -> Bool {
        guard let next = scheduler.nextDeparture else { return false }
        if next > now {
            guard spin > 0, next - now <= spin else { return false }
            while now < next {
                cpk_cpu_relax()
                now = clock.now()
            }
        }
        scheduler.departDue(at: now) { frame, due in
            if batch.isFull { flush() }
            if frame.count > batch.slotSize {
                // A frame the links let through is longer than a send slot (the MTU grew): the slots grow
                // to it now (once), and to the ends' MTU before the next batch.
                flush()
                batch.grow(toSlotSize: frame.count)
                slotsOutgrown = true
            }
            if batch.append(copyOf: frame, due: due) {
                statistics.departed &+= 1
            } else {
                statistics.oversized &+= 1
            }
        }
        return true
    }

    /// Reads one batch and offers its frames. Returns true when more may be waiting.
    @inline(__always)
    private func receive() -> Bool {
        let count: Int
        let more: Bool
        switch source.receive() {
        case .frames(let taken, let full):
            count = taken
            more = full
        case .empty: return false
        case .interrupted: return true
        case .failed(let code):
            // ENETDOWN: the receiving end went down (reported once); it resumes when it comes back up.
            statistics.receiveErrors &+= 1
            statistics.lastReceiveError = code
            return false
        }
        let now = clock.now()
        for index in 0..<count {
            if source.isTruncated(index) {
                statistics.truncated &+= 1
                slotsOutgrown = true
                continue
            }
            if source.isOutgoing(index) {
                statistics.outgoingSkipped &+= 1
                continue
            }
            offer(source.frame(index), arrival: source.arrival(index, readAt: now), now: now)
        }
        let copied = source.takeCopied()
        if copied > 0 {
            statistics.copied &+= copied
            slotsOutgrown = true
        }
        return more
    }

    /// Offers one frame that arrived at `arrival` and acts on the verdict: a frame to forward is queued by
    /// reference; what the scheduler holds that is due already (the frame itself after a zero delay, or the
    /// duplicate of a forwarded one) is queued right behind it.
    @inline(__always)
    private func offer(_ frame: UnsafeMutableRawBufferPointer, arrival: MonotonicNanoseconds, now: MonotonicNanoseconds) {
        statistics.received &+= 1
        statistics.receivedBytes &+= UInt64(frame.count)
        switch scheduler.offer(frame, at: arrival) {
        case .forwardNow:
            statistics.forwardedAtOnce &+= 1
            if batch.isFull { flush() }
            batch.append(reference: UnsafeRawBufferPointer(frame))
        case .held:
            statistics.held &+= 1
        case .dropped:
            statistics.dropped &+= 1
        }
        if let next = scheduler.nextDeparture, next <= now {
            var departure = now
            departDue(&departure)
        }
    }

    /// Sends everything queued, in order; a frame the sink refuses is counted and skipped. A held frame's
    /// lateness is the time the send that carried it returned (by then the frame has crossed the veth)
    /// minus the time it was due: an upper bound.
    @inline(__always)
    private func flush() {
        let total = batch.count
        guard total > 0 else { return }
        var index = 0
        while index < total {
            switch sink.send(batch, from: index) {
            case .sent(let sent):
                let returned = clock.now()
                for entry in index..<(index + sent) {
                    statistics.sentBytes &+= UInt64(batch.length(entry))
                    let due = batch.due(entry)
                    if due != 0 { statistics.lateness.record(returned > due ? returned - due : 0) }
                }
                statistics.sent &+= UInt64(sent)
                index += sent
            case .interrupted:
                continue
            case .failed(EMSGSIZE):
                // Longer than the sending end's MTU lets through.
                statistics.oversized &+= 1
                index += 1
            case .failed(let code):
                statistics.sendFailures &+= 1
                statistics.lastSendError = code
                index += 1
            }
        }
        batch.clear()
    }
}

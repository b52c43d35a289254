import CPacket
import Glibc
import LinkcondBase
import LinkEmulation
import Synchronization

/// One direction of the wire on a thread of its own: read frames from one end, offer each to the
/// direction's scheduler, send what it lets through (at once, or when its departure time comes) out of
/// the other end.
///
/// Every iteration: run queued control jobs, send the departures that are due, read one batch (`recvmmsg`
/// or a `TPACKET_V2` ring, never blocking) and offer its frames, send everything queued in one `sendmmsg`.
/// When there is nothing more to read it arms the timerfd for the next departure and sleeps in epoll on
/// the receive socket, the timer and the wake signal. The scheduler, the batches and the statistics belong
/// to this thread alone while it runs.
final class DirectionLoop<Scheduler: FrameScheduler>: ThreadBody, @unchecked Sendable {
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
    let wake: WakeSignal

    private let receiver: PacketSocket
    private let sender: PacketSocket
    private let source: any FrameSource
    private let sendBatch: SendBatch
    private let timer: DepartureTimer
    private let poller: Poller
    private let spin: UInt64
    private let stopRequested = Atomic<Bool>(false)

    private static var receiveToken: UInt64 { 0 }
    private static var timerToken: UInt64 { 1 }
    private static var wakeToken: UInt64 { 2 }

    init(
        direction: Direction, scheduler: sending Scheduler, receiver: PacketSocket, sender: PacketSocket, options: EngineOptions
    ) throws(PacketEngineError) {
        self.direction = direction
        schedulerSlot = .allocate(capacity: 1)
        schedulerSlot.initialize(to: scheduler)
        counters = .allocate(capacity: 1)
        counters.initialize(to: DirectionStatistics())
        self.receiver = receiver
        self.sender = sender
        let place = "the \(direction) of \(receiver.place) to \(sender.interface)"
        // Room for a full-MTU frame with a VLAN tag; anything longer is counted as truncated. With a vnet
        // header a frame can be a 64 KiB super-frame.
        let slotSize = Int(max(receiver.mtu, sender.mtu)) + 14 + 4
        let receiveSlot = receiver.vnetHeader ? VirtioNetHeader.size + 65_536 + 14 + 4 : slotSize
        switch options.receiveMethod {
        case .recvmmsg:
            source = ReceiveBatch(capacity: max(1, options.batchSize), slotSize: max(slotSize, receiveSlot))
        case .ring:
            source = try ReceiveRing(
                socket: receiver.fileDescriptor, frameBytes: receiver.vnetHeader ? 65_536 + 18 : slotSize, vnetHeader: receiver.vnetHeader,
                slots: receiver.vnetHeader ? 128 : 2048, batch: max(1, options.batchSize), place: receiver.place)
        }
        sendBatch = SendBatch(capacity: max(1, options.batchSize), slotSize: slotSize)
        spin = options.spin
        timer = try DepartureTimer(place: place)
        wake = try WakeSignal(place: place)
        poller = try Poller(place: place)
        try poller.add(receiver.fileDescriptor, token: Self.receiveToken, operation: "epoll_ctl ADD \(receiver.place)")
        try poller.add(timer.fileDescriptor, token: Self.timerToken, operation: "epoll_ctl ADD the timer of \(place)")
        try poller.add(wake.fileDescriptor, token: Self.wakeToken, operation: "epoll_ctl ADD the wake signal of \(place)")
    }

    deinit {
        schedulerSlot.deinitialize(count: 1)
        schedulerSlot.deallocate()
        counters.deinitialize(count: 1)
        counters.deallocate()
    }

    /// Asks the thread to end after its current iteration (from any thread).
    func requestStop() {
        stopRequested.store(true, ordering: .relaxed)
        wake.wake()
    }

    func runThread() {
        EngineThread.configureCurrent(name: "lc-\(direction)")
        var receiveReady = true
        while true {
            if mailbox.hasPending { mailbox.runPending(self) }
            if stopRequested.load(ordering: .relaxed) { break }
            var now = MonotonicClock.nanoseconds()
            // Departures go out before the next batch is read, so reading never delays them.
            if departDue(&now) { flush() }
            if receiveReady { receiveReady = receive() }
            flush()
            source.release()
            if receiveReady { continue }
            if let next = scheduler.nextDeparture {
                if next <= MonotonicClock.nanoseconds() &+ spin { continue }
                timer.ensure(firesBy: next - spin)
            }
            statistics.waits &+= 1
            poller.wait(timeoutMilliseconds: -1) { token, events in
                switch token {
                case Self.receiveToken:
                    // A pending socket error (ENETDOWN when the end goes down) keeps epoll reporting it until it
                    // is read; recvmmsg reads it, a ring never does.
                    if events & UInt32(EPOLLERR.rawValue) != 0 { takeSocketError() }
                    receiveReady = true
                case Self.timerToken: timer.acknowledge()
                default: wake.acknowledge()
                }
            }
        }
        recordThreadCounters()
        mailbox.close(self)
    }

    /// Copies this thread's CPU time and the receive socket's kernel drops into the statistics (on the
    /// direction's own thread only).
    func recordThreadCounters() {
        var user: UInt64 = 0
        var system: UInt64 = 0
        if cpk_thread_cpu_time(&user, &system) == 0 {
            statistics.userCPU = user
            statistics.systemCPU = system
        }
        // The kernel resets its counts on every read: the statistics keep the sum.
        var kernel = tpacket_stats()
        var length = socklen_t(MemoryLayout<tpacket_stats>.size)
        if getsockopt(receiver.fileDescriptor, SOL_PACKET, PACKET_STATISTICS, &kernel, &length) == 0 {
            statistics.receiveOverruns &+= UInt64(kernel.tp_drops)
        }
    }

    /// Reads and counts the receive socket's pending error (`SO_ERROR` clears it).
    private func takeSocketError() {
        var code: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        if getsockopt(receiver.fileDescriptor, SOL_SOCKET, SO_ERROR, &code, &length) == 0, code != 0 {
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
                now = MonotonicClock.nanoseconds()
            }
        }
        scheduler.departDue(at: now) { frame, due in
            if sendBatch.isFull { flush() }
            if sendBatch.append(copyOf: frame, due: due) {
                statistics.departed &+= 1
            } else {
                statistics.oversized &+= 1
            }
        }
        return true
    }

    /// Reads one batch and offers its frames. Returns true when the batch was full (more may be waiting).
    @inline(__always)
    private func receive() -> Bool {
        let count = source.receive(from: receiver.fileDescriptor)
        if count < 0 {
            let code = errno
            if code == EAGAIN || code == EWOULDBLOCK { return false }
            if code == EINTR { return true }
            // ENETDOWN: the receiving end went down (reported once); it resumes when it comes back up.
            statistics.receiveErrors &+= 1
            statistics.lastReceiveError = code
            return false
        }
        let now = MonotonicClock.nanoseconds()
        for index in 0..<count {
            if source.isTruncated(index) {
                statistics.truncated &+= 1
                continue
            }
            if source.packetType(index) == UInt8(PACKET_OUTGOING) {
                statistics.outgoingSkipped &+= 1
                continue
            }
            let frame = source.frame(index)
            if receiver.vnetHeader {
                offerVirtioFrame(frame, at: now)
            } else {
                offer(frame, at: now, inReservedSlot: false)
            }
        }
        return count == source.capacity
    }

    /// Offers one frame and acts on the verdict. A frame in a reserved send slot (a segment) is queued in
    /// place; a received frame by reference.
    @inline(__always)
    private func offer(_ frame: UnsafeMutableRawBufferPointer, at now: MonotonicNanoseconds, inReservedSlot: Bool) {
        statistics.received &+= 1
        statistics.receivedBytes &+= UInt64(frame.count)
        switch scheduler.offer(frame, at: now) {
        case .forwardNow:
            statistics.forwardedAtOnce &+= 1
            if inReservedSlot {
                sendBatch.commitReserved(length: frame.count)
            } else {
                if sendBatch.isFull { flush() }
                sendBatch.append(reference: UnsafeRawBufferPointer(frame))
            }
        case .held:
            statistics.held &+= 1
            if let next = scheduler.nextDeparture, next <= now {
                var departure = now
                departDue(&departure)
            }
        case .dropped:
            statistics.dropped &+= 1
        }
    }

    /// A frame read with its `virtio_net_hdr`: completes a partial checksum, or cuts a TCP super-frame
    /// into segments, then offers what results.
    private func offerVirtioFrame(_ raw: UnsafeMutableRawBufferPointer, at now: MonotonicNanoseconds) {
        guard raw.count > VirtioNetHeader.size + 14 else {
            statistics.unsupported &+= 1
            return
        }
        let header = VirtioNetHeader(UnsafeRawBufferPointer(rebasing: raw[0..<VirtioNetHeader.size]))
        let frame = UnsafeMutableRawBufferPointer(rebasing: raw[VirtioNetHeader.size...])
        switch header.gsoType {
        case UInt8(VIRTIO_NET_HDR_GSO_NONE):
            if header.needsChecksum {
                guard GSOSegmenter.completeChecksum(frame, start: header.checksumStart, offset: header.checksumOffset) else {
                    statistics.unsupported &+= 1
                    return
                }
                statistics.checksumsCompleted &+= 1
            }
            offer(frame, at: now, inReservedSlot: false)
        case UInt8(VIRTIO_NET_HDR_GSO_TCPV4), UInt8(VIRTIO_NET_HDR_GSO_TCPV6):
            let segments = GSOSegmenter.segmentTCP(
                UnsafeRawBufferPointer(frame), segmentSize: header.gsoSize, slotSize: sendBatch.slotSize,
                slot: {
                    if let slot = sendBatch.reserve() { return slot }
                    flush()
                    return sendBatch.reserve()!
                },
                emit: { segment in offer(segment, at: now, inReservedSlot: true) })
            if let segments {
                statistics.superFrames &+= 1
                statistics.segments &+= UInt64(segments)
            } else {
                statistics.unsupported &+= 1
            }
        default:
            statistics.unsupported &+= 1
        }
    }

    /// Sends everything queued, in order; a frame the kernel refuses is counted and skipped. A held frame's
    /// lateness is the time the `sendmmsg` that carried it returned (by then the frame has crossed the veth)
    /// minus the time it was due: an upper bound.
    @inline(__always)
    private func flush() {
        let total = sendBatch.count
        guard total > 0 else { return }
        var index = 0
        while index < total {
            let sent = Int(cpk_sendmmsg(sender.fileDescriptor, sendBatch.messages + index, UInt32(total - index), 0))
            if sent > 0 {
                let returned = MonotonicClock.nanoseconds()
                for entry in index..<(index + sent) {
                    statistics.sentBytes &+= UInt64(sendBatch.length(entry))
                    let due = sendBatch.dues[entry]
                    if due != 0 { statistics.lateness.record(returned > due ? returned - due : 0) }
                }
                statistics.sent &+= UInt64(sent)
                index += sent
                continue
            }
            let code = errno
            if code == EINTR { continue }
            statistics.sendFailures &+= 1
            statistics.lastSendError = code
            index += 1
        }
        sendBatch.clear()
    }

    /// Closes the sockets and descriptors (after the thread has ended).
    func closeDescriptors() {
        source.close()
        receiver.close()
        sender.close()
        timer.close()
        wake.close()
        poller.close()
    }
}

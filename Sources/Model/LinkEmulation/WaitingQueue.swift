import Profiles

/// A frame waiting in a ``WaitingQueue``: its copy (a buffer of the held frames' pool) and when it arrived.
struct QueuedFrame {
    var arrival: MonotonicNanoseconds
    var buffer: UnsafeMutableRawPointer
    var length: Int
    var isDNS: Bool
}

/// The transmitter's queue for the disciplines that act on what is queued — DropHead, CoDel, PIE, RED —:
/// frames wait here, copied, until the transmitter takes them (``dequeue(at:held:counters:)``), which is
/// when CoDel decides and when the sojourn time ends. (DropTail needs no such queue: a frame's fate and its
/// departure are known when it arrives, see ``EmulatorCore``.)
///
/// Every frame dropped here is counted in ``DirectionCounters/queueDroppedFrames`` and by its reason, and its
/// buffer goes back to the pool.
struct WaitingQueue: ~Copyable {
    enum Controller {
        case dropHead
        case codel(CoDelController)
        case pie(PIEController)
        case red(REDController)
    }

    /// The queue's settings.
    let queue: LinkQueue
    private var controller: Controller
    private var frames = RingBuffer<QueuedFrame>()
    /// Frames and bytes waiting.
    private(set) var count = 0
    private(set) var bytes: UInt64 = 0
    /// The largest frame seen, at least a full Ethernet frame (CoDel's and PIE's MTU).
    private var maxPacket: UInt64 = 1514

    /// A queue for `queue` (not DropTail) on a link of `rate` bits/s (RED's idle decay).
    init(_ queue: LinkQueue, rate: UInt64?) {
        self.queue = queue
        switch queue.discipline {
        case .codel(let settings): controller = .codel(CoDelController(settings))
        case .pie(let settings): controller = .pie(PIEController(settings))
        case .red(let settings): controller = .red(REDController(settings, rate: rate))
        case .dropTail, .dropHead: controller = .dropHead
        }
    }

    /// Whether nothing waits.
    var isEmpty: Bool { count == 0 }

    /// When the oldest waiting frame arrived; nil when empty.
    var headArrival: MonotonicNanoseconds? { isEmpty ? nil : frames.first.arrival }

    /// When PIE next updates its probability or ARED its maxP; nil when neither runs.
    var nextTick: MonotonicNanoseconds? {
        switch controller {
        case .pie(let pie): pie.nextUpdate
        case .red(let red): red.nextAdaptation
        default: nil
        }
    }

    /// Runs the updates due by `time` (at least the one at ``nextTick``). An empty queue changes nothing
    /// between them but the decay, so a long idle stretch is run in few steps (see
    /// ``PIEController/idle(until:)`` and ``REDController/idle(until:)``).
    mutating func tick(upTo time: MonotonicNanoseconds) {
        switch controller {
        case .pie(var pie):
            pie.update(backlogBytes: bytes)
            if isEmpty { pie.idle(until: time) }
            controller = .pie(pie)
        case .red(var red):
            red.adapt()
            if isEmpty { red.idle(until: time) }
            controller = .red(red)
        default: break
        }
    }

    private func isFull(adding length: Int) -> Bool {
        switch queue.limit {
        case .packets(let limit): count >= Int(limit)
        case .bytes(let limit): bytes + UInt64(length) > limit
        case .time: false
        }
    }

    /// Decides whether `frame`, arriving at `now`, is queued (a copy is kept) or dropped (counted); true
    /// when it is queued.
    mutating func enqueue(
        _ frame: UnsafeRawBufferPointer, isDNS: Bool, at now: MonotonicNanoseconds, held: inout HeldFrames,
        counters: inout DirectionCounters, random: inout EmulatorRandom
    ) -> Bool {
        let length = frame.count
        maxPacket = max(maxPacket, UInt64(length))
        switch controller {
        case .dropHead:
            while isFull(adding: length) && !isEmpty {
                let head = frames.removeFirst()
                removed(head)
                drop(head.buffer, length: head.length, held: &held, counters: &counters)
                counters.headDroppedFrames &+= 1
            }
            if isFull(adding: length) {
                counters.queueDroppedFrames &+= 1
                counters.queueDroppedBytes &+= UInt64(length)
                counters.headDroppedFrames &+= 1
                return false
            }
        case .codel:
            if isFull(adding: length) { return tailDrop(length, &counters) }
        case .pie(var pie):
            pie.start(at: now)
            if isFull(adding: length) {
                pie.droppedAtLimit()
                controller = .pie(pie)
                return tailDrop(length, &counters)
            }
            let early = pie.dropsArrival(backlogBytes: bytes, maxPacket: maxPacket, &random)
            controller = .pie(pie)
            if early {
                counters.queueDroppedFrames &+= 1
                counters.queueDroppedBytes &+= UInt64(length)
                counters.pieDroppedFrames &+= 1
                return false
            }
        case .red(var red):
            let decision = red.arrival(backlogBytes: bytes, at: now, &random)
            controller = .red(red)
            if decision != .enqueue {
                counters.queueDroppedFrames &+= 1
                counters.queueDroppedBytes &+= UInt64(length)
                counters.redDroppedFrames &+= 1
                if decision == .forced { counters.redForcedDroppedFrames &+= 1 }
                return false
            }
            if isFull(adding: length) { return tailDrop(length, &counters) }
        }
        frames.append(QueuedFrame(arrival: now, buffer: held.copy(frame), length: length, isDNS: isDNS))
        count += 1
        bytes += UInt64(length)
        return true
    }

    private func tailDrop(_ length: Int, _ counters: inout DirectionCounters) -> Bool {
        counters.queueDroppedFrames &+= 1
        counters.queueDroppedBytes &+= UInt64(length)
        counters.tailDroppedFrames &+= 1
        return false
    }

    private mutating func removed(_ frame: QueuedFrame) {
        count -= 1
        bytes -= UInt64(frame.length)
    }

    private func drop(_ buffer: UnsafeMutableRawPointer, length: Int, held: inout HeldFrames, counters: inout DirectionCounters) {
        held.recycle(buffer, length: length)
        counters.queueDroppedFrames &+= 1
        counters.queueDroppedBytes &+= UInt64(length)
    }

    /// The frame the transmitter takes at `now` (not before the head arrived): the head, after CoDel has
    /// dropped what its schedule says; nil when nothing is left. The frame's sojourn is recorded.
    mutating func dequeue(at now: MonotonicNanoseconds, held: inout HeldFrames, counters: inout DirectionCounters) -> QueuedFrame? {
        guard !isEmpty else { return nil }
        var frame = frames.removeFirst()
        removed(frame)
        switch controller {
        case .codel(var codel):
            frame = codelDequeue(frame, at: now, &codel, held: &held, counters: &counters)
            controller = .codel(codel)
            guard frame.length >= 0 else { return nil }
        case .pie(var pie):
            pie.dequeued(sojourn: now - min(now, frame.arrival), at: now, queueEmpty: isEmpty)
            controller = .pie(pie)
        case .red(var red):
            if isEmpty {
                red.becameIdle(at: now)
                controller = .red(red)
            }
        case .dropHead: break
        }
        counters.sojourn.record(now - min(now, frame.arrival))
        return frame
    }

    /// RFC 8289's `dequeue` from `first`, the head just taken; a frame of length −1 when everything was
    /// dropped.
    private mutating func codelDequeue(
        _ first: QueuedFrame, at now: MonotonicNanoseconds, _ codel: inout CoDelController, held: inout HeldFrames,
        counters: inout DirectionCounters
    ) -> QueuedFrame {
        var frame = first
        var okToDrop = codel.okToDrop(sojourn: now - min(now, frame.arrival), at: now, backlogAfter: bytes, maxPacket: maxPacket)
        func dropAndTakeNext() -> Bool {
            drop(frame.buffer, length: frame.length, held: &held, counters: &counters)
            counters.codelDroppedFrames &+= 1
            guard !isEmpty else { return false }
            frame = frames.removeFirst()
            removed(frame)
            okToDrop = codel.okToDrop(sojourn: now - min(now, frame.arrival), at: now, backlogAfter: bytes, maxPacket: maxPacket)
            return true
        }
        if codel.dropping {
            if !okToDrop { codel.dropping = false }
            while codel.dropping && now >= codel.dropNext {
                codel.countDrop()
                guard dropAndTakeNext() else {
                    codel.dropping = false
                    return QueuedFrame(arrival: now, buffer: first.buffer, length: -1, isDNS: false)
                }
                if !okToDrop { codel.dropping = false } else { codel.scheduleNext() }
            }
        } else if okToDrop {
            let more = dropAndTakeNext()
            codel.startDropping(at: now)
            if !more { return QueuedFrame(arrival: now, buffer: first.buffer, length: -1, isDNS: false) }
        }
        return frame
    }

    /// Takes every waiting frame, oldest first, for a swap to a discipline without this queue.
    mutating func removeAll(_ body: (QueuedFrame) -> Void) {
        while !isEmpty {
            let frame = frames.removeFirst()
            removed(frame)
            body(frame)
        }
    }

    deinit {
        for offset in 0..<frames.count { frames[offset].buffer.deallocate() }
    }
}

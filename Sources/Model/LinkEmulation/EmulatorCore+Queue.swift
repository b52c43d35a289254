import Profiles

/// The waiting queue's side of the pipeline: frames of a DropHead, CoDel, PIE or RED queue wait, copied,
/// until the transmitter is free for them; only then are their transmission and delay decided.
///
/// The queue is served lazily but exactly: before a frame is offered and before held frames depart, every
/// event up to that moment — the transmitter taking the head (at the later of the head's arrival and the
/// end of the frame before it), PIE's probability updates, ARED's adaptations — is run in time order, so
/// each decision sees the queue as it was at its own instant. ``nextDeparture`` includes the next time the
/// transmitter takes a frame, so the engine wakes for it.
extension EmulatorCore {
    /// Puts `queue` in force: a DropTail queue is scheduled on arrival; any other discipline with a rate or
    /// a trace gets a waiting queue. Frames waiting in a queue that is replaced go through the transmitter
    /// at once, in order, as a DropTail queue would have sent them.
    mutating func configureQueue(_ queue: LinkQueue, rate: UInt64?, trace newTrace: DeliveryTrace?) {
        let wanted = queue.discipline != .dropTail && (serializer != nil || self.trace != nil)
        if usesWaitingQueue && (!wanted || waiting.queue != queue) {
            var pending: [QueuedFrame] = []
            waiting.removeAll { pending.append($0) }
            for frame in pending { hand(frame, leavingAt: frame.arrival) }
        }
        if wanted && (!usesWaitingQueue || waiting.queue != queue) {
            var linkRate = rate
            if linkRate == nil, case .red = queue.discipline, let newTrace { linkRate = UInt64(newTrace.summary.meanRate) }
            waiting = WaitingQueue(queue, rate: linkRate)
        }
        usesWaitingQueue = wanted
    }

    /// When the transmitter takes the next waiting frame; nil when none waits.
    var nextService: MonotonicNanoseconds? { waiting.headArrival.map { max($0, serializerFree) } }

    /// Offers a frame to the waiting queue at `now`.
    mutating func queue(_ frame: UnsafeMutableRawBufferPointer, isDNS: Bool, at now: MonotonicNanoseconds) -> FrameVerdict {
        serviceQueue(upTo: now)
        guard waiting.enqueue(UnsafeRawBufferPointer(frame), isDNS: isDNS, at: now, held: &held, counters: &counters, random: &random) else {
            return .dropped
        }
        serviceQueue(upTo: now)
        return .held
    }

    /// Runs the queue's events up to `time`, in time order.
    mutating func serviceQueue(upTo time: MonotonicNanoseconds) {
        while true {
            let service = nextService
            if let tick = waiting.nextTick, tick <= time, service.map({ tick <= $0 }) ?? true {
                waiting.tick(upTo: service == nil ? time : tick)
                continue
            }
            guard let service, service <= time else { return }
            guard let frame = waiting.dequeue(at: service, held: &held, counters: &counters) else { continue }
            hand(frame, leavingAt: service)
        }
    }

    /// Puts a frame the transmitter took at `start` through the transmitter and into the delay line.
    private mutating func hand(_ frame: QueuedFrame, leavingAt start: MonotonicNanoseconds) {
        backlog.advance(to: start)
        let leaves = transmitterLeaves(length: frame.length, arrival: frame.arrival)
        backlog.add(length: frame.length, leavesAt: leaves)
        let (lane, departure) = delayLine(leaves: leaves, isDNS: frame.isDNS)
        sequence &+= 1
        held.hold(buffer: frame.buffer, length: frame.length, lane: lane, departure: departure, sequence: sequence)
    }
}

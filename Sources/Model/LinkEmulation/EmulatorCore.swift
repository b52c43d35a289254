import Profiles

/// The state of one direction and the per-frame pipeline; ``DirectionEmulator`` is its public face.
///
/// Non-copyable and owned by the emulator, so the hot path runs on one exclusive access with no reference
/// counting: classify → loss (or ECN mark) → duplicate → corrupt → transmitter (serializer or trace, then
/// slot; queue limit) → delay line (or reorder) → forward now, hold, or drop.
struct EmulatorCore: ~Copyable {
    /// The lanes each kind of frame goes to; lanes left by a swap keep draining on their own.
    struct Lanes {
        /// Conditioned frames other than DNS queries.
        var main = 0
        /// Conditioned DNS queries: the conditions plus the DNS delay.
        var dns = 1
        /// Frames picked for reordering: they skip the delay line.
        var reorder = 2
        /// DNS queries outside the targets: the DNS delay only.
        var dnsOnly = 3

        func isAssigned(_ lane: Int) -> Bool { lane == main || lane == dns || lane == reorder || lane == dnsOnly }
    }

    private(set) var conditions: LinkConditions
    private(set) var options: DirectionOptions
    var counters = DirectionCounters()
    /// Whether frames are forwarded at once with no work at all.
    private(set) var isPassThrough = true

    var random: EmulatorRandom
    private var needsHeaders = false
    private var dnsDelay: UInt64 = 0
    private var targets: TargetMatcher
    private var loss: LossGenerator
    private var ecn = false
    private var duplicate: CorrelatedChance
    private var corrupt: CorrelatedChance
    private var reorder: CorrelatedChance
    private var reorderGap: UInt32 = 0
    private var reorderCounter: UInt32 = 0
    private var delays: DelaySampler
    /// The arrival of the first conditioned frame: time 0 of the delay and loss traces.
    private var traceOrigin: MonotonicNanoseconds?
    /// Whether jitter may reorder frames (the `netem` jitter model with a jitter).
    private var jitterReorders = false
    /// The latest departure given to a frame in the sorted lane.
    private var latestSortedDeparture: MonotonicNanoseconds = 0
    var serializer: RateSerializer?
    var trace: TraceDelivery?
    var slot: SlotGate?
    private var hasTransmitter = false
    /// When the serializer (or the trace) can take the next frame: when the last one it took finishes.
    var serializerFree: MonotonicNanoseconds = 0
    private var queueLimitFrames = Int.max
    private var queueLimitBytes = UInt64.max
    private var queueLimitTime = UInt64.max
    /// Whether frames wait in ``waiting`` (DropHead, CoDel, PIE, RED with a rate or a trace) rather than
    /// being scheduled through the transmitter as they arrive (DropTail).
    var usesWaitingQueue = false
    var waiting = WaitingQueue(.dropTail(.packets(1)), rate: nil)
    var sequence: UInt64 = 0
    private var lanes = Lanes()
    var held = HeldFrames()
    var backlog = TransmitBacklog()
    /// Where a duplicate waits while the original goes on (grown for frames beyond 64 KiB).
    private var scratch: UnsafeMutableRawBufferPointer

    init(conditions: LinkConditions, options: DirectionOptions) {
        self.conditions = conditions
        self.options = options
        random = EmulatorRandom(seed: options.seed)
        targets = TargetMatcher(options.targets, direction: options.direction)
        loss = LossGenerator(nil)
        duplicate = .never(random: &random)
        corrupt = .never(random: &random)
        reorder = .never(random: &random)
        delays = DelaySampler(.unconditioned, &random)
        scratch = .allocate(byteCount: 65552, alignment: 16)
        configure(conditions, options, initial: true)
    }

    deinit { scratch.deallocate() }

    // MARK: Configuration

    /// Puts `conditions` and `options` in force for frames offered from now on. Held frames keep their
    /// departures; the transmitter stays busy with the frames it has; when the delay line changes, new
    /// frames go to fresh lanes and may overtake held ones, as they would in netem's time-sorted queue.
    mutating func configure(_ conditions: LinkConditions, _ options: DirectionOptions, initial: Bool = false) {
        let newDNSDelay = options.effectiveDNSDelay
        let propagationChanged = !delays.isConfigured(as: conditions) || newDNSDelay != dnsDelay
        if initial || !loss.isConfigured(as: conditions.loss, trace: conditions.lossTrace) {
            loss = LossGenerator(conditions.loss, trace: conditions.lossTrace)
        }
        if conditions.delayTrace != self.conditions.delayTrace || conditions.lossTrace != self.conditions.lossTrace { traceOrigin = nil }
        if initial || conditions.duplicate != self.conditions.duplicate {
            duplicate = Self.chance(conditions.duplicate.map { ($0.probability, $0.correlation) }, &random)
        }
        if initial || conditions.corrupt != self.conditions.corrupt {
            corrupt = Self.chance(conditions.corrupt.map { ($0.probability, $0.correlation) }, &random)
        }
        if initial || conditions.reorder != self.conditions.reorder {
            let wanted = conditions.reorder.flatMap { $0.probability > 0 ? $0 : nil }
            reorder = Self.chance(wanted.map { ($0.probability, $0.correlation) }, &random)
            reorderGap = wanted.map { max($0.gap, 1) } ?? 0
            reorderCounter = 0
        }
        if initial || !delays.isConfigured(as: conditions) { delays = DelaySampler(conditions, &random) }
        jitterReorders = conditions.jitter > 0 && conditions.effectiveJitterModel == .netem

        let lastLeaves = backlog.lastLeavesAt
        if let newTrace = options.trace {
            if trace?.trace != newTrace { trace = TraceDelivery(newTrace) }
            serializer = nil
        } else {
            trace = nil
            if let rate = conditions.rate {
                if serializer == nil {
                    serializer = RateSerializer(rate: rate)
                    serializer?.continueAfter(lastLeaves)
                } else {
                    serializer?.change(rate: rate)
                }
            } else {
                serializer = nil
            }
        }
        if let newSlot = conditions.slot {
            if !(slot?.isConfigured(as: newSlot) ?? false) { slot = SlotGate(newSlot) }
        } else {
            slot = nil
        }
        hasTransmitter = serializer != nil || trace != nil || slot != nil
        configureQueue(conditions.effectiveQueue(), rate: conditions.rate, trace: options.trace)
        queueLimitFrames = Int.max
        queueLimitBytes = options.queueLimitBytes ?? .max
        queueLimitTime = .max
        switch conditions.effectiveQueue().limit {
        case .packets(let limit): queueLimitFrames = Int(limit)
        case .bytes(let limit): queueLimitBytes = min(queueLimitBytes, limit)
        case .time(let limit): queueLimitTime = limit
        }
        ecn = conditions.ecn
        dnsDelay = newDNSDelay
        targets = TargetMatcher(options.targets, direction: options.direction)
        needsHeaders = !options.targets.isEmpty || dnsDelay > 0
        isPassThrough = conditions.isNeutral && options.targets.isEmpty && options.trace == nil && dnsDelay == 0
        if propagationChanged && !initial { retireDelayLanes() }
        if !initial { counters.sojourn = SojournHistogram() }
        self.conditions = conditions
        self.options = options
    }

    private static func chance(_ values: (Double, Double)?, _ random: inout EmulatorRandom) -> CorrelatedChance {
        guard let (probability, correlation) = values else { return .never(random: &random) }
        return CorrelatedChance(probability: probability, correlation: correlation, random: &random)
    }

    /// Gives each delay-line role that holds frames a fresh empty lane, so the old one drains with its
    /// schedule. With no lane free (eight swaps within one delay), the role keeps its lane and new frames
    /// queue behind the old ones.
    private mutating func retireDelayLanes() {
        func fresh(_ current: Int, _ lanes: Lanes, _ held: borrowing HeldFrames) -> Int {
            guard !held.isEmpty(lane: current) else { return current }
            for lane in 0..<HeldFrames.laneCount where !lanes.isAssigned(lane) && held.isEmpty(lane: lane) {
                return lane
            }
            return current
        }
        lanes.main = fresh(lanes.main, lanes, held)
        lanes.dns = fresh(lanes.dns, lanes, held)
        lanes.dnsOnly = fresh(lanes.dnsOnly, lanes, held)
    }

    // MARK: Frames

    /// ``FrameScheduler/offer(_:at:)``.
    @inline(__always)
    mutating func offer(_ frame: UnsafeMutableRawBufferPointer, at now: MonotonicNanoseconds) -> FrameVerdict {
        counters.offeredFrames &+= 1
        counters.offeredBytes &+= UInt64(frame.count)
        if isPassThrough {
            counters.passedFrames &+= 1
            counters.passedBytes &+= UInt64(frame.count)
            counters.untouchedFrames &+= 1
            return .forwardNow
        }
        return offerConditioned(frame, at: now)
    }

    private mutating func offerConditioned(
        _ frame: UnsafeMutableRawBufferPointer, at now: MonotonicNanoseconds
    ) -> FrameVerdict {
        var headers: FrameHeaders?
        var isDNS = false
        if needsHeaders {
            let parsed = FrameHeaders(UnsafeRawBufferPointer(frame))
            headers = parsed
            isDNS = dnsDelay > 0 && parsed.isDNSQuery
            if isDNS { counters.dnsFrames &+= 1 }
            if !targets.matches(parsed) {
                return isDNS ? holdDNSOnly(frame, at: now) : forwardUntouched(frame)
            }
        }
        if traceOrigin == nil { traceOrigin = now }
        if loss.loses(&random, elapsed: now - min(now, traceOrigin!)) {
            var marked = false
            if ecn {
                if headers == nil { headers = FrameHeaders(UnsafeRawBufferPointer(frame)) }
                marked = FrameEdits.markCongestionExperienced(frame, headers.unsafelyUnwrapped)
            }
            guard marked else {
                counters.lostFrames &+= 1
                counters.lostBytes &+= UInt64(frame.count)
                return .dropped
            }
            counters.ecnMarkedFrames &+= 1
        }
        guard duplicate.happens(&random) else {
            return transmit(frame, headers: &headers, isDNS: isDNS, at: now, mayForward: true)
        }
        counters.duplicatedFrames &+= 1
        if scratch.count < frame.count {
            scratch.deallocate()
            scratch = .allocate(byteCount: frame.count, alignment: 16)
        }
        let copy = UnsafeMutableRawBufferPointer(rebasing: scratch[0..<frame.count])
        if frame.count > 0 { copy.copyMemory(from: UnsafeRawBufferPointer(frame)) }
        var copyHeaders = headers
        let original = transmit(frame, headers: &headers, isDNS: isDNS, at: now, mayForward: true)
        let second = transmit(copy, headers: &copyHeaders, isDNS: isDNS, at: now, mayForward: false)
        return original == .dropped && second == .held ? .held : original
    }

    private mutating func forwardUntouched(_ frame: UnsafeMutableRawBufferPointer) -> FrameVerdict {
        counters.untouchedFrames &+= 1
        counters.passedFrames &+= 1
        counters.passedBytes &+= UInt64(frame.count)
        return .forwardNow
    }

    /// A DNS query outside the targets: the DNS delay alone, in order with the other such queries.
    private mutating func holdDNSOnly(_ frame: UnsafeMutableRawBufferPointer, at now: MonotonicNanoseconds) -> FrameVerdict {
        guard fitsHeldLimit(frame.count) else { return .dropped }
        let departure = max(now + dnsDelay, held.lastDeparture(lane: lanes.dnsOnly))
        sequence &+= 1
        held.hold(UnsafeRawBufferPointer(frame), lane: lanes.dnsOnly, departure: departure, sequence: sequence)
        return .held
    }

    private mutating func fitsHeldLimit(_ length: Int) -> Bool {
        guard held.bytes + waiting.bytes + UInt64(length) > options.heldBytesLimit else { return true }
        counters.queueDroppedFrames &+= 1
        counters.queueDroppedBytes &+= UInt64(length)
        counters.heldLimitDroppedFrames &+= 1
        return false
    }

    /// Corrupt, queue and transmitter, delay line: one copy of a frame that survived the loss model.
    @inline(__always)
    private mutating func transmit(
        _ frame: UnsafeMutableRawBufferPointer, headers: inout FrameHeaders?, isDNS: Bool, at now: MonotonicNanoseconds,
        mayForward: Bool
    ) -> FrameVerdict {
        let length = frame.count
        if corrupt.happens(&random) {
            if headers == nil { headers = FrameHeaders(UnsafeRawBufferPointer(frame)) }
            if FrameEdits.flipRandomBit(frame, headers.unsafelyUnwrapped, &random) { counters.corruptedFrames &+= 1 }
        }
        guard fitsHeldLimit(length) else { return .dropped }
        if usesWaitingQueue { return queue(frame, isDNS: isDNS, at: now) }
        var leaves = now
        if hasTransmitter {
            backlog.advance(to: now)
            // DropTail: the frame's wait before the transmitter takes it is known now.
            let wait = serializerFree > now ? serializerFree - now : 0
            guard backlog.frames < queueLimitFrames, backlog.bytes + UInt64(length) <= queueLimitBytes, wait <= queueLimitTime else {
                counters.queueDroppedFrames &+= 1
                counters.queueDroppedBytes &+= UInt64(length)
                counters.tailDroppedFrames &+= 1
                return .dropped
            }
            counters.sojourn.record(wait)
            leaves = transmitterLeaves(length: length, arrival: now)
            backlog.add(length: length, leavesAt: leaves)
        }
        var (lane, departure) = delayLine(leaves: leaves, isDNS: isDNS)
        if mayForward && departure <= now && held.isEmpty(lane: lane) {
            counters.passedFrames &+= 1
            counters.passedBytes &+= UInt64(length)
            return .forwardNow
        }
        departure = max(departure, now)
        sequence &+= 1
        held.hold(UnsafeRawBufferPointer(frame), lane: lane, departure: departure, sequence: sequence)
        return .held
    }

    /// When a frame of `length` bytes that arrived at `arrival` leaves the transmitter (serializer or
    /// trace, then slot), not before the frames before it; ``serializerFree`` moves to when the serializer
    /// can take the next frame.
    @inline(__always)
    mutating func transmitterLeaves(length: Int, arrival: MonotonicNanoseconds) -> MonotonicNanoseconds {
        var leaves = arrival
        if trace != nil {
            leaves = trace!.delivery(length: length, at: arrival)
            serializerFree = leaves
        } else if serializer != nil {
            leaves = serializer!.transmit(length: length, at: arrival)
            serializerFree = leaves
        }
        if slot != nil { leaves = slot!.departure(ready: leaves, length: length, &random) }
        // Frames leave the transmitter in order, even across a swap that changed its kind.
        return max(leaves, backlog.lastLeavesAt)
    }

    /// The delay line a frame that left the transmitter at `leaves` goes to, and when it leaves it.
    @inline(__always)
    mutating func delayLine(leaves: MonotonicNanoseconds, isDNS: Bool) -> (lane: Int, departure: MonotonicNanoseconds) {
        let lane: Int
        var departure: MonotonicNanoseconds
        if reorderGap != 0 && reorderCounter >= reorderGap - 1 && reorder.happens(&random) {
            // netem's reorder: this frame skips the delay line (not the transmitter: the link's capacity
            // still applies to it).
            reorderCounter = 0
            counters.reorderedFrames &+= 1
            lane = lanes.reorder
            departure = leaves
        } else {
            reorderCounter &+= 1
            let elapsed = leaves - min(leaves, traceOrigin ?? leaves)
            departure = leaves + delays.next(at: leaves, elapsed: elapsed, &random) + (isDNS ? dnsDelay : 0)
            if jitterReorders {
                // The netem jitter model: frames leave in departure order, whatever order they came in.
                lane = HeldFrames.sortedLane
                if departure < latestSortedDeparture { counters.jitterReorderedFrames &+= 1 }
                latestSortedDeparture = max(latestSortedDeparture, departure)
            } else {
                lane = isDNS ? lanes.dns : lanes.main
            }
        }
        // Order is kept within a first-in first-out lane: a frame never leaves before one offered earlier.
        if lane != HeldFrames.sortedLane {
            let previous = held.lastDeparture(lane: lane)
            if departure < previous {
                counters.orderHolds &+= 1
                departure = previous
            }
        }
        return (lane, departure)
    }

    /// ``FrameScheduler/nextDeparture``: the first held frame's departure, or when the transmitter takes
    /// the next frame from the waiting queue, whichever is earlier.
    var nextDeparture: MonotonicNanoseconds? {
        let service = usesWaitingQueue ? nextService : nil
        guard let due = held.nextDeparture else { return service }
        return service.map { min($0, due) } ?? due
    }

    /// ``FrameScheduler/departDue(at:_:)``.
    mutating func departDue(
        at now: MonotonicNanoseconds, _ send: (UnsafeRawBufferPointer, MonotonicNanoseconds) -> Void
    ) {
        if usesWaitingQueue { serviceQueue(upTo: now) }
        let sent = held.departDue(at: now, send)
        counters.passedFrames &+= UInt64(sent.frames)
        counters.passedBytes &+= sent.bytes
        backlog.advance(to: now)
    }

    /// The counters with the backlog filled in.
    var snapshot: DirectionCounters {
        var result = counters
        result.backlogFrames = UInt64(held.frames)
        result.backlogBytes = held.bytes
        result.transmitQueueFrames = UInt64(backlog.frames + waiting.count)
        result.transmitQueueBytes = backlog.bytes + waiting.bytes
        result.backlogFrames += UInt64(waiting.count)
        result.backlogBytes += waiting.bytes
        return result
    }
}

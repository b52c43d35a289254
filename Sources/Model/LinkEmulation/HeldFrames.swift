/// A frame the model holds: a copy of its bytes and when it leaves.
struct HeldFrame {
    /// When the frame is due to leave.
    var departure: MonotonicNanoseconds
    /// The order in which frames were offered; breaks ties between lanes.
    var sequence: UInt64
    /// The copy of the frame, from ``FramePool``.
    var buffer: UnsafeMutableRawPointer
    /// The frame's length in bytes.
    var length: Int
}

/// Every frame the model holds, in up to ``laneCount`` first-in first-out lanes (one per delay line, plus
/// lanes left to drain after a swap), each a ring with non-decreasing departures; departures are handed
/// out across lanes in time order by looking at the lanes' heads. O(1) per frame, no allocation once the
/// rings and the pool have grown to the traffic's size.
struct HeldFrames: ~Copyable {
    /// The most lanes: four delay lines in use and as many draining after a swap.
    static let laneCount = 8

    private let lanes: UnsafeMutablePointer<RingBuffer<HeldFrame>>
    private var pool = FramePool()
    /// Bit i set: lane i holds frames.
    private(set) var occupiedLanes: UInt32 = 0
    /// Frames held in all lanes.
    private(set) var frames = 0
    /// Bytes held in all lanes.
    private(set) var bytes: UInt64 = 0

    init() {
        lanes = .allocate(capacity: Self.laneCount)
        for lane in 0..<Self.laneCount { (lanes + lane).initialize(to: RingBuffer()) }
    }

    /// Whether `lane` holds nothing.
    @inline(__always)
    func isEmpty(lane: Int) -> Bool { occupiedLanes & (1 << UInt32(lane)) == 0 }

    /// The departure of the newest frame in `lane`; 0 when it is empty.
    @inline(__always)
    func lastDeparture(lane: Int) -> MonotonicNanoseconds { isEmpty(lane: lane) ? 0 : lanes[lane].last.departure }

    /// Copies `frame` and queues it in `lane` to leave at `departure`, which must not be earlier than the
    /// lane's last departure.
    @inline(__always)
    mutating func hold(
        _ frame: UnsafeRawBufferPointer, lane: Int, departure: MonotonicNanoseconds, sequence: UInt64
    ) {
        let buffer = pool.take(length: frame.count)
        if let source = frame.baseAddress, frame.count > 0 { buffer.copyMemory(from: source, byteCount: frame.count) }
        lanes[lane].append(HeldFrame(departure: departure, sequence: sequence, buffer: buffer, length: frame.count))
        occupiedLanes |= 1 << UInt32(lane)
        frames += 1
        bytes += UInt64(frame.count)
    }

    /// The earliest departure of any held frame; `nil` when nothing is held.
    var nextDeparture: MonotonicNanoseconds? {
        guard let lane = earliestLane() else { return nil }
        return lanes[lane].first.departure
    }

    /// The lane whose head leaves first (ties: the frame offered first).
    @inline(__always)
    private func earliestLane() -> Int? {
        var mask = occupiedLanes
        var best = -1
        var bestDeparture = MonotonicNanoseconds.max
        var bestSequence = UInt64.max
        while mask != 0 {
            let lane = mask.trailingZeroBitCount
            mask &= mask - 1
            let head = lanes[lane].first
            if head.departure < bestDeparture || (head.departure == bestDeparture && head.sequence < bestSequence) {
                best = lane
                bestDeparture = head.departure
                bestSequence = head.sequence
            }
        }
        return best < 0 ? nil : best
    }

    /// Hands every frame due by `now` to `send` in departure order and recycles its buffer. Returns the
    /// frames and bytes sent.
    mutating func departDue(
        at now: MonotonicNanoseconds, _ send: (UnsafeRawBufferPointer, MonotonicNanoseconds) -> Void
    ) -> (frames: Int, bytes: UInt64) {
        var sentFrames = 0
        var sentBytes: UInt64 = 0
        while let lane = earliestLane(), lanes[lane].first.departure <= now {
            let frame = lanes[lane].removeFirst()
            if lanes[lane].isEmpty { occupiedLanes &= ~(1 << UInt32(lane)) }
            frames -= 1
            bytes -= UInt64(frame.length)
            sentFrames += 1
            sentBytes += UInt64(frame.length)
            send(UnsafeRawBufferPointer(start: frame.buffer, count: frame.length), frame.departure)
            pool.give(frame.buffer, length: frame.length)
        }
        return (sentFrames, sentBytes)
    }

    deinit {
        for lane in 0..<Self.laneCount {
            for offset in 0..<lanes[lane].count { lanes[lane][offset].buffer.deallocate() }
        }
        // Each ring frees its own storage as it is deinitialized.
        lanes.deinitialize(count: Self.laneCount)
        lanes.deallocate()
    }
}

/// Recycled frame buffers in four size classes (256 B, 2 KiB, 16 KiB and 64 KiB + 16, enough for a
/// 65 550-byte GSO frame). Larger frames get a buffer of their own, freed when they leave. The most
/// recently returned buffer is reused first, while it is still in the cache.
struct FramePool: ~Copyable {
    private static let classSizes = (256, 2048, 16384, 65552)
    private var small = RingBuffer<UnsafeMutableRawPointer>()
    private var standard = RingBuffer<UnsafeMutableRawPointer>()
    private var large = RingBuffer<UnsafeMutableRawPointer>()
    private var jumbo = RingBuffer<UnsafeMutableRawPointer>()

    init() {}

    /// A buffer of at least `length` bytes.
    @inline(__always)
    mutating func take(length: Int) -> UnsafeMutableRawPointer {
        switch length {
        case ...Self.classSizes.0: return small.isEmpty ? Self.allocate(Self.classSizes.0) : small.removeLast()
        case ...Self.classSizes.1: return standard.isEmpty ? Self.allocate(Self.classSizes.1) : standard.removeLast()
        case ...Self.classSizes.2: return large.isEmpty ? Self.allocate(Self.classSizes.2) : large.removeLast()
        case ...Self.classSizes.3: return jumbo.isEmpty ? Self.allocate(Self.classSizes.3) : jumbo.removeLast()
        default: return Self.allocate(length)
        }
    }

    /// Takes back a buffer from ``take(length:)`` for a frame of `length` bytes.
    @inline(__always)
    mutating func give(_ buffer: UnsafeMutableRawPointer, length: Int) {
        switch length {
        case ...Self.classSizes.0: small.append(buffer)
        case ...Self.classSizes.1: standard.append(buffer)
        case ...Self.classSizes.2: large.append(buffer)
        case ...Self.classSizes.3: jumbo.append(buffer)
        default: buffer.deallocate()
        }
    }

    private static func allocate(_ size: Int) -> UnsafeMutableRawPointer {
        .allocate(byteCount: max(size, 1), alignment: 16)
    }

    /// Frees the buffers `ring` holds (the ring frees its own storage when it goes).
    private static func free(_ ring: borrowing RingBuffer<UnsafeMutableRawPointer>) {
        for offset in 0..<ring.count { ring[offset].deallocate() }
    }

    deinit {
        Self.free(small)
        Self.free(standard)
        Self.free(large)
        Self.free(jumbo)
    }
}

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
/// lanes left to drain after a swap), each a ring with non-decreasing departures, and one time-sorted lane
/// (``sortedLane``, a heap) for frames that may overtake others (the `netem` jitter model); departures are
/// handed out across lanes in time order by looking at the lanes' heads. O(1) per frame in the rings,
/// O(log n) in the heap, no allocation once the rings, the heap and the pool have grown to the traffic's size.
struct HeldFrames: ~Copyable {
    /// The most first-in first-out lanes: four delay lines in use and as many draining after a swap.
    static let laneCount = 8
    /// The lane whose frames leave in departure order whatever order they came in.
    static let sortedLane = laneCount

    private let lanes: UnsafeMutablePointer<RingBuffer<HeldFrame>>
    private var sorted = FrameHeap()
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

    /// The departure of the newest frame in `lane` (a first-in first-out lane); 0 when it is empty.
    @inline(__always)
    func lastDeparture(lane: Int) -> MonotonicNanoseconds { isEmpty(lane: lane) ? 0 : lanes[lane].last.departure }

    /// Copies `frame` and queues it in `lane` to leave at `departure`, which must not be earlier than the
    /// lane's last departure unless the lane is ``sortedLane``.
    @inline(__always)
    mutating func hold(
        _ frame: UnsafeRawBufferPointer, lane: Int, departure: MonotonicNanoseconds, sequence: UInt64
    ) {
        hold(buffer: copy(frame), length: frame.count, lane: lane, departure: departure, sequence: sequence)
    }

    /// A copy of `frame` in a buffer of the pool, for a stage before the delay line (the queue); it comes
    /// back with ``hold(buffer:length:lane:departure:sequence:)`` or ``recycle(_:length:)``.
    @inline(__always)
    mutating func copy(_ frame: UnsafeRawBufferPointer) -> UnsafeMutableRawPointer {
        let buffer = pool.take(length: frame.count)
        if let source = frame.baseAddress, frame.count > 0 { buffer.copyMemory(from: source, byteCount: frame.count) }
        return buffer
    }

    /// Gives back a buffer from ``copy(_:)`` whose frame was dropped.
    @inline(__always)
    mutating func recycle(_ buffer: UnsafeMutableRawPointer, length: Int) { pool.give(buffer, length: length) }

    /// Queues a frame already copied with ``copy(_:)`` (see ``hold(_:lane:departure:sequence:)``).
    @inline(__always)
    mutating func hold(
        buffer: UnsafeMutableRawPointer, length: Int, lane: Int, departure: MonotonicNanoseconds, sequence: UInt64
    ) {
        let held = HeldFrame(departure: departure, sequence: sequence, buffer: buffer, length: length)
        if lane == Self.sortedLane { sorted.insert(held) } else { lanes[lane].append(held) }
        occupiedLanes |= 1 << UInt32(lane)
        frames += 1
        bytes += UInt64(length)
    }

    /// The earliest departure of any held frame; `nil` when nothing is held.
    var nextDeparture: MonotonicNanoseconds? {
        guard let lane = earliestLane() else { return nil }
        return head(lane).departure
    }

    /// The frame that leaves first from `lane`, which must not be empty.
    @inline(__always)
    private func head(_ lane: Int) -> HeldFrame { lane == Self.sortedLane ? sorted.first : lanes[lane].first }

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
            let first = head(lane)
            if first.departure < bestDeparture || (first.departure == bestDeparture && first.sequence < bestSequence) {
                best = lane
                bestDeparture = first.departure
                bestSequence = first.sequence
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
        while let lane = earliestLane(), head(lane).departure <= now {
            let frame: HeldFrame
            if lane == Self.sortedLane {
                frame = sorted.removeFirst()
                if sorted.isEmpty { occupiedLanes &= ~(1 << UInt32(lane)) }
            } else {
                frame = lanes[lane].removeFirst()
                if lanes[lane].isEmpty { occupiedLanes &= ~(1 << UInt32(lane)) }
            }
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
        for index in 0..<sorted.count { sorted[index].buffer.deallocate() }
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

import LinkEmulation

/// Holds every frame for a fixed time, in arrival order: a propagation delay with nothing else. A
/// measuring aid for the I/O (tests and benchmarks time departures against it); the real impairment
/// model lives in LinkEmulation.
///
/// Frames are copied into a ring of preallocated slots; when the ring is full a frame is dropped (and counted).
public final class FixedDelayScheduler: FrameScheduler {
    /// The delay, in nanoseconds. Changing it affects frames offered afterwards.
    public var delay: UInt64
    /// Frames dropped because the ring was full, or longer than a slot.
    public private(set) var overflows: UInt64 = 0

    private let capacity: Int
    private let slotSize: Int
    private let storage: UnsafeMutableRawPointer
    private var lengths: [Int]
    private var dues: [MonotonicNanoseconds]
    private var head = 0
    private var count = 0

    /// A delay line of `delay` nanoseconds holding up to `capacity` frames of up to `slotSize` bytes.
    public init(delay: UInt64, capacity: Int = 4096, slotSize: Int = 2048) {
        self.delay = delay
        self.capacity = max(1, capacity)
        self.slotSize = slotSize
        storage = .allocate(byteCount: self.capacity * slotSize, alignment: 64)
        lengths = [Int](repeating: 0, count: self.capacity)
        dues = [MonotonicNanoseconds](repeating: 0, count: self.capacity)
    }

    deinit {
        storage.deallocate()
    }

    /// Frames held now.
    public var heldCount: Int { count }

    public func offer(_ frame: UnsafeMutableRawBufferPointer, at now: MonotonicNanoseconds) -> FrameVerdict {
        guard count < capacity, frame.count <= slotSize, let source = frame.baseAddress else {
            overflows &+= 1
            return .dropped
        }
        let slot = (head + count) % capacity
        (storage + slot * slotSize).copyMemory(from: source, byteCount: frame.count)
        lengths[slot] = frame.count
        // Arrival order is departure order: a later frame is never due before an earlier one.
        let due = now &+ delay
        dues[slot] = count > 0 ? max(due, dues[(slot + capacity - 1) % capacity]) : due
        count += 1
        return .held
    }

    public var nextDeparture: MonotonicNanoseconds? {
        count > 0 ? dues[head] : nil
    }

    public func departDue(at now: MonotonicNanoseconds, _ send: (UnsafeRawBufferPointer, MonotonicNanoseconds) -> Void) {
        while count > 0, dues[head] <= now {
            send(UnsafeRawBufferPointer(start: storage + head * slotSize, count: lengths[head]), dues[head])
            head = (head + 1) % capacity
            count -= 1
        }
    }
}

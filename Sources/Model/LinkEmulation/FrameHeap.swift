/// Held frames in departure order whatever the order they came in: a binary min-heap on (departure,
/// sequence), for the `netem` jitter model, where a frame may leave before an earlier one (netem's
/// time-sorted queue, `tfifo_enqueue`). O(log n) per frame; storage grows by doubling and is then reused.
struct FrameHeap: ~Copyable {
    private var storage: UnsafeMutablePointer<HeldFrame>?
    private var capacity = 0
    /// The frames held.
    private(set) var count = 0

    init() {}

    /// Whether nothing is held.
    var isEmpty: Bool { count == 0 }

    /// The frame that leaves first (ties: the one offered first); the heap must not be empty.
    @inline(__always)
    var first: HeldFrame { storage.unsafelyUnwrapped[0] }

    /// The frame at `index` in storage order (for freeing the buffers).
    subscript(index: Int) -> HeldFrame { storage.unsafelyUnwrapped[index] }

    @inline(__always)
    private static func precedes(_ a: HeldFrame, _ b: HeldFrame) -> Bool {
        a.departure < b.departure || (a.departure == b.departure && a.sequence < b.sequence)
    }

    /// Adds `frame`.
    mutating func insert(_ frame: HeldFrame) {
        if count == capacity { grow() }
        let base = storage.unsafelyUnwrapped
        var index = count
        count += 1
        while index > 0 {
            let parent = (index - 1) / 2
            guard Self.precedes(frame, base[parent]) else { break }
            base[index] = base[parent]
            index = parent
        }
        base[index] = frame
    }

    /// Removes and returns the frame that leaves first; the heap must not be empty.
    mutating func removeFirst() -> HeldFrame {
        let base = storage.unsafelyUnwrapped
        let top = base[0]
        count -= 1
        guard count > 0 else { return top }
        let moved = base[count]
        var index = 0
        while true {
            let left = 2 * index + 1
            guard left < count else { break }
            let right = left + 1
            let child = right < count && Self.precedes(base[right], base[left]) ? right : left
            guard Self.precedes(base[child], moved) else { break }
            base[index] = base[child]
            index = child
        }
        base[index] = moved
        return top
    }

    private mutating func grow() {
        let newCapacity = max(16, capacity * 2)
        let newStorage = UnsafeMutablePointer<HeldFrame>.allocate(capacity: newCapacity)
        if let storage {
            newStorage.initialize(from: storage, count: count)
            storage.deallocate()
        }
        storage = newStorage
        capacity = newCapacity
    }

    deinit {
        storage?.deallocate()
    }
}

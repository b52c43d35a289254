/// A first-in first-out queue of plain values in a power-of-two ring: O(1) push and pop, storage that
/// grows by doubling and is then reused, so a steady flow allocates nothing.
///
/// Non-copyable: the ring owns its storage and frees it in `deinit`, so no two values can share (and
/// doubly free) it. Owners keep rings in stored properties (or initialized memory) and borrow them.
struct RingBuffer<Element: BitwiseCopyable>: ~Copyable {
    private var storage: UnsafeMutablePointer<Element>?
    private var mask = -1
    private var head = 0
    /// The number of elements queued.
    private(set) var count = 0

    /// An empty ring; storage is allocated on the first push.
    init() {}

    /// Whether nothing is queued.
    var isEmpty: Bool { count == 0 }

    /// The oldest element; the ring must not be empty.
    @inline(__always)
    var first: Element { storage.unsafelyUnwrapped[head] }

    /// The newest element; the ring must not be empty.
    @inline(__always)
    var last: Element { storage.unsafelyUnwrapped[(head + count - 1) & mask] }

    /// Appends `element`.
    @inline(__always)
    mutating func append(_ element: Element) {
        if count == mask + 1 { grow() }
        storage.unsafelyUnwrapped[(head + count) & mask] = element
        count += 1
    }

    /// Removes and returns the oldest element; the ring must not be empty.
    @inline(__always)
    mutating func removeFirst() -> Element {
        let element = storage.unsafelyUnwrapped[head]
        head = (head + 1) & mask
        count -= 1
        return element
    }

    /// Removes and returns the newest element (using the ring as a stack); the ring must not be empty.
    @inline(__always)
    mutating func removeLast() -> Element {
        count -= 1
        return storage.unsafelyUnwrapped[(head + count) & mask]
    }

    /// The element `offset` places after the oldest.
    subscript(offset: Int) -> Element { storage.unsafelyUnwrapped[(head + offset) & mask] }

    private mutating func grow() {
        let oldCapacity = mask + 1
        let newCapacity = max(16, oldCapacity * 2)
        let newStorage = UnsafeMutablePointer<Element>.allocate(capacity: newCapacity)
        if let storage {
            for index in 0..<count { (newStorage + index).initialize(to: storage[(head + index) & mask]) }
            storage.deallocate()
        }
        storage = newStorage
        mask = newCapacity - 1
        head = 0
    }

    deinit {
        storage?.deallocate()
    }
}

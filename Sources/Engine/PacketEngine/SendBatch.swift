import CPacket
import Glibc

/// Frames waiting to be sent, in order: references to received frames (sent at once, no copy) and copies
/// of frames a scheduler handed out, with the time each was due. Laid out for one `sendmmsg` call (an
/// `mmsghdr` and an iovec per entry); allocated once, the hot path only fills and clears it.
package final class SendBatch {
    /// Entries the batch holds at most.
    package let capacity: Int
    /// Bytes of a copy slot (the largest frame a copy can take).
    @exclusivity(unchecked) package private(set) var slotSize: Int
    /// Entries queued. (Read and written for every frame by the direction's thread alone: no dynamic
    /// exclusivity checks, which a `package` property would otherwise get.)
    @exclusivity(unchecked) package private(set) var count = 0
    /// The entries' message headers, for `sendmmsg`.
    let messages: UnsafeMutablePointer<cpk_mmsghdr>
    private let vectors: UnsafeMutablePointer<iovec>
    @exclusivity(unchecked) private var storage: UnsafeMutableRawPointer
    private let dues: UnsafeMutablePointer<UInt64>
    @exclusivity(unchecked) private var copies = 0

    /// A batch of `capacity` entries with copy slots of `slotSize` bytes (rounded up to 64).
    package init(capacity: Int, slotSize: Int) {
        self.capacity = max(1, capacity)
        self.slotSize = (slotSize + 63) & ~63
        messages = .allocate(capacity: self.capacity)
        vectors = .allocate(capacity: self.capacity)
        storage = .allocate(byteCount: self.capacity * self.slotSize, alignment: 64)
        dues = .allocate(capacity: self.capacity)
        messages.initialize(repeating: cpk_mmsghdr(), count: self.capacity)
        vectors.initialize(repeating: iovec(), count: self.capacity)
        dues.initialize(repeating: 0, count: self.capacity)
        for index in 0..<self.capacity {
            messages[index].msg_hdr.msg_iov = vectors + index
            messages[index].msg_hdr.msg_iovlen = 1
        }
    }

    deinit {
        messages.deallocate()
        vectors.deallocate()
        storage.deallocate()
        dues.deallocate()
    }

    /// Gives the copy slots room for frames of `slotSize` bytes (rounded up to 64), when they have less; the
    /// batch must be empty. Allocates, so it is for a change of MTU, not for a frame.
    package func grow(toSlotSize slotSize: Int) {
        precondition(count == 0, "a batch grows only while it is empty")
        let rounded = (slotSize + 63) & ~63
        guard rounded > self.slotSize else { return }
        storage.deallocate()
        storage = .allocate(byteCount: capacity * rounded, alignment: 64)
        self.slotSize = rounded
    }

    package var isFull: Bool { count == capacity }
    package var isEmpty: Bool { count == 0 }

    /// Queues a received frame by reference; it must stay untouched until the batch is sent.
    @inline(__always)
    func append(reference frame: UnsafeRawBufferPointer) {
        vectors[count] = iovec(iov_base: UnsafeMutableRawPointer(mutating: frame.baseAddress), iov_len: frame.count)
        dues[count] = 0
        count += 1
    }

    /// Queues a copy of `frame` (valid only during the call) that was due at `due` (not 0). Returns
    /// false, copying nothing, when the frame is larger than a slot.
    @inline(__always)
    func append(copyOf frame: UnsafeRawBufferPointer, due: UInt64) -> Bool {
        guard frame.count <= slotSize, let source = frame.baseAddress else { return false }
        let slot = storage + copies * slotSize
        slot.copyMemory(from: source, byteCount: frame.count)
        vectors[count] = iovec(iov_base: slot, iov_len: frame.count)
        dues[count] = due
        copies += 1
        count += 1
        return true
    }

    /// The bytes of entry `index`.
    @inline(__always)
    package func frame(_ index: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: vectors[index].iov_base, count: vectors[index].iov_len)
    }

    /// Bytes of entry `index`.
    @inline(__always)
    package func length(_ index: Int) -> Int {
        vectors[index].iov_len
    }

    /// When entry `index` was due to leave: 0 for a frame forwarded at once.
    @inline(__always)
    package func due(_ index: Int) -> UInt64 {
        dues[index]
    }

    /// Forgets every entry.
    @inline(__always)
    func clear() {
        count = 0
        copies = 0
    }
}

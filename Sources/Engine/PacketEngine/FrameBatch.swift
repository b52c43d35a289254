import CPacket
import Glibc

/// Buffers for one `recvmmsg` call: `capacity` slots of `slotSize` bytes, each with its iovec, its
/// `sockaddr_ll` (for the packet type) and its `mmsghdr`. Allocated once; the hot path only resets lengths.
final class ReceiveBatch {
    let capacity: Int
    let slotSize: Int
    let messages: UnsafeMutablePointer<cpk_mmsghdr>
    private let vectors: UnsafeMutablePointer<iovec>
    private let addresses: UnsafeMutablePointer<sockaddr_ll>
    private let storage: UnsafeMutableRawPointer
    private var received = 0

    init(capacity: Int, slotSize: Int) {
        self.capacity = capacity
        self.slotSize = (slotSize + 63) & ~63
        messages = .allocate(capacity: capacity)
        vectors = .allocate(capacity: capacity)
        addresses = .allocate(capacity: capacity)
        storage = .allocate(byteCount: capacity * self.slotSize, alignment: 64)
        messages.initialize(repeating: cpk_mmsghdr(), count: capacity)
        addresses.initialize(repeating: sockaddr_ll(), count: capacity)
        for index in 0..<capacity {
            vectors[index] = iovec(iov_base: storage + index * self.slotSize, iov_len: self.slotSize)
            messages[index].msg_hdr.msg_iov = vectors + index
            messages[index].msg_hdr.msg_iovlen = 1
            messages[index].msg_hdr.msg_name = UnsafeMutableRawPointer(addresses + index)
        }
        reset()
    }

    deinit {
        messages.deallocate()
        vectors.deallocate()
        addresses.deallocate()
        storage.deallocate()
    }

    /// Restores the lengths `recvmmsg` overwrote, before the next call.
    @inline(__always)
    func reset(upTo count: Int? = nil) {
        for index in 0..<(count ?? capacity) {
            messages[index].msg_hdr.msg_namelen = socklen_t(MemoryLayout<sockaddr_ll>.size)
            messages[index].msg_hdr.msg_flags = 0
        }
    }

    /// Receives up to `capacity` frames without blocking; returns the count, or -1 with errno set.
    @inline(__always)
    func receive(from fd: Int32) -> Int {
        let count = Int(cpk_recvmmsg(fd, messages, UInt32(capacity), Int32(MSG_DONTWAIT)))
        received = max(0, count)
        return count
    }

    /// Restores what the last receive overwrote.
    func release() {
        reset(upTo: received)
        received = 0
    }

    /// The bytes slot `index` holds after a receive (truncated to the slot when `isTruncated`).
    @inline(__always)
    func frame(_ index: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(start: storage + index * slotSize, count: min(Int(messages[index].msg_len), slotSize))
    }

    /// True when slot `index`'s frame was longer than the slot (`MSG_TRUNC`).
    @inline(__always)
    func isTruncated(_ index: Int) -> Bool {
        messages[index].msg_hdr.msg_flags & Int32(MSG_TRUNC) != 0
    }

    /// `sll_pkttype` of slot `index` (`PACKET_HOST`, `PACKET_OUTGOING`…).
    @inline(__always)
    func packetType(_ index: Int) -> UInt8 {
        addresses[index].sll_pkttype
    }
}

/// Frames waiting for one `sendmmsg` call, in order: either references to received frames (sent at once,
/// no copy) or copies of frames a scheduler handed out, with the time each was due.
final class SendBatch {
    let capacity: Int
    let slotSize: Int
    private(set) var count = 0
    let messages: UnsafeMutablePointer<cpk_mmsghdr>
    private let vectors: UnsafeMutablePointer<iovec>
    private let storage: UnsafeMutableRawPointer
    /// Due time of entry `index`, 0 for a frame forwarded at once.
    let dues: UnsafeMutablePointer<UInt64>
    private var copies = 0

    init(capacity: Int, slotSize: Int) {
        self.capacity = capacity
        self.slotSize = (slotSize + 63) & ~63
        messages = .allocate(capacity: capacity)
        vectors = .allocate(capacity: capacity)
        storage = .allocate(byteCount: capacity * self.slotSize, alignment: 64)
        dues = .allocate(capacity: capacity)
        messages.initialize(repeating: cpk_mmsghdr(), count: capacity)
        vectors.initialize(repeating: iovec(), count: capacity)
        dues.initialize(repeating: 0, count: capacity)
        for index in 0..<capacity {
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

    var isFull: Bool { count == capacity }
    var isEmpty: Bool { count == 0 }

    /// Queues a received frame by reference; it must stay untouched until the batch is sent.
    @inline(__always)
    func append(reference frame: UnsafeRawBufferPointer) {
        vectors[count] = iovec(iov_base: UnsafeMutableRawPointer(mutating: frame.baseAddress), iov_len: frame.count)
        dues[count] = 0
        count += 1
    }

    /// Queues a copy of `frame` (valid only during the call) that was due at `due`. Returns false, copying
    /// nothing, when the frame is larger than a slot.
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

    /// The copy slot the next ``commitReserved(length:)`` queues, for building a frame in place (a GSO
    /// segment); nil when the batch is full and must be sent first. Not committing leaves the slot free.
    @inline(__always)
    func reserve() -> UnsafeMutableRawPointer? {
        count < capacity ? storage + copies * slotSize : nil
    }

    /// Queues the frame of `length` bytes built in the slot ``reserve()`` returned, to be sent at once.
    @inline(__always)
    func commitReserved(length: Int) {
        vectors[count] = iovec(iov_base: storage + copies * slotSize, iov_len: length)
        dues[count] = 0
        copies += 1
        count += 1
    }

    /// Bytes of entry `index`.
    @inline(__always)
    func length(_ index: Int) -> Int {
        vectors[index].iov_len
    }

    /// Forgets every entry.
    @inline(__always)
    func clear() {
        count = 0
        copies = 0
    }
}

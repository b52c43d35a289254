import CPacket
import Glibc
import LinkEmulation
import PacketEngine

/// Reads a direction's frames with `recvmmsg` into buffers of its own, a batch per call: the engine's
/// reader before the receive ring, which linkcond-bench still measures against it. Each slot has its
/// iovec, its `sockaddr_ll` (for the packet type) and its `mmsghdr`, allocated once; a read only resets
/// lengths. Owns its socket.
package final class RecvmmsgSource: FrameSource {
    /// Frames a batch holds at most.
    package let capacity: Int
    /// Bytes of a slot; a longer frame is cut short (``isTruncated(_:)``).
    package let slotSize: Int
    private let socket: PacketSocket
    private let messages: UnsafeMutablePointer<cpk_mmsghdr>
    private let vectors: UnsafeMutablePointer<iovec>
    private let addresses: UnsafeMutablePointer<sockaddr_ll>
    private let storage: UnsafeMutableRawPointer
    @exclusivity(unchecked) private var received = 0

    /// A reader of `socket` with `capacity` slots of `slotSize` bytes.
    package init(socket: PacketSocket, capacity: Int, slotSize: Int) {
        self.socket = socket
        self.capacity = max(1, capacity)
        self.slotSize = (slotSize + 63) & ~63
        messages = .allocate(capacity: self.capacity)
        vectors = .allocate(capacity: self.capacity)
        addresses = .allocate(capacity: self.capacity)
        storage = .allocate(byteCount: self.capacity * self.slotSize, alignment: 64)
        messages.initialize(repeating: cpk_mmsghdr(), count: self.capacity)
        addresses.initialize(repeating: sockaddr_ll(), count: self.capacity)
        for index in 0..<self.capacity {
            vectors[index] = iovec(iov_base: storage + index * self.slotSize, iov_len: self.slotSize)
            messages[index].msg_hdr.msg_iov = vectors + index
            messages[index].msg_hdr.msg_iovlen = 1
            messages[index].msg_hdr.msg_name = UnsafeMutableRawPointer(addresses + index)
        }
        reset(upTo: self.capacity)
    }

    deinit {
        messages.deallocate()
        vectors.deallocate()
        addresses.deallocate()
        storage.deallocate()
    }

    /// Restores the lengths `recvmmsg` overwrote in the first `count` slots.
    @inline(__always)
    private func reset(upTo count: Int) {
        for index in 0..<count {
            messages[index].msg_hdr.msg_namelen = socklen_t(MemoryLayout<sockaddr_ll>.size)
            messages[index].msg_hdr.msg_flags = 0
        }
    }

    package func receive() -> ReceiveResult {
        let count = Int(cpk_recvmmsg(socket.fileDescriptor, messages, UInt32(capacity), Int32(MSG_DONTWAIT)))
        if count > 0 {
            received = count
            return .frames(count, more: count == capacity)
        }
        let code = errno
        if count == 0 || code == EAGAIN || code == EWOULDBLOCK { return .empty }
        return code == EINTR ? .interrupted : .failed(code)
    }

    @inline(__always)
    package func frame(_ index: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(start: storage + index * slotSize, count: min(Int(messages[index].msg_len), slotSize))
    }

    @inline(__always)
    package func isTruncated(_ index: Int) -> Bool {
        messages[index].msg_hdr.msg_flags & Int32(MSG_TRUNC) != 0
    }

    @inline(__always)
    package func isOutgoing(_ index: Int) -> Bool {
        addresses[index].sll_pkttype == UInt8(PACKET_OUTGOING)
    }

    @inline(__always)
    package func arrival(_ index: Int, readAt: MonotonicNanoseconds) -> MonotonicNanoseconds { readAt }

    package func release() {
        reset(upTo: received)
        received = 0
    }

    package func takeError() -> Int32 { socket.takeError() }

    package func takeOverruns() -> UInt64 { socket.takeDrops() }

    package func close() { socket.close() }
}

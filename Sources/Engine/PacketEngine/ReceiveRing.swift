import CPacket
import Glibc

/// Where a direction's frames come from: one batch at a time, valid until ``release()``.
protocol FrameSource: AnyObject {
    /// Frames a batch holds at most.
    var capacity: Int { get }
    /// Takes up to ``capacity`` waiting frames without blocking; returns their count, or -1 with `errno` set.
    func receive(from fd: Int32) -> Int
    /// The bytes of frame `index` of the batch (a `virtio_net_hdr` first when the socket has one).
    func frame(_ index: Int) -> UnsafeMutableRawBufferPointer
    /// True when frame `index` was cut short because it did not fit.
    func isTruncated(_ index: Int) -> Bool
    /// `sll_pkttype` of frame `index`.
    func packetType(_ index: Int) -> UInt8
    /// Gives the batch's buffers back, once nothing refers to its frames any more (after the send).
    func release()
    /// Lets go of anything that keeps the socket alive (a ring's mapping), when the direction ends.
    func close()
}

extension ReceiveBatch: FrameSource {
    func close() {}
}

/// A `TPACKET_V2` receive ring (`PACKET_RX_RING`): the kernel copies each frame into a slot of memory
/// shared with the engine while it delivers it, so a batch is read without a system call or a second
/// copy, and sent on straight from the slots. Each frame wakes the socket, as with `recvmmsg`. (Not
/// `TPACKET_V3`: its blocks are retired by a jiffies timer, adding up to 8 ms at HZ=250.)
final class ReceiveRing: FrameSource {
    let capacity: Int
    private let frameSize: Int
    private let frameCount: Int
    private let blockSize: Int
    private let framesPerBlock: Int
    private let ring: UnsafeMutableRawPointer
    private let ringBytes: Int
    private var mapped = true
    private let vnetHeader: Bool
    private var head = 0
    private var taken = 0

    /// Sets the ring up on `fd` (an `AF_PACKET` socket, before or after bind) for frames of up to
    /// `frameBytes` (plus the `virtio_net_hdr` with `vnetHeader`), `slots` frames in all.
    init(socket fd: Int32, frameBytes: Int, vnetHeader: Bool, slots: Int, batch: Int, place: String) throws(PacketEngineError) {
        capacity = batch
        self.vnetHeader = vnetHeader
        var version = Int32(TPACKET_V2.rawValue)
        guard setsockopt(fd, SOL_PACKET, PACKET_VERSION, &version, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            throw .system("setsockopt PACKET_VERSION TPACKET_V2 on \(place)")
        }
        // Header, sockaddr_ll, the gap the kernel leaves so the network header is 16-aligned, the vnet
        // header, then the frame.
        let header = 32 + MemoryLayout<sockaddr_ll>.size + 16 + (vnetHeader ? VirtioNetHeader.size : 0) + 32
        frameSize = (header + frameBytes + 15) & ~15
        let page = 4096
        blockSize = frameSize <= 16 * 1024 ? 64 * 1024 : (frameSize + page - 1) / page * page
        framesPerBlock = blockSize / frameSize
        let blocks = max(1, (slots + framesPerBlock - 1) / framesPerBlock)
        frameCount = blocks * framesPerBlock
        let blockSize = self.blockSize
        var request = tpacket_req(
            tp_block_size: UInt32(blockSize), tp_block_nr: UInt32(blocks), tp_frame_size: UInt32(frameSize), tp_frame_nr: UInt32(frameCount))
        guard setsockopt(fd, SOL_PACKET, PACKET_RX_RING, &request, socklen_t(MemoryLayout<tpacket_req>.size)) == 0 else {
            throw .system("setsockopt PACKET_RX_RING (\(blocks) blocks of \(blockSize) bytes) on \(place)")
        }
        ringBytes = blockSize * blocks
        guard let mapped = mmap(nil, ringBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), mapped != MAP_FAILED else {
            throw .system("mmap the receive ring of \(place)")
        }
        ring = mapped
    }

    deinit {
        close()
    }

    /// Unmaps the ring (the mapping holds the socket open). Nothing may be read afterwards.
    func close() {
        if mapped { munmap(ring, ringBytes) }
        mapped = false
    }

    /// Frame `index` of the ring: frames never straddle blocks, and a block may end in a gap.
    @inline(__always)
    private func slot(_ index: Int) -> UnsafeMutableRawPointer {
        ring + (index / framesPerBlock) * blockSize + (index % framesPerBlock) * frameSize
    }

    @inline(__always)
    private func header(_ index: Int) -> UnsafeMutablePointer<tpacket2_hdr> {
        slot((head + index) % frameCount).assumingMemoryBound(to: tpacket2_hdr.self)
    }

    func receive(from fd: Int32) -> Int {
        var count = 0
        while count < capacity, cpk_ring_status(slot((head + count) % frameCount)) & UInt32(TP_STATUS_USER) != 0 {
            count += 1
        }
        taken = count
        if count == 0 {
            errno = EAGAIN
            return -1
        }
        return count
    }

    @inline(__always)
    func frame(_ index: Int) -> UnsafeMutableRawBufferPointer {
        let frame = header(index)
        let start = Int(frame.pointee.tp_mac) - (vnetHeader ? VirtioNetHeader.size : 0)
        let length = Int(frame.pointee.tp_snaplen) + (vnetHeader ? VirtioNetHeader.size : 0)
        return UnsafeMutableRawBufferPointer(start: UnsafeMutableRawPointer(frame) + start, count: length)
    }

    @inline(__always)
    func isTruncated(_ index: Int) -> Bool {
        let frame = header(index)
        return frame.pointee.tp_snaplen < frame.pointee.tp_len
    }

    @inline(__always)
    func packetType(_ index: Int) -> UInt8 {
        (UnsafeRawPointer(header(index)) + 32).load(as: sockaddr_ll.self).sll_pkttype
    }

    func release() {
        for index in 0..<taken { cpk_ring_release(slot((head + index) % frameCount)) }
        head = (head + taken) % frameCount
        taken = 0
    }
}

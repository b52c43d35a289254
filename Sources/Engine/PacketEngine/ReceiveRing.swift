import CPacket
import Glibc
import LinkEmulation

/// A `TPACKET_V2` receive ring (`PACKET_RX_RING`): the kernel copies each frame into a slot of memory
/// shared with the engine while it delivers it, so a batch is read without a system call or a second
/// copy, and sent on straight from the slots. Each frame wakes the socket, as with `recvmmsg`. (Not
/// `TPACKET_V3`: its blocks are retired by a jiffies timer, adding up to 8 ms at HZ=250.)
///
/// The ring owns its receiving socket: ``close()`` unmaps the ring and closes the socket.
package final class ReceiveRing: FrameSource {
    /// Frames a batch holds at most.
    let capacity: Int
    private let socket: PacketSocket
    @exclusivity(unchecked) private var frames: MappedRing
    private var mapped = true

    /// Sets the ring up on `socket` (bound or not) for frames of up to `frameBytes`, `slots` frames in all,
    /// read `batch` at a time. `headroom` is what the kernel writes in front of each frame and ``frame(_:)``
    /// includes: the `virtio_net_hdr` of a socket with `PACKET_VNET_HDR` (0 without).
    package init(
        socket: PacketSocket, frameBytes: Int, slots: Int, batch: Int, headroom: Int = 0
    ) throws(PacketEngineError) {
        capacity = max(1, batch)
        self.socket = socket
        let fd = socket.fileDescriptor
        var version = Int32(TPACKET_V2.rawValue)
        guard setsockopt(fd, SOL_PACKET, PACKET_VERSION, &version, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            throw .system("setsockopt PACKET_VERSION TPACKET_V2 on \(socket.place)")
        }
        let layout = RingLayout(frameBytes: frameBytes, slots: slots, headroom: headroom)
        var request = tpacket_req(
            tp_block_size: UInt32(layout.blockSize), tp_block_nr: UInt32(layout.blockCount), tp_frame_size: UInt32(layout.frameSize),
            tp_frame_nr: UInt32(layout.frameCount))
        guard setsockopt(fd, SOL_PACKET, PACKET_RX_RING, &request, socklen_t(MemoryLayout<tpacket_req>.size)) == 0 else {
            throw .system("setsockopt PACKET_RX_RING (\(layout.blockCount) blocks of \(layout.blockSize) bytes) on \(socket.place)")
        }
        guard let memory = mmap(nil, layout.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), memory != MAP_FAILED else {
            throw .system("mmap the receive ring of \(socket.place)")
        }
        frames = MappedRing(memory: memory, layout: layout, headroom: headroom)
    }

    deinit {
        close()
    }

    /// Unmaps the ring (the mapping holds the socket open) and closes the socket. Nothing may be read
    /// afterwards.
    package func close() {
        if mapped { munmap(frames.memory, frames.layout.bytes) }
        mapped = false
        socket.close()
    }

    package func receive() -> ReceiveResult {
        let count = frames.take(upTo: capacity)
        return count > 0 ? .frames(count, more: count == capacity) : .empty
    }

    @inline(__always)
    package func frame(_ index: Int) -> UnsafeMutableRawBufferPointer { frames.frame(index) }

    @inline(__always)
    package func isTruncated(_ index: Int) -> Bool { frames.isTruncated(index) }

    @inline(__always)
    package func isOutgoing(_ index: Int) -> Bool { frames.packetType(index) == UInt8(PACKET_OUTGOING) }

    /// The time the batch was read: the ring's `tp_sec`/`tp_nsec` are `CLOCK_REALTIME` stamps (the
    /// engine never mixes in the wall clock).
    @inline(__always)
    package func arrival(_ index: Int, readAt: MonotonicNanoseconds) -> MonotonicNanoseconds { readAt }

    package func release() { frames.release() }

    package func takeError() -> Int32 { socket.takeError() }

    package func takeOverruns() -> UInt64 { socket.takeDrops() }
}

/// The sizes of a `TPACKET_V2` ring: slots (frames) of ``frameSize`` bytes packed into blocks of
/// ``blockSize`` (a frame never straddles two blocks; a block may end in a gap).
struct RingLayout: Equatable {
    var frameSize: Int
    var blockSize: Int
    var framesPerBlock: Int
    var blockCount: Int
    var frameCount: Int { blockCount * framesPerBlock }
    var bytes: Int { blockCount * blockSize }

    /// Slots for frames of up to `frameBytes` (after `headroom`), at least `slots` of them. Blocks are
    /// 64 KiB (whole pages, as the kernel requires), or one page-rounded frame when frames are larger than 16 KiB.
    init(frameBytes: Int, slots: Int, headroom: Int) {
        frameSize = RingGeometry.frameSize(frameBytes: frameBytes, headroom: headroom)
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        blockSize = frameSize <= 16 * 1024 ? max(64 * 1024, page) : (frameSize + page - 1) / page * page
        framesPerBlock = blockSize / frameSize
        blockCount = max(1, (max(1, slots) + framesPerBlock - 1) / framesPerBlock)
    }
}

/// Where the kernel puts things in a `TPACKET_V2` ring frame: `<linux/if_packet.h>`'s macros (through
/// CPacket) and what `tpacket_rcv` (`net/packet/af_packet.c`) does with them.
///
/// A slot starts with the `struct tpacket2_hdr`, aligned to `TPACKET_ALIGNMENT`, and the
/// `struct sockaddr_ll` (together `TPACKET2_HDRLEN`). The kernel puts the network header at
/// `TPACKET_ALIGN(TPACKET2_HDRLEN + max(maclen, 16))`, moved on by any `virtio_net_hdr`, which it writes
/// just before the frame; the frame (its MAC header) starts `maclen` bytes before the network header, at
/// `tp_mac`. A frame whose `tp_mac` plus length does not fit the slot is cut short (`tp_snaplen < tp_len`).
enum RingGeometry {
    /// `TPACKET_ALIGNMENT`.
    static let alignment = Int(cpk_tpacket_alignment())
    /// `TPACKET2_HDRLEN`.
    static let headerLength = Int(cpk_tpacket2_hdrlen())
    /// Where a slot's `sockaddr_ll` starts: `TPACKET_ALIGN(sizeof(struct tpacket2_hdr))`.
    static let addressOffset = Int(cpk_tpacket2_address_offset())

    /// `TPACKET_ALIGN(length)`.
    static func align(_ length: Int) -> Int { Int(cpk_tpacket_align(length)) }

    /// The furthest into a slot a frame's MAC header can start, `headroom` (a `virtio_net_hdr`) included:
    /// with a link header of `maclen` ≤ 16 bytes it starts at `TPACKET_ALIGN(TPACKET2_HDRLEN + 16) − maclen`,
    /// with a longer one at most `TPACKET2_HDRLEN + TPACKET_ALIGNMENT − 1`, which is less.
    static func macOffsetBound(headroom: Int) -> Int { align(headerLength + 16) + headroom }

    /// The smallest slot that holds a frame of `frameBytes` whole.
    static func frameSize(frameBytes: Int, headroom: Int) -> Int { align(macOffsetBound(headroom: headroom) + frameBytes) }
}

/// The frames of a ring mapping, walked in the order the kernel fills them: a batch is the run of frames
/// the kernel has handed over (`TP_STATUS_USER`) from the head on; ``release()`` hands them back.
struct MappedRing {
    let memory: UnsafeMutableRawPointer
    let layout: RingLayout
    private let headroom: Int
    private var head = 0
    private var taken = 0

    init(memory: UnsafeMutableRawPointer, layout: RingLayout, headroom: Int) {
        self.memory = memory
        self.layout = layout
        self.headroom = headroom
    }

    /// Slot `index` of the ring (not of the batch).
    @inline(__always)
    func slot(_ index: Int) -> UnsafeMutableRawPointer {
        memory + (index / layout.framesPerBlock) * layout.blockSize + (index % layout.framesPerBlock) * layout.frameSize
    }

    @inline(__always)
    private func header(_ index: Int) -> UnsafeMutablePointer<tpacket2_hdr> {
        slot((head + index) % layout.frameCount).assumingMemoryBound(to: tpacket2_hdr.self)
    }

    /// Takes the frames the kernel has handed over, at most `limit`; returns how many.
    mutating func take(upTo limit: Int) -> Int {
        var count = 0
        while count < limit, count < layout.frameCount,
            cpk_ring_status(slot((head + count) % layout.frameCount)) & UInt32(TP_STATUS_USER) != 0
        {
            count += 1
        }
        taken = count
        return count
    }

    /// Frame `index` of the batch, from the headroom in front of it to its end.
    @inline(__always)
    func frame(_ index: Int) -> UnsafeMutableRawBufferPointer {
        let frame = header(index)
        return UnsafeMutableRawBufferPointer(
            start: UnsafeMutableRawPointer(frame) + Int(frame.pointee.tp_mac) - headroom, count: Int(frame.pointee.tp_snaplen) + headroom)
    }

    @inline(__always)
    func isTruncated(_ index: Int) -> Bool {
        let frame = header(index)
        return frame.pointee.tp_snaplen < frame.pointee.tp_len
    }

    /// `sll_pkttype` of frame `index`.
    @inline(__always)
    func packetType(_ index: Int) -> UInt8 {
        (UnsafeRawPointer(header(index)) + RingGeometry.addressOffset).load(as: sockaddr_ll.self).sll_pkttype
    }

    /// Hands the batch's frames back to the kernel.
    mutating func release() {
        for index in 0..<taken { cpk_ring_release(slot((head + index) % layout.frameCount)) }
        head = (head + taken) % layout.frameCount
        taken = 0
    }
}

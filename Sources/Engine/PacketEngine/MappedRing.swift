import CPacket
import Glibc

/// The sizes of a `TPACKET_V2` ring: slots (frames) of ``frameSize`` bytes packed into blocks of
/// ``blockSize`` (a frame never straddles two blocks; a block may end in a gap).
struct RingLayout: Equatable {
    var frameSize: Int
    var blockSize: Int
    var framesPerBlock: Int
    var blockCount: Int
    var frameCount: Int { blockCount * framesPerBlock }
    var bytes: Int { blockCount * blockSize }

    /// The most memory a ring takes when that means fewer slots than asked for (64 KiB frames: 481 slots).
    /// The kernel allocates it for good, per direction, so a 65,535-byte MTU does not cost 2048 such slots.
    static let maximumBytes = 32 << 20
    /// The fewest slots a ring has, whatever its frames' size.
    static let minimumSlots = 64

    /// Slots for frames of up to `frameBytes` (after `headroom`): `slots` of them, or as many as
    /// ``maximumBytes`` holds when that is fewer (never fewer than ``minimumSlots``). Blocks are 64 KiB
    /// (whole pages, as the kernel requires), or one page-rounded frame when frames are larger than 16 KiB.
    init(frameBytes: Int, slots: Int, headroom: Int) {
        frameSize = RingGeometry.frameSize(frameBytes: frameBytes, headroom: headroom)
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        blockSize = frameSize <= 16 * 1024 ? max(64 * 1024, page) : (frameSize + page - 1) / page * page
        framesPerBlock = blockSize / frameSize
        let blocksWanted = (max(1, slots) + framesPerBlock - 1) / framesPerBlock
        let blocksAllowed = max(Self.maximumBytes / blockSize, (Self.minimumSlots + framesPerBlock - 1) / framesPerBlock)
        blockCount = max(1, min(blocksWanted, blocksAllowed))
    }

    /// The longest frame (with its headroom left out) a slot holds whole wherever the kernel puts it.
    func slotBytes(headroom: Int) -> Int { frameSize - RingGeometry.macOffsetBound(headroom: headroom) }
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
///
/// Taking a batch puts back the VLAN tag the kernel took out of a frame (``VLANTag``), in the slot itself:
/// the frame then starts 4 bytes earlier and its header's `tp_mac`, `tp_snaplen` and `tp_len` say so (the
/// slot is the engine's until it is released). A frame the kernel could not fit and queued whole on the
/// socket as well (`TP_STATUS_COPY`, with `PACKET_COPY_THRESH`) is left as it is, for the reader to fetch.
struct MappedRing {
    let memory: UnsafeMutableRawPointer
    let layout: RingLayout
    private let headroom: Int
    private var head = 0
    private var taken = 0
    /// Frames of the batch marked `TP_STATUS_COPY`.
    private(set) var copies = 0
    /// Frames whose VLAN tag was put back, in all.
    private(set) var tagsRestored: UInt64 = 0

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

    /// Takes the frames the kernel has handed over, at most `limit`, and at most `copyLimit` of them marked
    /// `TP_STATUS_COPY` (the batch ends before the next one); returns how many.
    mutating func take(upTo limit: Int, copyLimit: Int = .max) -> Int {
        var count = 0
        copies = 0
        while count < limit, count < layout.frameCount {
            let frame = slot((head + count) % layout.frameCount)
            let status = cpk_ring_status(frame)
            if status & UInt32(TP_STATUS_USER) == 0 { break }
            if status & UInt32(TP_STATUS_COPY) != 0 {
                if copies == copyLimit { break }
                copies += 1
            } else if status & UInt32(TP_STATUS_VLAN_VALID) != 0 {
                restoreTag(frame.assumingMemoryBound(to: tpacket2_hdr.self), status: status)
            }
            count += 1
        }
        taken = count
        return count
    }

    /// Writes the frame's VLAN tag back in front of its EtherType, in its slot.
    @inline(__always)
    private mutating func restoreTag(_ frame: UnsafeMutablePointer<tpacket2_hdr>, status: UInt32) {
        let mac = Int(frame.pointee.tp_mac)
        // The kernel leaves at least 14 bytes between the sockaddr_ll and the frame (RingGeometry); a frame
        // without its two MAC addresses has nothing to put a tag after.
        guard mac - headroom - VLANTag.size >= RingGeometry.headerLength, frame.pointee.tp_snaplen >= 12 else { return }
        VLANTag.insert(at: UnsafeMutableRawPointer(frame) + mac - headroom, headroom: headroom, tpid: Self.tpid(frame.pointee, status), tci: frame.pointee.tp_vlan_tci)
        frame.pointee.tp_mac = UInt16(mac - VLANTag.size)
        frame.pointee.tp_snaplen += UInt32(VLANTag.size)
        frame.pointee.tp_len += UInt32(VLANTag.size)
        tagsRestored &+= 1
    }

    /// The TPID of the tag the kernel took out of a frame (802.1Q when it does not say).
    @inline(__always)
    static func tpid(_ frame: tpacket2_hdr, _ status: UInt32) -> UInt16 {
        status & UInt32(TP_STATUS_VLAN_TPID_VALID) != 0 ? frame.tp_vlan_tpid : VLANTag.dot1Q
    }

    /// `tp_status` of frame `index` of the batch.
    @inline(__always)
    func status(_ index: Int) -> UInt32 { header(index).pointee.tp_status }

    /// The header of frame `index` of the batch.
    @inline(__always)
    func headerOf(_ index: Int) -> tpacket2_hdr { header(index).pointee }

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

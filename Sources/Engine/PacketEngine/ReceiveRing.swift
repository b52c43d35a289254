import CPacket
import Glibc
import LinkEmulation

/// A `TPACKET_V2` receive ring (`PACKET_RX_RING`): the kernel copies each frame into a slot of memory
/// shared with the engine while it delivers it, so a batch is read without a system call or a second
/// copy, and sent on straight from the slots. Each frame wakes the socket, as with `recvmmsg`. (Not
/// `TPACKET_V3`: its blocks are retired by a jiffies timer, adding up to 8 ms at HZ=250.)
///
/// No frame is lost for its size or changed on the way in:
/// - A frame longer than a slot (the MTU grew after the ring was made) is queued whole on the socket as
///   well (`PACKET_COPY_THRESH`; its slot says `TP_STATUS_COPY`) and read from there with `recv`, into one
///   of a few buffers of 64 KiB: it crosses, one system call dearer (``takeCopied()`` counts them).
/// - ``grow(toSlotBytes:)`` builds a larger ring on a second socket and hands over to it without losing
///   or repeating a frame: both sockets are members of one `PACKET_FANOUT` group whose program sends every
///   frame to the newest member (``FanoutGroup``), so once the new one has joined the old one receives
///   nothing more; it is read to its end and closed. The new socket is opened shut, so it takes no frame
///   of its own before it joins.
/// - The VLAN tag the kernel took out of a frame is put back in front of its EtherType (``VLANTag``).
///
/// A frame's arrival is the kernel's stamp in its slot (``KernelArrivalStamps``), unless the ring was made
/// with `kernelStamps` off (then it is the time the batch was read, the engine's former model).
///
/// The ring owns its receiving socket: ``close()`` unmaps the ring and closes the socket.
package final class ReceiveRing: FrameSource {
    /// Frames a batch holds at most.
    let capacity: Int
    private let headroom: Int
    private let slotsWanted: Int
    private let group: FanoutGroup?
    /// The ring being read, and the larger one that takes over once it has been read to its end.
    @exclusivity(unchecked) private var reading: RingMapping
    @exclusivity(unchecked) private var next: RingMapping?
    /// What each frame of the batch is when the batch holds long frames (``batchHasCopies``).
    private var entries: [LongFrame]
    private var buffers: [UnsafeMutableRawPointer] = []
    @exclusivity(unchecked) private var buffersUsed = 0
    @exclusivity(unchecked) private var batchHasCopies = false
    @exclusivity(unchecked) private var batchCount = 0
    @exclusivity(unchecked) private var copied: UInt64 = 0
    private var closed = false
    /// Whether arrivals are the kernel's stamps (else the read time).
    private let kernelStamps: Bool
    @exclusivity(unchecked) private var stamps = KernelArrivalStamps()

    private enum LongFrame {
        /// In its slot.
        case ring
        /// Read whole from the socket.
        case copied(UnsafeMutableRawBufferPointer)
        /// Longer than its slot and not read whole (the socket's queue was full): cut short.
        case lost
    }

    /// Long frames read from the socket per batch at most (the batch ends before the next one).
    static let longFramesPerBatch = 8
    /// A buffer for a long frame: an IP packet of 65,535 bytes, its Ethernet header, a VLAN tag and a
    /// `virtio_net_hdr`, with room to spare.
    static let longFrameBytes = 65_536 + 64

    /// Sets the ring up on `socket` (bound) for frames of up to `frameBytes`, `slots` frames in all (fewer
    /// when that would pass ``RingLayout/maximumBytes``), read `batch` at a time. `headroom` is what the kernel
    /// writes in front of each frame and ``frame(_:)`` includes: the `virtio_net_hdr` of a socket with
    /// `PACKET_VNET_HDR` (0 without). The socket becomes the first member of a fanout group of its own.
    /// With `kernelStamps`, a frame's arrival is the kernel's stamp (and the socket asks for stamps taken
    /// as frames are queued, `SO_TIMESTAMPNS`); without, the time the batch was read.
    package init(
        socket: PacketSocket, frameBytes: Int, slots: Int, batch: Int, headroom: Int = 0, kernelStamps: Bool = true
    ) throws(PacketEngineError) {
        capacity = max(1, batch)
        self.headroom = headroom
        slotsWanted = slots
        self.kernelStamps = kernelStamps
        if kernelStamps { KernelArrivalStamps.enableOnSocket(socket.fileDescriptor) }
        reading = try RingMapping(socket: socket, frameBytes: frameBytes, slots: slots, headroom: headroom)
        group = FanoutGroup.create(on: socket)
        entries = Array(repeating: .ring, count: capacity)
    }

    deinit {
        close()
        for buffer in buffers { buffer.deallocate() }
    }

    /// Unmaps the rings (a mapping holds its socket open) and closes the sockets. Nothing may be read
    /// afterwards.
    package func close() {
        guard !closed else { return }
        closed = true
        reading.close()
        next?.close()
        next = nil
    }

    /// The longest frame the slots being filled now hold whole.
    package var slotBytes: Int { (next ?? reading).frames.layout.slotBytes(headroom: headroom) }

    package func receive() -> ReceiveResult {
        var count = reading.frames.take(upTo: capacity, copyLimit: Self.longFramesPerBatch)
        if count == 0, let successor = next {
            // The old ring receives nothing since the new one joined the group, and holds nothing more.
            reading.close()
            reading = successor
            next = nil
            count = reading.frames.take(upTo: capacity, copyLimit: Self.longFramesPerBatch)
        }
        guard count > 0 else { return .empty }
        batchCount = count
        if kernelStamps { stamps.refresh() }
        if reading.frames.copies > 0 { fetchLongFrames(count) }
        return .frames(count, more: count == capacity || reading.frames.copies == Self.longFramesPerBatch)
    }

    @inline(__always)
    package func frame(_ index: Int) -> UnsafeMutableRawBufferPointer {
        if batchHasCopies, case .copied(let buffer) = entries[index] { return buffer }
        return reading.frames.frame(index)
    }

    @inline(__always)
    package func isTruncated(_ index: Int) -> Bool {
        if batchHasCopies {
            switch entries[index] {
            case .copied: return false
            case .lost: return true
            case .ring: break
            }
        }
        return reading.frames.isTruncated(index)
    }

    @inline(__always)
    package func isOutgoing(_ index: Int) -> Bool { reading.frames.packetType(index) == UInt8(PACKET_OUTGOING) }

    /// The kernel's stamp of the frame (`tp_sec`/`tp_nsec`, `CLOCK_REALTIME`) on the monotonic clock, or
    /// `readAt` when it cannot be used or the ring was made without `kernelStamps`.
    @inline(__always)
    package func arrival(_ index: Int, readAt: MonotonicNanoseconds) -> MonotonicNanoseconds {
        guard kernelStamps else { return readAt }
        let stamp = reading.frames.stamp(index)
        return stamps.arrival(seconds: stamp.seconds, nanoseconds: stamp.nanoseconds, readAt: readAt)
    }

    package func takeStampFallbacks() -> UInt64 { stamps.takeFallbacks() }

    package var canPoll: Bool { true }

    /// Whether the kernel has handed over the slot at the head of the ring being read (or of the one
    /// taking over from it): one load of its status word.
    @inline(__always)
    package func hasFrames() -> Bool {
        reading.frames.headIsReady || next?.frames.headIsReady == true
    }

    package func release() {
        if batchHasCopies {
            for index in 0..<batchCount { entries[index] = .ring }
            batchHasCopies = false
            buffersUsed = 0
        }
        batchCount = 0
        reading.frames.release()
    }

    package func takeError() -> Int32 {
        let code = reading.socket.takeError()
        return code != 0 ? code : next?.socket.takeError() ?? 0
    }

    package func takeOverruns() -> UInt64 { reading.socket.takeDrops() + (next?.socket.takeDrops() ?? 0) }

    package func takeCopied() -> UInt64 {
        defer { copied = 0 }
        return copied
    }

    package func currentMTU() -> Int { reading.socket.currentMTU() }

    /// Builds a ring for frames of up to `slotBytes` on a new socket and makes it the group's newest
    /// member: from then on every frame lands in it, and ``receive()`` moves over once the old ring is
    /// empty. Returns the new socket's descriptor (for the waiter); nil when a larger ring is being handed
    /// over to already or the slots are large enough.
    package func grow(toSlotBytes wanted: Int) throws(PacketEngineError) -> Int32? {
        guard next == nil, wanted > slotBytes else { return nil }
        let operation = "rebuild the receive ring of \(reading.socket.place) for \(wanted)-byte frames"
        guard headroom == 0 else {
            throw PacketEngineError(operation: operation, detail: "a ring read with PACKET_VNET_HDR is not rebuilt")
        }
        guard let group else {
            throw PacketEngineError(
                operation: operation,
                detail: "the kernel refused a PACKET_FANOUT group, so the ring cannot be handed over without losing frames; longer frames are still read whole, one system call each")
        }
        let socket = try reading.socket.reopen(shut: true)
        if kernelStamps { KernelArrivalStamps.enableOnSocket(socket.fileDescriptor) }
        let mapping: RingMapping
        do {
            mapping = try RingMapping(socket: socket, frameBytes: wanted, slots: slotsWanted, headroom: headroom)
        } catch {
            socket.close()
            throw error
        }
        do {
            try group.handOver(from: reading.socket, to: socket)
        } catch {
            mapping.close()  // which takes it out of the group
            throw error
        }
        next = mapping
        return socket.fileDescriptor
    }

    /// Reads the batch's long frames from the socket's queue, in order (the kernel queues them in the order
    /// it fills their slots).
    private func fetchLongFrames(_ count: Int) {
        batchHasCopies = true
        for index in 0..<count where reading.frames.status(index) & UInt32(TP_STATUS_COPY) != 0 {
            entries[index] = fetchLongFrame(index)
        }
    }

    private func fetchLongFrame(_ index: Int) -> LongFrame {
        if buffersUsed == buffers.count { buffers.append(.allocate(byteCount: Self.longFrameBytes, alignment: 64)) }
        let buffer = buffers[buffersUsed]
        buffersUsed += 1
        let room = VLANTag.size
        var length: Int
        repeat {
            length = recv(reading.socket.fileDescriptor, buffer + room, Self.longFrameBytes - room, Int32(MSG_DONTWAIT | MSG_TRUNC))
        } while length < 0 && errno == EINTR
        guard length > headroom, length <= Self.longFrameBytes - room else { return .lost }
        var start = buffer + room
        let header = reading.frames.headerOf(index)
        if header.tp_status & UInt32(TP_STATUS_VLAN_VALID) != 0, length >= headroom + 12 {
            VLANTag.insert(at: start, headroom: headroom, tpid: MappedRing.tpid(header, header.tp_status), tci: header.tp_vlan_tci)
            start -= VLANTag.size
            length += VLANTag.size
        }
        copied &+= 1
        return .copied(UnsafeMutableRawBufferPointer(start: start, count: length))
    }
}

/// A receive socket with its ring mapped.
private struct RingMapping {
    let socket: PacketSocket
    var frames: MappedRing

    /// `TPACKET_V2`, long frames queued whole beside their slot (`PACKET_COPY_THRESH`), the ring, its mapping.
    init(socket: PacketSocket, frameBytes: Int, slots: Int, headroom: Int) throws(PacketEngineError) {
        let fd = socket.fileDescriptor
        var version = Int32(TPACKET_V2.rawValue)
        guard setsockopt(fd, SOL_PACKET, PACKET_VERSION, &version, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            throw .system("setsockopt PACKET_VERSION TPACKET_V2 on \(socket.place)")
        }
        var copyThreshold: Int32 = 1
        guard setsockopt(fd, SOL_PACKET, PACKET_COPY_THRESH, &copyThreshold, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            throw .system("setsockopt PACKET_COPY_THRESH on \(socket.place)")
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
        self.socket = socket
        frames = MappedRing(memory: memory, layout: layout, headroom: headroom)
    }

    /// Unmaps the ring and closes the socket.
    func close() {
        if socket.fileDescriptor >= 0 { munmap(frames.memory, frames.layout.bytes) }
        socket.close()
    }
}

/// The `PACKET_FANOUT` group of a direction's receive sockets, whose one classic BPF program sends every
/// frame to the member that joined last (CPacket's `cpk_fanout_*`).
struct FanoutGroup {
    let id: UInt16
    let flags: UInt32

    /// `PACKET_FANOUT_FLAG_IGNORE_OUTGOING` (Linux 6.8 on; newer than this machine's uapi headers): the
    /// group, like its members, is not handed what the interface sends.
    static let ignoreOutgoing: UInt32 = 0x4000

    /// A group with `socket` (bound) as its only member; nil when the kernel refuses one.
    static func create(on socket: PacketSocket) -> FanoutGroup? {
        for flags in [ignoreOutgoing, 0] {
            let id = cpk_fanout_create(socket.fileDescriptor, flags)
            if id >= 0 { return FanoutGroup(id: UInt16(id), flags: flags) }
        }
        return nil
    }

    /// Makes `new` (bound to the same interface, opened shut, its ring set up) the member every frame goes
    /// to in place of `old`, the group's only member, and returns once no frame can still be on its way to
    /// `old`. Each frame reaches one of them, once: while `new` is shut and outside the group it takes
    /// nothing, and the program sends every frame to `old` until `new` is in and open. When this throws,
    /// closing `new` leaves `old` taking every frame.
    func handOver(from old: PacketSocket, to new: PacketSocket) throws(PacketEngineError) {
        guard cpk_fanout_route_to_first(old.fileDescriptor) == 0 else {
            throw .system("route the fanout group \(id) of \(old.place) to its first member (setsockopt PACKET_FANOUT_DATA)")
        }
        guard cpk_fanout_join(new.fileDescriptor, id, flags) == 0 else {
            throw .system("join the fanout group \(id) of \(new.place) (setsockopt PACKET_FANOUT)")
        }
        try new.unshut()
        // Setting the program waits for frames already on their way to the old member (synchronize_net).
        guard cpk_fanout_route_to_newest(new.fileDescriptor) == 0 else {
            throw .system("route the fanout group \(id) of \(new.place) to its newest member (setsockopt PACKET_FANOUT_DATA)")
        }
    }
}

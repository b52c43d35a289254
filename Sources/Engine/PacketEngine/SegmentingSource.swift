import CPacket
import Glibc
import LinkEmulation
import Synchronization

/// What a ``SegmentingSource`` did, counted as it reads (any thread may read the counts).
package final class SegmentationCounters: Sendable {
    /// TCP super-frames cut, and the segments cut from them.
    package let superFrames = Atomic<UInt64>(0)
    package let segments = Atomic<UInt64>(0)
    /// Partial checksums completed.
    package let checksumsCompleted = Atomic<UInt64>(0)
    /// Frames that could not be handled (another GSO type, inconsistent offsets), dropped.
    package let unsupported = Atomic<UInt64>(0)
    /// Super-frames dropped because the batch's segment slots were used up.
    package let overflows = Atomic<UInt64>(0)

    package init() {}

    package var description: String {
        "super-frames \(superFrames.load(ordering: .relaxed)) → \(segments.load(ordering: .relaxed)) segments, "
            + "checksums completed \(checksumsCompleted.load(ordering: .relaxed)), unsupported \(unsupported.load(ordering: .relaxed)), "
            + "overflows \(overflows.load(ordering: .relaxed))"
    }
}

/// Reads frames with their `virtio_net_hdr` (a socket with `PACKET_VNET_HDR`, the peers' TSO and checksum
/// offload left on) from `Inner`, and hands on what software GSO would have sent: partial checksums
/// completed in place, TCP super-frames cut into MTU-sized segments in slots of its own. What leaves the
/// engine is the same as with the peers' offloads off.
///
/// How an attached engine reads both its ends (``ring(counters:)``): there the target's peer — a host veth,
/// a bridge port — is not linkcond's to change, so its TSO and GSO stay on and it sends super-frames. Also
/// linkcond-bench's "GSO cut in the engine" rows.
package final class SegmentingSource<Inner: FrameSource>: FrameSource {
    private struct Entry {
        var frame: UnsafeMutableRawBufferPointer
        /// The inner frame it came from (for its arrival, its flags).
        var innerIndex: Int
    }

    private let inner: Inner
    private let counters: SegmentationCounters
    private let slotSize: Int
    private let slotCount: Int
    private let arena: UnsafeMutableRawPointer
    private let entryCapacity: Int
    private let entries: UnsafeMutablePointer<Entry>
    @exclusivity(unchecked) private var count = 0
    @exclusivity(unchecked) private var slotsUsed = 0

    /// A reader of `inner` (whose frames start with a `virtio_net_hdr`) cutting segments of up to
    /// `frameBytes` into `segmentSlots` slots per batch; a batch hands on at most `entries` frames.
    package init(inner: Inner, frameBytes: Int, segmentSlots: Int, entries: Int, counters: SegmentationCounters) {
        self.inner = inner
        self.counters = counters
        slotSize = (frameBytes + 63) & ~63
        slotCount = max(1, segmentSlots)
        arena = .allocate(byteCount: slotCount * slotSize, alignment: 64)
        entryCapacity = max(1, entries)
        self.entries = .allocate(capacity: entryCapacity)
    }

    deinit {
        arena.deallocate()
        entries.deallocate()
    }

    package func receive() -> ReceiveResult {
        count = 0
        slotsUsed = 0
        let taken: Int
        let more: Bool
        switch inner.receive() {
        case .frames(let innerCount, let innerMore):
            taken = innerCount
            more = innerMore
        case let other:
            return other
        }
        for index in 0..<taken {
            guard count < entryCapacity else {
                counters.overflows.add(1, ordering: .relaxed)
                continue
            }
            let raw = inner.frame(index)
            // Truncated and outgoing frames go on as they are: the loop counts and skips them.
            if inner.isTruncated(index) || inner.isOutgoing(index) {
                append(raw, from: index)
                continue
            }
            guard raw.count > VirtioNetHeader.size + 14 else {
                counters.unsupported.add(1, ordering: .relaxed)
                continue
            }
            cut(raw, from: index)
        }
        return .frames(count, more: more)
    }

    /// Completes or segments one frame read with its header.
    private func cut(_ raw: UnsafeMutableRawBufferPointer, from index: Int) {
        let header = VirtioNetHeader(UnsafeRawBufferPointer(rebasing: raw[0..<VirtioNetHeader.size]))
        let frame = UnsafeMutableRawBufferPointer(rebasing: raw[VirtioNetHeader.size...])
        switch header.gsoType {
        case UInt8(VIRTIO_NET_HDR_GSO_NONE):
            if header.needsChecksum {
                guard GSOSegmenter.completeChecksum(frame, start: header.checksumStart, offset: header.checksumOffset) else {
                    counters.unsupported.add(1, ordering: .relaxed)
                    return
                }
                counters.checksumsCompleted.add(1, ordering: .relaxed)
            }
            append(frame, from: index)
        case UInt8(VIRTIO_NET_HDR_GSO_TCPV4), UInt8(VIRTIO_NET_HDR_GSO_TCPV6), VirtioNetHeader.udpL4:
            guard header.gsoSize > 0 else {
                counters.unsupported.add(1, ordering: .relaxed)
                return
            }
            // At most this many segments: Ethernet, IP and the transport header take 42 bytes at the least.
            let most = (max(frame.count - 42, 0) + header.gsoSize - 1) / header.gsoSize
            guard slotsUsed + most <= slotCount, count + most <= entryCapacity else {
                counters.overflows.add(1, ordering: .relaxed)
                return
            }
            let cut = header.gsoType == VirtioNetHeader.udpL4 ? GSOSegmenter.segmentUDP : GSOSegmenter.segmentTCP
            let segments = cut(
                UnsafeRawBufferPointer(frame), header.gsoSize, slotSize,
                {
                    defer { slotsUsed += 1 }
                    return arena + slotsUsed * slotSize
                },
                { segment in append(segment, from: index) })
            if let segments {
                counters.superFrames.add(1, ordering: .relaxed)
                counters.segments.add(UInt64(segments), ordering: .relaxed)
            } else {
                counters.unsupported.add(1, ordering: .relaxed)
            }
        default:
            counters.unsupported.add(1, ordering: .relaxed)
        }
    }

    @inline(__always)
    private func append(_ frame: UnsafeMutableRawBufferPointer, from index: Int) {
        entries[count] = Entry(frame: frame, innerIndex: index)
        count += 1
    }

    package func frame(_ index: Int) -> UnsafeMutableRawBufferPointer { entries[index].frame }

    package func isTruncated(_ index: Int) -> Bool { inner.isTruncated(entries[index].innerIndex) }

    package func isOutgoing(_ index: Int) -> Bool { inner.isOutgoing(entries[index].innerIndex) }

    package func arrival(_ index: Int, readAt: MonotonicNanoseconds) -> MonotonicNanoseconds {
        inner.arrival(entries[index].innerIndex, readAt: readAt)
    }

    package func release() {
        inner.release()
        count = 0
        slotsUsed = 0
    }

    package func takeError() -> Int32 { inner.takeError() }

    package func takeOverruns() -> UInt64 { inner.takeOverruns() }

    package func close() { inner.close() }
}

extension SegmentingSource where Inner == ReceiveRing {
    /// The longest GSO super-frame: 64 KiB of IP packet, an Ethernet header and a VLAN tag.
    package static var superFrameBytes: Int { 65_536 + 14 + 4 }
    /// Super-frames read per batch: each may become about 45 segments of a 1500-byte MTU.
    package static var superFramesPerBatch: Int { 16 }

    /// A source factory for `EngineRuntime(wire:options:uplink:downlink:source:)`: the socket reads with
    /// `PACKET_VNET_HDR` into a receive ring with slots for whole super-frames (128 of them), and its frames are
    /// completed and cut here, counted in `counters`.
    package static func ring(
        counters: SegmentationCounters
    ) -> (PacketSocket, SourceSizes) throws(PacketEngineError) -> SegmentingSource<ReceiveRing> {
        { (socket, sizes) throws(PacketEngineError) in
            try enableVirtioHeaders(socket)
            let ring = try ReceiveRing(
                socket: socket, frameBytes: superFrameBytes, slots: 128, batch: superFramesPerBatch, headroom: VirtioNetHeader.size)
            return SegmentingSource(
                inner: ring, frameBytes: sizes.frameBytes, segmentSlots: superFramesPerBatch * 48, entries: superFramesPerBatch * 48,
                counters: counters)
        }
    }
}

/// `setsockopt PACKET_VNET_HDR`: every frame read carries a `struct virtio_net_hdr` in front of it.
package func enableVirtioHeaders(_ socket: PacketSocket) throws(PacketEngineError) {
    var one: Int32 = 1
    guard setsockopt(socket.fileDescriptor, SOL_PACKET, PACKET_VNET_HDR, &one, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
        throw PacketEngineError(operation: "setsockopt PACKET_VNET_HDR on \(socket.place)", errno: errno)
    }
}

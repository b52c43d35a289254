import CPacket
import Glibc
import PacketEngine

/// The readers linkcond-bench runs the engine with besides its own receive ring, as source factories for
/// `EngineRuntime(wire:options:uplink:downlink:source:)`.
package enum BenchReaders {
    /// `recvmmsg` into the reader's own buffers.
    package static func recvmmsg(_ socket: PacketSocket, _ sizes: SourceSizes) throws(PacketEngineError) -> RecvmmsgSource {
        RecvmmsgSource(socket: socket, capacity: sizes.batchSize, slotSize: sizes.frameBytes)
    }

    /// GSO super-frames read whole with `PACKET_VNET_HDR` from a receive ring, cut in the engine; the
    /// peers must be prepared with ``OffloadMode/segmentInEngine``.
    package static func segmentingRing(
        counters: SegmentationCounters
    ) -> (PacketSocket, SourceSizes) throws(PacketEngineError) -> SegmentingSource<ReceiveRing> {
        { (socket, sizes) throws(PacketEngineError) in
            try enableVirtioHeaders(socket)
            let ring = try ReceiveRing(
                socket: socket, frameBytes: superFrameBytes, slots: 128, batch: superFramesPerBatch, headroom: VirtioNetHeader.size)
            return segmenting(ring, sizes, counters)
        }
    }

    /// The same with `recvmmsg`.
    package static func segmentingRecvmmsg(
        counters: SegmentationCounters
    ) -> (PacketSocket, SourceSizes) throws(PacketEngineError) -> SegmentingSource<RecvmmsgSource> {
        { (socket, sizes) throws(PacketEngineError) in
            try enableVirtioHeaders(socket)
            let reader = RecvmmsgSource(socket: socket, capacity: superFramesPerBatch, slotSize: VirtioNetHeader.size + superFrameBytes)
            return segmenting(reader, sizes, counters)
        }
    }

    /// The longest GSO super-frame: 64 KiB of IP packet, an Ethernet header and a VLAN tag.
    private static let superFrameBytes = 65_536 + 14 + 4
    /// Super-frames read per batch: each may become about 45 segments of a 1500-byte MTU.
    private static let superFramesPerBatch = 16

    private static func segmenting<Inner: FrameSource>(
        _ inner: Inner, _ sizes: SourceSizes, _ counters: SegmentationCounters
    ) -> SegmentingSource<Inner> {
        SegmentingSource(
            inner: inner, frameBytes: sizes.frameBytes, segmentSlots: superFramesPerBatch * 48, entries: superFramesPerBatch * 48,
            counters: counters)
    }

    /// `setsockopt PACKET_VNET_HDR`: every frame read carries a `struct virtio_net_hdr` in front of it.
    private static func enableVirtioHeaders(_ socket: PacketSocket) throws(PacketEngineError) {
        var one: Int32 = 1
        guard setsockopt(socket.fileDescriptor, SOL_PACKET, PACKET_VNET_HDR, &one, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            throw PacketEngineError(operation: "setsockopt PACKET_VNET_HDR on \(socket.place)", errno: errno)
        }
    }
}

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

    /// GSO super-frames read whole with `PACKET_VNET_HDR` from a receive ring, cut in the engine (the reader an
    /// attached engine uses, ``SegmentingSource/ring(counters:)``); the peers must be prepared with
    /// ``OffloadMode/segmentInEngine``.
    package static func segmentingRing(
        counters: SegmentationCounters
    ) -> (PacketSocket, SourceSizes) throws(PacketEngineError) -> SegmentingSource<ReceiveRing> {
        SegmentingSource.ring(counters: counters)
    }

    /// The same with `recvmmsg`.
    package static func segmentingRecvmmsg(
        counters: SegmentationCounters
    ) -> (PacketSocket, SourceSizes) throws(PacketEngineError) -> SegmentingSource<RecvmmsgSource> {
        { (socket, sizes) throws(PacketEngineError) in
            try enableVirtioHeaders(socket)
            let batch = SegmentingSource<ReceiveRing>.superFramesPerBatch
            let reader = RecvmmsgSource(socket: socket, capacity: batch, slotSize: VirtioNetHeader.size + SegmentingSource<ReceiveRing>.superFrameBytes)
            return SegmentingSource(inner: reader, frameBytes: sizes.frameBytes, segmentSlots: batch * 48, entries: batch * 48, counters: counters)
        }
    }
}

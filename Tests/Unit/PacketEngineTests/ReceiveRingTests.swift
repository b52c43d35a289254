import CPacket
import Glibc
import XCTest

@testable import PacketEngine

/// The `TPACKET_V2` ring's geometry against the kernel headers' structs, and the ring walked over memory
/// filled the way `tpacket_rcv` fills it (no socket, no root).
final class ReceiveRingTests: XCTestCase {
    func testTheGeometryMacrosMatchTheStructLayout() {
        XCTAssertEqual(RingGeometry.alignment, 16)
        for length in 0..<100 {
            XCTAssertEqual(RingGeometry.align(length), (length + 15) / 16 * 16, "TPACKET_ALIGN(\(length))")
        }
        let header = MemoryLayout<tpacket2_hdr>.size
        XCTAssertEqual(header, 32, "struct tpacket2_hdr")
        XCTAssertEqual(MemoryLayout<sockaddr_ll>.size, 20, "struct sockaddr_ll")
        XCTAssertEqual(RingGeometry.addressOffset, RingGeometry.align(header))
        XCTAssertEqual(RingGeometry.headerLength, RingGeometry.align(header) + MemoryLayout<sockaddr_ll>.size, "TPACKET2_HDRLEN")
        XCTAssertEqual(MemoryLayout<tpacket2_hdr>.offset(of: \.tp_mac), 12)
        XCTAssertEqual(MemoryLayout<tpacket2_hdr>.offset(of: \.tp_snaplen), 8)
    }

    /// Where `tpacket_rcv` puts an Ethernet frame (`maclen` 14): the network header at
    /// `TPACKET_ALIGN(TPACKET2_HDRLEN + 16)` plus the vnet header, the frame 14 bytes before it.
    func testAFullSizeFrameFitsItsSlotWhereTheKernelPutsIt() {
        for headroom in [0, 10] {
            let frameBytes = 1500 + 14 + 4
            let frameSize = RingGeometry.frameSize(frameBytes: frameBytes, headroom: headroom)
            let networkOffset = RingGeometry.align(RingGeometry.headerLength + 16) + headroom
            let macOffset = networkOffset - 14
            XCTAssertLessThanOrEqual(macOffset + frameBytes, frameSize, "a full frame would be cut short (headroom \(headroom))")
            XCTAssertLessThanOrEqual(macOffset - headroom, RingGeometry.macOffsetBound(headroom: 0))
            XCTAssertGreaterThanOrEqual(macOffset - headroom, RingGeometry.headerLength, "the frame would overlap the sockaddr_ll")
            XCTAssertEqual(frameSize % RingGeometry.alignment, 0)
        }
        // A longer link header (maclen 18: a VLAN tag in the frame) starts earlier, never later.
        let vlanMacOffset = RingGeometry.align(RingGeometry.headerLength + 18) - 18
        XCTAssertLessThanOrEqual(vlanMacOffset, RingGeometry.macOffsetBound(headroom: 0))
        let layout = RingLayout(frameBytes: 1518, slots: 2048, headroom: 0)
        XCTAssertEqual(layout.frameSize, 1600)
        XCTAssertEqual(layout.blockSize, 65_536)
        XCTAssertEqual(layout.framesPerBlock, 40)
        XCTAssertGreaterThanOrEqual(layout.frameCount, 2048)
        let jumbo = RingLayout(frameBytes: 65_554, slots: 128, headroom: 10)
        XCTAssertEqual(jumbo.blockSize % Int(sysconf(Int32(_SC_PAGESIZE))), 0)
        XCTAssertEqual(jumbo.framesPerBlock, 1)
        XCTAssertEqual(jumbo.frameCount, 128)
    }

    func testTheRingHandsOverWhatTheKernelFilledInOrderAcrossBlocks() {
        // Two blocks of 3 frames of 128 bytes each (a gap ends each block), as a kernel ring is laid out.
        var layout = RingLayout(frameBytes: 16, slots: 6, headroom: 0)
        layout.frameSize = 128
        layout.blockSize = 400
        layout.framesPerBlock = 3
        layout.blockCount = 2
        let memory = UnsafeMutableRawPointer.allocate(byteCount: layout.bytes, alignment: 64)
        defer { memory.deallocate() }
        memory.initializeMemory(as: UInt8.self, repeating: 0, count: layout.bytes)
        var ring = MappedRing(memory: memory, layout: layout, headroom: 0)
        func fill(_ slot: Int, id: UInt8, length: UInt32, captured: UInt32? = nil, type: UInt8 = UInt8(PACKET_HOST)) {
            let frame = ring.slot(slot)
            let header = frame.assumingMemoryBound(to: tpacket2_hdr.self)
            header.pointee.tp_len = length
            header.pointee.tp_snaplen = captured ?? length
            header.pointee.tp_mac = UInt16(RingGeometry.headerLength + 2)
            var address = sockaddr_ll()
            address.sll_family = UInt16(AF_PACKET)
            address.sll_pkttype = type
            (frame + RingGeometry.addressOffset).storeBytes(of: address, as: sockaddr_ll.self)
            (frame + Int(header.pointee.tp_mac)).initializeMemory(as: UInt8.self, repeating: id, count: Int(captured ?? length))
            header.pointee.tp_status = UInt32(TP_STATUS_USER)
        }
        func status(_ slot: Int) -> UInt32 { cpk_ring_status(ring.slot(slot)) }

        XCTAssertEqual(ring.take(upTo: 4), 0, "an empty ring gave frames")
        fill(0, id: 1, length: 20)
        fill(1, id: 2, length: 30, captured: 10)
        fill(2, id: 3, length: 40, type: UInt8(PACKET_OUTGOING))
        fill(3, id: 4, length: 50)
        XCTAssertEqual(ring.take(upTo: 3), 3, "a batch is at most its limit")
        XCTAssertEqual(Array(ring.frame(0)), [UInt8](repeating: 1, count: 20))
        XCTAssertEqual(Array(ring.frame(1)), [UInt8](repeating: 2, count: 10))
        XCTAssertEqual(ring.isTruncated(1), true)
        XCTAssertEqual(ring.isTruncated(0), false)
        XCTAssertEqual(ring.packetType(2), UInt8(PACKET_OUTGOING))
        XCTAssertEqual(ring.packetType(0), UInt8(PACKET_HOST))
        ring.release()
        XCTAssertEqual((0..<3).map(status), [0, 0, 0], "released frames go back to the kernel")
        // Slot 3 starts the second block, past the first block's gap.
        XCTAssertEqual(ring.slot(3) - memory, 400)
        XCTAssertEqual(ring.take(upTo: 8), 1)
        XCTAssertEqual(Array(ring.frame(0)), [UInt8](repeating: 4, count: 50))
        ring.release()
        // The head wraps from the last slot to the first.
        fill(4, id: 5, length: 8)
        fill(5, id: 6, length: 8)
        fill(0, id: 7, length: 8)
        XCTAssertEqual(ring.take(upTo: 8), 3)
        XCTAssertEqual((0..<3).map { ring.frame($0).first }, [5, 6, 7])
        ring.release()
        XCTAssertEqual(ring.take(upTo: 8), 0)
    }

    /// Where `tpacket_rcv` puts an Ethernet frame and what it says about a tag it took out; the ring puts
    /// the tag back in the slot, in front of the EtherType.
    func testATagTheKernelTookOutIsPutBackInItsSlot() {
        let layout = RingLayout(frameBytes: 1518, slots: 4, headroom: 0)
        let memory = UnsafeMutableRawPointer.allocate(byteCount: layout.bytes, alignment: 64)
        defer { memory.deallocate() }
        memory.initializeMemory(as: UInt8.self, repeating: 0, count: layout.bytes)
        var ring = MappedRing(memory: memory, layout: layout, headroom: 0)
        let macOffset = RingGeometry.align(RingGeometry.headerLength + 16) - 14
        func fill(_ slot: Int, _ frame: [UInt8], status: UInt32, tci: UInt16 = 0, tpid: UInt16 = 0, wholeLength: Int? = nil) {
            let base = ring.slot(slot)
            let header = base.assumingMemoryBound(to: tpacket2_hdr.self)
            header.pointee.tp_len = UInt32(wholeLength ?? frame.count)
            header.pointee.tp_snaplen = UInt32(frame.count)
            header.pointee.tp_mac = UInt16(macOffset)
            header.pointee.tp_vlan_tci = tci
            header.pointee.tp_vlan_tpid = tpid
            frame.withUnsafeBytes { (base + macOffset).copyMemory(from: $0.baseAddress!, byteCount: frame.count) }
            header.pointee.tp_status = status | UInt32(TP_STATUS_USER)
        }
        let untagged = TestFrame.udp(id: 9, length: 64)
        func tagged(_ tpid: UInt16, _ tci: UInt16) -> [UInt8] {
            Array(untagged[..<12]) + [UInt8(tpid >> 8), UInt8(tpid & 0xff), UInt8(tci >> 8), UInt8(tci & 0xff)] + Array(untagged[12...])
        }
        let vlan = UInt32(TP_STATUS_VLAN_VALID)
        fill(0, untagged, status: vlan | UInt32(TP_STATUS_VLAN_TPID_VALID), tci: 0x2064, tpid: 0x88A8)
        fill(1, untagged, status: vlan, tci: 0x0065)  // a kernel that does not report the TPID: 802.1Q
        fill(2, untagged, status: 0)
        fill(3, Array(untagged[..<40]), status: vlan | UInt32(TP_STATUS_COPY), tci: 0x0066, wholeLength: 9000)
        XCTAssertEqual(ring.take(upTo: 8), 4)
        XCTAssertEqual(Array(ring.frame(0)), tagged(0x88A8, 0x2064))
        XCTAssertEqual(Array(ring.frame(1)), tagged(0x8100, 0x0065))
        XCTAssertEqual(Array(ring.frame(2)), untagged)
        XCTAssertEqual(ring.isTruncated(0), false, "the tag made the frame look cut short")
        XCTAssertEqual(ring.headerOf(0).tp_len, UInt32(untagged.count + 4))
        XCTAssertEqual(ring.tagsRestored, 2)
        // A frame queued whole on the socket too is the reader's to fetch: its slot is left as it is.
        XCTAssertEqual(ring.copies, 1)
        XCTAssertEqual(Array(ring.frame(3)), Array(untagged[..<40]))
        XCTAssertEqual(ring.isTruncated(3), true)
        ring.release()
        // A batch ends before a long frame beyond its limit.
        fill(4, untagged, status: UInt32(TP_STATUS_COPY), wholeLength: 9000)
        fill(5, untagged, status: UInt32(TP_STATUS_COPY), wholeLength: 9000)
        XCTAssertEqual(ring.take(upTo: 8, copyLimit: 1), 1)
        ring.release()
        XCTAssertEqual(ring.take(upTo: 8, copyLimit: 1), 1)
        ring.release()
    }

    /// A frame read with a `virtio_net_hdr` in front of it: the header moves with the addresses, and its
    /// checksum start and header length with the payload.
    func testATagPutBackBehindAVirtioHeaderMovesItsOffsets() {
        let frame = TestFrame.udp(id: 3, length: 80)
        // flags NEEDS_CSUM, gso_type UDP_L4 (5), hdr_len 42, gso_size 1000, csum_start 34, csum_offset 6.
        let header: [UInt8] = [1, 5, 42, 0, 0xe8, 0x03, 34, 0, 6, 0]
        var buffer = [UInt8](repeating: 0xee, count: 4) + header + frame
        buffer.withUnsafeMutableBytes { raw in
            VLANTag.insert(at: raw.baseAddress! + 4, headroom: 10, tpid: 0x8100, tci: 0x0102)
        }
        XCTAssertEqual(Array(buffer[..<10]), [1, 5, 46, 0, 0xe8, 0x03, 38, 0, 6, 0])
        XCTAssertEqual(Array(buffer[10...]), Array(frame[..<12]) + [0x81, 0x00, 0x01, 0x02] + Array(frame[12...]))
    }
}

import CPacket
import LinkEmulation
import XCTest

@testable import PacketEngine

/// Segmentation and checksum completion on synthetic frames (no privileges needed), checked against an
/// independent RFC 1071 implementation; and the segmenting reader (an attached engine's, and linkcond-bench's) doing both in front of the
/// loop, over an embedded wire.
final class GSOSegmenterTests: XCTestCase {
    private func checksum(_ bytes: ArraySlice<UInt8>, initial: UInt32 = 0) -> UInt16 {
        var sum = initial
        var index = bytes.startIndex
        while index + 1 < bytes.endIndex {
            sum += UInt32(bytes[index]) << 8 | UInt32(bytes[index + 1])
            index += 2
        }
        if index < bytes.endIndex { sum += UInt32(bytes[index]) << 8 }
        while sum >> 16 != 0 { sum = (sum & 0xffff) + (sum >> 16) }
        return ~UInt16(sum)
    }

    private func be16(_ bytes: [UInt8], _ offset: Int) -> Int { Int(bytes[offset]) << 8 | Int(bytes[offset + 1]) }
    private func be32(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }

    /// True when the TCP checksum of an IPv4 segment verifies (sum over pseudo-header and segment is all ones).
    private func tcpChecksumVerifies(_ frame: [UInt8], ipv6: Bool) -> Bool {
        let ip = 14
        let ipHeader = ipv6 ? 40 : Int(frame[ip] & 0x0f) * 4
        let tcpLength = ipv6 ? be16(frame, ip + 4) : be16(frame, ip + 2) - ipHeader
        var pseudo: [UInt8] = ipv6 ? Array(frame[(ip + 8)..<(ip + 40)]) : Array(frame[(ip + 12)..<(ip + 20)])
        pseudo += ipv6 ? [0, 0, UInt8(tcpLength >> 8), UInt8(tcpLength & 0xff), 0, 0, 0, 6] : [0, 6, UInt8(tcpLength >> 8), UInt8(tcpLength & 0xff)]
        let all = pseudo + frame[(ip + ipHeader)..<(ip + ipHeader + tcpLength)]
        return checksum(all[...]) == 0
    }

    private func superFrame(ipv6: Bool, payload: Int, flags: UInt8) -> [UInt8] {
        var frame: [UInt8] = [2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2] + (ipv6 ? [0x86, 0xdd] : [0x08, 0x00])
        if ipv6 {
            frame += [0x60, 0, 0, 0, 0, 0, 6, 64] + [0x20, 0x01, 0, 2] + [UInt8](repeating: 0, count: 11) + [1]
                + [0x20, 0x01, 0, 2] + [UInt8](repeating: 0, count: 11) + [2]
        } else {
            frame += [0x45, 0, 0, 0, 0x12, 0x34, 0x40, 0, 64, 6, 0, 0, 198, 18, 10, 2, 198, 18, 10, 1]
        }
        frame += [0x9c, 0x40, 0x1f, 0x90, 0xff, 0xff, 0xff, 0x00, 0, 0, 0, 1, 0x50, flags, 0x20, 0, 0xab, 0xcd, 0, 0]
        frame += (0..<payload).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        return frame
    }

    func testTCPv4SuperFrameIsCutLikeSoftwareGSO() {
        for ipv6 in [false, true] {
            let payload = 10_000
            let mss = 1448
            let original = superFrame(ipv6: ipv6, payload: payload, flags: 0x80 | 0x18 | 0x01)  // CWR, PSH|ACK, FIN
            var segments: [[UInt8]] = []
            let slot = UnsafeMutableRawPointer.allocate(byteCount: 2048, alignment: 64)
            defer { slot.deallocate() }
            let count = original.withUnsafeBytes { raw in
                GSOSegmenter.segmentTCP(raw, segmentSize: mss, slotSize: 2048, slot: { slot }, emit: { segments.append(Array($0)) })
            }
            XCTAssertEqual(count, 7, "ipv6 \(ipv6)")
            XCTAssertEqual(segments.count, 7)
            let headers = 14 + (ipv6 ? 40 : 20) + 20
            var reassembled: [UInt8] = []
            for (index, segment) in segments.enumerated() {
                let last = index == segments.count - 1
                let length = last ? payload - mss * 6 : mss
                XCTAssertEqual(segment.count, headers + length, "segment \(index)")
                if ipv6 {
                    XCTAssertEqual(be16(segment, 18), 20 + length)
                } else {
                    XCTAssertEqual(be16(segment, 16), 20 + 20 + length)
                    XCTAssertEqual(be16(segment, 18), 0x1234 + index, "IPv4 identifiers increment")
                    XCTAssertEqual(checksum(segment[14..<34]), 0, "IPv4 header checksum of segment \(index)")
                }
                let tcp = headers - 20
                XCTAssertEqual(be32(segment, tcp + 4), 0xffff_ff00 &+ UInt32(mss * index), "sequence wraps like TCP's")
                let flags = segment[tcp + 13]
                XCTAssertEqual(flags & 0x80 != 0, index == 0, "CWR only on the first segment")
                XCTAssertEqual(flags & 0x09 != 0, last, "FIN and PSH only on the last")
                XCTAssertEqual(flags & 0x10, 0x10, "ACK everywhere")
                XCTAssertTrue(tcpChecksumVerifies(segment, ipv6: ipv6), "TCP checksum of segment \(index), ipv6 \(ipv6)")
                reassembled += segment[headers...]
            }
            XCTAssertEqual(reassembled, Array(original[headers...]))
        }
    }

    func testCorruptionAfterSegmentationFailsTheChecksum() {
        let original = superFrame(ipv6: false, payload: 3000, flags: 0x10)
        var segments: [[UInt8]] = []
        let slot = UnsafeMutableRawPointer.allocate(byteCount: 2048, alignment: 64)
        defer { slot.deallocate() }
        _ = original.withUnsafeBytes { raw in
            GSOSegmenter.segmentTCP(raw, segmentSize: 1448, slotSize: 2048, slot: { slot }, emit: { segments.append(Array($0)) })
        }
        var corrupted = segments[1]
        corrupted[100] ^= 0x10
        XCTAssertTrue(tcpChecksumVerifies(segments[1], ipv6: false))
        XCTAssertFalse(tcpChecksumVerifies(corrupted, ipv6: false))
    }

    func testPartialChecksumIsCompleted() {
        var frame = superFrame(ipv6: false, payload: 333, flags: 0x18)
        frame[17] = UInt8((20 + 20 + 333) & 0xff)
        frame[16] = UInt8((20 + 20 + 333) >> 8)
        // What a stack with checksum offload leaves: the pseudo-header sum, folded, not inverted.
        let tcpLength = 20 + 333
        let pseudo = Array(frame[26..<34]) + [0, 6, UInt8(tcpLength >> 8), UInt8(tcpLength & 0xff)]
        let partial = ~checksum(pseudo[...])
        frame[50] = UInt8(partial >> 8)
        frame[51] = UInt8(partial & 0xff)
        XCTAssertFalse(tcpChecksumVerifies(frame, ipv6: false))
        let done = frame.withUnsafeMutableBytes { GSOSegmenter.completeChecksum($0, start: 34, offset: 16) }
        XCTAssertTrue(done)
        XCTAssertTrue(tcpChecksumVerifies(frame, ipv6: false))
        XCTAssertFalse(frame.withUnsafeMutableBytes { GSOSegmenter.completeChecksum($0, start: 34, offset: 400) }, "offset past the end")
    }

    func testFramesThatAreNotTCPSuperFramesAreRefused() {
        var udp = superFrame(ipv6: false, payload: 100, flags: 0)
        udp[23] = 17
        let slot = UnsafeMutableRawPointer.allocate(byteCount: 2048, alignment: 64)
        defer { slot.deallocate() }
        var emitted = 0
        XCTAssertNil(udp.withUnsafeBytes { GSOSegmenter.segmentTCP($0, segmentSize: 1448, slotSize: 2048, slot: { slot }, emit: { _ in emitted += 1 }) })
        let tcp = superFrame(ipv6: false, payload: 100, flags: 0)
        XCTAssertNil(tcp.withUnsafeBytes { GSOSegmenter.segmentTCP($0, segmentSize: 4000, slotSize: 2048, slot: { slot }, emit: { _ in emitted += 1 }) },
            "segments larger than a slot")
        XCTAssertEqual(emitted, 0)
    }

    /// A UDP super-datagram (an IPv4 or IPv6 header, UDP, `payload` bytes) as a socket with `UDP_SEGMENT` hands it over.
    private func udpSuperFrame(ipv6: Bool, payload: Int) -> [UInt8] {
        var frame = superFrame(ipv6: ipv6, payload: 0, flags: 0).prefix(ipv6 ? 54 : 34).map { $0 }
        frame[ipv6 ? 20 : 23] = 17
        frame += [0x30, 0x39, 0x01, 0xbb, 0, 0, 0, 0]  // ports 12345 → 443, length and checksum to be set per datagram
        frame += (0..<payload).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 1) }
        return frame
    }

    /// True when the UDP checksum of a datagram verifies.
    private func udpChecksumVerifies(_ frame: [UInt8], ipv6: Bool) -> Bool {
        let ip = 14
        let ipHeader = ipv6 ? 40 : 20
        let udpLength = be16(frame, ip + ipHeader + 4)
        var pseudo: [UInt8] = ipv6 ? Array(frame[(ip + 8)..<(ip + 40)]) : Array(frame[(ip + 12)..<(ip + 20)])
        pseudo += ipv6 ? [0, 0, UInt8(udpLength >> 8), UInt8(udpLength & 0xff), 0, 0, 0, 17] : [0, 17, UInt8(udpLength >> 8), UInt8(udpLength & 0xff)]
        return checksum((pseudo + frame[(ip + ipHeader)..<(ip + ipHeader + udpLength)])[...]) == 0
    }

    func testUDPSuperDatagramIsCutLikeUDPSegment() {
        for ipv6 in [false, true] {
            let original = udpSuperFrame(ipv6: ipv6, payload: 3000)
            var datagrams: [[UInt8]] = []
            let slot = UnsafeMutableRawPointer.allocate(byteCount: 2048, alignment: 64)
            defer { slot.deallocate() }
            let count = original.withUnsafeBytes { raw in
                GSOSegmenter.segmentUDP(raw, segmentSize: 1200, slotSize: 2048, slot: { slot }, emit: { datagrams.append(Array($0)) })
            }
            XCTAssertEqual(count, 3, "ipv6 \(ipv6)")
            let headers = 14 + (ipv6 ? 40 : 20) + 8
            for (index, datagram) in datagrams.enumerated() {
                let length = index == 2 ? 600 : 1200
                XCTAssertEqual(datagram.count, headers + length)
                XCTAssertEqual(be16(datagram, headers - 8 + 4), 8 + length, "UDP length of datagram \(index)")
                if !ipv6 {
                    XCTAssertEqual(be16(datagram, 16), 20 + 8 + length)
                    XCTAssertEqual(be16(datagram, 18), 0x1234 + index, "IPv4 identifiers increment")
                    XCTAssertEqual(checksum(datagram[14..<34]), 0)
                } else {
                    XCTAssertEqual(be16(datagram, 18), 8 + length)
                }
                XCTAssertTrue(udpChecksumVerifies(datagram, ipv6: ipv6), "UDP checksum of datagram \(index), ipv6 \(ipv6)")
            }
            XCTAssertEqual(datagrams.flatMap { $0[headers...] }, Array(original[headers...]))
        }
    }

    func testATaggedSuperFrameKeepsItsTagOnEverySegment() {
        var tagged = superFrame(ipv6: false, payload: 4000, flags: 0x10)
        tagged.insert(contentsOf: [0x81, 0x00, 0x00, 0x2a], at: 12)  // 802.1Q, VLAN 42
        var segments: [[UInt8]] = []
        let slot = UnsafeMutableRawPointer.allocate(byteCount: 2048, alignment: 64)
        defer { slot.deallocate() }
        let count = tagged.withUnsafeBytes { raw in
            GSOSegmenter.segmentTCP(raw, segmentSize: 1448, slotSize: 2048, slot: { slot }, emit: { segments.append(Array($0)) })
        }
        XCTAssertEqual(count, 3)
        for segment in segments {
            XCTAssertEqual(Array(segment[12..<16]), [0x81, 0x00, 0x00, 0x2a], "the tag")
            // Without the tag it is an ordinary segment, whose checksums verify.
            let untagged = Array(segment[..<12]) + segment[16...]
            XCTAssertEqual(checksum(untagged[14..<34]), 0)
            XCTAssertTrue(tcpChecksumVerifies(untagged, ipv6: false))
        }
    }

    /// A `virtio_net_hdr` as `PACKET_VNET_HDR` writes it (little-endian).
    private func virtioHeader(needsChecksum: Bool, gsoType: UInt8, gsoSize: Int, checksumStart: Int, checksumOffset: Int) -> [UInt8] {
        func le(_ value: Int) -> [UInt8] { [UInt8(value & 0xff), UInt8(value >> 8)] }
        return [needsChecksum ? UInt8(VIRTIO_NET_HDR_F_NEEDS_CSUM) : 0, gsoType] + le(54) + le(gsoSize) + le(checksumStart) + le(checksumOffset)
    }

    func testTheSegmentingReaderHandsTheLoopSegmentsAndCompletedChecksums() {
        let wire = EmbeddedWire(batchCapacity: 4, slots: 8, slotSize: 16_384)
        let counters = SegmentationCounters()
        let source = SegmentingSource(inner: wire, frameBytes: 1518, segmentSlots: 16, entries: 16, counters: counters)
        let loop = DirectionLoop(
            direction: .uplink, scheduler: PassThroughScheduler(), source: source, sink: wire, batch: SendBatch(capacity: 64, slotSize: 1518),
            clock: VirtualClock(wire: wire), waiter: wire)
        // A TCPv4 super-frame, as a stack with TSO hands it over (its checksum is computed afresh per segment).
        let big = superFrame(ipv6: false, payload: 10_000, flags: 0x18)
        wire.push(virtioHeader(needsChecksum: true, gsoType: UInt8(VIRTIO_NET_HDR_GSO_TCPV4), gsoSize: 1448, checksumStart: 34, checksumOffset: 16) + big)
        // A plain frame whose TCP checksum holds only the pseudo-header sum.
        var plain = superFrame(ipv6: false, payload: 333, flags: 0x18)
        plain[16] = UInt8((20 + 20 + 333) >> 8)
        plain[17] = UInt8((20 + 20 + 333) & 0xff)
        let tcpLength = 20 + 333
        let partial = ~checksum((Array(plain[26..<34]) + [0, 6, UInt8(tcpLength >> 8), UInt8(tcpLength & 0xff)])[...])
        plain[50] = UInt8(partial >> 8)
        plain[51] = UInt8(partial & 0xff)
        wire.push(virtioHeader(needsChecksum: true, gsoType: UInt8(VIRTIO_NET_HDR_GSO_NONE), gsoSize: 0, checksumStart: 34, checksumOffset: 16) + plain)
        // UDP fragmentation offload (UFO, long gone from senders), which the reader does not do: dropped and counted.
        wire.push(virtioHeader(needsChecksum: false, gsoType: UInt8(VIRTIO_NET_HDR_GSO_UDP), gsoSize: 1448, checksumStart: 0, checksumOffset: 0) + plain)
        // A super-frame needing more segments than a batch's slots: dropped and counted.
        wire.push(virtioHeader(needsChecksum: false, gsoType: UInt8(VIRTIO_NET_HDR_GSO_TCPV4), gsoSize: 500, checksumStart: 0, checksumOffset: 0) + big)
        XCTAssertFalse(loop.run())

        let sent = wire.sent.map(\.bytes)
        XCTAssertEqual(sent.count, 7 + 1)
        for (index, segment) in sent.prefix(7).enumerated() {
            XCTAssertLessThanOrEqual(segment.count, 14 + 1500, "segment \(index) is larger than the MTU")
            XCTAssertEqual(checksum(segment[14..<34]), 0, "IPv4 header checksum of segment \(index)")
            XCTAssertTrue(tcpChecksumVerifies(segment, ipv6: false), "TCP checksum of segment \(index)")
        }
        XCTAssertEqual(sent.prefix(7).flatMap { $0[54...] }, Array(big[54...]))
        XCTAssertEqual(Array(sent[7][..<50]) + sent[7][52...], Array(plain[..<50]) + plain[52...], "only the checksum may change")
        XCTAssertTrue(tcpChecksumVerifies(sent[7], ipv6: false), "the partial checksum was not completed")
        XCTAssertEqual(counters.superFrames.load(ordering: .relaxed), 1)
        XCTAssertEqual(counters.segments.load(ordering: .relaxed), 7)
        XCTAssertEqual(counters.checksumsCompleted.load(ordering: .relaxed), 1)
        XCTAssertEqual(counters.unsupported.load(ordering: .relaxed), 1)
        XCTAssertEqual(counters.overflows.load(ordering: .relaxed), 1)
        XCTAssertEqual(loop.statistics.received, 8)
        XCTAssertEqual(wire.referenceViolations, 0)
    }
}

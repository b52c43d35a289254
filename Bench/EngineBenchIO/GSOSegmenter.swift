import CPacket

/// The `struct virtio_net_hdr` that `PACKET_VNET_HDR` puts in front of every received frame: how the
/// sending stack left the frame (a partial checksum to complete, a GSO super-frame to cut into segments).
struct VirtioNetHeader {
    static let size = 10

    /// `VIRTIO_NET_HDR_F_NEEDS_CSUM`: the checksum at `checksumStart + checksumOffset` holds only the
    /// pseudo-header sum.
    var needsChecksum: Bool
    /// `VIRTIO_NET_HDR_GSO_*` without the ECN bit: 0 none, 1 TCPv4, 3 UDP, 4 TCPv6, 5 UDP_L4.
    var gsoType: UInt8
    /// `VIRTIO_NET_HDR_GSO_ECN`: the super-frame had CWR set (it goes on the first segment only).
    var ecn: Bool
    var gsoSize: Int
    var checksumStart: Int
    var checksumOffset: Int

    /// Reads the header (little-endian, as `PACKET_VNET_HDR` writes it on little-endian hosts).
    init(_ bytes: UnsafeRawBufferPointer) {
        func u16(_ offset: Int) -> Int { Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 }
        needsChecksum = bytes[0] & UInt8(VIRTIO_NET_HDR_F_NEEDS_CSUM) != 0
        gsoType = bytes[1] & ~UInt8(VIRTIO_NET_HDR_GSO_ECN)
        ecn = bytes[1] & UInt8(VIRTIO_NET_HDR_GSO_ECN) != 0
        gsoSize = u16(4)
        checksumStart = u16(6)
        checksumOffset = u16(8)
    }
}

/// What the kernel's software GSO and checksum helpers do, for frames read with `PACKET_VNET_HDR` (by
/// linkcond-bench's ``SegmentingSource``):
/// complete a partial checksum, and cut a TCP super-frame into MTU-sized segments with complete checksums
/// (so the model sees the frames a real link carries, and the receiver verifies every checksum).
enum GSOSegmenter {
    /// Completes the checksum of a frame whose stack left it partial (`skb_checksum_help`): the ones'
    /// complement sum from `start` to the end, folded into the field at `start + offset`. False when the
    /// offsets do not fit the frame.
    static func completeChecksum(_ frame: UnsafeMutableRawBufferPointer, start: Int, offset: Int) -> Bool {
        guard let base = frame.baseAddress, start + offset + 2 <= frame.count else { return false }
        let sum = cpk_checksum_add(base + start, frame.count - start, 0)
        var folded = cpk_checksum_finish(sum)
        // A UDP checksum of 0 means "none"; its ones' complement twin 0xffff is sent instead (RFC 768).
        if folded == 0 { folded = 0xffff }
        (base + start + offset).copyMemory(from: &folded, byteCount: 2)
        return true
    }

    /// Cuts a TCP GSO super-frame (`frame`: Ethernet, IPv4 or IPv6 without extension headers, TCP, payload)
    /// into segments of at most `segmentSize` payload bytes, as `tcp_gso_segment` does: sequence numbers
    /// advanced, FIN and PSH on the last segment only, CWR on the first only, IPv4 identifiers incremented,
    /// lengths and every checksum computed afresh. Each segment is written into a buffer from `slot` (of at
    /// least `slotSize` bytes) and handed to `emit`. Returns the number of segments, or nil when the frame is
    /// not a TCP super-frame this can cut (nothing is emitted then).
    static func segmentTCP(
        _ frame: UnsafeRawBufferPointer, segmentSize: Int, slotSize: Int, slot: () -> UnsafeMutableRawPointer,
        emit: (UnsafeMutableRawBufferPointer) -> Void
    ) -> Int? {
        // A segment's IP lengths are 16-bit fields: the IP packet must be at most 65,535 bytes (no BIG TCP).
        guard let base = frame.baseAddress, frame.count >= 14 + 20 + 20, frame.count - 14 <= 65_535, segmentSize > 0 else { return nil }
        let etherType = UInt16(frame[12]) << 8 | UInt16(frame[13])
        let ip = 14
        let isIPv4: Bool
        let ipHeaderLength: Int
        switch etherType {
        case 0x0800:
            ipHeaderLength = Int(frame[ip] & 0x0f) * 4
            guard frame[ip] >> 4 == 4, ipHeaderLength >= 20, frame[ip + 9] == 6 else { return nil }
            isIPv4 = true
        case 0x86dd:
            ipHeaderLength = 40
            guard frame.count >= ip + 40 + 20, frame[ip] >> 4 == 6, frame[ip + 6] == 6 else { return nil }
            isIPv4 = false
        default:
            return nil
        }
        let tcp = ip + ipHeaderLength
        guard frame.count >= tcp + 20 else { return nil }
        let tcpHeaderLength = Int(frame[tcp + 12] >> 4) * 4
        let headers = tcp + tcpHeaderLength
        guard tcpHeaderLength >= 20, frame.count > headers, headers + segmentSize <= slotSize else { return nil }
        let payload = frame.count - headers
        let sequence = UInt32(frame[tcp + 4]) << 24 | UInt32(frame[tcp + 5]) << 16 | UInt32(frame[tcp + 6]) << 8 | UInt32(frame[tcp + 7])
        let flags = frame[tcp + 13]
        let identifier = isIPv4 ? UInt16(frame[ip + 4]) << 8 | UInt16(frame[ip + 5]) : 0
        // The pseudo-header's addresses, summed once.
        let addressSum = isIPv4 ? cpk_checksum_add(base + ip + 12, 8, 0) : cpk_checksum_add(base + ip + 8, 32, 0)
        var offset = 0
        var count = 0
        while offset < payload {
            let length = min(segmentSize, payload - offset)
            let last = offset + length == payload
            let out = slot()
            out.copyMemory(from: base, byteCount: headers)
            (out + headers).copyMemory(from: base + headers + offset, byteCount: length)
            let segment = UnsafeMutableRawBufferPointer(start: out, count: headers + length)
            let transportLength = tcpHeaderLength + length
            if isIPv4 {
                store16(segment, ip + 2, UInt16(ipHeaderLength + transportLength))
                store16(segment, ip + 4, identifier &+ UInt16(truncatingIfNeeded: count))
                store16(segment, ip + 10, 0)
                var ipSum = cpk_checksum_finish(cpk_checksum_add(out + ip, ipHeaderLength, 0))
                (out + ip + 10).copyMemory(from: &ipSum, byteCount: 2)
            } else {
                store16(segment, ip + 4, UInt16(transportLength))
            }
            store32(segment, tcp + 4, sequence &+ UInt32(truncatingIfNeeded: offset))
            var segmentFlags = flags
            if !last { segmentFlags &= ~0x09 }  // FIN, PSH
            if count > 0 { segmentFlags &= ~0x80 }  // CWR
            segment[tcp + 13] = segmentFlags
            store16(segment, tcp + 16, 0)
            // Pseudo-header: addresses, protocol and TCP length, in network order, summed as bytes in memory.
            var tail: (UInt8, UInt8, UInt8, UInt8) = (0, 6, UInt8(transportLength >> 8), UInt8(transportLength & 0xff))
            let pseudo = withUnsafeBytes(of: &tail) { cpk_checksum_add($0.baseAddress, 4, addressSum) }
            var tcpSum = cpk_checksum_finish(cpk_checksum_add(out + tcp, transportLength, pseudo))
            (out + tcp + 16).copyMemory(from: &tcpSum, byteCount: 2)
            emit(segment)
            offset += length
            count += 1
        }
        return count
    }

    @inline(__always)
    private static func store16(_ buffer: UnsafeMutableRawBufferPointer, _ offset: Int, _ value: UInt16) {
        buffer[offset] = UInt8(value >> 8)
        buffer[offset + 1] = UInt8(value & 0xff)
    }

    @inline(__always)
    private static func store32(_ buffer: UnsafeMutableRawBufferPointer, _ offset: Int, _ value: UInt32) {
        buffer[offset] = UInt8(value >> 24)
        buffer[offset + 1] = UInt8((value >> 16) & 0xff)
        buffer[offset + 2] = UInt8((value >> 8) & 0xff)
        buffer[offset + 3] = UInt8(value & 0xff)
    }
}

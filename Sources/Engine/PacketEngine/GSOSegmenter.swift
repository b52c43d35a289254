import CPacket

/// The `struct virtio_net_hdr` that `PACKET_VNET_HDR` puts in front of every received frame: how the
/// sending stack left the frame (a partial checksum to complete, a GSO super-frame to cut into segments).
package struct VirtioNetHeader {
    package static let size = 10

    /// `VIRTIO_NET_HDR_F_NEEDS_CSUM`: the checksum at `checksumStart + checksumOffset` holds only the
    /// pseudo-header sum.
    var needsChecksum: Bool
    /// `VIRTIO_NET_HDR_GSO_*` without the ECN bit: 0 none, 1 TCPv4, 3 UDP (fragmentation), 4 TCPv6, 5 UDP_L4
    /// (``udpL4``: a UDP super-datagram of a socket with `UDP_SEGMENT`).
    var gsoType: UInt8
    /// `VIRTIO_NET_HDR_GSO_UDP_L4` (newer than this machine's uapi headers).
    static let udpL4: UInt8 = 5
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
/// ``SegmentingSource``): complete a partial checksum, and cut a TCP or UDP super-frame into MTU-sized
/// segments with complete checksums (so the model sees the frames a real link carries, and the receiver
/// verifies every checksum). Frames may carry up to two VLAN tags (put back by the reader).
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

    /// Where a frame's IP header starts, what it is and how long, for transport `protocolNumber`; nil when
    /// the frame is not IPv4 or IPv6 (without extension headers) carrying that protocol.
    private struct Layout {
        var ip: Int
        var isIPv4: Bool
        var ipHeaderLength: Int
        var transport: Int { ip + ipHeaderLength }

        init?(_ frame: UnsafeRawBufferPointer, protocolNumber: UInt8) {
            var ip = 14
            var etherType = frame.count >= 14 ? UInt16(frame[12]) << 8 | UInt16(frame[13]) : 0
            // 802.1Q, 802.1ad and the old QinQ TPID: up to two tags before the EtherType.
            for _ in 0..<2 where [0x8100, 0x88a8, 0x9100].contains(etherType) && frame.count >= ip + 4 {
                etherType = UInt16(frame[ip + 2]) << 8 | UInt16(frame[ip + 3])
                ip += 4
            }
            switch etherType {
            case 0x0800:
                guard frame.count >= ip + 20 else { return nil }
                ipHeaderLength = Int(frame[ip] & 0x0f) * 4
                guard frame[ip] >> 4 == 4, ipHeaderLength >= 20, frame[ip + 9] == protocolNumber else { return nil }
                isIPv4 = true
            case 0x86dd:
                ipHeaderLength = 40
                guard frame.count >= ip + 40, frame[ip] >> 4 == 6, frame[ip + 6] == protocolNumber else { return nil }
                isIPv4 = false
            default:
                return nil
            }
            self.ip = ip
            // A segment's IP lengths are 16-bit fields: the IP packet must be at most 65,535 bytes (no BIG TCP).
            guard frame.count - ip <= 65_535 + (isIPv4 ? 0 : 40) else { return nil }
        }
    }

    /// Cuts a TCP GSO super-frame (`frame`: Ethernet with up to two VLAN tags, IPv4 or IPv6 without extension
    /// headers, TCP, payload) into segments of at most `segmentSize` payload bytes, as `tcp_gso_segment`
    /// does: sequence numbers advanced, FIN and PSH on the last segment only, CWR on the first only, IPv4
    /// identifiers incremented, lengths and every checksum computed afresh. Each segment is written into a
    /// buffer from `slot` (of at least `slotSize` bytes) and handed to `emit`. Returns the number of
    /// segments, or nil when the frame is not a TCP super-frame this can cut (nothing is emitted then).
    static func segmentTCP(
        _ frame: UnsafeRawBufferPointer, segmentSize: Int, slotSize: Int, slot: () -> UnsafeMutableRawPointer,
        emit: (UnsafeMutableRawBufferPointer) -> Void
    ) -> Int? {
        guard segmentSize > 0, let layout = Layout(frame, protocolNumber: 6) else { return nil }
        let tcp = layout.transport
        guard frame.count >= tcp + 20 else { return nil }
        let tcpHeaderLength = Int(frame[tcp + 12] >> 4) * 4
        let headers = tcp + tcpHeaderLength
        guard tcpHeaderLength >= 20, frame.count > headers, headers + segmentSize <= slotSize else { return nil }
        let sequence = UInt32(frame[tcp + 4]) << 24 | UInt32(frame[tcp + 5]) << 16 | UInt32(frame[tcp + 6]) << 8 | UInt32(frame[tcp + 7])
        let flags = frame[tcp + 13]
        return cut(frame, layout, headers: headers, segmentSize: segmentSize, slot: slot, emit: emit) { segment, offset, index, last in
            store32(segment, tcp + 4, sequence &+ UInt32(truncatingIfNeeded: offset))
            var segmentFlags = flags
            if !last { segmentFlags &= ~0x09 }  // FIN, PSH
            if index > 0 { segmentFlags &= ~0x80 }  // CWR
            segment[tcp + 13] = segmentFlags
            return (checksumAt: tcp + 16, protocolNumber: 6)
        }
    }

    /// Cuts a UDP GSO super-datagram (`VIRTIO_NET_HDR_GSO_UDP_L4`: a socket's `UDP_SEGMENT` writes, as QUIC
    /// stacks send them) into datagrams of `segmentSize` payload bytes each, the last one shorter, as
    /// `__udp_gso_segment` does: each with its own UDP length and checksum, IPv4 identifiers incremented.
    /// Returns the number of datagrams, or nil when the frame is not one this can cut.
    static func segmentUDP(
        _ frame: UnsafeRawBufferPointer, segmentSize: Int, slotSize: Int, slot: () -> UnsafeMutableRawPointer,
        emit: (UnsafeMutableRawBufferPointer) -> Void
    ) -> Int? {
        guard segmentSize > 0, let layout = Layout(frame, protocolNumber: 17) else { return nil }
        let udp = layout.transport
        let headers = udp + 8
        guard frame.count > headers, headers + segmentSize <= slotSize else { return nil }
        return cut(frame, layout, headers: headers, segmentSize: segmentSize, slot: slot, emit: emit) { segment, _, _, _ in
            store16(segment, udp + 4, UInt16(segment.count - udp))
            return (checksumAt: udp + 6, protocolNumber: 17)
        }
    }

    /// The common part: copies the headers and each slice of the payload into a slot, fixes the IP lengths
    /// (and IPv4's identifier and checksum), lets `fix` set the transport header's own fields (it returns
    /// where the transport checksum goes), computes that checksum over the pseudo-header, emits.
    private static func cut(
        _ frame: UnsafeRawBufferPointer, _ layout: Layout, headers: Int, segmentSize: Int, slot: () -> UnsafeMutableRawPointer,
        emit: (UnsafeMutableRawBufferPointer) -> Void,
        fix: (UnsafeMutableRawBufferPointer, _ offset: Int, _ index: Int, _ last: Bool) -> (checksumAt: Int, protocolNumber: UInt8)
    ) -> Int {
        let base = frame.baseAddress!
        let ip = layout.ip
        let payload = frame.count - headers
        let identifier = layout.isIPv4 ? UInt16(frame[ip + 4]) << 8 | UInt16(frame[ip + 5]) : 0
        // The pseudo-header's addresses, summed once.
        let addressSum = layout.isIPv4 ? cpk_checksum_add(base + ip + 12, 8, 0) : cpk_checksum_add(base + ip + 8, 32, 0)
        var offset = 0
        var count = 0
        while offset < payload {
            let length = min(segmentSize, payload - offset)
            let out = slot()
            out.copyMemory(from: base, byteCount: headers)
            (out + headers).copyMemory(from: base + headers + offset, byteCount: length)
            let segment = UnsafeMutableRawBufferPointer(start: out, count: headers + length)
            let transportLength = headers + length - layout.transport
            if layout.isIPv4 {
                store16(segment, ip + 2, UInt16(layout.ipHeaderLength + transportLength))
                store16(segment, ip + 4, identifier &+ UInt16(truncatingIfNeeded: count))
                store16(segment, ip + 10, 0)
                var ipSum = cpk_checksum_finish(cpk_checksum_add(out + ip, layout.ipHeaderLength, 0))
                (out + ip + 10).copyMemory(from: &ipSum, byteCount: 2)
            } else {
                store16(segment, ip + 4, UInt16(transportLength))
            }
            let (checksumAt, protocolNumber) = fix(segment, offset, count, offset + length == payload)
            store16(segment, checksumAt, 0)
            // Pseudo-header: addresses, protocol and transport length, in network order, summed as bytes in memory.
            var tail: (UInt8, UInt8, UInt8, UInt8) = (0, protocolNumber, UInt8(transportLength >> 8), UInt8(transportLength & 0xff))
            let pseudo = withUnsafeBytes(of: &tail) { cpk_checksum_add($0.baseAddress, 4, addressSum) }
            var sum = cpk_checksum_finish(cpk_checksum_add(out + layout.transport, transportLength, pseudo))
            if sum == 0 && protocolNumber == 17 { sum = 0xffff }  // UDP: 0 would mean "no checksum"
            (out + checksumAt).copyMemory(from: &sum, byteCount: 2)
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

/// What the model needs to know about an Ethernet frame, read from its bytes without ever reading past
/// the buffer: where the IP header and the transport segment are, the addresses, the protocol, the ports.
///
/// Understood: Ethernet II with up to two 802.1Q/802.1ad VLAN tags, IPv4 (options skipped), IPv6 with the
/// hop-by-hop, routing, destination-options, fragment and AH extension headers skipped. A non-first
/// fragment has no ports. Anything malformed or truncated is "not IP" (or IP without ports), never an
/// error.
struct FrameHeaders {
    /// 4 or 6; 0 when the frame is not (well-formed) IP.
    var ipVersion: UInt8 = 0
    /// Where the IP header starts (after the Ethernet header and any VLAN tags).
    var networkOffset = 0
    /// The transport protocol (IPv4 protocol, or IPv6's last next header); 0 when unknown.
    var transportProtocol: UInt8 = 0
    /// Where the bytes after the IP header(s) start.
    var transportOffset = 0
    /// Where the IP packet ends: its length field, cut to the buffer (Ethernet padding excluded).
    var packetEnd = 0
    /// Whether ``sourcePort`` and ``destinationPort`` were read (TCP or UDP, first fragment, 4 bytes there).
    var hasPorts = false
    /// The TCP or UDP source port.
    var sourcePort: UInt16 = 0
    /// The TCP or UDP destination port.
    var destinationPort: UInt16 = 0
    /// The source address: IPv6's first 64 bits (0 for IPv4).
    var sourceHigh: UInt64 = 0
    /// The source address: IPv6's last 64 bits, or the IPv4 address in the low 32 bits.
    var sourceLow: UInt64 = 0
    /// The destination address, as ``sourceHigh``.
    var destinationHigh: UInt64 = 0
    /// The destination address, as ``sourceLow``.
    var destinationLow: UInt64 = 0

    /// The size of the Ethernet header including VLAN tags; 0 for a frame too short to have one.
    var linkHeaderLength = 0

    /// IP protocol numbers.
    static let tcp: UInt8 = 6
    static let udp: UInt8 = 17
    static let icmp: UInt8 = 1
    static let icmpv6: UInt8 = 58

    /// Whether the frame is IP.
    var isIP: Bool { ipVersion != 0 }

    /// Whether the frame is a DNS query: UDP or TCP to port 53.
    var isDNSQuery: Bool {
        hasPorts && destinationPort == 53 && (transportProtocol == Self.udp || transportProtocol == Self.tcp)
    }

    /// Reads `frame`.
    @inline(__always)
    init(_ frame: UnsafeRawBufferPointer) {
        let count = frame.count
        guard count >= 14 else { return }
        var offset = 12
        var etherType = frame.loadBigEndianUInt16(at: offset)
        var tags = 0
        while etherType == 0x8100 || etherType == 0x88A8 || etherType == 0x9100, tags < 2 {
            guard offset + 6 <= count else {
                linkHeaderLength = count
                return
            }
            offset += 4
            etherType = frame.loadBigEndianUInt16(at: offset)
            tags += 1
        }
        linkHeaderLength = offset + 2
        switch etherType {
        case 0x0800: readIPv4(frame, at: linkHeaderLength)
        case 0x86DD: readIPv6(frame, at: linkHeaderLength)
        default: break
        }
    }

    @inline(__always)
    private mutating func readIPv4(_ frame: UnsafeRawBufferPointer, at start: Int) {
        guard start + 20 <= frame.count else { return }
        let versionAndLength = frame[start]
        let headerLength = Int(versionAndLength & 0x0F) * 4
        guard versionAndLength >> 4 == 4, headerLength >= 20, start + headerLength <= frame.count else { return }
        let totalLength = Int(frame.loadBigEndianUInt16(at: start + 2))
        guard totalLength >= headerLength else { return }
        ipVersion = 4
        networkOffset = start
        transportOffset = start + headerLength
        packetEnd = min(start + totalLength, frame.count)
        transportProtocol = frame[start + 9]
        sourceLow = UInt64(frame.loadBigEndianUInt32(at: start + 12))
        destinationLow = UInt64(frame.loadBigEndianUInt32(at: start + 16))
        let fragmentOffset = frame.loadBigEndianUInt16(at: start + 6) & 0x1FFF
        readPorts(frame, firstFragment: fragmentOffset == 0)
    }

    private mutating func readIPv6(_ frame: UnsafeRawBufferPointer, at start: Int) {
        guard start + 40 <= frame.count, frame[start] >> 4 == 6 else { return }
        let payloadLength = Int(frame.loadBigEndianUInt16(at: start + 4))
        ipVersion = 6
        networkOffset = start
        // A payload length of 0 is a jumbogram (or a lie): the buffer's end is the best bound.
        packetEnd = payloadLength == 0 ? frame.count : min(start + 40 + payloadLength, frame.count)
        sourceHigh = frame.loadBigEndianUInt64(at: start + 8)
        sourceLow = frame.loadBigEndianUInt64(at: start + 16)
        destinationHigh = frame.loadBigEndianUInt64(at: start + 24)
        destinationLow = frame.loadBigEndianUInt64(at: start + 32)
        var nextHeader = frame[start + 6]
        var offset = start + 40
        var firstFragment = true
        // Skip the common extension headers; a bounded loop, so a crafted chain cannot spin.
        for _ in 0..<8 {
            let headerLength: Int
            switch nextHeader {
            case 0, 43, 60:  // hop-by-hop, routing, destination options: (length + 1) * 8
                guard offset + 2 <= packetEnd else { return markTruncated(at: offset) }
                headerLength = (Int(frame[offset + 1]) + 1) * 8
            case 44:  // fragment: 8 bytes
                guard offset + 8 <= packetEnd else { return markTruncated(at: offset) }
                headerLength = 8
                if frame.loadBigEndianUInt16(at: offset + 2) & 0xFFF8 != 0 { firstFragment = false }
            case 51:  // authentication header: (length + 2) * 4
                guard offset + 2 <= packetEnd else { return markTruncated(at: offset) }
                headerLength = (Int(frame[offset + 1]) + 2) * 4
            default:
                transportProtocol = nextHeader
                transportOffset = offset
                readPorts(frame, firstFragment: firstFragment)
                return
            }
            guard offset + headerLength <= packetEnd else { return markTruncated(at: offset) }
            nextHeader = frame[offset]
            offset += headerLength
        }
        markTruncated(at: offset)
    }

    /// An IPv6 header chain that could not be followed: the transport is unknown and has no ports.
    private mutating func markTruncated(at offset: Int) {
        transportProtocol = 0
        transportOffset = min(offset, packetEnd)
    }

    @inline(__always)
    private mutating func readPorts(_ frame: UnsafeRawBufferPointer, firstFragment: Bool) {
        guard firstFragment, transportProtocol == Self.tcp || transportProtocol == Self.udp,
            transportOffset + 4 <= packetEnd
        else { return }
        hasPorts = true
        sourcePort = frame.loadBigEndianUInt16(at: transportOffset)
        destinationPort = frame.loadBigEndianUInt16(at: transportOffset + 2)
    }
}

extension UnsafeRawBufferPointer {
    /// The big-endian 16-bit value at `offset`; the caller has checked the bounds.
    @inline(__always)
    func loadBigEndianUInt16(at offset: Int) -> UInt16 {
        UInt16(bigEndian: loadUnaligned(fromByteOffset: offset, as: UInt16.self))
    }

    /// The big-endian 32-bit value at `offset`; the caller has checked the bounds.
    @inline(__always)
    func loadBigEndianUInt32(at offset: Int) -> UInt32 {
        UInt32(bigEndian: loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    /// The big-endian 64-bit value at `offset`; the caller has checked the bounds.
    @inline(__always)
    func loadBigEndianUInt64(at offset: Int) -> UInt64 {
        UInt64(bigEndian: loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }
}

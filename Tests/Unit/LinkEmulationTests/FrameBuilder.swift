/// Builds Ethernet frames byte by byte for the tests, with correct IPv4 header checksums and TCP/UDP/ICMP
/// checksums, so a test can check what a receiver would see. Written from the RFCs (791, 8200, 768, 793,
/// 1071), independently of the model's parser.
enum FrameBuilder {
    /// An IP address for building frames.
    enum Address {
        case v4(UInt8, UInt8, UInt8, UInt8)
        case v6([UInt16])

        var bytes: [UInt8] {
            switch self {
            case let .v4(a, b, c, d): [a, b, c, d]
            case let .v6(words): words.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
            }
        }

        var isV6: Bool { if case .v6 = self { true } else { false } }
    }

    /// An IPv6 extension header to put before the transport header.
    enum Extension {
        case hopByHop
        case destinationOptions
        case fragment(offset: UInt16, more: Bool)
    }

    static let client = Address.v4(198, 18, 0, 2)
    static let server = Address.v4(198, 18, 2, 7)
    static let client6 = Address.v6([0x2001, 2, 0, 0, 0, 0, 0, 2])
    static let server6 = Address.v6([0x2001, 2, 0, 2, 0, 0, 0, 7])

    /// A frame of `protocol` (6 TCP, 17 UDP, 1 ICMP, 58 ICMPv6) from `source` to `destination`, with a
    /// payload of `payload` bytes whose last 8 bytes (when there are 8) carry `id`.
    static func frame(
        protocol proto: UInt8, from source: Address = client, to destination: Address = server, sourcePort: UInt16 = 40000,
        destinationPort: UInt16 = 80, payload: Int = 64, id: UInt64 = 0, ecn: UInt8 = 0, vlanTags: Int = 0,
        extensions: [Extension] = [], padTo minimumLength: Int = 0
    ) -> [UInt8] {
        var body = [UInt8](repeating: 0, count: payload)
        for index in 0..<payload { body[index] = UInt8(truncatingIfNeeded: index &* 31 &+ 7) }
        if payload >= 8 { withUnsafeBytes(of: id.bigEndian) { body.replaceSubrange((payload - 8)..<payload, with: $0) } }
        var transport: [UInt8]
        switch proto {
        case 6:
            transport = be16(sourcePort) + be16(destinationPort) + be32(1000) + be32(0) + [0x50, 0x18] + be16(65535)
                + [0, 0, 0, 0] + body
        case 17:
            transport = be16(sourcePort) + be16(destinationPort) + be16(UInt16(8 + payload)) + [0, 0] + body
        default:
            transport = [8, 0, 0, 0, 0, 1, 0, 1] + body  // echo request
        }
        let checksumOffset: Int? =
            switch proto {
            case 6: 16
            case 17: 6
            case 1, 58: 2
            default: nil
            }
        if let checksumOffset {
            var pseudo: [UInt8] = []
            if proto != 1 {
                pseudo = source.bytes + destination.bytes
                pseudo += source.isV6 ? be32(UInt32(transport.count)) + [0, 0, 0, proto] : [0, proto] + be16(UInt16(transport.count))
            }
            var checksum = ~onesComplementSum(pseudo + transport)
            if proto == 17 && checksum == 0 { checksum = 0xFFFF }
            transport[checksumOffset] = UInt8(checksum >> 8)
            transport[checksumOffset + 1] = UInt8(checksum & 0xFF)
        }
        var network: [UInt8]
        if case .v6 = source {
            var chain: [UInt8] = []
            var next = proto
            for header in extensions.reversed() {
                switch header {
                case .hopByHop: chain = [next, 0, 1, 4, 0, 0, 0, 0] + chain
                case .destinationOptions: chain = [next, 1, 1, 12] + [UInt8](repeating: 0, count: 12) + chain
                case let .fragment(offset, more):
                    chain = [next, 0] + be16(offset << 3 | (more ? 1 : 0)) + be32(0x1234) + chain
                }
                next =
                    switch header {
                    case .hopByHop: 0
                    case .destinationOptions: 60
                    case .fragment: 44
                    }
            }
            let payloadLength = UInt16(chain.count + transport.count)
            network = [0x60 | 0, ecn << 4, 0, 0] + be16(payloadLength) + [next, 64] + source.bytes + destination.bytes
            network += chain + transport
        } else {
            let totalLength = UInt16(20 + transport.count)
            var header = [0x45, ecn] + be16(totalLength) + be16(0x1234) + [0x40, 0, 64, proto, 0, 0]
            header += source.bytes + destination.bytes
            let checksum = ~onesComplementSum(header)
            header[10] = UInt8(checksum >> 8)
            header[11] = UInt8(checksum & 0xFF)
            network = header + transport
        }
        let etherType: UInt16 = source.isV6 ? 0x86DD : 0x0800
        return ethernet(etherType: etherType, payload: network, vlanTags: vlanTags, padTo: minimumLength)
    }

    /// An Ethernet frame around `payload`.
    static func ethernet(etherType: UInt16, payload: [UInt8], vlanTags: Int = 0, padTo minimumLength: Int = 0) -> [UInt8] {
        var frame: [UInt8] = [0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2]
        for tag in 0..<vlanTags { frame += be16(tag == 0 && vlanTags == 2 ? 0x88A8 : 0x8100) + be16(100 + UInt16(tag)) }
        frame += be16(etherType) + payload
        if frame.count < minimumLength { frame += [UInt8](repeating: 0, count: minimumLength - frame.count) }
        return frame
    }

    /// An ARP request (not IP) of `length` bytes (padded), carrying `id` in its last 8 bytes.
    static func arp(length: Int = 60, id: UInt64 = 0) -> [UInt8] {
        var payload: [UInt8] = [0, 1, 8, 0, 6, 4, 0, 1] + [UInt8](repeating: 0xAB, count: 20)
        payload += [UInt8](repeating: 0, count: max(0, length - 14 - payload.count))
        var frame = ethernet(etherType: 0x0806, payload: payload)
        withUnsafeBytes(of: id.bigEndian) { frame.replaceSubrange((frame.count - 8)..<frame.count, with: $0) }
        return frame
    }

    /// The id in the last 8 bytes of a frame built here.
    static func id(of frame: [UInt8]) -> UInt64 {
        frame.suffix(8).reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// The one's-complement sum of 16-bit words (RFC 1071), folded; an odd byte is padded with zero.
    static func onesComplementSum(_ bytes: [UInt8]) -> UInt16 {
        var sum: UInt32 = 0
        var index = 0
        while index + 1 < bytes.count {
            sum += UInt32(bytes[index]) << 8 | UInt32(bytes[index + 1])
            index += 2
        }
        if index < bytes.count { sum += UInt32(bytes[index]) << 8 }
        while sum > 0xFFFF { sum = (sum & 0xFFFF) + (sum >> 16) }
        return UInt16(sum)
    }

    /// Whether the frame's IPv4 header checksum verifies (the sum over the header is 0xFFFF).
    static func ipv4HeaderChecksumIsValid(_ frame: [UInt8], networkOffset: Int = 14) -> Bool {
        let headerLength = Int(frame[networkOffset] & 0x0F) * 4
        return onesComplementSum(Array(frame[networkOffset..<(networkOffset + headerLength)])) == 0xFFFF
    }

    /// Whether a receiver would accept the transport checksum of a frame built here; with IPv6 extension
    /// headers, pass their total length and the transport protocol.
    static func transportChecksumIsValid(
        _ frame: [UInt8], networkOffset: Int = 14, extensionBytes: Int = 0, transportProtocol: UInt8? = nil
    ) -> Bool {
        let isV6 = frame[networkOffset] >> 4 == 6
        let proto: UInt8
        let source: [UInt8]
        let destination: [UInt8]
        let start: Int
        let end: Int
        if isV6 {
            start = networkOffset + 40 + extensionBytes
            end = networkOffset + 40 + Int(frame[networkOffset + 4]) << 8 + Int(frame[networkOffset + 5])
            source = Array(frame[(networkOffset + 8)..<(networkOffset + 24)])
            destination = Array(frame[(networkOffset + 24)..<(networkOffset + 40)])
            proto = transportProtocol ?? frame[networkOffset + 6]
        } else {
            start = networkOffset + Int(frame[networkOffset] & 0x0F) * 4
            end = networkOffset + Int(frame[networkOffset + 2]) << 8 + Int(frame[networkOffset + 3])
            source = Array(frame[(networkOffset + 12)..<(networkOffset + 16)])
            destination = Array(frame[(networkOffset + 16)..<(networkOffset + 20)])
            proto = transportProtocol ?? frame[networkOffset + 9]
        }
        let segment = Array(frame[start..<end])
        var pseudo: [UInt8] = []
        if proto != 1 {
            pseudo = source + destination
            pseudo += isV6 ? be32(UInt32(segment.count)) + [0, 0, 0, proto] : [0, proto] + be16(UInt16(segment.count))
        }
        return onesComplementSum(pseudo + segment) == 0xFFFF
    }

    static func be16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }
    static func be32(_ value: UInt32) -> [UInt8] { be16(UInt16(value >> 16)) + be16(UInt16(value & 0xFFFF)) }
}

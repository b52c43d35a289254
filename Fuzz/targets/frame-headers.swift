// libFuzzer target: the engine model's frame classifier (LinkEmulation.FrameHeaders): Ethernet with up
// to two VLAN tags, IPv4 (options), IPv6 (extension headers), TCP and UDP ports, DNS queries. The frame is
// the fuzzer's own buffer, exactly as long as the input, so AddressSanitizer catches any read past it.
// Every offset found lies inside the frame and in order; what was read agrees with an independent reading
// of the same bytes; the bytes a corruption may hit lie inside the frame.
@testable import LinkEmulation

func byte(_ frame: UnsafeRawBufferPointer, _ offset: Int) -> Int { Int(frame[offset]) }
func word(_ frame: UnsafeRawBufferPointer, _ offset: Int) -> Int { byte(frame, offset) << 8 | byte(frame, offset + 1) }

func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFrameHeaders(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let frame = UnsafeRawBufferPointer(start: data, count: size)
    let headers = FrameHeaders(frame)
    let count = frame.count
    check(headers.linkHeaderLength <= count, "link header \(headers.linkHeaderLength) past \(count)")
    // The link header, read again: Ethernet II, then up to two 802.1Q/802.1ad tags.
    var etherType = -1
    var linkLength = 0
    if count >= 14 {
        var offset = 12
        var tags = 0
        etherType = word(frame, offset)
        while [0x8100, 0x88A8, 0x9100].contains(etherType), tags < 2, offset + 6 <= count {
            offset += 4
            etherType = word(frame, offset)
            tags += 1
        }
        linkLength = offset + 2
        check(headers.linkHeaderLength == linkLength || headers.linkHeaderLength == count, "link header \(headers.linkHeaderLength), expected \(linkLength)")
    }
    if headers.isIP {
        check(headers.networkOffset == headers.linkHeaderLength, "IP at \(headers.networkOffset) after a link header of \(headers.linkHeaderLength)")
        check(headers.networkOffset <= headers.transportOffset, "transport at \(headers.transportOffset) before IP at \(headers.networkOffset)")
        check(headers.transportOffset <= headers.packetEnd, "transport at \(headers.transportOffset) past the packet's end \(headers.packetEnd)")
        check(headers.packetEnd <= count, "packet end \(headers.packetEnd) past \(count)")
        let ip = headers.networkOffset
        switch headers.ipVersion {
        case 4:
            check(etherType == 0x0800, "IPv4 in ethertype \(etherType)")
            check(frame[ip] >> 4 == 4, "IPv4 without version 4")
            let headerLength = Int(frame[ip] & 0x0f) * 4
            check(headers.transportOffset == ip + headerLength, "IPv4 transport at \(headers.transportOffset), header of \(headerLength)")
            check(headers.packetEnd == min(ip + word(frame, ip + 2), count), "IPv4 packet end \(headers.packetEnd)")
            check(headers.transportProtocol == frame[ip + 9], "IPv4 protocol")
            check(headers.sourceLow == UInt64(word(frame, ip + 12) << 16 | word(frame, ip + 14)), "IPv4 source")
            check(headers.destinationLow == UInt64(word(frame, ip + 16) << 16 | word(frame, ip + 18)), "IPv4 destination")
        case 6:
            check(etherType == 0x86DD, "IPv6 in ethertype \(etherType)")
            check(frame[ip] >> 4 == 6 && ip + 40 <= count, "IPv6 without version 6 or a whole header")
            check(headers.transportOffset == 0 || headers.transportOffset >= ip + 40, "IPv6 transport inside the fixed header")
        default:
            check(false, "IP version \(headers.ipVersion)")
        }
    } else {
        check(!headers.hasPorts && headers.transportProtocol == 0, "ports or a protocol without IP")
    }
    if headers.hasPorts {
        check(headers.transportProtocol == FrameHeaders.tcp || headers.transportProtocol == FrameHeaders.udp, "ports of protocol \(headers.transportProtocol)")
        check(headers.transportOffset + 4 <= headers.packetEnd, "ports past the packet's end")
        check(Int(headers.sourcePort) == word(frame, headers.transportOffset), "source port")
        check(Int(headers.destinationPort) == word(frame, headers.transportOffset + 2), "destination port")
    }
    check(headers.isDNSQuery == (headers.hasPorts && headers.destinationPort == 53), "DNS query \(headers.isDNSQuery) to port \(headers.destinationPort)")
    let range = FrameEdits.corruptibleRange(count, headers)
    check(range.lowerBound >= 0 && range.upperBound <= count, "corruptible range \(range) outside \(count) bytes")
    if !range.isEmpty {
        _ = frame[range.lowerBound]
        _ = frame[range.upperBound - 1]
    }
    return 0
}

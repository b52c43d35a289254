// libFuzzer target: the engine's software GSO (PacketEngine.GSOSegmenter): completing a partial
// checksum and cutting a TCP super-frame into segments. Input: segment size, slot size, checksum start and
// checksum offset (16 bits each, big-endian), then the frame, copied into a buffer of exactly its size;
// each segment is built in a slot of exactly the slot size (AddressSanitizer catches a write past either).
// A completed checksum verifies against the partial sum it replaced; every segment fits its slot, has a
// valid IPv4 header checksum and TCP checksum, and the segments' payloads are the super-frame's, in order.
@testable import PacketEngine

func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}

/// The ones' complement sum of big-endian 16-bit words of `bytes`, unfolded.
func sum(_ bytes: some Collection<UInt8>, _ initial: UInt32 = 0) -> UInt32 {
    var total = initial
    var high: UInt8?
    for byte in bytes {
        if let first = high {
            total += UInt32(first) << 8 | UInt32(byte)
            high = nil
        } else {
            high = byte
        }
    }
    if let first = high { total += UInt32(first) << 8 }
    return total
}

func fold(_ value: UInt32) -> UInt16 {
    var total = value
    while total >> 16 != 0 { total = (total & 0xffff) + (total >> 16) }
    return UInt16(total)
}

func word(_ bytes: [UInt8], _ offset: Int) -> Int { Int(bytes[offset]) << 8 | Int(bytes[offset + 1]) }

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGSOSegmenter(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 8 else { return 0 }
    let segmentSize = Int(data[0]) << 8 | Int(data[1])
    let slotSize = Int(data[2]) << 8 | Int(data[3])
    let checksumStart = Int(data[4]) << 8 | Int(data[5])
    let checksumOffset = Int(data[6]) << 8 | Int(data[7])
    let count = size - 8
    let frame = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 1)
    defer { frame.deallocate() }
    if count > 0 { frame.copyMemory(from: UnsafeRawBufferPointer(start: data + 8, count: count)) }
    let original = Array(frame)

    // Cutting, on the frame as it came.
    let slot = UnsafeMutableRawPointer.allocate(byteCount: max(slotSize, 1), alignment: 1)
    defer { slot.deallocate() }
    var segments: [[UInt8]] = []
    let cut = GSOSegmenter.segmentTCP(
        UnsafeRawBufferPointer(frame), segmentSize: segmentSize, slotSize: slotSize, slot: { slot },
        emit: { segment in
            check(segment.baseAddress == slot && segment.count <= slotSize, "a segment of \(segment.count) bytes outside its slot of \(slotSize)")
            segments.append(Array(segment))
        })
    check(Array(frame) == original, "cutting changed the super-frame")
    if let cut {
        check(cut == segments.count && cut > 0, "\(cut) segments reported, \(segments.count) emitted")
        // Up to two VLAN tags (802.1Q, 802.1ad, the old QinQ TPID) before the EtherType, as the segmenter reads.
        var ip = 14
        var etherType = word(original, 12)
        while ip < 22, [0x8100, 0x88a8, 0x9100].contains(etherType) {
            etherType = word(original, ip + 2)
            ip += 4
        }
        let ipv4 = etherType == 0x0800
        let ipHeader = ipv4 ? Int(original[ip] & 0x0f) * 4 : 40
        let tcp = ip + ipHeader
        let headers = tcp + Int(original[tcp + 12] >> 4) * 4
        var payload: [UInt8] = []
        for (index, segment) in segments.enumerated() {
            check(segment.count > headers && segment.count - headers <= segmentSize, "segment \(index): \(segment.count) bytes")
            if ipv4 {
                check(fold(sum(segment[ip..<tcp])) == 0xffff, "segment \(index): IPv4 header checksum")
                check(word(segment, ip + 2) == segment.count - ip, "segment \(index): IPv4 total length")
            } else {
                check(word(segment, ip + 4) == segment.count - tcp, "segment \(index): IPv6 payload length")
            }
            let addresses = ipv4 ? segment[(ip + 12)..<(ip + 20)] : segment[(ip + 8)..<(ip + 40)]
            let pseudo = sum(addresses) + 6 + UInt32(segment.count - tcp)
            check(fold(sum(segment[tcp...], pseudo)) == 0xffff, "segment \(index): TCP checksum")
            payload += segment[headers...]
        }
        check(payload == Array(original[headers...]), "the segments' payloads are not the super-frame's")
    } else {
        check(segments.isEmpty, "\(segments.count) segments emitted for a refused frame")
    }

    // Completing a partial checksum (even offsets: a checksum field is 16-bit aligned in its header).
    let completed = GSOSegmenter.completeChecksum(frame, start: checksumStart, offset: checksumOffset)
    check(completed == (checksumStart + checksumOffset + 2 <= count), "completion \(completed) for \(checksumStart)+\(checksumOffset) in \(count)")
    if completed {
        let field = checksumStart + checksumOffset
        let changed = (0..<count).filter { frame[$0] != original[$0] }
        check(changed.allSatisfy { $0 == field || $0 == field + 1 }, "bytes \(changed) changed, not only the checksum field")
        if checksumOffset % 2 == 0 {
            let partial = UInt32(word(original, field))
            check(fold(sum(Array(frame[checksumStart...]), partial)) == 0xffff, "the completed checksum does not verify with the partial sum")
        }
    }
    return 0
}

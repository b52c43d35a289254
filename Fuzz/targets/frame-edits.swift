// libFuzzer target: the engine model's frame edits (LinkEmulation.FrameEdits): the ECN Congestion
// Experienced mark with its incremental IPv4 header checksum update (RFC 1624), and the flipped bit of a
// corruption. The first 8 input bytes seed the random bit; the rest is the frame, copied into a buffer of
// exactly its size (AddressSanitizer catches any access past it). A mark changes only the ECN bits (and
// the IPv4 checksum), keeps a valid IPv4 header checksum valid, and is refused only for Not-ECT frames;
// a corruption flips exactly one bit, inside the corruptible range.
@testable import LinkEmulation

func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}

/// The ones' complement sum of 16-bit big-endian words, folded (0xffff for a valid header).
func onesComplementSum(_ bytes: UnsafeMutableRawBufferPointer, _ range: Range<Int>) -> UInt16 {
    var sum: UInt32 = 0
    var index = range.lowerBound
    while index + 1 < range.upperBound {
        sum += UInt32(bytes[index]) << 8 | UInt32(bytes[index + 1])
        index += 2
    }
    if index < range.upperBound { sum += UInt32(bytes[index]) << 8 }
    while sum >> 16 != 0 { sum = (sum & 0xffff) + (sum >> 16) }
    return UInt16(sum)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFrameEdits(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 8 else { return 0 }
    var seed: UInt64 = 0
    for index in 0..<8 { seed = seed << 8 | UInt64(data[index]) }
    let count = size - 8
    let frame = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 1)
    defer { frame.deallocate() }
    if count > 0 { frame.copyMemory(from: UnsafeRawBufferPointer(start: data + 8, count: count)) }
    let original = Array(frame)
    let headers = FrameHeaders(UnsafeRawBufferPointer(frame))

    // The ECN mark.
    let marked = FrameEdits.markCongestionExperienced(frame, headers)
    let ip = headers.networkOffset
    switch headers.ipVersion {
    case 4:
        let ecn = original[ip + 1] & 0b11
        check(marked == (ecn != 0), "IPv4 ECN \(ecn): marked \(marked)")
        let headerLength = Int(original[ip] & 0x0f) * 4
        let changed = (0..<count).filter { frame[$0] != original[$0] }
        check(changed.allSatisfy { [ip + 1, ip + 10, ip + 11].contains($0) }, "bytes \(changed) changed, not only TOS and checksum")
        if marked { check(frame[ip + 1] & 0b11 == 0b11, "IPv4 not CE after the mark") }
        let before = original.withUnsafeBytes { bytes in
            let copy = UnsafeMutableRawBufferPointer(mutating: bytes)
            return onesComplementSum(copy, ip..<(ip + headerLength))
        }
        if before == 0xffff {
            check(onesComplementSum(frame, ip..<(ip + headerLength)) == 0xffff, "a valid IPv4 header checksum is invalid after the mark")
        }
    case 6:
        let ecn = (original[ip + 1] >> 4) & 0b11
        check(marked == (ecn != 0), "IPv6 ECN \(ecn): marked \(marked)")
        let changed = (0..<count).filter { frame[$0] != original[$0] }
        check(changed.allSatisfy { $0 == ip + 1 }, "bytes \(changed) changed, not only the traffic class")
        if marked { check((frame[ip + 1] >> 4) & 0b11 == 0b11, "IPv6 not CE after the mark") }
    default:
        check(!marked, "a frame that is not IP was marked")
        check(Array(frame) == original, "a frame that is not IP changed")
    }

    // The flipped bit, on the frame as the mark left it.
    let beforeFlip = Array(frame)
    let range = FrameEdits.corruptibleRange(count, headers)
    var random = EmulatorRandom(seed: seed)
    let flipped = FrameEdits.flipRandomBit(frame, headers, &random)
    let differing = (0..<count).filter { frame[$0] != beforeFlip[$0] }
    if flipped {
        check(differing.count == 1, "\(differing.count) bytes changed by one flipped bit")
        let index = differing[0]
        check(range.contains(index), "bit flipped at \(index), outside \(range)")
        check((frame[index] ^ beforeFlip[index]).nonzeroBitCount == 1, "more than one bit flipped")
    } else {
        check(range.isEmpty && differing.isEmpty, "no bit flipped, but the range was \(range) and \(differing.count) bytes changed")
    }
    return 0
}

/// The two ways the model changes a frame's bytes: an ECN Congestion Experienced mark (netem's `ecn`) and
/// a flipped bit (netem's `corrupt`).
enum FrameEdits {
    /// Marks an ECN-capable IP frame Congestion Experienced, as netem's `INET_ECN_set_ce` does for a frame
    /// the loss model picked: ECT(0) or ECT(1) becomes CE (the IPv4 header checksum is updated
    /// incrementally, RFC 1624), a frame already CE stays as it is. Returns false for a frame that is not
    /// ECN-capable (Not-ECT, or not IP), which is then dropped.
    static func markCongestionExperienced(_ frame: UnsafeMutableRawBufferPointer, _ headers: FrameHeaders) -> Bool {
        let start = headers.networkOffset
        switch headers.ipVersion {
        case 4:
            let tos = frame[start + 1]
            switch tos & 0b11 {
            case 0b00: return false
            case 0b11: return true
            default: break
            }
            let oldWord = UInt16(frame[start]) << 8 | UInt16(tos)
            let newWord = oldWord | 0b11
            frame[start + 1] = tos | 0b11
            let checksumOffset = start + 10
            let checksum = UInt16(frame[checksumOffset]) << 8 | UInt16(frame[checksumOffset + 1])
            // RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), in one's complement arithmetic.
            var sum = UInt32(~checksum) + UInt32(~oldWord) + UInt32(newWord)
            sum = (sum & 0xFFFF) + (sum >> 16)
            sum = (sum & 0xFFFF) + (sum >> 16)
            let updated = ~UInt16(truncatingIfNeeded: sum)
            frame[checksumOffset] = UInt8(truncatingIfNeeded: updated >> 8)
            frame[checksumOffset + 1] = UInt8(truncatingIfNeeded: updated)
            return true
        case 6:
            // Traffic class straddles bytes 0 and 1; its two ECN bits are bits 5 and 4 of byte 1.
            let second = frame[start + 1]
            switch (second >> 4) & 0b11 {
            case 0b00: return false
            case 0b11: return true
            default:
                frame[start + 1] = second | 0b0011_0000
                return true
            }
        default:
            return false
        }
    }

    /// The bytes a corruption may hit: the transport segment (after the IP header and its extension
    /// headers, up to the IP packet's end, padding excluded), so the receiver's TCP, UDP or ICMP checksum
    /// catches it as on a real link; an IP packet with an empty payload offers its IP header; a non-IP
    /// frame everything after the Ethernet header. Empty when there is nothing to hit.
    static func corruptibleRange(_ frameLength: Int, _ headers: FrameHeaders) -> Range<Int> {
        if headers.isIP {
            if headers.transportOffset < headers.packetEnd { return headers.transportOffset..<headers.packetEnd }
            return headers.networkOffset..<headers.packetEnd
        }
        return min(headers.linkHeaderLength, frameLength)..<frameLength
    }

    /// Flips one random bit in ``corruptibleRange(_:_:)``. Returns false (and changes nothing) when the
    /// range is empty.
    static func flipRandomBit(
        _ frame: UnsafeMutableRawBufferPointer, _ headers: FrameHeaders, _ random: inout EmulatorRandom
    ) -> Bool {
        let range = corruptibleRange(frame.count, headers)
        guard !range.isEmpty else { return false }
        let bit = Int(random.next(below: UInt64(range.count * 8)))
        frame[range.lowerBound + (bit >> 3)] ^= UInt8(1) << UInt8(bit & 7)
        return true
    }
}

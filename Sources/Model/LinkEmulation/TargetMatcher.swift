import LinkcondBase
import Profiles

/// A prefix as two 64-bit words and masks, for matching the addresses ``FrameHeaders`` reads without
/// building an ``IPAddress`` per frame. IPv4 addresses sit in the low word.
struct PrefixWords {
    let isIPv6: Bool
    let high: UInt64
    let low: UInt64
    let highMask: UInt64
    let lowMask: UInt64

    init(_ prefix: IPPrefix) {
        let bytes = prefix.address.bytes
        isIPv6 = !prefix.address.isIPv4
        func word(_ slice: ArraySlice<UInt8>) -> UInt64 { slice.reduce(0) { $0 << 8 | UInt64($1) } }
        let bits = Int(prefix.length)
        if isIPv6 {
            highMask = bits == 0 ? 0 : ~UInt64(0) << (64 - min(bits, 64))
            lowMask = bits <= 64 ? 0 : ~UInt64(0) << (128 - bits)
            high = word(bytes[0..<8]) & highMask
            low = word(bytes[8..<16]) & lowMask
        } else {
            highMask = 0
            lowMask = bits == 0 ? 0 : (~UInt64(0) << (32 - bits)) & 0xFFFF_FFFF
            high = 0
            low = word(bytes[0..<4]) & lowMask
        }
    }

    @inline(__always)
    func contains(isIPv6: Bool, high: UInt64, low: UInt64) -> Bool {
        isIPv6 == self.isIPv6 && (high & highMask) == self.high && (low & lowMask) == self.low
    }
}

/// Decides whether a frame belongs to a direction's ``TrafficTarget``s: the far end's address (the
/// destination on the uplink, the source on the downlink) in a target's prefix, and the protocol and
/// port when the target names them.
struct TargetMatcher {
    /// The targets; empty matches every frame.
    let targets: [TrafficTarget]
    /// Each target's prefix as words, in the same order.
    private let prefixes: [PrefixWords]
    /// Whether the far end is the destination (uplink) or the source (downlink).
    let farEndIsDestination: Bool

    /// A matcher for `targets` on `direction`.
    init(_ targets: [TrafficTarget], direction: LinkDirection) {
        self.targets = targets
        prefixes = targets.map { PrefixWords($0.to) }
        farEndIsDestination = direction == .uplink
    }

    /// Whether there are targets at all.
    var isEmpty: Bool { targets.isEmpty }

    /// Whether `headers` match one of the targets (always, when there are none). Non-IP frames match none.
    func matches(_ headers: FrameHeaders) -> Bool {
        if targets.isEmpty { return true }
        guard headers.isIP else { return false }
        let isIPv6 = headers.ipVersion == 6
        let high = farEndIsDestination ? headers.destinationHigh : headers.sourceHigh
        let low = farEndIsDestination ? headers.destinationLow : headers.sourceLow
        let farPort = farEndIsDestination ? headers.destinationPort : headers.sourcePort
        for (index, target) in targets.enumerated() where prefixes[index].contains(isIPv6: isIPv6, high: high, low: low) {
            if let wanted = target.protocol {
                let number: UInt8 =
                    switch wanted {
                    case .tcp: FrameHeaders.tcp
                    case .udp: FrameHeaders.udp
                    case .icmp: isIPv6 ? FrameHeaders.icmpv6 : FrameHeaders.icmp
                    }
                guard headers.transportProtocol == number else { continue }
            }
            if let port = target.port {
                guard headers.hasPorts, farPort == port else { continue }
            }
            return true
        }
        return false
    }
}

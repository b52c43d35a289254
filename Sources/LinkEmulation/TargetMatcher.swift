import Profiles

/// Decides whether a frame belongs to a direction's ``TrafficTarget``s: the far end's address (the
/// destination on the uplink, the source on the downlink) in a target's prefix, and the protocol and
/// port when the target names them.
struct TargetMatcher {
    /// The targets; empty matches every frame.
    let targets: [TrafficTarget]
    /// Whether the far end is the destination (uplink) or the source (downlink).
    let farEndIsDestination: Bool

    /// A matcher for `targets` on `direction`.
    init(_ targets: [TrafficTarget], direction: LinkDirection) {
        self.targets = targets
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
        for target in targets where target.to.contains(isIPv6: isIPv6, high: high, low: low) {
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

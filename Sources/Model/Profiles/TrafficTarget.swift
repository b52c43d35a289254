import JSONDocument

import LinkcondBase

/// Traffic that a direction's conditions apply to: packets to or from `to` (an address prefix), optionally
/// only one transport protocol and one port.
///
/// The target names the far end of the link: on the uplink it matches a packet's destination address and
/// port, on the downlink its source. A direction with targets conditions only matching packets; the rest
/// pass untouched. netem has no such option: the netem backend reaches the same result with u32 filters
/// in front of the netem band.
public struct TrafficTarget: Sendable, Equatable, CustomStringConvertible {
    /// The far end's addresses.
    public var to: IPPrefix
    /// The transport protocol; `nil` matches every protocol.
    public var `protocol`: TrafficProtocol?
    /// The far end's port (TCP or UDP); `nil` matches every port.
    public var port: UInt16?

    /// A target. A `port` needs `protocol` `.tcp`, `.udp` or `nil` (then it matches TCP and UDP), and
    /// cannot be 0.
    public init(to: IPPrefix, protocol: TrafficProtocol? = nil, port: UInt16? = nil) throws(EmulationInputError) {
        if let port {
            if port == 0 {
                throw EmulationInputError(
                    .outOfRange, problem: "port 0 is not a port a packet can carry", expected: "a port from 1 to 65535")
            }
            if `protocol` == .icmp {
                throw EmulationInputError(
                    .invalidValue, problem: "ICMP has no ports (port \(port) with protocol icmp)",
                    expected: "protocol tcp or udp with a port, or no port for icmp")
            }
        }
        self.to = to
        self.protocol = `protocol`
        self.port = port
    }

    /// Reads `to` as a prefix (see ``prefix(_:)``); `protocol` is `"tcp"`, `"udp"` or `"icmp"`.
    public init(to: String, protocol: String? = nil, port: UInt16? = nil) throws(EmulationInputError) {
        var parsedProtocol: TrafficProtocol?
        if let `protocol` {
            guard let known = TrafficProtocol(rawValue: `protocol`.lowercased()) else {
                throw EmulationInputError(
                    .invalidValue, problem: "\(JSONWriter.excerpt(`protocol`)) is not a protocol a target can name",
                    expected: "tcp, udp or icmp (icmp also matches ICMPv6)")
            }
            parsedProtocol = known
        }
        try self.init(to: try Self.prefix(to), protocol: parsedProtocol, port: port)
    }

    /// `198.18.2.0/24`, `tcp 198.18.2.0/24 port 443`, `icmp 2001:2::/48`.
    public var description: String {
        var text = ""
        if let `protocol` { text += `protocol`.rawValue + " " }
        text += to.description
        if let port { text += " port \(port)" }
        return text
    }
}

/// A transport protocol a ``TrafficTarget`` can name.
public enum TrafficProtocol: String, Sendable, Equatable, CaseIterable {
    /// TCP (IP protocol 6).
    case tcp
    /// UDP (IP protocol 17).
    case udp
    /// ICMP on IPv4 (protocol 1) and ICMPv6 on IPv6 (next header 58).
    case icmp
}

extension TrafficTarget {
    /// Reads an IPv4 or IPv6 prefix (`198.18.2.0/24`, `2001:2::/48`) or a bare address (a /32 or /128).
    /// The address must be the network address: host bits beyond the length are an error that names the
    /// right one, as a typo there would silently target something else.
    public static func prefix(_ text: String) throws(EmulationInputError) -> IPPrefix {
        let expectation = "an IPv4 or IPv6 prefix such as \"198.18.2.0/24\" or \"2001:2::/48\", or a bare address"
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPAddress(String(parts[0])) else {
            throw EmulationInputError(.invalidValue, problem: "\(JSONWriter.excerpt(text)) is not an IP address or prefix", expected: expectation)
        }
        var length = address.bitLength
        if parts.count == 2 {
            let lengthText = parts[1]
            guard !lengthText.isEmpty, lengthText.count <= 3, lengthText.utf8.allSatisfy({ (48...57).contains($0) }),
                let value = UInt8(lengthText), value <= address.bitLength
            else {
                throw EmulationInputError(
                    .outOfRange, problem: "\(JSONWriter.excerpt(text)) has no valid prefix length",
                    expected: "a prefix length from 0 to \(address.bitLength) after the \"/\"")
            }
            length = value
        }
        let network = IPPrefix(address: address, length: length)!.network
        guard network.address == address else {
            throw EmulationInputError(
                .invalidValue, problem: "\(JSONWriter.excerpt(text)) has host bits set beyond the /\(length)",
                expected: "the network address, \"\(network)\"")
        }
        return network
    }
}

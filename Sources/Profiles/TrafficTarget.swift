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

    /// Reads `to` as a prefix (see ``IPPrefix/init(_:)``); `protocol` is `"tcp"`, `"udp"` or `"icmp"`.
    public init(to: String, protocol: String? = nil, port: UInt16? = nil) throws(EmulationInputError) {
        var parsedProtocol: TrafficProtocol?
        if let `protocol` {
            guard let known = TrafficProtocol(rawValue: `protocol`.lowercased()) else {
                throw EmulationInputError(
                    .invalidValue, problem: "\"\(`protocol`)\" is not a protocol a target can name",
                    expected: "tcp, udp or icmp (icmp also matches ICMPv6)")
            }
            parsedProtocol = known
        }
        try self.init(to: try IPPrefix(to), protocol: parsedProtocol, port: port)
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

/// An IPv4 or IPv6 address prefix such as `198.18.2.0/24` or `2001:2::/48`.
///
/// The address is kept as two 64-bit halves in network order (IPv4 in the low 32 bits of ``low``), so a
/// packet's address is matched with two masked comparisons.
public struct IPPrefix: Sendable, Equatable, Hashable, CustomStringConvertible {
    /// Whether the prefix is IPv4 or IPv6.
    public let isIPv6: Bool
    /// The first 64 bits of an IPv6 address; 0 for IPv4.
    public let high: UInt64
    /// The last 64 bits of an IPv6 address, or the IPv4 address in the low 32 bits.
    public let low: UInt64
    /// The prefix length: 0 to 32 for IPv4, 0 to 128 for IPv6.
    public let length: UInt8
    /// The mask over ``high``.
    public let highMask: UInt64
    /// The mask over ``low``.
    public let lowMask: UInt64

    /// Reads `"198.18.2.0/24"`, `"2001:2::/48"` or a bare address (a /32 or /128). Host bits must be zero
    /// (`"198.18.2.1/24"` is refused, naming `198.18.2.0/24`).
    public init(_ text: String) throws(EmulationInputError) {
        let expectation = "an IPv4 or IPv6 prefix such as \"198.18.2.0/24\" or \"2001:2::/48\", or a bare address"
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        let addressText = parts[0]
        let isIPv6 = addressText.contains(":")
        let parsed: (high: UInt64, low: UInt64)?
        if isIPv6 {
            parsed = Self.parseIPv6(addressText)
        } else if let v4 = Self.parseIPv4(addressText) {
            parsed = (0, UInt64(v4))
        } else {
            parsed = nil
        }
        guard let parsed else {
            throw EmulationInputError(.invalidValue, problem: "\"\(text)\" is not an IP address or prefix", expected: expectation)
        }
        let maximum: UInt8 = isIPv6 ? 128 : 32
        var length = maximum
        if parts.count == 2 {
            let lengthText = parts[1]
            guard !lengthText.isEmpty, lengthText.count <= 3, lengthText.utf8.allSatisfy({ (48...57).contains($0) }),
                let value = UInt8(lengthText), value <= maximum
            else {
                throw EmulationInputError(
                    .outOfRange, problem: "\"\(text)\" has no valid prefix length",
                    expected: "a prefix length from 0 to \(maximum) after the \"/\"")
            }
            length = value
        }
        let candidate = IPPrefix(isIPv6: isIPv6, high: parsed.high, low: parsed.low, length: length)
        if candidate.high != parsed.high || candidate.low != parsed.low {
            throw EmulationInputError(
                .invalidValue, problem: "\"\(text)\" has host bits set beyond the /\(length)",
                expected: "the network address, \"\(candidate)\"")
        }
        self = candidate
    }

    /// A prefix from its halves; bits beyond `length` are cleared.
    public init(isIPv6: Bool, high: UInt64, low: UInt64, length: UInt8) {
        let bits = Int(min(length, isIPv6 ? 128 : 32))
        if isIPv6 {
            highMask = bits == 0 ? 0 : ~UInt64(0) << (64 - min(bits, 64))
            lowMask = bits <= 64 ? 0 : ~UInt64(0) << (128 - bits)
        } else {
            highMask = 0
            lowMask = bits == 0 ? 0 : (~UInt64(0) << (32 - bits)) & 0xFFFF_FFFF
        }
        self.isIPv6 = isIPv6
        self.high = high & highMask
        self.low = low & lowMask
        self.length = UInt8(bits)
    }

    /// Whether an address (same halves as ``high`` and ``low``) lies in the prefix.
    @inlinable
    public func contains(isIPv6: Bool, high: UInt64, low: UInt64) -> Bool {
        isIPv6 == self.isIPv6 && (high & highMask) == self.high && (low & lowMask) == self.low
    }

    /// The canonical text: dotted quad, or RFC 5952 IPv6; then `/length`.
    public var description: String {
        isIPv6 ? "\(Self.formatIPv6(high: high, low: low))/\(length)" : "\(Self.formatIPv4(UInt32(low)))/\(length)"
    }

    static func parseIPv4(_ text: Substring) -> UInt32? {
        let octets = text.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4 else { return nil }
        var value: UInt32 = 0
        for octet in octets {
            // Leading zeros are refused: "010" reads as octal in some tools and decimal in others.
            guard (1...3).contains(octet.count), octet.utf8.allSatisfy({ (48...57).contains($0) }),
                octet.count == 1 || octet.first != "0", let byte = UInt8(octet)
            else { return nil }
            value = value << 8 | UInt32(byte)
        }
        return value
    }

    static func parseIPv6(_ text: Substring) -> (high: UInt64, low: UInt64)? {
        var head: [UInt16] = []
        var tail: [UInt16] = []
        var sawGap = false
        let pieces = text.components(separatedByDoubleColon: ())
        guard pieces.count <= 2 else { return nil }
        func groups(_ part: Substring, allowIPv4: Bool) -> [UInt16]? {
            if part.isEmpty { return [] }
            var result: [UInt16] = []
            let fields = part.split(separator: ":", omittingEmptySubsequences: false)
            for (index, field) in fields.enumerated() {
                if allowIPv4, index == fields.count - 1, field.contains(".") {
                    guard let v4 = parseIPv4(field) else { return nil }
                    result.append(UInt16(v4 >> 16))
                    result.append(UInt16(v4 & 0xFFFF))
                    continue
                }
                guard (1...4).contains(field.count), let group = UInt16(field, radix: 16),
                    field.utf8.allSatisfy({ isHexDigit($0) })
                else { return nil }
                result.append(group)
            }
            return result
        }
        if pieces.count == 2 {
            sawGap = true
            guard let first = groups(pieces[0], allowIPv4: false), let second = groups(pieces[1], allowIPv4: true) else {
                return nil
            }
            head = first
            tail = second
            guard head.count + tail.count <= 7 else { return nil }
        } else {
            guard let all = groups(pieces[0], allowIPv4: true), all.count == 8 else { return nil }
            head = all
        }
        var words = head
        if sawGap { words += Array(repeating: 0, count: 8 - head.count - tail.count) + tail }
        var high: UInt64 = 0
        var low: UInt64 = 0
        for index in 0..<4 { high = high << 16 | UInt64(words[index]) }
        for index in 4..<8 { low = low << 16 | UInt64(words[index]) }
        return (high, low)
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (48...57).contains(byte) || (65...70).contains(byte) || (97...102).contains(byte)
    }

    static func formatIPv4(_ value: UInt32) -> String {
        "\(value >> 24).\(value >> 16 & 0xFF).\(value >> 8 & 0xFF).\(value & 0xFF)"
    }

    static func formatIPv6(high: UInt64, low: UInt64) -> String {
        var words: [UInt16] = []
        for shift in stride(from: 48, through: 0, by: -16) { words.append(UInt16(truncatingIfNeeded: high >> UInt64(shift))) }
        for shift in stride(from: 48, through: 0, by: -16) { words.append(UInt16(truncatingIfNeeded: low >> UInt64(shift))) }
        // RFC 5952: the longest run of two or more zero groups (the first on a tie) becomes "::".
        var bestStart = -1
        var bestLength = 1
        var index = 0
        while index < 8 {
            if words[index] == 0 {
                var end = index
                while end < 8 && words[end] == 0 { end += 1 }
                if end - index > bestLength {
                    bestStart = index
                    bestLength = end - index
                }
                index = end
            } else {
                index += 1
            }
        }
        func hex(_ range: Range<Int>) -> String { words[range].map { String($0, radix: 16) }.joined(separator: ":") }
        if bestStart < 0 { return hex(0..<8) }
        return hex(0..<bestStart) + "::" + hex((bestStart + bestLength)..<8)
    }
}

extension Substring {
    /// The parts around a `::` (one part when there is none; three or more when there are several).
    fileprivate func components(separatedByDoubleColon: ()) -> [Substring] {
        var parts: [Substring] = []
        var start = startIndex
        var index = startIndex
        while index < endIndex {
            let next = self.index(after: index)
            if self[index] == ":", next < endIndex, self[next] == ":" {
                parts.append(self[start..<index])
                start = self.index(after: next)
                index = start
                continue
            }
            index = next
        }
        parts.append(self[start..<endIndex])
        return parts
    }
}

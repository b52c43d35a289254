import Glibc
import LinkcondSystem

/// An address family: `AF_INET` or `AF_INET6`, as rtnetlink messages and sockets carry it.
public struct AddressFamily: RawRepresentable, Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    /// The `AF_*` value as it goes in `ifa_family`, `rtm_family` and friends.
    public var rawValue: UInt8

    /// A family from its `AF_*` value.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// IPv4 (`AF_INET`).
    public static let inet = AddressFamily(rawValue: UInt8(AF_INET))
    /// IPv6 (`AF_INET6`).
    public static let inet6 = AddressFamily(rawValue: UInt8(AF_INET6))

    /// The `domain` argument of `socket(2)`.
    public var socketDomain: Int32 { Int32(rawValue) }

    /// The family as the socket layer takes it (``SocketKind/tcp(_:)``, ``SocketKind/udp(_:)``).
    public var domain: SocketDescriptor.Domain { SocketDescriptor.Domain(rawValue: socketDomain) }

    /// `ipv4`, `ipv6`, or `family N`.
    public var description: String {
        switch self {
        case .inet: "ipv4"
        case .inet6: "ipv6"
        default: "family \(rawValue)"
        }
    }

    public static func < (lhs: AddressFamily, rhs: AddressFamily) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// An IPv4 or IPv6 address as it goes on the wire (network byte order).
public enum IPAddress: Hashable, Sendable, CustomStringConvertible {
    /// An IPv4 address, its four bytes in order.
    case v4(UInt8, UInt8, UInt8, UInt8)
    /// An IPv6 address: sixteen bytes.
    case v6([UInt8])

    /// Parses dotted-quad IPv4 or RFC 4291 IPv6 text (`inet_pton`). Returns nil for anything else.
    public init?(_ text: String) {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            let bytes = rawBytesOf(v4)
            self = .v4(bytes[0], bytes[1], bytes[2], bytes[3])
            return
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            self = .v6(rawBytesOf(v6))
            return
        }
        return nil
    }

    /// Builds an address from its wire bytes: 4 for IPv4, 16 for IPv6.
    public init?(bytes: some Collection<UInt8>) {
        let array = Array(bytes)
        switch array.count {
        case 4: self = .v4(array[0], array[1], array[2], array[3])
        case 16: self = .v6(array)
        default: return nil
        }
    }

    /// ``AddressFamily/inet`` or ``AddressFamily/inet6``.
    public var family: AddressFamily { isIPv4 ? .inet : .inet6 }

    /// True for IPv4.
    public var isIPv4: Bool { if case .v4 = self { true } else { false } }

    /// The address in network byte order.
    public var bytes: [UInt8] {
        switch self {
        case let .v4(a, b, c, d): [a, b, c, d]
        case let .v6(bytes): bytes
        }
    }

    /// Bit length of the address: 32 or 128.
    public var bitLength: UInt8 { isIPv4 ? 32 : 128 }

    /// True for IPv6 link-local addresses (fe80::/10).
    public var isLinkLocal: Bool {
        switch self {
        case .v4(169, 254, _, _): true
        case .v4: false
        case let .v6(bytes): bytes[0] == 0xfe && bytes[1] & 0xc0 == 0x80
        }
    }

    /// Canonical text (`inet_ntop`).
    public var description: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = isIPv4 ? AF_INET : AF_INET6
        let ok = bytes.withUnsafeBytes { raw in
            inet_ntop(family, raw.baseAddress, &buffer, socklen_t(buffer.count)) != nil
        }
        guard ok else { return "?" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

private func rawBytesOf<T>(_ value: T) -> [UInt8] {
    withUnsafeBytes(of: value) { Array($0) }
}

/// An address with a prefix length, as `ip addr` and `ip route` write it: `198.18.1.2/24`.
public struct IPPrefix: Hashable, Sendable, CustomStringConvertible {
    /// The address.
    public var address: IPAddress
    /// The prefix length in bits.
    public var length: UInt8

    /// An address and a prefix length; nil when the length exceeds the family's bit length.
    public init?(address: IPAddress, length: UInt8) {
        guard length <= address.bitLength else { return nil }
        self.address = address
        self.length = length
    }

    /// Parses `ADDRESS/LENGTH`; a bare address gets the full length (/32 or /128).
    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let address = IPAddress(String(parts[0])) else { return nil }
        if parts.count == 2 {
            guard let length = UInt8(parts[1]) else { return nil }
            self.init(address: address, length: length)
        } else {
            self.init(address: address, length: address.bitLength)
        }
    }

    public var description: String { "\(address)/\(length)" }
}

extension IPPrefix {
    /// The prefix with every bit beyond ``length`` cleared: `198.18.2.7/24` → `198.18.2.0/24`.
    public var network: IPPrefix {
        var bytes = address.bytes
        var remaining = Int(length)
        for index in bytes.indices {
            let bits = min(8, max(0, remaining))
            bytes[index] &= UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
            remaining -= 8
        }
        return IPPrefix(address: IPAddress(bytes: bytes)!, length: length)!
    }

    /// True when `address` (of the same family) lies inside this prefix.
    public func contains(_ other: IPAddress) -> Bool {
        guard other.family == address.family else { return false }
        let mine = address.bytes
        let theirs = other.bytes
        var remaining = Int(length)
        for index in mine.indices where remaining > 0 {
            let bits = min(8, remaining)
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
            if mine[index] & mask != theirs[index] & mask { return false }
            remaining -= bits
        }
        return true
    }
}

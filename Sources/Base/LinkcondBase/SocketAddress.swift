import Glibc
import LinkcondSystem

/// A socket address of either family (`sockaddr_in` or `sockaddr_in6` in a `sockaddr_storage`), for
/// `bind`, `connect`, `sendto` and what `recvfrom`/`getsockname` return.
public struct SocketAddress: SocketAddressConvertible {
    /// The address in the form the socket calls take.
    public private(set) var storage = sockaddr_storage()
    /// The length of the family's own struct (`sizeof(sockaddr_in)` or `sizeof(sockaddr_in6)`).
    public let length: socklen_t
    /// The address family.
    public let family: AddressFamily

    /// `address`:`port`.
    public init(_ address: IPAddress, port: UInt16) {
        self.init(family: address.family, bytes: address.bytes, port: port)
    }

    /// The wildcard address of `family` (`0.0.0.0` or `::`) and `port` (0: an ephemeral port).
    public init(any family: AddressFamily, port: UInt16 = 0) {
        self.init(family: family, bytes: nil, port: port)
    }

    /// `ip`:`port` from an IP literal; nil when `ip` is neither an IPv4 nor an IPv6 literal.
    public init?(ip: String, port: UInt16) {
        guard let address = IPAddress(ip) else { return nil }
        self.init(address, port: port)
    }

    /// Decodes what the kernel filled in (`recvfrom`, `getsockname`); nil for a family other than IPv4/IPv6.
    public init?(storage: sockaddr_storage) {
        switch Int32(storage.ss_family) {
        case AF_INET: family = .inet
        case AF_INET6: family = .inet6
        default: return nil
        }
        self.storage = storage
        length = Self.structLength(family)
    }

    private init(family: AddressFamily, bytes: [UInt8]?, port: UInt16) {
        self.family = family
        length = Self.structLength(family)
        withUnsafeMutableBytes(of: &storage) { raw in
            if family == .inet {
                var value = sockaddr_in()
                value.sin_family = sa_family_t(AF_INET)
                value.sin_port = port.bigEndian
                if let bytes { withUnsafeMutableBytes(of: &value.sin_addr) { $0.copyBytes(from: bytes) } }
                withUnsafeBytes(of: value) { raw.copyMemory(from: $0) }
            } else {
                var value = sockaddr_in6()
                value.sin6_family = sa_family_t(AF_INET6)
                value.sin6_port = port.bigEndian
                if let bytes { withUnsafeMutableBytes(of: &value.sin6_addr) { $0.copyBytes(from: bytes) } }
                withUnsafeBytes(of: value) { raw.copyMemory(from: $0) }
            }
        }
    }

    private static func structLength(_ family: AddressFamily) -> socklen_t {
        socklen_t(family == .inet ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size)
    }

    /// The port (host byte order).
    public var port: UInt16 {
        withUnsafeBytes(of: storage) { UInt16(bigEndian: $0.loadUnaligned(fromByteOffset: 2, as: UInt16.self)) }
    }

    /// The IP address.
    public var address: IPAddress {
        withUnsafeBytes(of: storage) { raw in
            family == .inet
                ? IPAddress(bytes: raw[4..<8])!
                : IPAddress(bytes: raw[8..<24])!
        }
    }

    /// `198.19.0.2:80` or `[2001:2:0:100::2]:80`.
    public var text: String {
        family == .inet ? "\(address):\(port)" : "[\(address)]:\(port)"
    }

    /// ``text``, which errors of the socket calls name.
    public var description: String { text }

    public func withUnsafeSocketAddress<Result, Failure: Error>(
        _ body: (UnsafePointer<sockaddr>, socklen_t) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try withUnsafeBytes(of: storage) { raw throws(Failure) in
            try body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), length)
        }
    }

    /// Calls `body` with the address as the socket calls take it.
    public func withSockaddr<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws -> Result) rethrows -> Result {
        try withUnsafeBytes(of: storage) { raw in
            try body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), length)
        }
    }

    /// The local address a socket is bound to (`getsockname`); nil when it cannot be read or is not IP.
    public static func local(of socket: SocketDescriptor) -> SocketAddress? {
        (try? socket.localAddress()).flatMap { SocketAddress(storage: $0.storage) }
    }
}

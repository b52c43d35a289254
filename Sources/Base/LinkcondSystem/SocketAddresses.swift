import Glibc

/// A socket address that `bind`, `connect` and `sendto` can take, and that reads well in an error
/// (`198.18.0.2:80`, `/run/linkcond/x.sock`, `interface 3`).
public protocol SocketAddressConvertible: CustomStringConvertible {
    /// Calls `body` with the address as the socket calls take it: a pointer to its `sockaddr` and its length.
    func withUnsafeSocketAddress<Result, Failure: Error>(
        _ body: (UnsafePointer<sockaddr>, socklen_t) throws(Failure) -> Result
    ) throws(Failure) -> Result
}

/// Room for an address of any family (`sockaddr_storage`), as `recvfrom`, `accept` and `getsockname` fill
/// it in; it can be handed back to `sendto` as it is (a reply to a datagram's sender).
@frozen
public struct SocketAddressStorage: SocketAddressConvertible, Sendable {
    /// The address.
    public var storage = sockaddr_storage()
    /// How many bytes of ``storage`` the address takes.
    public var length = socklen_t(MemoryLayout<sockaddr_storage>.size)

    /// An empty address, to be filled in.
    public init() {}

    /// `storage`, of which `length` bytes are the address.
    public init(_ storage: sockaddr_storage, length: socklen_t) {
        self.storage = storage
        self.length = length
    }

    /// The address family (`AF_INET`…).
    public var domain: SocketDescriptor.Domain { SocketDescriptor.Domain(rawValue: Int32(storage.ss_family)) }

    public func withUnsafeSocketAddress<Result, Failure: Error>(
        _ body: (UnsafePointer<sockaddr>, socklen_t) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try withUnsafeBytes(of: storage) { raw throws(Failure) in
            try body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), length)
        }
    }

    /// Calls `body` with room for the kernel to write an address into, and its length in and out.
    @inlinable
    public mutating func withUnsafeMutableSocketAddress<Result, Failure: Error>(
        _ body: (UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        return try withUnsafeMutablePointer(to: &storage) { pointer throws(Failure) in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address throws(Failure) in try body(address, &length) }
        }
    }

    /// `198.18.0.2:80`, `[2001:2::1]:53`, `/run/linkcond/x.sock`, `interface 3`, `netlink port 812`.
    public var description: String {
        withUnsafeBytes(of: storage) { raw in
            switch domain {
            case .inet, .inet6:
                let inet = domain == .inet
                var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
                let port = UInt16(bigEndian: raw.loadUnaligned(fromByteOffset: 2, as: UInt16.self))
                _ = inet_ntop(domain.rawValue, raw.baseAddress! + (inet ? 4 : 8), &text, socklen_t(text.count))
                let address = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                return inet ? "\(address):\(port)" : "[\(address)]:\(port)"
            case .unix:
                let path = raw[2..<max(2, Int(length))].prefix { $0 != 0 }
                return path.isEmpty ? "an unnamed local socket" : String(decoding: path, as: UTF8.self)
            case .packet:
                return "interface \(raw.loadUnaligned(fromByteOffset: 4, as: Int32.self))"
            case .netlink:
                return "netlink port \(raw.loadUnaligned(fromByteOffset: 4, as: UInt32.self))"
            default:
                return "an address of \(domain)"
            }
        }
    }
}

/// A local socket's path (`sockaddr_un`), e.g. `/run/linkcond/lc/engine-wl0.sock`.
public struct UnixSocketAddress: SocketAddressConvertible, Hashable, Sendable {
    /// The path (at most 107 bytes).
    public var path: String

    /// The socket at `path`; nil when the path does not fit `sun_path`.
    public init?(path: String) {
        guard path.utf8.count < MemoryLayout.size(ofValue: sockaddr_un().sun_path) else { return nil }
        self.path = path
    }

    public var description: String { path }

    public func withUnsafeSocketAddress<Result, Failure: Error>(
        _ body: (UnsafePointer<sockaddr>, socklen_t) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path.utf8) }
        return try withUnsafePointer(to: &address) { pointer throws(Failure) in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address throws(Failure) in
                try body(address, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
    }
}

/// An interface and link-layer protocol for an `AF_PACKET` socket (`sockaddr_ll`): what `bind` takes to
/// tie a packet socket to one interface.
public struct LinkLayerSocketAddress: SocketAddressConvertible, Hashable, Sendable {
    /// The interface's index in the socket's namespace.
    public var interfaceIndex: Int32
    /// The EtherType, host order (`ETH_P_ALL` is 3; 0 receives nothing).
    public var etherType: UInt16

    /// Interface `interfaceIndex`, frames of `etherType`.
    public init(interfaceIndex: Int32, etherType: UInt16) {
        self.interfaceIndex = interfaceIndex
        self.etherType = etherType
    }

    public var description: String { "interface \(interfaceIndex)" }

    public func withUnsafeSocketAddress<Result, Failure: Error>(
        _ body: (UnsafePointer<sockaddr>, socklen_t) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        // struct sockaddr_ll (<linux/if_packet.h>, which Glibc does not import): family, protocol (network
        // order), interface index, then hardware type, packet type and address, left zero; 20 bytes.
        var address = sockaddr_storage()
        withUnsafeMutableBytes(of: &address) { raw in
            raw.storeBytes(of: UInt16(AF_PACKET), toByteOffset: 0, as: UInt16.self)
            raw.storeBytes(of: etherType.bigEndian, toByteOffset: 2, as: UInt16.self)
            raw.storeBytes(of: interfaceIndex, toByteOffset: 4, as: Int32.self)
        }
        return try SocketAddressStorage(address, length: 20).withUnsafeSocketAddress(body)
    }
}

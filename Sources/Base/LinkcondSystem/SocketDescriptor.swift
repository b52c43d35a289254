import CLinkcondSystem
import Glibc

/// An open socket, typed, in the manner of ``FileDescriptor``: created close-on-exec, every call retries
/// `EINTR`, and a failure names the operation and its peer (`connect 198.18.0.2:80: Connection refused`).
///
/// Not owned: close it once, or hand it to an ``OwnedSocket``. A socket belongs to the network namespace
/// of the thread that created it for its whole life; `NetNamespace` opens one inside a namespace.
@frozen
public struct SocketDescriptor: RawRepresentable, Hashable, Sendable {
    /// The C descriptor.
    public let rawValue: Int32

    /// The socket `rawValue` (not checked, not owned).
    @inlinable
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The same descriptor as a file, for `fcntl`, `poll` and plain `read`/`write`.
    @inlinable
    public var fileDescriptor: FileDescriptor { FileDescriptor(rawValue: rawValue) }

    /// An address family (the first argument of `socket(2)`).
    @frozen
    public struct Domain: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }
        /// IPv4. `AF_INET`
        public static let inet = Domain(rawValue: AF_INET)
        /// IPv6. `AF_INET6`
        public static let inet6 = Domain(rawValue: AF_INET6)
        /// Local sockets named by a path. `AF_UNIX`
        public static let unix = Domain(rawValue: AF_UNIX)
        /// Link-layer frames of one interface or all. `AF_PACKET`
        public static let packet = Domain(rawValue: AF_PACKET)
        /// The kernel's netlink buses. `AF_NETLINK`
        public static let netlink = Domain(rawValue: AF_NETLINK)

        /// `AF_INET`, `AF_PACKET`…
        public var description: String {
            switch rawValue {
            case AF_INET: "AF_INET"
            case AF_INET6: "AF_INET6"
            case AF_UNIX: "AF_UNIX"
            case AF_PACKET: "AF_PACKET"
            case AF_NETLINK: "AF_NETLINK"
            default: "family \(rawValue)"
            }
        }
    }

    /// How data moves over a socket (the second argument of `socket(2)`).
    @frozen
    public struct ConnectionType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }
        /// A byte stream (TCP). `SOCK_STREAM`
        public static let stream = ConnectionType(rawValue: Int32(SOCK_STREAM.rawValue))
        /// Datagrams (UDP; cooked frames for `AF_PACKET`). `SOCK_DGRAM`
        public static let datagram = ConnectionType(rawValue: Int32(SOCK_DGRAM.rawValue))
        /// Raw frames or messages (`AF_PACKET`, netlink). `SOCK_RAW`
        public static let raw = ConnectionType(rawValue: Int32(SOCK_RAW.rawValue))
        /// Ordered datagrams over a connection. `SOCK_SEQPACKET`
        public static let sequencedPacket = ConnectionType(rawValue: Int32(SOCK_SEQPACKET.rawValue))

        /// `SOCK_STREAM`, `SOCK_RAW`…
        public var description: String {
            switch rawValue {
            case Int32(SOCK_STREAM.rawValue): "SOCK_STREAM"
            case Int32(SOCK_DGRAM.rawValue): "SOCK_DGRAM"
            case Int32(SOCK_RAW.rawValue): "SOCK_RAW"
            case Int32(SOCK_SEQPACKET.rawValue): "SOCK_SEQPACKET"
            default: "type \(rawValue)"
            }
        }
    }

    /// Creates a socket of `kind` in the calling thread's network namespace (`socket(2)`), close-on-exec
    /// unless `closeOnExec` is false.
    public static func open(_ kind: SocketKind, nonBlocking: Bool = false, closeOnExec: Bool = true) throws(SystemError) -> SocketDescriptor {
        let type = kind.type.rawValue | (nonBlocking ? Int32(SOCK_NONBLOCK.rawValue) : 0) | (closeOnExec ? Int32(SOCK_CLOEXEC.rawValue) : 0)
        return SocketDescriptor(rawValue: try systemCall("socket \(kind)") { socket(kind.domain.rawValue, type, kind.protocol) })
    }

    /// Two connected local sockets (`socketpair(AF_UNIX)`), close-on-exec: what one writes the other reads.
    public static func pair(
        _ type: ConnectionType = .stream, nonBlocking: Bool = false
    ) throws(SystemError) -> (SocketDescriptor, SocketDescriptor) {
        var ends: (Int32, Int32) = (-1, -1)
        let flags = type.rawValue | Int32(SOCK_CLOEXEC.rawValue) | (nonBlocking ? Int32(SOCK_NONBLOCK.rawValue) : 0)
        _ = try withUnsafeMutableBytes(of: &ends) { raw throws(SystemError) in
            try systemCall("socketpair AF_UNIX \(type)") { socketpair(AF_UNIX, flags, 0, raw.baseAddress!.assumingMemoryBound(to: Int32.self)) }
        }
        return (SocketDescriptor(rawValue: ends.0), SocketDescriptor(rawValue: ends.1))
    }

    /// Binds the socket to `address` (`bind(2)`).
    public func bind(to address: some SocketAddressConvertible) throws(SystemError) {
        _ = try address.withUnsafeSocketAddress { pointer, length throws(SystemError) in
            try systemCall("bind \(address)") { Glibc.bind(rawValue, pointer, length) }
        }
    }

    /// Connects to `address` (`connect(2)`). True when connected; false when the socket is non-blocking
    /// and the connection goes on in the background (`EINPROGRESS`): wait for `POLLOUT`, then read
    /// ``pendingError()``.
    @discardableResult
    public func connect(to address: some SocketAddressConvertible) throws(SystemError) -> Bool {
        do {
            _ = try address.withUnsafeSocketAddress { pointer, length throws(SystemError) in
                try systemCall("connect \(address)") { Glibc.connect(rawValue, pointer, length) }
            }
            return true
        } catch where error.errno == .nowInProgress {
            return false
        }
    }

    /// Connects a non-blocking socket to `address`, waiting at most `timeout` seconds; throws
    /// ``Errno/timedOut`` when the time runs out, or why the connection failed.
    public func connect(to address: some SocketAddressConvertible, timeout: Double) throws(SystemError) {
        if try connect(to: address) { return }
        let ready = try fileDescriptor.poll(for: Int16(POLLOUT), timeoutMilliseconds: Int32(max(0, timeout * 1000)))
        if ready == 0 { throw SystemError("connect \(address)", .timedOut) }
        if let failure = try pendingError() { throw SystemError("connect \(address)", failure) }
    }

    /// Marks the socket as accepting connections (`listen(2)`).
    public func listen(backlog: Int32 = 128) throws(SystemError) {
        _ = try systemCall("listen") { Glibc.listen(rawValue, backlog) }
    }

    /// Accepts one connection (`accept4(2)`): the new socket is close-on-exec from its first moment, and
    /// non-blocking when asked. Owned by the caller.
    public func accept(nonBlocking: Bool = false) throws(SystemError) -> SocketDescriptor {
        let flags = Int32(SOCK_CLOEXEC.rawValue) | (nonBlocking ? Int32(SOCK_NONBLOCK.rawValue) : 0)
        return SocketDescriptor(rawValue: try systemCall("accept4") { lcsys_accept4(rawValue, nil, nil, flags) })
    }

    /// Which directions ``shutdown(_:)`` ends.
    @frozen
    public struct ShutdownKind: RawRepresentable, Hashable, Sendable {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }
        /// No more receiving. `SHUT_RD`
        public static let read = ShutdownKind(rawValue: Int32(SHUT_RD))
        /// No more sending: the peer reads the end of the stream. `SHUT_WR`
        public static let write = ShutdownKind(rawValue: Int32(SHUT_WR))
        /// Both; a thread blocked on the socket wakes up. `SHUT_RDWR`
        public static let readWrite = ShutdownKind(rawValue: Int32(SHUT_RDWR))
    }

    /// Ends one or both directions of a connection (`shutdown(2)`).
    public func shutdown(_ how: ShutdownKind) throws(SystemError) {
        _ = try systemCall("shutdown") { Glibc.shutdown(rawValue, how.rawValue) }
    }

    /// The address the socket is bound to (`getsockname(2)`).
    public func localAddress() throws(SystemError) -> SocketAddressStorage {
        var address = SocketAddressStorage()
        _ = try address.withUnsafeMutableSocketAddress { pointer, length throws(SystemError) in
            try systemCall("getsockname") { getsockname(rawValue, pointer, length) }
        }
        return address
    }

    /// The error a non-blocking connect ended with, or nil when it succeeded (`SO_ERROR`, which reading
    /// clears).
    public func pendingError() throws(SystemError) -> Errno? {
        let code: Int32 = try option(.error)
        return code == 0 ? nil : Errno(rawValue: code)
    }

    /// Closes the socket (`close(2)`), never retried; see ``FileDescriptor/close()``.
    public func close() throws(SystemError) {
        try fileDescriptor.close()
    }
}

/// What `socket(2)` is asked for: a domain, a type and a protocol.
public struct SocketKind: Hashable, Sendable, CustomStringConvertible {
    /// The address family.
    public var domain: SocketDescriptor.Domain
    /// Stream, datagram or raw.
    public var type: SocketDescriptor.ConnectionType
    /// The protocol within the family (0: its default; the bus for netlink; the EtherType for `AF_PACKET`).
    public var `protocol`: Int32

    /// `socket(domain, type, protocol)`.
    public init(_ domain: SocketDescriptor.Domain, _ type: SocketDescriptor.ConnectionType, protocol: Int32 = 0) {
        self.domain = domain
        self.type = type
        self.protocol = `protocol`
    }

    /// A TCP socket of `domain` (``SocketDescriptor/Domain/inet`` or ``SocketDescriptor/Domain/inet6``).
    public static func tcp(_ domain: SocketDescriptor.Domain) -> SocketKind { SocketKind(domain, .stream) }
    /// A UDP socket of `domain`.
    public static func udp(_ domain: SocketDescriptor.Domain) -> SocketKind { SocketKind(domain, .datagram) }
    /// A netlink socket on `bus` (`NETLINK_ROUTE` is 0), as libmnl's `mnl_socket_open` makes one.
    public static func netlink(bus: Int32) -> SocketKind { SocketKind(.netlink, .raw, protocol: bus) }
    /// The rtnetlink bus (`NETLINK_ROUTE`): links, addresses, routes, qdiscs; what `ip` and `tc` open.
    public static let routeNetlink = netlink(bus: 0)
    /// Whole frames with their link-layer header, receiving nothing until bound (`AF_PACKET`, `SOCK_RAW`,
    /// protocol 0).
    public static let packet = SocketKind(.packet, .raw)
    /// Frames without their link-layer header, receiving nothing until bound (`AF_PACKET`, `SOCK_DGRAM`,
    /// protocol 0): a socket every namespace has, for interface ioctls.
    public static let packetDatagram = SocketKind(.packet, .datagram)
    /// A local stream socket (`AF_UNIX`, `SOCK_STREAM`).
    public static let unixStream = SocketKind(.unix, .stream)

    /// `AF_INET SOCK_STREAM`, `AF_NETLINK SOCK_RAW 0`…
    public var description: String {
        "\(domain) \(type)" + (`protocol` != 0 || domain == .netlink ? " \(`protocol`)" : "")
    }
}

import Glibc

/// A socket option: its level and name as `setsockopt(2)` takes them, and its C name for messages.
public struct SocketOption: Hashable, Sendable, CustomStringConvertible {
    /// `SOL_SOCKET`, `IPPROTO_TCP`, `SOL_PACKET`, `SOL_NETLINK`…
    public var level: Int32
    /// The option within its level.
    public var name: Int32
    /// The C name, e.g. `SO_RCVBUF`.
    public var description: String

    /// The option `name` of `level`, called `description` in messages.
    public init(level: Int32, name: Int32, description: String) {
        self.level = level
        self.name = name
        self.description = description
    }

    /// Allow binding an address another socket left in TIME_WAIT. `SO_REUSEADDR`
    public static let reuseAddress = SocketOption(level: SOL_SOCKET, name: SO_REUSEADDR, description: "SO_REUSEADDR")
    /// The kernel's receive buffer, capped by `net.core.rmem_max`. `SO_RCVBUF`
    public static let receiveBuffer = SocketOption(level: SOL_SOCKET, name: SO_RCVBUF, description: "SO_RCVBUF")
    /// The receive buffer past `net.core.rmem_max` (needs `CAP_NET_ADMIN`). `SO_RCVBUFFORCE`
    public static let receiveBufferForce = SocketOption(level: SOL_SOCKET, name: SO_RCVBUFFORCE, description: "SO_RCVBUFFORCE")
    /// The kernel's send buffer, capped by `net.core.wmem_max`. `SO_SNDBUF`
    public static let sendBuffer = SocketOption(level: SOL_SOCKET, name: SO_SNDBUF, description: "SO_SNDBUF")
    /// The send buffer past `net.core.wmem_max` (needs `CAP_NET_ADMIN`). `SO_SNDBUFFORCE`
    public static let sendBufferForce = SocketOption(level: SOL_SOCKET, name: SO_SNDBUFFORCE, description: "SO_SNDBUFFORCE")
    /// How long a blocking receive waits before failing with ``Errno/wouldBlock`` (a `timeval`). `SO_RCVTIMEO`
    public static let receiveTimeout = SocketOption(level: SOL_SOCKET, name: SO_RCVTIMEO, description: "SO_RCVTIMEO")
    /// How long a blocking send waits before failing with ``Errno/wouldBlock`` (a `timeval`). `SO_SNDTIMEO`
    public static let sendTimeout = SocketOption(level: SOL_SOCKET, name: SO_SNDTIMEO, description: "SO_SNDTIMEO")
    /// The pending error of the socket, cleared by reading it. `SO_ERROR`
    public static let error = SocketOption(level: SOL_SOCKET, name: SO_ERROR, description: "SO_ERROR")
    /// An IPv6 socket that leaves IPv4 to sockets of its own. `IPV6_V6ONLY`
    public static let ipv6Only = SocketOption(level: Int32(IPPROTO_IPV6), name: IPV6_V6ONLY, description: "IPV6_V6ONLY")
    /// The kernel's view of a TCP connection (a `tcp_info`). `TCP_INFO`
    public static let tcpInfo = SocketOption(level: Int32(IPPROTO_TCP), name: TCP_INFO, description: "TCP_INFO")
}

extension SocketDescriptor {
    /// Sets `option` to `value` (`setsockopt(2)`); `value` is passed as its bytes, so give it the plain C
    /// type the option takes (`Int32`, `timeval`…).
    public func setOption<Value>(_ option: SocketOption, _ value: Value) throws(SystemError) {
        _ = try withUnsafeBytes(of: value) { raw in
            Result { () throws(SystemError) in
                try systemCall("setsockopt \(option)") { setsockopt(rawValue, option.level, option.name, raw.baseAddress, socklen_t(raw.count)) }
            }
        }.get()
    }

    /// Reads `option` as a `Value`, a plain C type (`Int32`, `tcp_info`…) (`getsockopt(2)`); bytes the
    /// kernel does not fill stay zero.
    public func option<Value>(_ option: SocketOption, as type: Value.Type = Value.self) throws(SystemError) -> Value {
        try withUnsafeTemporaryAllocation(byteCount: MemoryLayout<Value>.size, alignment: MemoryLayout<Value>.alignment) {
            raw throws(SystemError) -> Value in
            raw.initializeMemory(as: UInt8.self, repeating: 0)
            var length = socklen_t(raw.count)
            _ = try systemCall("getsockopt \(option)") { getsockopt(rawValue, option.level, option.name, raw.baseAddress, &length) }
            return raw.load(as: Value.self)
        }
    }

    /// Sets how long a blocking receive (or, for `send: true`, send) may wait before failing with
    /// ``Errno/wouldBlock`` (`SO_RCVTIMEO`/`SO_SNDTIMEO`); nil waits without limit.
    public func setTimeout(seconds: Double?, send: Bool = false) throws(SystemError) {
        var value = timeval()
        if let seconds {
            value.tv_sec = Int(seconds)
            value.tv_usec = Int((seconds - Double(Int(seconds))) * 1_000_000)
        }
        try setOption(send ? .sendTimeout : .receiveTimeout, value)
    }

    /// Sets the kernel's receive (or, for `send: true`, send) buffer to `bytes`: past the system's cap when
    /// the process may (`SO_RCVBUFFORCE`, root), else as far as the cap lets (`SO_RCVBUF`).
    public func setBufferSize(_ bytes: Int32, send: Bool = false) throws(SystemError) {
        do {
            try setOption(send ? .sendBufferForce : .receiveBufferForce, bytes)
        } catch {
            try setOption(send ? .sendBuffer : .receiveBuffer, bytes)
        }
    }
}

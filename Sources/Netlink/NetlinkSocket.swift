import CMnl
import Glibc

/// How a ``NetlinkConnection`` moves bytes: a real libmnl socket, or a fake in tests (so the framing,
/// sequence checks and error decoding run unchanged in unit tests).
public protocol NetlinkTransport: AnyObject {
    /// The port id the kernel assigned to this socket.
    var portID: UInt32 { get }
    /// Sends one request datagram.
    func send(_ bytes: [UInt8]) throws(NetlinkError)
    /// Receives one datagram (blocking).
    func receive() throws(NetlinkError) -> [UInt8]
}

/// A libmnl netlink socket, owned: opened on init, closed on deinit.
///
/// - The port id is chosen by the kernel (`MNL_SOCKET_AUTOPID`), never the process id, so several sockets
///   can coexist in one process.
/// - Extended acks (`NETLINK_EXT_ACK`) and capped acks (`NETLINK_CAP_ACK`) are on, so refusals carry the
///   kernel's explanation and acks do not echo the whole request back.
/// - Datagrams are read into a 64 KiB buffer — dumps can be larger than a page — and the socket's receive
///   buffer is raised so that bursts of events are not lost.
///
/// A socket belongs to the network namespace of the thread that opened it, for its whole life; see
/// `NetNamespace` for opening one inside a namespace.
public final class NetlinkSocket: NetlinkTransport, @unchecked Sendable {
    private let handle: OpaquePointer
    public let portID: UInt32
    private let receiveBuffer: UnsafeMutableRawBufferPointer
    // `receiveBuffer` is shared state: one receiver at a time (NetlinkConnection serialises).

    /// The receive buffer size used for each datagram.
    public static let datagramCapacity = 65_536

    /// Opens and binds a socket of `family` (default `NETLINK_ROUTE`), joined to no multicast group.
    public init(family: Int32 = NETLINK_ROUTE, receiveBufferBytes: Int32 = 1 << 20) throws(NetlinkError) {
        guard let handle = mnl_socket_open(family) else {
            throw NetlinkError(kind: .system, operation: "open netlink socket", errno: Glibc.errno)
        }
        self.handle = handle
        if mnl_socket_bind(handle, 0, pid_t(MNL_SOCKET_AUTOPID)) < 0 {
            let code = Glibc.errno
            mnl_socket_close(handle)
            throw NetlinkError(kind: .system, operation: "bind netlink socket", errno: code)
        }
        portID = mnl_socket_get_portid(handle)
        receiveBuffer = .allocate(byteCount: Self.datagramCapacity, alignment: 8)
        var one: Int32 = 1
        // Both are best effort: kernels older than 4.12 lack EXT_ACK; errors then carry only errno.
        _ = mnl_socket_setsockopt(handle, NETLINK_EXT_ACK, &one, socklen_t(MemoryLayout<Int32>.size))
        _ = mnl_socket_setsockopt(handle, NETLINK_CAP_ACK, &one, socklen_t(MemoryLayout<Int32>.size))
        var size = receiveBufferBytes
        _ = setsockopt(fileDescriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit {
        mnl_socket_close(handle)
        receiveBuffer.deallocate()
    }

    /// The socket's file descriptor (for poll/select; owned by this object).
    public var fileDescriptor: Int32 { mnl_socket_get_fd(handle) }

    /// Joins a multicast group, e.g. `RTNLGRP_LINK` (`NETLINK_ADD_MEMBERSHIP`).
    public func join(group: UInt32) throws(NetlinkError) {
        var value = group
        if mnl_socket_setsockopt(handle, NETLINK_ADD_MEMBERSHIP, &value, socklen_t(MemoryLayout<UInt32>.size)) < 0 {
            throw NetlinkError(kind: .system, operation: "join netlink group \(group)", errno: Glibc.errno)
        }
    }

    /// Sets how long ``receive()`` may block before failing with `EAGAIN` (`SO_RCVTIMEO`); nil blocks forever.
    public func setReceiveTimeout(seconds: Double?) {
        var value = timeval()
        if let seconds {
            value.tv_sec = Int(seconds)
            value.tv_usec = Int((seconds - Double(Int(seconds))) * 1_000_000)
        }
        _ = setsockopt(fileDescriptor, SOL_SOCKET, SO_RCVTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
    }

    public func send(_ bytes: [UInt8]) throws(NetlinkError) {
        while true {
            let sent = bytes.withUnsafeBytes { mnl_socket_sendto(handle, $0.baseAddress, $0.count) }
            if sent >= 0 { return }
            if Glibc.errno == EINTR { continue }
            throw NetlinkError(kind: .system, operation: "send netlink request", errno: Glibc.errno)
        }
    }

    public func receive() throws(NetlinkError) -> [UInt8] {
        while true {
            let received = mnl_socket_recvfrom(handle, receiveBuffer.baseAddress, receiveBuffer.count)
            if received >= 0 {
                return Array(UnsafeRawBufferPointer(rebasing: receiveBuffer[0..<received]))
            }
            let code = Glibc.errno
            switch code {
            case EINTR: continue
            case ENOBUFS:
                throw NetlinkError(kind: .overrun, operation: "receive netlink messages", errno: code)
            case ENOSPC:
                throw NetlinkError(
                    kind: .malformed, operation: "receive netlink messages", errno: code,
                    detail: "a datagram was larger than \(Self.datagramCapacity) bytes and was truncated")
            default:
                throw NetlinkError(kind: .system, operation: "receive netlink messages", errno: code)
            }
        }
    }
}

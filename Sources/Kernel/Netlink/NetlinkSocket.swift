import CMnl
import Glibc
import LinkcondSystem
import Synchronization

/// How a ``NetlinkConnection`` moves bytes: a real libmnl socket, or a fake in tests (so the framing,
/// sequence checks and error decoding run unchanged in unit tests).
public protocol NetlinkTransport: AnyObject {
    /// The port id the kernel assigned to this socket.
    var portID: UInt32 { get }
    /// Sends one datagram (one request, or a batch of requests laid end to end).
    func send(_ bytes: [UInt8]) throws(NetlinkError)
    /// Receives one datagram (blocking).
    func receive() throws(NetlinkError) -> [UInt8]
    /// Receives one datagram (blocking) and hands its bytes to `body` where they lie, valid only during the
    /// call. The default copies what ``receive()`` returns; a socket lends its own buffer.
    func receiveInPlace(_ body: (UnsafeRawBufferPointer) throws(NetlinkError) -> Void) throws(NetlinkError)
}

extension NetlinkTransport {
    public func receiveInPlace(_ body: (UnsafeRawBufferPointer) throws(NetlinkError) -> Void) throws(NetlinkError) {
        let datagram = try receive()
        try datagram.withUnsafeBytes { bytes in Result { () throws(NetlinkError) in try body(bytes) } }.get()
    }
}

/// A libmnl netlink socket, owned: opened on init, closed on deinit.
///
/// - The socket is close-on-exec (opened by `LinkcondSystem` with `SOCK_CLOEXEC`, then handed to libmnl
///   with `mnl_socket_fdopen`), so processes linkcond starts (the sandbox server, `linkcond exec`) never
///   inherit it.
/// - The port id is chosen by the kernel (`MNL_SOCKET_AUTOPID`), never the process id, so several sockets
///   can coexist in one process.
/// - Extended acks (`NETLINK_EXT_ACK`) and capped acks (`NETLINK_CAP_ACK`) are on, so refusals carry the
///   kernel's explanation and acks do not echo the whole request back.
/// - Datagrams are read into a 64 KiB buffer — dumps can be larger than a page — and the socket's receive
///   buffer is raised so that bursts of events are not lost.
///
/// A socket belongs to the network namespace of the thread that opened it, for its whole life; open one
/// inside a namespace with `NetNamespace`'s socket factory and adopt it (``init(adopting:receiveBufferBytes:)``). There is no `ip`/`tc` equivalent: every `ip` and
/// `tc` command opens one of these (`rtnl_open`).
public final class NetlinkSocket: NetlinkTransport, @unchecked Sendable {
    // @unchecked: `handle` is set once and every libmnl call on it is a system call on its descriptor,
    // safe from any thread; the one piece of mutable state, the receive buffer, is behind a Mutex.
    private let handle: OpaquePointer
    /// The port id the kernel assigned (`nl_pid` of the bound address).
    public let portID: UInt32
    private let receiveBuffer: Mutex<ReceiveBuffer>

    /// Memory a datagram is received into, owned by one socket and used by one receiver at a time.
    private struct ReceiveBuffer: ~Copyable {
        let storage: UnsafeMutableRawBufferPointer
        init(capacity: Int) { storage = .allocate(byteCount: capacity, alignment: 8) }
        deinit { storage.deallocate() }
    }

    /// The receive buffer size used for each datagram.
    public static let datagramCapacity = 65_536

    /// Opens and binds a close-on-exec socket of `family` (default `NETLINK_ROUTE`) in the calling thread's
    /// namespace, joined to no multicast group, with a kernel receive buffer of `receiveBufferBytes`.
    public convenience init(family: Int32 = NETLINK_ROUTE, receiveBufferBytes: Int32 = 1 << 20) throws(NetlinkError) {
        let socket: OwnedSocket
        do {
            socket = try OwnedSocket.open(.netlink(bus: family))
        } catch {
            throw NetlinkError(kind: .system, operation: "open netlink socket", errno: error.errno.rawValue)
        }
        try self.init(adopting: socket, receiveBufferBytes: receiveBufferBytes)
    }

    /// Takes over `socket` — an `AF_NETLINK` socket, opened where it is to work (see `NetNamespace`) — and
    /// binds it with a port id the kernel picks, with a kernel receive buffer of `receiveBufferBytes`.
    public init(adopting socket: consuming OwnedSocket, receiveBufferBytes: Int32 = 1 << 20) throws(NetlinkError) {
        let descriptor = socket.release()
        guard let handle = mnl_socket_fdopen(descriptor.rawValue) else {
            let code = Glibc.errno
            try? descriptor.close()
            throw NetlinkError(kind: .system, operation: "open netlink socket", errno: code)
        }
        self.handle = handle
        if mnl_socket_bind(handle, 0, pid_t(MNL_SOCKET_AUTOPID)) < 0 {
            let code = Glibc.errno
            mnl_socket_close(handle)
            throw NetlinkError(kind: .system, operation: "bind netlink socket", errno: code)
        }
        portID = mnl_socket_get_portid(handle)
        receiveBuffer = Mutex(ReceiveBuffer(capacity: Self.datagramCapacity))
        var one: Int32 = 1
        // Both are best effort: kernels older than 4.12 lack EXT_ACK; errors then carry only errno.
        _ = mnl_socket_setsockopt(handle, NETLINK_EXT_ACK, &one, socklen_t(MemoryLayout<Int32>.size))
        _ = mnl_socket_setsockopt(handle, NETLINK_CAP_ACK, &one, socklen_t(MemoryLayout<Int32>.size))
        try? descriptor.setOption(.receiveBuffer, receiveBufferBytes)
    }

    deinit {
        mnl_socket_close(handle)
    }

    /// The socket's file descriptor (for poll/select; owned by this object).
    public var fileDescriptor: Int32 { mnl_socket_get_fd(handle) }

    /// The socket, typed (owned by this object: never close it).
    public var socket: SocketDescriptor { SocketDescriptor(rawValue: fileDescriptor) }

    /// True when the descriptor has `FD_CLOEXEC` set (it always should).
    public var isCloseOnExec: Bool { (try? socket.fileDescriptor.isCloseOnExec()) ?? false }

    /// Joins a multicast group, e.g. `RTNLGRP_LINK` (`NETLINK_ADD_MEMBERSHIP`); what `ip monitor` does.
    public func join(group: UInt32) throws(NetlinkError) {
        var value = group
        if mnl_socket_setsockopt(handle, NETLINK_ADD_MEMBERSHIP, &value, socklen_t(MemoryLayout<UInt32>.size)) < 0 {
            throw NetlinkError(kind: .system, operation: "join netlink group \(group)", errno: Glibc.errno)
        }
    }

    /// Sets how long ``receive()`` may block before failing with `EAGAIN` (`SO_RCVTIMEO`); nil blocks forever.
    public func setReceiveTimeout(seconds: Double?) {
        try? socket.setTimeout(seconds: seconds)
    }

    /// Sends one datagram to the kernel (`mnl_socket_sendto`), retrying on `EINTR`.
    public func send(_ bytes: [UInt8]) throws(NetlinkError) {
        do throws(Errno) {
            _ = try retryOnInterrupt { bytes.withUnsafeBytes { mnl_socket_sendto(handle, $0.baseAddress, $0.count) } }
        } catch {
            throw NetlinkError(kind: .system, operation: "send netlink request", errno: error.rawValue)
        }
    }

    /// Receives one datagram (`mnl_socket_recvfrom`), retrying on `EINTR`. Concurrent receivers take
    /// turns on the buffer; each gets whole datagrams.
    public func receive() throws(NetlinkError) -> [UInt8] {
        var datagram: [UInt8] = []
        try receiveInPlace { bytes in datagram = Array(bytes) }
        return datagram
    }

    /// Receives one datagram into the socket's own buffer and hands it to `body` there (no copy). The buffer
    /// stays locked during the call, so concurrent receivers still get whole datagrams each.
    public func receiveInPlace(_ body: (UnsafeRawBufferPointer) throws(NetlinkError) -> Void) throws(NetlinkError) {
        try receiveBuffer.withLock { (buffer: inout ReceiveBuffer) throws(NetlinkError) -> Void in
            let received: Int
            do throws(Errno) {
                received = try retryOnInterrupt { mnl_socket_recvfrom(handle, buffer.storage.baseAddress, buffer.storage.count) }
            } catch .noBufferSpace {
                throw NetlinkError(kind: .overrun, operation: "receive netlink messages", errno: ENOBUFS)
            } catch .noSpace {
                throw NetlinkError(
                    kind: .malformed, operation: "receive netlink messages", errno: ENOSPC,
                    detail: "a datagram was larger than \(Self.datagramCapacity) bytes and was truncated")
            } catch {
                throw NetlinkError(kind: .system, operation: "receive netlink messages", errno: error.rawValue)
            }
            try body(UnsafeRawBufferPointer(rebasing: buffer.storage[0..<received]))
        }
    }
}

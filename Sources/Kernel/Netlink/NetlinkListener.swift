import CMnl
import LinkcondSystem

/// A socket joined to multicast groups, for following kernel notifications. Equivalent to the socket
/// `ip monitor` listens on.
public final class NetlinkListener: Sendable {
    /// The underlying socket (its descriptor can be polled).
    public let socket: NetlinkSocket

    /// Opens a close-on-exec `NETLINK_ROUTE` socket in the calling thread's namespace and joins `groups`
    /// (e.g. `RTNLGRP_LINK`, `RTNLGRP_IPV4_IFADDR`). Equivalent to `ip monitor link address route`.
    public init(groups: [UInt32]) throws(NetlinkError) {
        socket = try NetlinkSocket(receiveBufferBytes: 4 << 20)
        for group in groups { try socket.join(group: group) }
    }

    /// Takes over `socket` — a `NETLINK_ROUTE` socket opened where the notifications are to come from
    /// (see `NetNamespace`) — and joins `groups`.
    public init(adopting socket: consuming OwnedSocket, groups: [UInt32]) throws(NetlinkError) {
        self.socket = try NetlinkSocket(adopting: socket, receiveBufferBytes: 4 << 20)
        for group in groups { try self.socket.join(group: group) }
    }

    /// Waits for the next datagram of notifications and decodes it. Throws kind `.overrun` when the kernel
    /// dropped notifications (`ENOBUFS`): the listener's picture is stale and must be rebuilt from a dump.
    public func receive() throws(NetlinkError) -> [NetlinkMessage] {
        try NetlinkMessage.parse(datagram: try socket.receive())
    }
}

import LinkcondSystem
import Netlink

/// A subscription to the kernel's link notifications (`RTNLGRP_LINK`): what `ip monitor link` listens to.
///
/// Poll ``readinessDescriptor`` for `POLLIN`; when it is readable, ``drain()`` reads every queued
/// notification without blocking. A burst that overran the socket (the kernel dropped notifications) says
/// so: a follower that keeps a picture of the links must then read them afresh.
///
/// ```swift
/// let notifications = try LinkNotifications(adopting: try NamedNamespace.openSocket(.routeNetlink, in: wire))
/// // poll(notifications.readinessDescriptor) …
/// let burst = try notifications.drain()            // then burst.notifications(), when the content matters
/// ```
public final class LinkNotifications: Sendable {
    private let listener: NetlinkListener

    /// Takes over `socket` — a `NETLINK_ROUTE` socket opened in the namespace whose links are to be followed
    /// (`NetNamespace`'s socket factory) — joins `RTNLGRP_LINK` and makes the socket non-blocking.
    public init(adopting socket: consuming OwnedSocket) throws(RouteNetlinkError) {
        do throws(NetlinkError) {
            listener = try NetlinkListener(adopting: socket, groups: [RouteNetlinkGroup.link.rawValue])
        } catch {
            throw .netlink(error)
        }
        do throws(SystemError) {
            try listener.socket.socket.fileDescriptor.setNonBlocking()
        } catch {
            throw .netlink(NetlinkError(kind: .system, operation: "ip monitor link: \(error.operation)", errno: error.errno.rawValue))
        }
    }

    /// Readable (`POLLIN`) while notifications wait to be drained. Owned by the subscription: never close it.
    public var readinessDescriptor: FileDescriptor { listener.socket.socket.fileDescriptor }

    /// What one ``drain()`` read: the messages as they came, decoded only when asked (a follower that
    /// reads the state afresh after every burst never pays for it).
    public struct Burst: Sendable, Equatable {
        /// The notifications' messages, in the order the kernel sent them.
        public var messages: [NetlinkMessage] = []
        /// True when the kernel dropped notifications (`ENOBUFS`) since the last drain: the current state
        /// must be read afresh, as what was received is not the whole story.
        public var overrun = false

        /// A burst of `messages`, which did or did not overrun.
        public init(messages: [NetlinkMessage] = [], overrun: Bool = false) {
            self.messages = messages
            self.overrun = overrun
        }

        /// True when nothing was read and nothing was lost.
        public var isEmpty: Bool { messages.isEmpty && !overrun }

        /// The link notifications decoded (``RouteNotification/newLink(_:)``, ``RouteNotification/deletedLink(_:)``).
        public func notifications() throws(RouteNetlinkError) -> [RouteNotification] {
            var decoded: [RouteNotification] = []
            for message in messages {
                if let notification = try RouteNotification.decode(message) { decoded.append(notification) }
            }
            return decoded
        }
    }

    /// Reads every notification queued now, without waiting for more.
    public func drain() throws(RouteNetlinkError) -> Burst {
        var burst = Burst()
        while true {
            do throws(NetlinkError) {
                burst.messages += try listener.receive()
            } catch where error.kind == .overrun {
                burst.overrun = true
            } catch where error.errno == Errno.wouldBlock.rawValue {
                return burst
            } catch {
                throw .netlink(error)
            }
        }
    }
}

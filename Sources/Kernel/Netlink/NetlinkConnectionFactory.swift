/// Yields the connection to use for a network namespace, by name (nil: the caller's own namespace).
///
/// Higher layers take a factory instead of opening sockets themselves, so that unit tests can hand them
/// connections over a fake transport, and so that a factory can keep one open socket per namespace
/// across operations (opening a socket inside a namespace costs a thread and a `setns`). There is no
/// `ip`/`tc` equivalent: `ip -n NAME` opens a socket in NAME for each command.
public protocol NetlinkConnectionFactory: Sendable {
    /// The connection for `namespace`; the same one on every call while it stays valid.
    func connection(namespace: String?) throws(NetlinkError) -> NetlinkConnection

    /// Forgets the connection of `namespace` (after the namespace went away, or a transport failed), so
    /// the next ``connection(namespace:)`` opens a new one.
    func discard(namespace: String?)
}

extension NetlinkConnectionFactory {
    /// Factories that keep nothing have nothing to forget.
    public func discard(namespace: String?) {}
}

/// A factory that always hands out the same connection, whatever the namespace: for code that talks to
/// one namespace, and for tests that script one fake transport.
public struct SingleConnectionFactory: NetlinkConnectionFactory {
    /// The connection handed out.
    public let connection: NetlinkConnection

    /// A factory for `connection`.
    public init(_ connection: NetlinkConnection) {
        self.connection = connection
    }

    /// ``connection`` itself, for any namespace.
    public func connection(namespace: String?) throws(NetlinkError) -> NetlinkConnection { connection }
}

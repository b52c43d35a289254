import Glibc
import NetNamespace
import Netlink
import Synchronization

/// Netlink connections to named namespaces, opened once and kept open: a ``NetlinkConnectionFactory``
/// for the netem backend (and anyone who switches conditions often).
///
/// Opening a socket inside a namespace costs a fresh thread and a `setns`; a kept socket costs nothing.
/// A kept socket stays bound to the namespace it was opened in even after that namespace's name was
/// removed and a new namespace created under it (`linkcond down` then `up`), so each hand-out compares
/// the identity of `/run/netns/NAME` (its device and inode, one `stat`) with the one the socket was opened
/// in, and opens a new socket when they differ. A kept socket also keeps its namespace alive: drop the
/// pool (or ``discard(namespace:)``) when done with a sandbox.
public final class NamespaceConnectionPool: NetlinkConnectionFactory {
    private struct Entry {
        let connection: NetlinkConnection
        let identity: Identity?
    }

    private struct Identity: Equatable {
        let device: UInt64
        let inode: UInt64
    }

    private let entries = Mutex<[String: Entry]>([:])

    /// An empty pool; connections are opened on first use.
    public init() {}

    /// The open connection of `namespace` (nil: this process's own namespace), opened now when there is
    /// none yet or when the namespace under that name is not the one it was opened in. Throws a
    /// `.system` error with `ENOENT` when the namespace does not exist.
    public func connection(namespace: String?) throws(NetlinkError) -> NetlinkConnection {
        let key = namespace ?? ""
        let identity = try namespace.map { name throws(NetlinkError) in try Self.identity(of: name) }
        return try entries.withLock { (entries: inout [String: Entry]) throws(NetlinkError) -> NetlinkConnection in
            if let entry = entries[key], entry.identity == identity { return entry.connection }
            let connection = try Self.open(namespace)
            entries[key] = Entry(connection: connection, identity: identity)
            return connection
        }
    }

    /// Closes the kept connection of `namespace`, if any.
    public func discard(namespace: String?) {
        _ = entries.withLock { $0.removeValue(forKey: namespace ?? "") }
    }

    /// The namespaces with a kept connection (nil-namespace written as "").
    public var openNamespaces: [String] { entries.withLock { Array($0.keys).sorted() } }

    private static func identity(of name: String) throws(NetlinkError) -> Identity {
        var status = stat()
        guard stat("\(NamedNamespace.runDirectory)/\(name)", &status) == 0 else {
            throw NetlinkError(kind: .system, operation: "open a netlink socket in \(name)", errno: errno)
        }
        return Identity(device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
    }

    private static func open(_ namespace: String?) throws(NetlinkError) -> NetlinkConnection {
        guard let namespace else { return try NetlinkConnection() }
        do {
            return try NamedNamespace(existing: namespace).openNetlinkConnection()
        } catch {
            switch error {
            case let .netlink(inner): throw inner
            case .notFound: throw NetlinkError(kind: .system, operation: "open a netlink socket in \(namespace)", errno: ENOENT)
            default: throw NetlinkError(kind: .system, operation: "open a netlink socket in \(namespace)", errno: EIO, detail: "\(error)")
            }
        }
    }
}

import LinkcondSystem
import Netlink

/// The socket factory: the one way linkcond opens a socket inside a network namespace.
///
/// Only `socket(2)` runs in the namespace, on a fresh thread that joined it and ends afterwards (see
/// ``NamespaceThread``); the socket stays bound to that namespace for its whole life and is configured,
/// bound and used from any thread. Sockets are close-on-exec (``SocketDescriptor/open(_:nonBlocking:closeOnExec:)``)
/// and owned by the caller (``OwnedSocket``). Equivalent to the sockets a program gets under
/// `ip netns exec NAME`.
///
/// ```swift
/// let udp = try client.openSocket(.udp(.inet))                        // in lc-client
/// let raw = try NamedNamespace.openSocket(.packet, in: wireOrNil)     // nil: the calling thread's own
/// let links = try NamedNamespace.openNetlinkConnection(in: wireOrNil)
/// ```
extension NamedNamespace {
    /// Opens a socket of `kind` inside this namespace.
    public func openSocket(_ kind: SocketKind, nonBlocking: Bool = false) throws(NamespaceError) -> OwnedSocket {
        try Self.openSocket(kind, in: self, nonBlocking: nonBlocking)
    }

    /// Opens a socket of `kind` inside `namespace`, or in the calling thread's own namespace when it is nil
    /// (no thread is started then).
    public static func openSocket(_ kind: SocketKind, in namespace: NamedNamespace?, nonBlocking: Bool = false) throws(NamespaceError) -> OwnedSocket {
        var batch = try openSockets([kind], in: namespace, nonBlocking: nonBlocking)
        return batch.take(0)!
    }

    /// Opens one socket of each of `kinds` inside `namespace` (nil: the calling thread's own), all from one
    /// thread — starting a thread and joining the namespace is most of the cost of a socket there — and
    /// all or nothing: when one cannot be opened, those already open are closed and the error thrown.
    public static func openSockets(_ kinds: [SocketKind], in namespace: NamedNamespace?, nonBlocking: Bool = false) throws(NamespaceError) -> SocketBatch {
        let place = namespace.map { " in \($0.name)" } ?? ""
        let open = { () throws(NamespaceError) -> [SocketDescriptor] in
            var opened: [SocketDescriptor] = []
            do throws(SystemError) {
                for kind in kinds { opened.append(try SocketDescriptor.open(kind, nonBlocking: nonBlocking)) }
                return opened
            } catch {
                for socket in opened { try? socket.close() }
                throw .system(operation: error.operation + place, errno: error.errno.rawValue)
            }
        }
        guard let namespace else { return SocketBatch(try open()) }
        do {
            return SocketBatch(try NamespaceThread.run(inNamespaceAt: namespace.path) { () throws(NamespaceError) in try open() })
        } catch let error as NamespaceError {
            throw error
        } catch {
            throw .system(operation: "open sockets\(place)", errno: Errno.ioError.rawValue)
        }
    }

    /// Opens one socket of `kind` in each of `namespaces`, all from one thread that joins them in turn; a
    /// namespace that cannot be joined (or refuses the socket) gets none: its slot of the batch is empty.
    public static func openSockets(_ kind: SocketKind, inEach namespaces: [NamedNamespace]) -> SocketBatch {
        var opened = [SocketDescriptor?](repeating: nil, count: namespaces.count)
        try? NamespaceThread.run(
            inEachNamespaceAt: namespaces.map(\.path), { opened[$0] = try SocketDescriptor.open(kind) }, failed: { _, _ in })
        return SocketBatch(opened)
    }

    /// Opens a socket of `kind` in a brand-new network namespace of its own (`unshare(CLONE_NEWNET)` on a
    /// fresh thread), which lives exactly as long as the socket: for trying what the kernel allows without
    /// touching any namespace in use. The namespace has only `lo`, down.
    public static func openSocketInNewNamespace(_ kind: SocketKind) throws(NamespaceError) -> OwnedSocket {
        do {
            return OwnedSocket(try NamespaceThread.runInNewNamespace { () throws(NamespaceError) in
                do throws(SystemError) {
                    return try SocketDescriptor.open(kind)
                } catch {
                    throw .system(operation: error.operation + " in a new namespace", errno: error.errno.rawValue)
                }
            })
        } catch let error as NamespaceError {
            throw error
        } catch {
            throw .system(operation: "open a socket in a new namespace", errno: Errno.ioError.rawValue)
        }
    }

    /// Opens a `NETLINK_ROUTE` connection bound to this namespace (usable from any thread afterwards): the
    /// socket `ip -n NAME` opens.
    public func openNetlinkConnection() throws(NamespaceError) -> NetlinkConnection {
        try Self.openNetlinkConnection(in: self)
    }

    /// Opens a `NETLINK_ROUTE` connection bound to `namespace`, or to the calling thread's own when nil.
    public static func openNetlinkConnection(in namespace: NamedNamespace?) throws(NamespaceError) -> NetlinkConnection {
        let socket = try openSocket(.routeNetlink, in: namespace)
        do {
            return try NetlinkConnection(adopting: socket)
        } catch {
            throw .netlink(error)
        }
    }

    /// Opens a `NETLINK_ROUTE` connection in each of `namespaces`, all from one thread (see
    /// ``openSockets(_:inEach:)``); nil where it could not be opened.
    public static func openNetlinkConnections(_ namespaces: [NamedNamespace]) -> [NetlinkConnection?] {
        var batch = openSockets(.routeNetlink, inEach: namespaces)
        var connections: [NetlinkConnection?] = []
        for index in namespaces.indices {
            if let socket = batch.take(index) {
                connections.append(try? NetlinkConnection(adopting: socket))
            } else {
                connections.append(nil)
            }
        }
        return connections
    }
}

/// Sockets the factory opened together. Each is taken out once by its new owner (``take(_:)``); those
/// never taken are closed when the batch goes away, so none leaks when a caller gives up half way.
public struct SocketBatch: ~Copyable {
    private var sockets: [SocketDescriptor?]

    init(_ sockets: [SocketDescriptor?]) {
        self.sockets = sockets
    }

    /// How many slots the batch has: one per kind (or namespace) asked for.
    public var count: Int { sockets.count }

    /// The socket in slot `index`, now owned by the caller; nil when it was not opened or is taken already.
    public mutating func take(_ index: Int) -> OwnedSocket? {
        guard let socket = sockets[index] else { return nil }
        sockets[index] = nil
        return OwnedSocket(socket)
    }

    deinit {
        for case let socket? in sockets { try? socket.close() }
    }
}

import Glibc

/// A file descriptor with exactly one owner, which closes it when it goes away (`deinit`): for holders
/// that must never close twice nor leak. It cannot be copied; hand it on with `consume`, give it up with
/// ``release()``, or close it early with ``close()``. Bind it to a name before calling through
/// ``descriptor``: a temporary owner closes the descriptor as soon as ``descriptor`` has been read.
///
/// ```swift
/// let file = OwnedFileDescriptor(try FileDescriptor.open(path, .readOnly))
/// let bytes = try file.descriptor.readToEnd()
/// // closed here
/// ```
public struct OwnedFileDescriptor: ~Copyable, Sendable {
    /// The descriptor, for calls; valid while this value lives.
    public let descriptor: FileDescriptor

    /// Takes ownership of `descriptor`: it is closed when this value goes away.
    public init(_ descriptor: FileDescriptor) {
        self.descriptor = descriptor
    }

    /// Opens `path` as ``FileDescriptor/open(_:_:options:permissions:closeOnExec:retryOnInterrupt:)`` does,
    /// owned.
    public static func open(
        _ path: String, _ mode: FileDescriptor.AccessMode, options: FileDescriptor.OpenOptions = [], permissions: mode_t = 0o644
    ) throws(SystemError) -> OwnedFileDescriptor {
        OwnedFileDescriptor(try FileDescriptor.open(path, mode, options: options, permissions: permissions))
    }

    /// Closes the descriptor now and reports a failure of `close(2)`, which `deinit` cannot.
    public consuming func close() throws(SystemError) {
        let descriptor = self.descriptor
        discard self
        try descriptor.close()
    }

    /// Gives up ownership without closing: the caller now owns the returned descriptor.
    public consuming func release() -> FileDescriptor {
        let descriptor = self.descriptor
        discard self
        return descriptor
    }

    deinit {
        try? descriptor.close()
    }
}

/// A socket with exactly one owner, which closes it when it goes away (`deinit`). It cannot be copied; hand
/// it on with `consume` (a netlink socket, a listener adopt one this way), give it up with ``release()``,
/// or close it early with ``close()``.
///
/// Bind it to a name before calling through ``socket``: in `try factory().socket.connect(…)` the
/// temporary owner goes away — closing the socket — as soon as ``socket`` has been read.
public struct OwnedSocket: ~Copyable, Sendable {
    /// The socket, for calls; valid while this value lives.
    public let socket: SocketDescriptor

    /// Takes ownership of `socket`: it is closed when this value goes away.
    public init(_ socket: SocketDescriptor) {
        self.socket = socket
    }

    /// Opens a socket of `kind` in the calling thread's network namespace, as
    /// ``SocketDescriptor/open(_:nonBlocking:closeOnExec:)`` does, owned.
    public static func open(_ kind: SocketKind, nonBlocking: Bool = false) throws(SystemError) -> OwnedSocket {
        OwnedSocket(try SocketDescriptor.open(kind, nonBlocking: nonBlocking))
    }

    /// Closes the socket now and reports a failure of `close(2)`, which `deinit` cannot.
    public consuming func close() throws(SystemError) {
        let socket = self.socket
        discard self
        try socket.close()
    }

    /// Gives up ownership without closing: the caller now owns the returned socket.
    public consuming func release() -> SocketDescriptor {
        let socket = self.socket
        discard self
        return socket
    }

    deinit {
        try? socket.close()
    }
}

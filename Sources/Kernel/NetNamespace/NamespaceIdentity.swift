import CMnl
import Glibc
import LinkcondSystem

/// Which network namespace a file refers to: the device and inode of its nsfs file, the same however the
/// namespace is reached (`/run/netns/NAME`, `/proc/PID/ns/net`, an open descriptor of either). Two paths
/// with the same identity are the same namespace; `ip netns identify` compares the same numbers.
public struct NamespaceIdentity: Hashable, Sendable, CustomStringConvertible {
    /// `st_dev` of the nsfs file.
    public var device: UInt64
    /// `st_ino` of the nsfs file: the number `readlink /proc/PID/ns/net` shows as `net:[INODE]`.
    public var inode: UInt64

    /// An identity with these numbers (as a state file recorded them).
    public init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }

    /// The identity of the namespace at `path`; nil when there is no such file.
    public init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        self.init(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    /// The identity of the namespace open as `descriptor`.
    public init(descriptor: FileDescriptor) throws(NamespaceError) {
        var info = stat()
        guard fstat(descriptor.rawValue, &info) == 0 else { throw .system(operation: "fstat a namespace descriptor", errno: errno) }
        self.init(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    /// `net:[INODE]`, as `/proc/PID/ns/net` reads.
    public var description: String { "net:[\(inode)]" }

    /// The initial namespace, the host's own: that of the system's first process (`/proc/1/ns/net`), or —
    /// where pid 1 may not be looked at (a process with more capabilities than this one) — that of
    /// `kthreadd` (pid 2), whose kernel threads always live in it.
    public static var initial: NamespaceIdentity? {
        if let first = NamespaceIdentity(path: "/proc/1/ns/net") { return first }
        guard let name = try? FileDescriptor.open("/proc/2/comm", .readOnly), let bytes = name.closeAfter({ try? name.readToEnd(maximumCount: 32) }),
            String(decoding: bytes, as: UTF8.self).hasPrefix("kthreadd")
        else { return nil }
        return NamespaceIdentity(path: "/proc/2/ns/net")
    }

    /// The namespace this process runs in (`/proc/self/ns/net`).
    public static var current: NamespaceIdentity? { NamespaceIdentity(path: "/proc/self/ns/net") }

    /// True when the file open as `descriptor` is a network namespace (`ioctl NS_GET_NSTYPE` says
    /// `CLONE_NEWNET`), however it was reached: `/proc/PID/ns/net`, a bind mount of one.
    public static func isNetworkNamespace(_ descriptor: FileDescriptor) -> Bool {
        cmnl_namespace_type(descriptor.rawValue) == cmnl_clone_newnet()
    }
}

extension NamedNamespace {
    /// The identity of this named namespace; nil when its name is gone.
    public var identity: NamespaceIdentity? { NamespaceIdentity(path: path) }

    /// Gives the namespace open as `descriptor` the name `name`: `/run/netns/NAME` is created and the
    /// namespace bind-mounted onto it, so it can be reached by name (and lives on) until the name is deleted.
    /// Equivalent to `ip netns attach NAME PID`, for a namespace held open rather than a pid. Refuses a
    /// descriptor that is not a network namespace, and a name that exists already.
    public static func bind(_ name: String, to descriptor: FileDescriptor) throws(NamespaceError) -> NamedNamespace {
        try validate(name)
        guard NamespaceIdentity.isNetworkNamespace(descriptor) else {
            throw .system(operation: "name the namespace \(name): the descriptor is not a network namespace", errno: EINVAL)
        }
        let namespace = try makeMountPoint(name)
        let path = namespace.path
        if mount("/proc/self/fd/\(descriptor.rawValue)", path, "none", UInt(MS_BIND), nil) != 0 {
            let code = errno
            unlink(path)
            throw .system(operation: "bind-mount the namespace onto \(path)", errno: code)
        }
        return namespace
    }
}

import Glibc

/// Which namespace a name refers to now: the device and inode of its nsfs file (`stat /run/netns/NAME`). A
/// namespace deleted and made again under the same name has another identity, so a watcher can tell that the
/// one it watched went away.
public struct NamespaceIdentity: Sendable, Equatable {
    /// The nsfs file's device.
    public let device: UInt64
    /// Its inode: the namespace's identity.
    public let inode: UInt64

    /// The identity of the namespace file at `path`; nil when there is none.
    public init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }
}

import CMnl
import Glibc
import LinkcondSystem

/// A named network namespace, kept where iproute2 keeps them (`/run/netns/NAME`), so `ip netns exec NAME`
/// and `ip -n NAME` work on it side by side with linkcond.
public struct NamedNamespace: Sendable, Hashable {
    /// Where named namespaces are bind-mounted (`NETNS_RUN_DIR`).
    public static let runDirectory = "/run/netns"
    /// Where per-namespace configuration lives (`NETNS_ETC_DIR`): files in `/etc/netns/NAME/` are
    /// bind-mounted over `/etc/` for processes started in the namespace.
    public static let etcDirectory = "/etc/netns"

    /// The namespace's name.
    public let name: String

    /// `/run/netns/NAME`.
    public var path: String { "\(Self.runDirectory)/\(name)" }
    /// `/etc/netns/NAME`.
    public var etcPath: String { "\(Self.etcDirectory)/\(name)" }

    /// Refers to an existing namespace; throws ``NamespaceError/notFound(name:)`` when there is none.
    public init(existing name: String) throws(NamespaceError) {
        try Self.validate(name)
        self.name = name
        guard Self.exists(name) else { throw .notFound(name: name) }
    }

    init(unchecked name: String) {
        self.name = name
    }

    static func validate(_ name: String) throws(NamespaceError) {
        let allowed = name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) }
        guard !name.isEmpty, name.count <= 64, allowed, name != ".", name != ".." else {
            throw .invalidName(name)
        }
    }

    /// True when `/run/netns/NAME` exists.
    public static func exists(_ name: String) -> Bool {
        access("\(runDirectory)/\(name)", F_OK) == 0
    }

    /// True when `/run/netns/NAME` holds a namespace (its file is on nsfs, as `stat -L -c %d` of it and of `/proc/self/ns/net` show):
    /// a crash between creating the file and bind-mounting the namespace onto it leaves a plain file, which
    /// ``exists(_:)`` sees but `setns` refuses (EINVAL).
    public var isMounted: Bool {
        // Every namespace file is on the one nsfs: the device of this process's own.
        guard let identity = NamespaceIdentity(path: path), let own = NamespaceIdentity(path: "/proc/self/ns/net") else { return false }
        return identity.device == own.device
    }

    /// The names of every named namespace, sorted. Equivalent to `ip netns list`.
    public static func list() -> [String] {
        guard let directory = opendir(runDirectory) else { return [] }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    /// Creates a named namespace. Equivalent to `ip netns add NAME`.
    ///
    /// As iproute2 does: `/run/netns` is made a shared mount (bind-mounted onto itself first if it is not
    /// a mount point yet), an empty file `/run/netns/NAME` is created, and a fresh thread unshares its
    /// network namespace and bind-mounts `/proc/thread-self/ns/net` onto that file. If anything fails,
    /// nothing is left behind.
    ///
    /// `preparing` runs on that thread, in the new namespace, before it gets its name: what it does (a mark
    /// of ownership, say) is there whenever the name is; when it throws, the namespace is never named.
    public static func create(_ name: String, preparing: (() throws -> Void)? = nil) throws(NamespaceError) -> NamedNamespace {
        let namespace = try makeMountPoint(name)
        let path = namespace.path
        do {
            try NamespaceThread.runInNewNamespace { () throws in
                try preparing?()
                if mount("/proc/thread-self/ns/net", path, "none", UInt(MS_BIND), nil) != 0 {
                    throw NamespaceError.system(operation: "bind-mount the new namespace onto \(path)", errno: errno)
                }
            }
        } catch {
            unlink(path)
            throw error as? NamespaceError ?? .system(operation: "create namespace \(name)", errno: EIO)
        }
        return namespace
    }

    /// Validates `name`, prepares `/run/netns` and creates the empty file `/run/netns/NAME` a namespace is
    /// bind-mounted onto (refusing a name that exists already).
    static func makeMountPoint(_ name: String) throws(NamespaceError) -> NamedNamespace {
        try validate(name)
        try prepareRunDirectory()
        let namespace = NamedNamespace(unchecked: name)
        do {
            try FileDescriptor.open(namespace.path, .readOnly, options: [.create, .exclusiveCreate], permissions: 0).close()
        } catch {
            if error.errno == .fileExists { throw .alreadyExists(name: name) }
            throw .system(operation: "create \(namespace.path)", errno: error.errno.rawValue)
        }
        return namespace
    }

    static func prepareRunDirectory() throws(NamespaceError) {
        if mkdir(runDirectory, 0o755) != 0 && errno != EEXIST {
            throw .system(operation: "create \(runDirectory)", errno: errno)
        }
        var boundOntoItself = false
        while mount("", runDirectory, "none", UInt(MS_SHARED | MS_REC), nil) != 0 {
            let code = errno
            guard code == EINVAL, !boundOntoItself else {
                throw .system(operation: "make \(runDirectory) a shared mount", errno: code)
            }
            if mount(runDirectory, runDirectory, "none", UInt(MS_BIND | MS_REC), nil) != 0 {
                throw .system(operation: "bind-mount \(runDirectory) onto itself", errno: errno)
            }
            boundOntoItself = true
        }
    }

    /// Deletes the namespace's name and its `/etc/netns/NAME` directory. Equivalent to `ip netns del NAME`.
    ///
    /// The namespace itself (and the interfaces in it) disappears when the last process in it exits and
    /// the last descriptor of it is closed.
    public func delete() throws(NamespaceError) {
        if umount2(path, Int32(MNT_DETACH)) != 0 && errno != EINVAL && errno != ENOENT {
            throw .system(operation: "unmount \(path)", errno: errno)
        }
        if unlink(path) != 0 && errno != ENOENT {
            throw .system(operation: "remove \(path)", errno: errno)
        }
        Self.removeTree(etcPath)
    }

    /// Removes whatever is left of a named namespace called `name`: its bind mount and file in
    /// `/run/netns` and its `/etc/netns/NAME` directory, whether or not the namespace still exists (a crash
    /// between creating the file and mounting onto it leaves a plain file). Returns true when anything was there.
    @discardableResult
    public static func removeLeftovers(of name: String) throws(NamespaceError) -> Bool {
        try validate(name)
        let namespace = NamedNamespace(unchecked: name)
        let present = access(namespace.path, F_OK) == 0 || access(namespace.etcPath, F_OK) == 0
        try namespace.delete()
        return present
    }

    /// Writes `/etc/netns/NAME/FILE` (e.g. `resolv.conf`), which processes started with
    /// ``spawn(_:arguments:environment:standardInput:standardOutput:standardError:grouping:)`` see as
    /// `/etc/FILE`.
    public func writeEtcFile(_ file: String, contents: String) throws(NamespaceError) {
        for directory in [Self.etcDirectory, etcPath] where mkdir(directory, 0o755) != 0 && errno != EEXIST {
            throw .system(operation: "create \(directory)", errno: errno)
        }
        let path = "\(etcPath)/\(file)"
        let temporary = path + ".tmp"
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(temporary, .writeOnly, options: [.create, .truncate])
        } catch {
            throw .system(operation: "create \(temporary)", errno: error.errno.rawValue)
        }
        do throws(SystemError) {
            try file.closeAfter { () throws(SystemError) in try file.writeAll(contents.utf8) }
            try FileReplacement.replace(path, with: temporary)
        } catch {
            unlink(temporary)
            throw .system(operation: "write \(path)", errno: error.errno.rawValue)
        }
    }

    private static func removeTree(_ path: String) {
        if let directory = opendir(path) {
            while let entry = readdir(directory) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                }
                if name != "." && name != ".." { unlink("\(path)/\(name)") }
            }
            closedir(directory)
        }
        rmdir(path)
    }

    /// Runs `body` inside the namespace on a dedicated thread that nothing else reuses.
    /// Equivalent in spirit to `ip netns exec NAME`, for code in this process.
    public func run<T>(_ body: () throws -> T) throws -> T {
        try NamespaceThread.run(inNamespaceAt: path, body)
    }

    /// Writes a sysctl of this namespace, e.g. `net/ipv4/ip_forward` = `1`.
    /// Equivalent to `ip netns exec NAME sysctl -w net.ipv4.ip_forward=1`.
    public func setSysctl(_ key: String, _ value: String) throws(NamespaceError) {
        let path = "/proc/sys/" + key.replacingOccurrences(".", with: "/")
        do {
            try run { () throws in
                // /proc/sys/net resolves to the namespace of the thread that opens it.
                let file: FileDescriptor
                do throws(SystemError) {
                    file = try FileDescriptor.open(path, .writeOnly)
                } catch {
                    throw NamespaceError.system(operation: "open \(path) in \(name)", errno: error.errno.rawValue)
                }
                do throws(SystemError) {
                    try file.closeAfter { () throws(SystemError) in try file.writeAll(value.utf8) }
                } catch {
                    throw NamespaceError.system(operation: "write \(path) in \(name)", errno: error.errno.rawValue)
                }
            }
        } catch let error as NamespaceError {
            throw error
        } catch {
            throw .system(operation: "write \(path) in \(name)", errno: EIO)
        }
    }
}

extension String {
    fileprivate func replacingOccurrences(_ target: Character, with replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}

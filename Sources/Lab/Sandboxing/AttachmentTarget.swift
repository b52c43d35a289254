import Glibc
import LinkcondSystem
import NetNamespace

/// What `linkcond attach` conditions: a network namespace the user already has, named one of four ways.
public enum AttachmentTarget: Sendable, Equatable, CustomStringConvertible {
    /// A named namespace in `/run/netns` (`--netns NAME`).
    case namespace(String)
    /// Any namespace file: `/proc/PID/ns/net`, a runtime's netns file (`--netns-path PATH`).
    case namespacePath(String)
    /// The namespace of a process (`--pid PID`).
    case process(Int32)
    /// A container's namespace, found through whichever runtime knows it (`--container ID|NAME`).
    case container(String)

    /// The option that names it, as the user wrote it.
    public var description: String {
        switch self {
        case let .namespace(name): "--netns \(name)"
        case let .namespacePath(path): "--netns-path \(path)"
        case let .process(pid): "--pid \(pid)"
        case let .container(reference): "--container \(reference)"
        }
    }

    /// Finds the namespace and opens it: the descriptor keeps it alive while linkcond works on it. Throws
    /// a sentence saying what was not found.
    public func resolve() throws(SandboxError) -> FoundTarget {
        switch self {
        case let .namespace(name):
            guard !name.isEmpty, !name.contains("/"), name != ".", name != ".." else {
                throw .unsupported(detail: "'\(name)' is not a namespace name (see 'ip netns list'); give a path with --netns-path")
            }
            let path = "\(NamedNamespace.runDirectory)/\(name)"
            return try FoundTarget(self, path: path, description: "network namespace '\(name)'", defaultName: name)
        case let .namespacePath(path):
            return try FoundTarget(self, path: path, description: "the network namespace at \(path)", defaultName: nil)
        case let .process(pid):
            guard pid > 0, let start = ProcessInspector.startTime(pid) else {
                throw .unsupported(detail: "there is no process \(pid) (it never ran, or has exited); nothing was changed")
            }
            let command = Self.command(of: pid)
            var found = try FoundTarget(self, path: "/proc/\(pid)/ns/net", description: "pid \(pid) (\(command))", defaultName: "pid-\(pid)")
            found.record.pid = pid
            found.record.pidStartTime = start
            return found
        case let .container(reference):
            let container = try ContainerRuntimes.find(reference)
            let path = container.namespacePath.flatMap { access($0, F_OK) == 0 ? $0 : nil } ?? "/proc/\(container.pid)/ns/net"
            let described = "container '\(container.name)' (\(container.runtime), \(container.id.prefix(12))): pid \(container.pid), network namespace \(path)"
            var found = try FoundTarget(self, path: path, description: described, defaultName: container.name)
            found.record.pid = container.pid
            found.record.pidStartTime = ProcessInspector.startTime(container.pid)
            found.record.runtime = container.runtime
            found.record.container = container.id
            return found
        }
    }

    /// The command name of `pid` (`/proc/PID/comm`).
    static func command(of pid: Int32) -> String {
        guard let file = try? FileDescriptor.open("/proc/\(pid)/comm", .readOnly),
            let bytes = file.closeAfter({ try? file.readToEnd(maximumCount: 64) })
        else { return "?" }
        return String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: ["\n"])
    }
}

/// A target found and open: its record for the state file, the open namespace, and the name an attachment
/// to it gets unless the user gives one.
public struct FoundTarget: Sendable {
    /// What was found, as the state records it.
    public var record: AttachmentRecord.Target
    /// The namespace, open (close-on-exec) for as long as the value lives; owned by it.
    public let namespace: NamespaceHandle
    /// A name derived from the target: the namespace's or container's name, `pid-PID`; nil when none fits.
    public var defaultName: String?

    init(_ target: AttachmentTarget, path: String, description: String, defaultName: String?) throws(SandboxError) {
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(path, .readOnly)
        } catch {
            let what = error.errno == .noSuchFileOrDirectory ? "does not exist" : "cannot be opened (\(error.errno))"
            throw .unsupported(detail: "\(description): \(path) \(what); nothing was changed")
        }
        let handle = NamespaceHandle(file)
        guard NamespaceIdentity.isNetworkNamespace(file) else {
            throw .unsupported(detail: "\(path) is not a network namespace (expected a file such as /proc/PID/ns/net or /run/netns/NAME); nothing was changed")
        }
        let identity: NamespaceIdentity
        do {
            identity = try NamespaceIdentity(descriptor: file)
        } catch {
            throw .namespace(error)
        }
        namespace = handle
        record = AttachmentRecord.Target(request: target.description, description: description, path: path, identity: identity)
        self.defaultName = defaultName.flatMap(Self.sandboxName)
    }

    /// `name` made a usable attachment name (1 to 20 of [a-z0-9-]), nil when nothing is left of it.
    static func sandboxName(_ name: String) -> String? {
        var text = ""
        for character in name.lowercased() {
            if character.isASCII && (character.isLetter || character.isNumber) { text.append(character) } else if !text.hasSuffix("-") { text.append("-") }
        }
        while text.hasPrefix("-") { text.removeFirst() }
        text = String(text.prefix(20))
        while text.hasSuffix("-") { text.removeLast() }
        return SandboxTopology.isValidName(text) ? text : nil
    }

    /// The path through which code reaches the open namespace (`/proc/self/fd/N`), for as long as this value lives.
    public var path: String { namespace.path }
}

/// An open namespace descriptor, closed when the last copy goes away.
public final class NamespaceHandle: Sendable {
    /// The descriptor.
    public let descriptor: FileDescriptor

    init(_ descriptor: FileDescriptor) {
        self.descriptor = descriptor
    }

    /// `/proc/self/fd/N`: the namespace by path, for code that joins or names it.
    public var path: String { "/proc/self/fd/\(descriptor.rawValue)" }

    deinit { try? descriptor.close() }
}

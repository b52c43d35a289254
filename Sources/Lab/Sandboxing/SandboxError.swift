import Glibc
import NetNamespace
import RouteNetlink

/// The error type of the sandbox and conditioning layers: what went wrong, in which sandbox, and what to do.
public enum SandboxError: Error, Sendable, CustomStringConvertible {
    /// The sandbox name cannot be used.
    case invalidName(String)
    /// No sandbox of that name is up.
    case notUp(name: String)
    /// A namespace operation failed.
    case namespace(NamespaceError)
    /// A netlink request failed (the kernel's words are inside).
    case netlink(RouteNetlinkError)
    /// The state file could not be read or written.
    case state(path: String, detail: String)
    /// The sandbox's server did not start answering in time.
    case serverNotReady(detail: String)
    /// A process the sandbox needs (the server, the engine) did not start or stopped.
    case process(role: String, detail: String)
    /// The user interrupted the operation (Ctrl-C); everything it made was removed again.
    case interrupted
    /// linkcond is not running as root.
    case notRoot
    /// What the kernel (or the engine) holds after applying conditions is not what was sent.
    case conditionsMismatch(site: String, differences: [String])
    /// Another command holds the sandbox's lock and did not let go within `waited` seconds.
    case busy(name: String, holder: SandboxLock.Holder?, waited: Double)
    /// The request cannot be carried out as asked (a link the sandbox does not have, a backend the kernel
    /// lacks…); `detail` says what and what to do.
    case unsupported(detail: String)

    /// ` --name NAME` for hints, empty for the default sandbox.
    public static func nameOption(_ name: String) -> String {
        name == SandboxTopology.defaultName ? "" : " --name \(name)"
    }

    public var description: String {
        switch self {
        case let .invalidName(name):
            "'\(name)' is not a usable sandbox name: use 1 to 20 lowercase letters, digits and '-'"
        case let .notUp(name):
            "sandbox '\(name)' is not up; start it with 'linkcond up\(Self.nameOption(name))'"
        case let .namespace(error): error.description
        case let .netlink(error): error.description
        case let .state(path, detail): "state file \(path): \(detail)"
        case let .serverNotReady(detail): "the sandbox's server did not start: \(detail)"
        case let .process(role, detail): "the sandbox's \(role): \(detail)"
        case .interrupted: "interrupted; everything made so far was removed again"
        case .notRoot: "linkcond needs root to create namespaces and change their links: run it with sudo"
        case let .conditionsMismatch(site, differences):
            "the conditions held on \(site) are not the ones that were sent: \(differences.joined(separator: "; "))"
        case let .busy(name, holder, waited):
            "sandbox '\(name)' is busy: \(holder.map { "\($0)" } ?? "another linkcond command") has held it for more than \(Int(waited)) s; try again when it has finished"
        case let .unsupported(detail): detail
        }
    }

    /// True for ``interrupted``.
    public var isInterrupted: Bool {
        if case .interrupted = self { return true }
        return false
    }
}

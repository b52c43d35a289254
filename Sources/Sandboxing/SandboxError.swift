import Glibc
import NetNamespace
import RouteNetlink

/// The error type of the conditioning layer: what went wrong, in which sandbox, and what to do.
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
    /// The user interrupted the operation (Ctrl-C); everything it made was removed again.
    case interrupted
    /// linkcond is not running as root.
    case notRoot
    /// What the kernel holds after applying conditions is not what was sent.
    case conditionsMismatch(site: String, differences: [String])

    public var description: String {
        switch self {
        case let .invalidName(name):
            "'\(name)' is not a usable sandbox name: use 1 to 20 lowercase letters, digits and '-'"
        case let .notUp(name):
            "sandbox '\(name)' is not up; start it with 'linkcond up\(name == SandboxTopology.defaultName ? "" : " --name \(name)")'"
        case let .namespace(error): error.description
        case let .netlink(error): error.description
        case let .state(path, detail): "state file \(path): \(detail)"
        case let .serverNotReady(detail): "the sandbox's server did not start: \(detail)"
        case .interrupted: "interrupted; everything made so far was removed again"
        case .notRoot: "linkcond needs root to create namespaces and change their links: run it with sudo"
        case let .conditionsMismatch(site, differences):
            "the kernel does not hold the conditions that were sent on \(site): \(differences.joined(separator: "; "))"
        }
    }
}

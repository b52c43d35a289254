import Glibc
import Netlink

/// The error type of the namespace layer.
public enum NamespaceError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A system call failed: what was being done, and the errno.
    case system(operation: String, errno: Int32)
    /// No named namespace of that name exists.
    case notFound(name: String)
    /// A named namespace of that name exists already.
    case alreadyExists(name: String)
    /// The name cannot be used for a namespace.
    case invalidName(String)
    /// A netlink call made inside the namespace failed.
    case netlink(NetlinkError)
    /// A program to run could not be found.
    case executableNotFound(String)
    /// The program could not be executed (`execve` failed: not found, not executable, a bad format).
    case cannotExecute(program: String, errno: Int32)

    public var description: String {
        switch self {
        case let .system(operation, code):
            var text = "\(operation): \(String(cString: strerror(code)))"
            if code == EPERM || code == EACCES { text += "; linkcond needs root (run it with sudo)" }
            return text
        case let .notFound(name): return "network namespace '\(name)' does not exist (see 'ip netns list')"
        case let .alreadyExists(name): return "network namespace '\(name)' exists already"
        case let .invalidName(name):
            return "'\(name)' is not a usable namespace name (1 to 64 characters: letters, digits, '-', '_', '.')"
        case let .netlink(error): return error.description
        case let .executableNotFound(name): return "\(name): command not found"
        case let .cannotExecute(program, code): return "\(program): \(String(cString: strerror(code)))"
        }
    }
}

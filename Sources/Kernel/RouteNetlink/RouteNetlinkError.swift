import Netlink

/// The error type of the typed rtnetlink layer.
public enum RouteNetlinkError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kernel refused a request or a netlink call failed; carries the kernel's extended-ack text.
    case netlink(NetlinkError)
    /// No interface of that name exists in the namespace.
    case noSuchInterface(name: String, namespace: String)
    /// A reply from the kernel could not be decoded as the object it claims to be.
    case malformed(what: String, detail: String)
    /// An argument cannot be sent (e.g. an interface name longer than 15 bytes).
    case invalidArgument(String)

    /// The kernel's errno, when the kernel refused.
    public var errno: Int32? {
        if case let .netlink(error) = self, error.kind == .kernel { return error.errno }
        return nil
    }

    /// The text `ip`/`tc` would show for it.
    public var description: String {
        switch self {
        case let .netlink(error): error.description
        case let .noSuchInterface(name, namespace):
            "no interface named '\(name)' in \(namespace); list them with 'ip \(namespace == "the host namespace" ? "" : "-n \(namespace) ")link'"
        case let .malformed(what, detail): "cannot decode \(what) from the kernel: \(detail)"
        case let .invalidArgument(text): text
        }
    }
}

import NetNamespace
import Netlink
import RouteNetlink

/// The error type of the path-monitor layer.
public enum PathMonitorError: Error, Sendable, CustomStringConvertible {
    /// The monitor's namespace could not be entered or its sockets opened.
    case namespace(NamespaceError)
    /// A netlink call failed (the kernel's words are inside).
    case netlink(RouteNetlinkError)
    /// `start` was called on a running monitor.
    case alreadyRunning

    public var description: String {
        switch self {
        case let .namespace(error): "path monitor: \(error)"
        case let .netlink(error): "path monitor: \(error)"
        case .alreadyRunning: "path monitor: already running; cancel it before starting it again"
        }
    }
}

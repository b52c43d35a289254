import Glibc

/// Why the responders could not start.
public enum ResponderError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A configured address (bind, A or AAAA address) is not an IP literal of the expected family.
    case invalidAddress(field: String, value: String)
    /// The configured zone is not a valid DNS name.
    case invalidZone(String)
    /// Another configuration value is out of range.
    case invalidConfiguration(String)
    /// A listening socket could not be set up. `endpoint` reads like `[::]:80/tcp`, `step` is the system
    /// call that failed (`socket`, `setsockopt`, `bind`, `listen`) and `errno` its error.
    case cannotListen(endpoint: String, step: String, errno: Int32)
    /// Another system call needed to run the servers failed.
    case systemCall(String, errno: Int32)
    /// ``ResponderServer/start()`` was called while the server was running.
    case alreadyRunning

    public var description: String {
        switch self {
        case .invalidAddress(let field, let value):
            return "invalid \(field) '\(value)': not an IP address of the expected family"
        case .invalidZone(let zone):
            return "invalid zone '\(zone)': not a DNS name"
        case .invalidConfiguration(let detail):
            return "invalid responder configuration: \(detail)"
        case .cannotListen(let endpoint, let step, let code):
            let reason = String(cString: strerror(code))
            return step == "bind" || step == "listen"
                ? "cannot listen on \(endpoint): \(reason)"
                : "cannot listen on \(endpoint): \(step): \(reason)"
        case .systemCall(let call, let code):
            return "\(call) failed: \(String(cString: strerror(code)))"
        case .alreadyRunning:
            return "the responders are already running"
        }
    }
}

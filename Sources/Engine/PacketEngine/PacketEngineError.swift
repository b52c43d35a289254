import Glibc
import NetNamespace
import RouteNetlink

/// The one error type of the packet engine: what was being done (written like
/// `setsockopt PACKET_IGNORE_OUTGOING on cl-wl0 in lc-wire`), the errno, and any detail.
public struct PacketEngineError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The operation that failed, naming the interface and namespace it concerned.
    public var operation: String
    /// The positive errno, or 0 when the failure carries none.
    public var errno: Int32
    /// More text (a lower layer's own message, or why a value was refused).
    public var detail: String?

    /// An error for `operation`, with the errno (0: none) and any detail.
    public init(operation: String, errno: Int32 = 0, detail: String? = nil) {
        self.operation = operation
        self.errno = errno
        self.detail = detail
    }

    /// An error for a failed system call, taking `errno` from the calling thread.
    static func system(_ operation: String) -> PacketEngineError {
        PacketEngineError(operation: operation, errno: Glibc.errno)
    }

    /// Wraps a namespace-layer failure (entering or reading a namespace).
    static func namespace(_ operation: String, _ error: NamespaceError) -> PacketEngineError {
        if case let .system(_, code) = error {
            return PacketEngineError(operation: operation, errno: code, detail: error.description)
        }
        return PacketEngineError(operation: operation, detail: error.description)
    }

    /// Wraps an rtnetlink failure.
    static func netlink(_ operation: String, _ error: RouteNetlinkError) -> PacketEngineError {
        PacketEngineError(operation: operation, errno: error.errno ?? 0, detail: error.description)
    }

    /// Wraps whatever a body run inside a namespace threw.
    static func wrapping(_ operation: String, _ error: any Error) -> PacketEngineError {
        switch error {
        case let error as PacketEngineError: error
        case let error as NamespaceError: .namespace(operation, error)
        case let error as RouteNetlinkError: .netlink(operation, error)
        default: PacketEngineError(operation: operation, detail: "\(error)")
        }
    }

    /// `strerror(errno)`, or nil when errno is 0.
    public var systemMessage: String? {
        errno == 0 ? nil : String(cString: strerror(errno))
    }

    public var description: String {
        var text = operation + ": " + (systemMessage ?? detail ?? "failed")
        if let detail, systemMessage != nil { text += " (\(detail))" }
        if errno == EPERM || errno == EACCES { text += "; the packet engine needs root (CAP_NET_RAW, CAP_NET_ADMIN)" }
        return text
    }
}

/// `lc-wire` or `the current namespace`, for messages.
func namespaceText(_ namespace: NamedNamespace?) -> String {
    namespace?.name ?? "the current namespace"
}

/// Runs `body` inside `namespace` (on a fresh thread), or on the calling thread when `namespace` is nil,
/// with any failure turned into a ``PacketEngineError`` named `operation`.
func inNamespace<T>(_ namespace: NamedNamespace?, _ operation: String, _ body: () throws -> T) throws(PacketEngineError) -> T {
    do {
        if let namespace { return try namespace.run(body) }
        return try body()
    } catch {
        throw .wrapping(operation, error)
    }
}

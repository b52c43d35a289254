import Glibc

/// The one error type of the netlink layer.
///
/// It names the operation that failed (written the way the matching `ip`/`tc` command reads, where there
/// is one), the errno, and — when the kernel sent an extended ack — the kernel's own explanation and the
/// byte offset of the attribute it objected to.
public struct NetlinkError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure this is.
    public enum Kind: Sendable, Equatable {
        /// The kernel refused the request (an `NLMSG_ERROR` with a negative errno).
        case kernel
        /// A system call on the netlink socket failed.
        case system
        /// A reply could not be decoded: truncated, misaligned or lying about its lengths.
        case malformed
        /// A dump changed while it was read (`NLM_F_DUMP_INTR`); the result is inconsistent and must be
        /// read again.
        case dumpInterrupted
        /// The kernel dropped messages because the socket's receive buffer was full (`ENOBUFS`); a
        /// listener must re-read the full state.
        case overrun
        /// A message did not fit the builder's buffer.
        case overflow
    }

    /// What kind of failure this is.
    public var kind: Kind
    /// The operation, e.g. `ip link add wl0 type veth peer name c-wl0`.
    public var operation: String
    /// The positive errno value, or 0 when there is none (malformed replies).
    public var errno: Int32
    /// The kernel's extended-ack message (`NLMSGERR_ATTR_MSG`), when it sent one.
    public var kernelMessage: String?
    /// The extended-ack offset (`NLMSGERR_ATTR_OFFS`) into the request, when the kernel sent one.
    public var kernelOffset: UInt32?
    /// Extra detail for malformed replies.
    public var detail: String?

    /// A value with these fields.
    public init(
        kind: Kind, operation: String, errno: Int32 = 0, kernelMessage: String? = nil,
        kernelOffset: UInt32? = nil, detail: String? = nil
    ) {
        self.kind = kind
        self.operation = operation
        self.errno = errno
        self.kernelMessage = kernelMessage
        self.kernelOffset = kernelOffset
        self.detail = detail
    }

    /// The same error with another operation name (used by higher layers to say what they were doing).
    public func withOperation(_ operation: String) -> NetlinkError {
        var copy = self
        copy.operation = operation
        return copy
    }

    /// `strerror(errno)`, or nil when errno is 0.
    public var systemMessage: String? {
        errno == 0 ? nil : String(cString: strerror(errno))
    }

    /// The text `ip`/`tc` would show for it.
    public var description: String {
        var text = "\(operation): "
        switch kind {
        case .malformed:
            text += "malformed netlink reply" + (detail.map { " (\($0))" } ?? "")
            return text
        case .dumpInterrupted:
            return text + "the kernel's table changed while it was read (NLM_F_DUMP_INTR), even after retrying"
        case .overflow:
            return text + "the request does not fit in a netlink message" + (detail.map { " (\($0))" } ?? "")
        case .kernel, .system, .overrun:
            break
        }
        if let kernelMessage, !kernelMessage.isEmpty {
            text += kernelMessage
            if let systemMessage { text += " (\(systemMessage))" }
        } else {
            text += systemMessage ?? "unknown error"
        }
        return text
    }
}

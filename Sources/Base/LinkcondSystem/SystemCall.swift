import Glibc

/// The one error type of the system layer: the operation that failed, written as the system call and what
/// it was applied to (`connect /run/linkcond/x.sock`, `open /run/netns/lc-client`), and its errno.
///
/// Reads `connect /run/linkcond/x.sock: Connection refused`. Layers above wrap it into their own error,
/// adding where and why.
public struct SystemError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The system call and its object, e.g. `setsockopt SO_RCVBUF` or `read /proc/self/stat`.
    public var operation: String
    /// Why it failed.
    public var errno: Errno

    /// `operation` failed with `errno`.
    public init(_ operation: String, _ errno: Errno) {
        self.operation = operation
        self.errno = errno
    }

    /// `operation: strerror(errno)`.
    public var description: String { "\(operation): \(errno)" }
}

/// Calls `call` — a system call that returns -1 and sets `errno` when it fails — again for as long as it
/// fails with `EINTR` (a signal handler ran before it could finish), and returns its result. Any other
/// failure is thrown as the `errno`, read right after the call.
///
/// Inlined, so a hot loop pays one comparison for it. `close(2)` must never go through it: Linux releases
/// the descriptor even when `close` reports `EINTR`, and a retry could close a descriptor another thread
/// has just been given.
@inlinable
@inline(__always)
public func retryOnInterrupt<Value: FixedWidthInteger & SignedInteger>(_ call: () -> Value) throws(Errno) -> Value {
    while true {
        let result = call()
        if result != -1 { return result }
        let code = Glibc.errno
        if code != EINTR { throw Errno(rawValue: code) }
    }
}

/// Calls `call` as ``retryOnInterrupt(_:)`` does (or once, when `retryOnInterrupt` is false) and throws a
/// failure as a ``SystemError`` named `operation`. The name is built only when the call fails.
///
/// `EBADF` and `EFAULT` are programmer errors — a descriptor used after it was closed, a bad pointer —
/// and stop the process with the operation's name, as swift-nio's wrappers do: carrying on could read or
/// close a descriptor that now belongs to someone else.
@inlinable
@inline(__always)
public func systemCall<Value: FixedWidthInteger & SignedInteger>(
    _ operation: @autoclosure () -> String, retryOnInterrupt: Bool = true, _ call: () -> Value
) throws(SystemError) -> Value {
    while true {
        let result = call()
        if result != -1 { return result }
        let code = Glibc.errno
        if code == EINTR && retryOnInterrupt { continue }
        throw systemFailure(operation(), Errno(rawValue: code))
    }
}

/// The error for `operation` failing with `code`; traps on the programmer errors `EBADF` and `EFAULT`.
@usableFromInline
func systemFailure(_ operation: String, _ code: Errno) -> SystemError {
    precondition(
        code != .badFileDescriptor && code != .badAddress,
        "\(operation): \(code) (\(code == .badFileDescriptor ? "EBADF" : "EFAULT")): a descriptor or pointer linkcond passed is invalid")
    return SystemError(operation, code)
}

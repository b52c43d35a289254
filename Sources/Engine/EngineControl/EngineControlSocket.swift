import Glibc
import JSONDocument
import LinkcondBase
import Profiles

/// What went wrong talking to the engine: the socket, and what to do.
public struct EngineControlError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Whether the engine may have received the request: false when it surely did not (no connection), so
    /// nothing changed; true when the request was sent and no answer came (it may have been carried out
    /// before the request's deadline).
    public var requestMayHaveArrived: Bool
    /// The control socket's path.
    public var socket: String
    /// What failed, in words.
    public var detail: String

    /// An error on `socket`.
    public init(socket: String, detail: String, requestMayHaveArrived: Bool = false) {
        self.socket = socket
        self.detail = detail
        self.requestMayHaveArrived = requestMayHaveArrived
    }

    public var description: String { "the engine's control socket \(socket): \(detail)" }
}

/// The engine's control socket: a Unix stream socket in the sandbox's store (`NAME.engine.sock`, mode 0600),
/// one JSON request line in, one JSON response line out, per connection (``EngineMessageCodec``).
public enum EngineControlSocket {
    /// The most bytes one message may have (``EngineMessageCodec/maximumMessage``).
    static let maximumMessage = EngineMessageCodec.maximumMessage
    /// How much of a request's time is kept back for the answer to come home: the request's deadline is
    /// this much earlier than the moment the client gives up, so nothing is put in force after a client
    /// was told the request failed.
    public static let answerMargin = 0.25

    private static func address(_ path: String) throws(EngineControlError) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw EngineControlError(socket: path, detail: "the path is longer than a Unix socket path may be (107 bytes)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        return address
    }

    /// Sends `request` to the engine listening at `path` and returns its answer, waiting `timeout` seconds
    /// at most in all. A change carries a deadline `timeout` − ``answerMargin`` from now, after which the
    /// engine puts nothing in force, so a request this reports as failed never takes effect later. A
    /// delivery trace the answer names by a path of `knownTraces` is taken from there rather than read
    /// again (pass the traces of the profile sent).
    public static func send(
        _ request: EngineRequest, to path: String, timeout: Double = 5, knownTraces: [String: DeliveryTrace] = [:]
    ) throws(EngineControlError) -> EngineResponse {
        let started = MonotonicClock.nanoseconds()
        let giveUp = started + UInt64(max(timeout, 0.1) * 1e9)
        var request = request
        if request.operation != .show && request.deadline == nil {
            request.deadline = started + UInt64(max(timeout - answerMargin, 0.05) * 1e9)
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw EngineControlError(socket: path, detail: "socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        setSendTimeout(fd, seconds: timeout)
        var target = try address(path)
        let connected = withUnsafePointer(to: &target) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            let code = errno
            let hint = code == ENOENT || code == ECONNREFUSED ? " (the engine is not running: see 'linkcond status')" : ""
            throw EngineControlError(socket: path, detail: "connect: \(String(cString: strerror(code)))\(hint)")
        }
        try write(Array((EngineMessageCodec.text(of: request) + "\n").utf8), to: fd, path: path)
        let line: [UInt8]
        do {
            line = try readLine(fd, path: path, deadline: giveUp)
        } catch {
            var late = error
            late.requestMayHaveArrived = true
            if late.detail == timedOut {
                late.detail = "no answer within \(formatSeconds(timeout)) s: the engine is stopped, hung or overloaded (see 'linkcond status')"
                    + (request.operation == .show ? "" : "; it puts nothing of this request in force after its deadline")
            }
            throw late
        }
        do {
            return try EngineMessageCodec.response(line, knownTraces: knownTraces)
        } catch {
            throw EngineControlError(socket: path, detail: "the engine's answer cannot be read: \(error)", requestMayHaveArrived: true)
        }
    }

    static let timedOut = "timed out"

    private static func formatSeconds(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
    }

    static func setSendTimeout(_ fd: Int32, seconds: Double) {
        var time = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - Double(Int(seconds))) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
    }

    static func write(_ bytes: [UInt8], to fd: Int32, path: String) throws(EngineControlError) {
        var sent = 0
        while sent < bytes.count {
            let result = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            if result < 0 {
                if errno == EINTR { continue }
                throw EngineControlError(socket: path, detail: "send: \(String(cString: strerror(errno)))")
            }
            sent += result
        }
    }

    /// Reads up to the first newline (without it), at most ``maximumMessage`` bytes, all of it by
    /// `deadline` (`CLOCK_MONOTONIC` nanoseconds): however slowly the bytes come, the wait is bounded.
    static func readLine(_ fd: Int32, path: String, deadline: UInt64) throws(EngineControlError) -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let now = MonotonicClock.nanoseconds()
            guard now < deadline else { throw EngineControlError(socket: path, detail: timedOut) }
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let waited = poll(&ready, 1, Int32(min((deadline - now + 999_999) / 1_000_000, 60_000)))
            if waited < 0 {
                if errno == EINTR { continue }
                throw EngineControlError(socket: path, detail: "poll: \(String(cString: strerror(errno)))")
            }
            if waited == 0 { continue }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count < 0 {
                if errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK { continue }
                throw EngineControlError(socket: path, detail: "receive: \(String(cString: strerror(errno)))")
            }
            if count == 0 { throw EngineControlError(socket: path, detail: "the other end closed the connection without a whole message") }
            if let newline = buffer[0..<count].firstIndex(of: 0x0a) {
                bytes += buffer[0..<newline]
                return bytes
            }
            bytes += buffer[0..<count]
            guard bytes.count <= maximumMessage else {
                throw EngineControlError(socket: path, detail: "a message longer than \(maximumMessage) bytes")
            }
        }
    }

    /// Writes `response` and its newline on `fd`, giving up after 2 s (a client that reads nothing does
    /// not hold the thread).
    static func answer(_ response: EngineResponse, on fd: Int32, path: String) {
        setSendTimeout(fd, seconds: 2)
        try? write(Array((EngineMessageCodec.text(of: response) + "\n").utf8), to: fd, path: path)
    }

    /// Listens at `path` (a stale socket file of an earlier engine there is replaced); mode 0600. Returns the
    /// listening descriptor (close-on-exec).
    static func listen(at path: String) throws(EngineControlError) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw EngineControlError(socket: path, detail: "socket: \(String(cString: strerror(errno)))") }
        var local = try address(path)
        var info = stat()
        if lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK { unlink(path) }
        let previous = umask(0o177)
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        umask(previous)
        guard bound == 0, Glibc.listen(fd, 64) == 0 else {
            let code = errno
            close(fd)
            throw EngineControlError(socket: path, detail: "bind/listen: \(String(cString: strerror(code)))")
        }
        return fd
    }
}

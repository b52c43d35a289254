import Glibc
import JSONDocument
import LinkcondBase
import LinkcondSystem
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

    private static func address(_ path: String) throws(EngineControlError) -> UnixSocketAddress {
        guard let address = UnixSocketAddress(path: path) else {
            throw EngineControlError(socket: path, detail: "the path is longer than a Unix socket path may be (107 bytes)")
        }
        return address
    }

    /// Sends `request` to the engine listening at `path` and returns its answer, waiting `timeout` seconds
    /// at most in all. A change carries a deadline `timeout` − ``answerMargin`` from now, after which the
    /// engine puts nothing in force, so a request this reports as failed never takes effect later. A
    /// delivery trace the answer names by a path of `knownTraces` is taken from there rather than read
    /// again (pass the traces of the profile sent). With `directions` false the answer's counters are not
    /// read (``EngineLinkState/directionsRead``).
    public static func send(
        _ request: EngineRequest, to path: String, timeout: Double = 5, knownTraces: [String: DeliveryTrace] = [:], directions: Bool = true
    ) throws(EngineControlError) -> EngineResponse {
        let started = MonotonicClock.nanoseconds()
        let giveUp = started + UInt64(max(timeout, 0.1) * 1e9)
        var request = request
        if request.operation != .show && request.deadline == nil {
            request.deadline = started + UInt64(max(timeout - answerMargin, 0.05) * 1e9)
        }
        let target = try address(path)
        let owned: OwnedSocket
        do {
            owned = try OwnedSocket.open(.unixStream)
        } catch {
            throw EngineControlError(socket: path, detail: "\(error)")
        }
        let fd = owned.socket
        do {
            try fd.setTimeout(seconds: timeout, send: true)
            try fd.connect(to: target)
        } catch {
            let code = error.errno
            let hint = code == .noSuchFileOrDirectory || code == .connectionRefused ? " (the engine is not running: see 'linkcond status')" : ""
            throw EngineControlError(socket: path, detail: "\(error)\(hint)")
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
            return try EngineMessageCodec.response(line, knownTraces: knownTraces, directions: directions)
        } catch {
            throw EngineControlError(socket: path, detail: "the engine's answer cannot be read: \(error)", requestMayHaveArrived: true)
        }
    }

    static let timedOut = "timed out"

    private static func formatSeconds(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
    }

    static func write(_ bytes: [UInt8], to fd: SocketDescriptor, path: String) throws(EngineControlError) {
        let sent = bytes.withUnsafeBytes { buffer in
            Result { () throws(SystemError) in try fd.sendAll(buffer, flags: Int32(MSG_NOSIGNAL)) }
        }
        if case let .failure(error) = sent { throw EngineControlError(socket: path, detail: "\(error)") }
    }

    /// Reads up to the first newline (without it), at most ``maximumMessage`` bytes, all of it by
    /// `deadline` (`CLOCK_MONOTONIC` nanoseconds): however slowly the bytes come, the wait is bounded.
    static func readLine(_ fd: SocketDescriptor, path: String, deadline: UInt64) throws(EngineControlError) -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let now = MonotonicClock.nanoseconds()
            guard now < deadline else { throw EngineControlError(socket: path, detail: timedOut) }
            let milliseconds = Int32(min((deadline - now + 999_999) / 1_000_000, 60_000))
            let count: Int
            do throws(SystemError) {
                if try fd.fileDescriptor.poll(for: Int16(POLLIN), timeoutMilliseconds: milliseconds) == 0 { continue }
                let received = buffer.withUnsafeMutableBytes { raw in
                    Result { () throws(SystemError) in try fd.receive(into: raw, flags: Int32(MSG_DONTWAIT)) }
                }
                count = try received.get()
            } catch where error.errno == .wouldBlock || error.errno == .resourceTemporarilyUnavailable {
                continue
            } catch {
                throw EngineControlError(socket: path, detail: "\(error)")
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
    static func answer(_ response: EngineResponse, on fd: SocketDescriptor, path: String) {
        try? fd.setTimeout(seconds: 2, send: true)
        try? write(Array((EngineMessageCodec.text(of: response) + "\n").utf8), to: fd, path: path)
    }

    /// Listens at `path` (a stale socket file of an earlier engine there is replaced); mode 0600. Returns the
    /// listening socket (close-on-exec), owned by the caller.
    static func listen(at path: String) throws(EngineControlError) -> SocketDescriptor {
        let local = try address(path)
        var info = stat()
        if lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK { unlink(path) }
        let previous = umask(0o177)
        defer { umask(previous) }
        do {
            let owned = try OwnedSocket.open(.unixStream)
            try owned.socket.bind(to: local)
            try owned.socket.listen(backlog: 64)
            return owned.release()
        } catch {
            throw EngineControlError(socket: path, detail: "\(error)")
        }
    }
}

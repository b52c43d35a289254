import Glibc
import JSONDocument
import Profiles

/// What went wrong talking to the engine: the socket, and what to do.
public struct EngineControlError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The control socket's path.
    public var socket: String
    /// What failed, in words.
    public var detail: String

    /// An error on `socket`.
    public init(socket: String, detail: String) {
        self.socket = socket
        self.detail = detail
    }

    public var description: String { "the engine's control socket \(socket): \(detail)" }
}

/// The engine's control socket: a Unix stream socket in the sandbox's store (`NAME.engine.sock`, mode 0600),
/// one JSON request line in, one JSON response line out, per connection.
public enum EngineControlSocket {
    /// The most bytes one message may have (``EngineMessageCodec/maximumMessage``).
    static let maximumMessage = EngineMessageCodec.maximumMessage

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

    /// Sends `request` to the engine listening at `path` and returns its answer. Waits at most `timeout`
    /// seconds for it. A delivery trace the answer names by a path of `knownTraces` is taken from there
    /// rather than read again (pass the traces of the profile sent).
    public static func send(
        _ request: EngineRequest, to path: String, timeout: Double = 10, knownTraces: [String: DeliveryTrace] = [:]
    ) throws(EngineControlError) -> EngineResponse {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw EngineControlError(socket: path, detail: "socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        setTimeout(fd, seconds: timeout)
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
        let line = try readLine(fd, path: path)
        do {
            return try EngineMessageCodec.response(line, knownTraces: knownTraces)
        } catch {
            throw EngineControlError(socket: path, detail: "the engine's answer cannot be read: \(error)")
        }
    }

    static func setTimeout(_ fd: Int32, seconds: Double) {
        var time = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - Double(Int(seconds))) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
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

    /// Reads up to the first newline (without it).
    static func readLine(_ fd: Int32, path: String) throws(EngineControlError) -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0 {
                if errno == EINTR { continue }
                let code = errno
                let what = code == EAGAIN || code == EWOULDBLOCK ? "no answer in time" : String(cString: strerror(code))
                throw EngineControlError(socket: path, detail: "receive: \(what)")
            }
            if count == 0 { throw EngineControlError(socket: path, detail: "the engine closed the connection without an answer") }
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

    /// Listens at `path` (a stale socket file of an earlier engine there is replaced); mode 0600. Returns the
    /// listening descriptor (close-on-exec).
    public static func listen(at path: String) throws(EngineControlError) -> Int32 {
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
        guard bound == 0, Glibc.listen(fd, 16) == 0 else {
            let code = errno
            close(fd)
            throw EngineControlError(socket: path, detail: "bind/listen: \(String(cString: strerror(code)))")
        }
        return fd
    }

    /// Serves one connection: reads a request and answers with `handle`'s response to it — to the request,
    /// or to why it cannot be read (the codec's refusal, in the profile reader's words).
    public static func serve(connection fd: Int32, path: String, _ handle: (Result<EngineRequest, DocumentError>) -> EngineResponse) {
        setTimeout(fd, seconds: 10)
        let line: [UInt8]
        do {
            line = try readLine(fd, path: path)
        } catch {
            return
        }
        let request: Result<EngineRequest, DocumentError>
        do {
            request = .success(try EngineMessageCodec.request(line))
        } catch {
            request = .failure(error)
        }
        try? write(Array((EngineMessageCodec.text(of: handle(request)) + "\n").utf8), to: fd, path: path)
    }
}

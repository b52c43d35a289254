import Glibc
import LinkcondBase
import LinkcondSystem

/// Where the API listens: a Unix socket (the default, `STORE/linkcond-api.sock`, mode 0600: root alone can
/// connect, and needs no token) or a loopback TCP port (`--listen 127.0.0.1:8477`; every request then carries
/// the bearer token the server made).
public enum APIEndpoint: Sendable, Equatable, CustomStringConvertible {
    /// A Unix stream socket at `path` (made 0600).
    case unix(path: String)
    /// A loopback TCP address and port (0: one the kernel picks).
    case tcp(address: IPAddress, port: UInt16)

    /// `127.0.0.1:8477`, `[::1]:8477` or `localhost:8477` (port 0: any free port), loopback only: the API
    /// changes network namespaces for whoever reaches it.
    public static func loopback(_ text: String) throws(APIError) -> APIEndpoint {
        let usage = "give a loopback address and a port, such as 127.0.0.1:8477 or [::1]:8477"
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else {
            throw APIError(400, "'\(text)' is not an address and a port: \(usage)")
        }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host == "localhost" { host = "127.0.0.1" }
        guard let address = IPAddress(host) else { throw APIError(400, "'\(host)' is not an IP address: \(usage)") }
        guard address.isLoopback else {
            throw APIError(400, "the API listens on loopback only (it changes the machine's network namespaces for anyone who reaches it), not \(host): \(usage)")
        }
        return .tcp(address: address, port: port)
    }

    public var description: String {
        switch self {
        case let .unix(path): "unix:\(path)"
        case let .tcp(address, port): address.isIPv4 ? "http://\(address):\(port)" : "http://[\(address)]:\(port)"
        }
    }

    /// Whether requests on this endpoint must carry the bearer token.
    var needsToken: Bool {
        if case .tcp = self { return true }
        return false
    }

    /// A listening socket (close-on-exec). A Unix socket is made 0600; a stale one another server left is
    /// replaced, a live one is refused. TCP sets `SO_REUSEADDR`; the port actually bound is in the result.
    func listen() throws(APIError) -> (socket: SocketDescriptor, endpoint: APIEndpoint) {
        switch self {
        case let .unix(path):
            guard let address = UnixSocketAddress(path: path) else {
                throw APIError(400, "\(path) is longer than a Unix socket path may be (107 bytes)")
            }
            var info = stat()
            if lstat(path, &info) == 0 {
                guard info.st_mode & S_IFMT == S_IFSOCK else { throw APIError(409, "\(path) exists and is not a socket: remove it, or give --socket another path") }
                if Self.answers(address) { throw APIError(409, "another 'linkcond api' serves \(path): stop it first, or give --socket another path") }
                unlink(path)
            }
            let previous = umask(0o177)
            defer { umask(previous) }
            do {
                let owned = try OwnedSocket.open(.unixStream)
                try owned.socket.bind(to: address)
                try owned.socket.listen(backlog: 128)
                return (owned.release(), self)
            } catch {
                throw APIError(500, "cannot listen on \(path): \(error)")
            }
        case let .tcp(address, port):
            do {
                let owned = try OwnedSocket.open(.tcp(address.family.domain))
                try owned.socket.setOption(.reuseAddress, Int32(1))
                try owned.socket.bind(to: SocketAddress(address, port: port))
                try owned.socket.listen(backlog: 128)
                let bound = SocketAddress.local(of: owned.socket)?.port ?? port
                return (owned.release(), .tcp(address: address, port: bound))
            } catch {
                throw APIError(500, "cannot listen on \(self): \(error)")
            }
        }
    }

    /// True when something accepts connections at `address`.
    private static func answers(_ address: UnixSocketAddress) -> Bool {
        guard let probe = try? OwnedSocket.open(.unixStream) else { return false }
        return (try? probe.socket.connect(to: address)) != nil
    }
}

extension IPAddress {
    /// 127.0.0.0/8 or ::1.
    var isLoopback: Bool {
        isIPv4 ? bytes[0] == 127 : bytes == [UInt8](repeating: 0, count: 15) + [1]
    }
}

/// The bearer token of TCP endpoints: 32 random bytes in hex, made at start and written to a file only root
/// can read (`STORE/linkcond-api.token`, 0600), so a client on the same machine that may use the API can read
/// it and others cannot.
public struct APIToken: Sendable, Equatable {
    /// The token as clients send it: 64 hex digits.
    public let value: String

    /// A new random token (32 bytes of `/dev/urandom`; Swift's system generator where that cannot be read).
    public static func generate() -> APIToken {
        var bytes = (try? FileDescriptor.open("/dev/urandom", .readOnly)).flatMap { file in
            file.closeAfter { try? file.readToEnd(maximumCount: 32) }
        } ?? []
        if bytes.count != 32 {
            var generator = SystemRandomNumberGenerator()
            bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        }
        return APIToken(value: bytes.map { String($0, radix: 16).leftPadded(to: 2) }.joined())
    }

    /// A token of `value` (a client's, or one kept from an earlier start).
    public init(value: String) {
        self.value = value
    }

    /// Writes the token to `path`, mode 0600 (replacing what was there).
    public func store(at path: String) throws(APIError) {
        unlink(path)
        do {
            let file = try FileDescriptor.open(path, .writeOnly, options: [.create, .exclusiveCreate, .noFollow], permissions: 0o600)
            try file.closeAfter { () throws(SystemError) in try file.writeAll((value + "\n").utf8) }
        } catch {
            throw APIError(500, "cannot write the API's token to \(path): \(error)")
        }
    }

    /// Whether `header` (an `Authorization` value) is `Bearer TOKEN`, compared in constant time.
    func accepts(_ header: String?) -> Bool {
        guard let header, header.hasPrefix("Bearer ") else { return false }
        let given = Array(header.dropFirst(7).utf8)
        let expected = Array(value.utf8)
        guard given.count == expected.count else { return false }
        return zip(given, expected).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }
}

extension String {
    func leftPadded(to length: Int) -> String {
        count >= length ? self : String(repeating: "0", count: length - count) + self
    }
}

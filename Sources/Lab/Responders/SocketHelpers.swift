import Glibc
import LinkcondBase

/// TCP or UDP.
enum TransportProtocol: String, Sendable {
    case tcp, udp
}

/// Thin wrappers over the socket calls the responders use.
enum Sockets {
    /// A bound socket (listening, for TCP), close-on-exec and non-blocking, with SO_REUSEADDR, and
    /// IPV6_V6ONLY on IPv6 sockets so that IPv4 gets its own socket.
    static func listen(
        on address: SocketAddress, transport: TransportProtocol, backlog: Int32 = 128
    ) throws(ResponderError) -> Int32 {
        let endpoint = "\(address.text)/\(transport.rawValue)"
        let type = transport == .tcp ? SOCK_STREAM : SOCK_DGRAM
        let fd = socket(address.family.socketDomain, Int32(type.rawValue | SOCK_CLOEXEC.rawValue | SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw .cannotListen(endpoint: endpoint, step: "socket", errno: errno) }
        func fail(_ step: String) -> ResponderError {
            let code = errno
            close(fd)
            return .cannotListen(endpoint: endpoint, step: step, errno: code)
        }
        guard setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1) else { throw fail("setsockopt(SO_REUSEADDR)") }
        if address.family == .inet6 {
            guard setOption(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, 1) else { throw fail("setsockopt(IPV6_V6ONLY)") }
        }
        let bound = address.withSockaddr { bind(fd, $0, $1) }
        guard bound == 0 else { throw fail("bind") }
        if transport == .tcp {
            guard Glibc.listen(fd, backlog) == 0 else { throw fail("listen") }
        }
        return fd
    }

    /// setsockopt with an Int32 value.
    @discardableResult
    static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) -> Bool {
        var value = value
        return setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size)) == 0
    }

    /// Sets SO_RCVTIMEO, so a blocking receive gives up with EAGAIN after `seconds`.
    static func setReceiveTimeout(_ fd: Int32, seconds: Int) {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Sets SO_SNDTIMEO, so a blocking send to a peer that stopped reading gives up after `seconds`.
    static func setSendTimeout(_ fd: Int32, seconds: Int) {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Sends all of `bytes` on a connected socket (no SIGPIPE). False when the connection failed.
    static func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { sendAll(fd, $0) }
    }

    /// Sends all of `buffer` on a connected socket (no SIGPIPE). False when the connection failed.
    static func sendAll(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) -> Bool {
        var sent = 0
        while sent < buffer.count {
            let result = send(fd, buffer.baseAddress! + sent, buffer.count - sent, Int32(MSG_NOSIGNAL))
            if result < 0 {
                if errno == EINTR { continue }
                return false
            }
            sent += result
        }
        return true
    }

    /// One receive into `buffer`: the byte count, 0 at end of stream, -1 on error or timeout (EINTR is
    /// retried).
    static func receive(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        while true {
            let result = recv(fd, buffer.baseAddress, buffer.count, 0)
            if result < 0 && errno == EINTR { continue }
            return result
        }
    }

    /// Exactly `count` bytes, or nil at end of stream, on error or on timeout.
    static func receiveExactly(_ fd: Int32, count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let result = bytes.withUnsafeMutableBytes { raw in
                receive(fd, into: UnsafeMutableRawBufferPointer(rebasing: raw[filled...]))
            }
            guard result > 0 else { return nil }
            filled += result
        }
        return bytes
    }

    /// Half-closes the sending side, then reads and discards what the peer still sends (for at most about
    /// `seconds` and 64 KiB) before the caller closes, so unread request bytes do not turn the close into a
    /// reset that could destroy the response.
    static func lingeringShutdown(_ fd: Int32, seconds: Int = 1) {
        shutdown(fd, Int32(SHUT_WR))
        setReceiveTimeout(fd, seconds: seconds)
        var discarded = 0
        withUnsafeTemporaryAllocation(byteCount: 4096, alignment: 1) { buffer in
            while discarded < 65536 {
                let result = receive(fd, into: buffer)
                guard result > 0 else { return }
                discarded += result
            }
        }
    }
}

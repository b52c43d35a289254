import Glibc
import LinkcondBase
import LinkcondSystem

/// TCP or UDP.
enum TransportProtocol: String, Sendable {
    case tcp, udp

    /// The socket this transport runs on for `family`.
    func kind(_ family: AddressFamily) -> SocketKind {
        self == .tcp ? .tcp(family.domain) : .udp(family.domain)
    }
}

/// The socket calls the responders use, over the system layer's typed sockets.
enum Sockets {
    /// Makes `socket` (non-blocking, from the socket factory) listen on `address`: SO_REUSEADDR,
    /// IPV6_V6ONLY on IPv6 sockets so that IPv4 gets its own socket, bound, and listening for TCP.
    static func listen(
        _ socket: SocketDescriptor, on address: SocketAddress, transport: TransportProtocol, backlog: Int32 = 128
    ) throws(ResponderError) {
        let endpoint = "\(address.text)/\(transport.rawValue)"
        func step(_ name: String, _ call: () throws(SystemError) -> Void) throws(ResponderError) {
            do {
                try call()
            } catch {
                throw .cannotListen(endpoint: endpoint, step: name, errno: error.errno.rawValue)
            }
        }
        try step("setsockopt(SO_REUSEADDR)") { () throws(SystemError) in try socket.setOption(.reuseAddress, Int32(1)) }
        if address.family == .inet6 {
            try step("setsockopt(IPV6_V6ONLY)") { () throws(SystemError) in try socket.setOption(.ipv6Only, Int32(1)) }
        }
        try step("bind") { () throws(SystemError) in try socket.bind(to: address) }
        if transport == .tcp {
            try step("listen") { () throws(SystemError) in try socket.listen(backlog: backlog) }
        }
    }

    /// Sets SO_RCVTIMEO and SO_SNDTIMEO, so a blocking receive gives up with EAGAIN after `seconds`, and a
    /// blocking send to a peer that stopped reading too.
    static func setTimeouts(_ socket: SocketDescriptor, seconds: Int) {
        try? socket.setTimeout(seconds: Double(seconds))
        try? socket.setTimeout(seconds: Double(seconds), send: true)
    }

    /// Sends all of `bytes` on a connected socket (no SIGPIPE). False when the connection failed.
    static func sendAll(_ socket: SocketDescriptor, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { sendAll(socket, $0) }
    }

    /// Sends all of `buffer` on a connected socket (no SIGPIPE). False when the connection failed.
    static func sendAll(_ socket: SocketDescriptor, _ buffer: UnsafeRawBufferPointer) -> Bool {
        (try? socket.sendAll(buffer, flags: Int32(MSG_NOSIGNAL))) != nil
    }

    /// One receive into `buffer`: the byte count (0 at end of stream), or why nothing came (a timeout is
    /// ``Errno/wouldBlock``).
    static func receive(_ socket: SocketDescriptor, into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, Errno> {
        do {
            return .success(try socket.receive(into: buffer))
        } catch {
            return .failure(error.errno)
        }
    }

    /// Exactly `count` bytes, or nil at end of stream, on error or on timeout.
    static func receiveExactly(_ socket: SocketDescriptor, count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let result = bytes.withUnsafeMutableBytes { raw in
                receive(socket, into: UnsafeMutableRawBufferPointer(rebasing: raw[filled...]))
            }
            guard case .success(let received) = result, received > 0 else { return nil }
            filled += received
        }
        return bytes
    }

    /// Half-closes the sending side, then reads and discards what the peer still sends (for at most about
    /// `seconds` and 64 KiB) before the caller closes, so unread request bytes do not turn the close into a
    /// reset that could destroy the response.
    static func lingeringShutdown(_ socket: SocketDescriptor, seconds: Int = 1) {
        try? socket.shutdown(.write)
        try? socket.setTimeout(seconds: Double(seconds))
        var discarded = 0
        withUnsafeTemporaryAllocation(byteCount: 4096, alignment: 1) { buffer in
            while discarded < 65536 {
                guard case .success(let received) = receive(socket, into: buffer), received > 0 else { return }
                discarded += received
            }
        }
    }
}

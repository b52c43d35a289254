import Glibc
import LinkcondSystem

/// The echo service (RFC 862) over TCP and UDP.
enum EchoResponder {
    /// A TCP echo connection idle for this long is closed.
    static let idleTimeoutSeconds = 120

    /// Sends every byte back until the peer closes (or stays silent for ``idleTimeoutSeconds``).
    static func serveTCP(connection fd: SocketDescriptor) {
        Sockets.setTimeouts(fd, seconds: idleTimeoutSeconds)
        withUnsafeTemporaryAllocation(byteCount: 16384, alignment: 1) { buffer in
            while true {
                guard case .success(let count) = Sockets.receive(fd, into: buffer), count > 0,
                      Sockets.sendAll(fd, UnsafeRawBufferPointer(rebasing: buffer[..<count]))
                else { return }
            }
        }
        try? fd.shutdown(.write)
    }

    /// Sends each datagram back to its sender until the run stops.
    static func serveUDP(socket fd: SocketDescriptor, run: ResponderRun) {
        Datagrams.serve(socket: fd, run: run) { $0 }
    }
}

/// The receive-answer loop shared by the UDP services.
enum Datagrams {
    /// Receives datagrams on `fd` until the run stops; answers each with `answer`'s bytes (nil: no answer),
    /// sent back to the datagram's source.
    static func serve(socket fd: SocketDescriptor, run: ResponderRun, answer: ([UInt8]) -> [UInt8]?) {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while run.waitUntilReadable(fd) {
            while true {
                var source = SocketAddressStorage()
                // EAGAIN: drained; other errors (e.g. ICMP-reported ones) are not fatal.
                guard let count = try? buffer.withUnsafeMutableBytes({ try fd.receive(into: $0, from: &source, flags: Int32(MSG_DONTWAIT)) })
                else { break }
                guard let reply = answer(Array(buffer[..<count])) else { continue }
                _ = try? reply.withUnsafeBytes { try fd.send($0, to: source, flags: Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
            }
        }
    }
}

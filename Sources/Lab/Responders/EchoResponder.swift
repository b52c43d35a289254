import Glibc

/// The echo service (RFC 862) over TCP and UDP.
enum EchoResponder {
    /// A TCP echo connection idle for this long is closed.
    static let idleTimeoutSeconds = 120

    /// Sends every byte back until the peer closes (or stays silent for ``idleTimeoutSeconds``).
    static func serveTCP(connection fd: Int32) {
        Sockets.setReceiveTimeout(fd, seconds: idleTimeoutSeconds)
        Sockets.setSendTimeout(fd, seconds: idleTimeoutSeconds)
        withUnsafeTemporaryAllocation(byteCount: 16384, alignment: 1) { buffer in
            while true {
                let count = Sockets.receive(fd, into: buffer)
                guard count > 0,
                      Sockets.sendAll(fd, UnsafeRawBufferPointer(rebasing: buffer[..<count]))
                else { return }
            }
        }
        shutdown(fd, Int32(SHUT_WR))
    }

    /// Sends each datagram back to its sender until the run stops.
    static func serveUDP(socket fd: Int32, run: ResponderRun) {
        Datagrams.serve(socket: fd, run: run) { $0 }
    }
}

/// The receive-answer loop shared by the UDP services.
enum Datagrams {
    /// Receives datagrams on `fd` until the run stops; answers each with `answer`'s bytes (nil: no answer),
    /// sent back to the datagram's source.
    static func serve(socket fd: Int32, run: ResponderRun, answer: ([UInt8]) -> [UInt8]?) {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while run.waitUntilReadable(fd) {
            while true {
                var source = sockaddr_storage()
                var sourceLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
                let count = buffer.withUnsafeMutableBytes { raw in
                    withUnsafeMutablePointer(to: &source) { pointer in
                        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                            recvfrom(fd, raw.baseAddress, raw.count, Int32(MSG_DONTWAIT), address, &sourceLength)
                        }
                    }
                }
                if count < 0 {
                    if errno == EINTR { continue }
                    break  // EAGAIN: drained; other errors (e.g. ICMP-reported ones) are not fatal
                }
                guard let reply = answer(Array(buffer[..<count])) else { continue }
                _ = reply.withUnsafeBytes { bytes in
                    withUnsafePointer(to: &source) { pointer in
                        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                            sendto(fd, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL),
                                   address, sourceLength)
                        }
                    }
                }
            }
        }
    }
}

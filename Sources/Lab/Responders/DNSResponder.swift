import Glibc
import LinkcondSystem

/// The DNS server of the zone: UDP, and TCP with the two-byte length prefix (RFC 1035 4.2.2).
enum DNSResponder {
    /// How long a TCP client may stay silent between queries.
    static let tcpIdleTimeoutSeconds = 10

    /// Answers each UDP query (responses capped at 512 bytes) until the run stops.
    static func serveUDP(socket fd: SocketDescriptor, zone: DNSZone, run: ResponderRun) {
        Datagrams.serve(socket: fd, run: run) { query in
            zone.response(to: query, maximumSize: DNSZone.maximumUDPResponseSize)
        }
    }

    /// Answers length-prefixed queries on one TCP connection until the peer closes, stays silent for
    /// ``tcpIdleTimeoutSeconds``, or sends something that is to be dropped.
    static func serveTCP(connection fd: SocketDescriptor, zone: DNSZone) {
        Sockets.setTimeouts(fd, seconds: tcpIdleTimeoutSeconds)
        while let prefix = Sockets.receiveExactly(fd, count: 2) {
            let length = Int(prefix[0]) << 8 | Int(prefix[1])
            guard length > 0,
                  let query = Sockets.receiveExactly(fd, count: length),
                  let response = zone.response(to: query, maximumSize: nil),
                  response.count <= Int(UInt16.max)
            else { break }
            let framed = [UInt8(response.count >> 8), UInt8(response.count & 0xFF)] + response
            guard Sockets.sendAll(fd, framed) else { return }
        }
        try? fd.shutdown(.write)
    }
}

import CPacket
import Foundation
import Glibc
import NetNamespace
import Synchronization

/// The DNS frames over UDP that cross one interface of a namespace, in the order they crossed it, as an
/// `AF_PACKET` socket bound to it sees them: outgoing ones as the interface sends them (after its qdisc),
/// incoming ones as they arrive. What a program's resolver did on the wire, whatever the program's own
/// start-up cost: how many queries it sent, whether it sent one again, and whether it waited for an answer
/// before sending another (a second round trip).
final class DNSFrameWatch: Sendable {
    struct Frame: CustomStringConvertible {
        /// Sent by the namespace (a query), else received (an answer).
        var outgoing: Bool
        /// The client's port: the resolver's socket.
        var clientPort: UInt16
        var id: UInt16
        var isResponse: Bool

        var description: String { "\(outgoing ? "out" : "in") :\(clientPort) id \(id)\(isResponse ? " answer" : " query")" }
    }

    /// What the resolver of one socket did: its queries and answers in order.
    struct Exchange {
        var clientPort: UInt16
        var frames: [Frame]

        var queries: [Frame] { frames.filter { $0.outgoing && !$0.isResponse } }
        /// A query sent again with the same id (the resolver's retransmission after its timeout).
        var repeatedQueries: Int { queries.count - Set(queries.map(\.id)).count }
        /// Queries sent after an answer had come back: each one more round trip, so one more delay.
        var queriesAfterAnAnswer: Int {
            guard let firstAnswer = frames.firstIndex(where: { !$0.outgoing && $0.isResponse }) else { return 0 }
            return frames[firstAnswer...].filter { $0.outgoing && !$0.isResponse }.count
        }
        /// Every query has its answer.
        var everyQueryAnswered: Bool {
            let answered = Set(frames.filter { !$0.outgoing && $0.isResponse }.map(\.id))
            return queries.allSatisfy { answered.contains($0.id) }
        }
    }

    private let fd: Int32
    private let frames = Mutex<[Frame]>([])
    private let stopping = Atomic<Bool>(false)
    private let finished = Atomic<Bool>(false)
    private let port: UInt16

    /// Starts watching `interface` in `namespace` for UDP frames to or from `port`.
    init(interface: String, in namespace: NamedNamespace, port: UInt16 = 53) throws {
        self.port = port
        fd = try namespace.run { () throws -> Int32 in
            let fd = socket(AF_PACKET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), Int32(UInt16(ETH_P_ALL).bigEndian))
            guard fd >= 0 else { throw TestSocket.Failure(what: "socket AF_PACKET", code: errno) }
            var time = timeval(tv_sec: 0, tv_usec: 50_000)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
            var address = sockaddr_ll()
            address.sll_family = UInt16(AF_PACKET)
            address.sll_protocol = UInt16(ETH_P_ALL).bigEndian
            address.sll_ifindex = Int32(if_nametoindex(interface))
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_ll>.size)) }
            }
            guard address.sll_ifindex > 0, bound == 0 else {
                let code = errno
                close(fd)
                throw TestSocket.Failure(what: "bind a packet socket to \(interface) in \(namespace.name)", code: code)
            }
            return fd
        }
        Thread { [self] in
            read()
            finished.store(true, ordering: .releasing)
        }.start()
    }

    private func read() {
        var buffer = [UInt8](repeating: 0, count: 2048)
        while !stopping.load(ordering: .acquiring) {
            var from = sockaddr_ll()
            var length = socklen_t(MemoryLayout<sockaddr_ll>.size)
            let got = buffer.withUnsafeMutableBytes { raw in
                withUnsafeMutablePointer(to: &from) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, raw.baseAddress, raw.count, 0, $0, &length) }
                }
            }
            guard got > 0 else { continue }
            if let frame = Self.parse(Array(buffer[..<got]), outgoing: from.sll_pkttype == UInt8(PACKET_OUTGOING), port: port) {
                frames.withLock { $0.append(frame) }
            }
        }
    }

    /// A UDP datagram to or from `port` in an IPv4 or IPv6 packet (no extension headers), or nil.
    static func parse(_ packet: [UInt8], outgoing: Bool, port: UInt16) -> Frame? {
        guard let version = packet.first.map({ $0 >> 4 }) else { return nil }
        let udp: Int
        switch version {
        case 4:
            guard packet.count >= 20, packet[9] == UInt8(IPPROTO_UDP) else { return nil }
            udp = Int(packet[0] & 0x0F) * 4
        case 6:
            guard packet.count >= 40, packet[6] == UInt8(IPPROTO_UDP) else { return nil }
            udp = 40
        default:
            return nil
        }
        guard packet.count >= udp + 12 else { return nil }
        func word(_ at: Int) -> UInt16 { UInt16(packet[at]) << 8 | UInt16(packet[at + 1]) }
        let (source, destination) = (word(udp), word(udp + 2))
        guard source == port || destination == port else { return nil }
        return Frame(
            outgoing: outgoing, clientPort: source == port ? destination : source, id: word(udp + 8),
            isResponse: packet[udp + 10] & 0x80 != 0)
    }

    /// Stops watching and returns the exchanges, one per client port, in the order they began.
    func stop() -> [Exchange] {
        stopping.store(true, ordering: .releasing)
        while !finished.load(ordering: .acquiring) { usleep(5_000) }
        close(fd)
        var exchanges: [Exchange] = []
        for frame in frames.withLock({ $0 }) {
            if let index = exchanges.firstIndex(where: { $0.clientPort == frame.clientPort }) {
                exchanges[index].frames.append(frame)
            } else {
                exchanges.append(Exchange(clientPort: frame.clientPort, frames: [frame]))
            }
        }
        return exchanges
    }
}

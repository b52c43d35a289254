import Foundation
import Glibc
import LinkcondBase
import NetNamespace

/// One-way times of UDP datagrams from a client to a server, from the kernel's stamps as each left the
/// client's interface and as it reached the server's (``StampCapture``; one kernel, one clock), matched
/// by the sequence number each carries. What the engine's timing is judged by: a datagram's one-way time
/// through a wire with a delay of D is at least D (the client's stamp comes before the engine's arrival
/// stamp, the server's after the departure), and the rest is the engine's excess.
///
/// The sender is paced: `rate` datagrams of 64 bytes a second, sent in bursts every 100 µs (at 1,000 a
/// second, one every millisecond). The server's socket is bound and never read (nothing goes back).
package enum OneWayProbe {
    /// Where the datagrams went and how long each took.
    package struct Result: Sendable {
        /// Datagrams sent.
        package var sent: Int
        /// Seen leaving the client's interface, reaching the server's.
        package var seenSent: Int
        package var seenReceived: Int
        /// Frames the captures' rings dropped (a capture fell behind; those datagrams have no time).
        package var captureDrops: UInt64
        /// The one-way time of each datagram seen at both ends, in nanoseconds, in the order sent.
        package var oneWay: [Int64]
        /// Datagrams that reached the server's interface before one sent earlier (the kernel's stamps).
        package var overtaking: Int = 0

        /// One-way times minus `delay`, sorted.
        package func excess(over delay: UInt64) -> [Int64] {
            oneWay.map { $0 - Int64(delay) }.sorted()
        }
    }

    /// Sends `rate × seconds` datagrams from `client` (through its interface `clientInterface`) to
    /// `server`:`port` in `serverNamespace` (arriving on `serverInterface`), waits `settle` seconds for the
    /// last ones, and returns their one-way times.
    package static func measure(
        client: NamedNamespace, clientInterface: String, serverNamespace: NamedNamespace, serverInterface: String, server: IPAddress,
        port: UInt16, rate: Int, seconds: Double, settle: Double
    ) throws -> Result {
        let count = max(1, Int(Double(rate) * seconds))
        let run = UInt32.random(in: 1...UInt32.max)
        let sentCapture = try StampCapture(interface: clientInterface, in: client, side: .sent, port: port, run: run, capacity: count)
        let receivedCapture = try StampCapture(interface: serverInterface, in: serverNamespace, side: .received, port: port, run: run, capacity: count)
        let sink = try udpSocket(in: serverNamespace)
        defer { close(sink) }
        var (address, length) = socketAddress(server, port: port)
        guard withUnsafePointer(to: &address, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(sink, $0, length) } }) == 0 else {
            throw ProbeFailure("bind UDP \(server):\(port) in \(serverNamespace.name)", errno)
        }
        let sender = try udpSocket(in: client)
        defer { close(sender) }
        guard withUnsafePointer(to: &address, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(sender, $0, length) } }) == 0 else {
            throw ProbeFailure("connect UDP to \(server):\(port) from \(client.name)", errno)
        }
        sentCapture.start()
        receivedCapture.start()
        let sent = paced(sender, count: count, rate: rate, run: run)
        usleep(UInt32(settle * 1_000_000))
        sentCapture.finish()
        receivedCapture.finish()
        var oneWay: [Int64] = []
        oneWay.reserveCapacity(count)
        for (left, arrived) in zip(sentCapture.stamps, receivedCapture.stamps) where left != 0 && arrived != 0 {
            oneWay.append(Int64(bitPattern: arrived &- left))
        }
        var latest: UInt64 = 0
        var overtaking = 0
        for arrived in receivedCapture.stamps where arrived != 0 {
            if arrived < latest { overtaking += 1 }
            latest = max(latest, arrived)
        }
        return Result(
            sent: sent, seenSent: sentCapture.stamps.count { $0 != 0 }, seenReceived: receivedCapture.stamps.count { $0 != 0 },
            captureDrops: sentCapture.drops + receivedCapture.drops, oneWay: oneWay, overtaking: overtaking)
    }

    /// Sends `count` probe datagrams at `rate` a second on `socket` (connected); returns how many left.
    private static func paced(_ socket: Int32, count: Int, rate: Int, run: UInt32) -> Int {
        let tick: UInt64 = rate >= 10_000 ? 100_000 : 1_000_000_000 / UInt64(max(1, rate))
        let start = MonotonicClock.nanoseconds()
        var next = start
        var sent = 0
        while sent < count {
            let due = min(count, Int(Double(next - start) / 1e9 * Double(rate)) + 1)
            while sent < due {
                let payload = ProbeDatagram.payload(sequence: UInt32(sent), run: run)
                if payload.withUnsafeBytes({ send(socket, $0.baseAddress, $0.count, 0) }) > 0 {
                    sent += 1
                } else if errno != EINTR && errno != ENOBUFS {
                    return sent
                }
            }
            next += tick
            var deadline = timespec(tv_sec: Int(next / 1_000_000_000), tv_nsec: Int(next % 1_000_000_000))
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, nil)
        }
        return sent
    }

    private static func udpSocket(in namespace: NamedNamespace) throws -> Int32 {
        let (fd, code) = try namespace.run { (socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0), errno) }
        guard fd >= 0 else { throw ProbeFailure("socket UDP in \(namespace.name)", code) }
        return fd
    }

    private static func socketAddress(_ ip: IPAddress, port: UInt16) -> (sockaddr_in, socklen_t) {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        withUnsafeMutableBytes(of: &address.sin_addr) { $0.copyBytes(from: ip.bytes) }
        return (address, socklen_t(MemoryLayout<sockaddr_in>.size))
    }
}

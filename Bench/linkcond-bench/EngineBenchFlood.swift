import Foundation
import Glibc
import LinkcondBase
import LinkEmulation
import LinkcondSystem
import NetNamespace
import PacketEngine
import Synchronization

/// The unconditioned UDP flood: one sender pushes datagrams as fast as it can from the client through the
/// engine (no model: pass-through) to a receiver in the router, and every datagram that did not arrive is
/// put where it was lost — the sender (a failed send), the client's veth (its `tx_dropped`, the wire end's
/// `rx_dropped`), the engine (receive overruns: `PACKET_STATISTICS`; its own drops: truncated, oversized,
/// send failures, the model), the router's veth, the receiving socket (`SO_MEMINFO`'s drops: a full
/// receive buffer) — with what no counter explains left over, so a loss is never just a number.
enum EngineFlood {
    /// Where the flood's datagrams went.
    struct Accounting {
        var sent = 0
        var sendErrors = 0
        var received = 0
        var clientVeth: UInt64 = 0
        var engineOverruns: UInt64 = 0
        var engineDrops: UInt64 = 0
        var engineForwarded: UInt64 = 0
        var routerVeth: UInt64 = 0
        var socket: UInt64 = 0
        var seconds = 0.0

        var lost: Int { sent - received }
        var explained: UInt64 { clientVeth + engineOverruns + engineDrops + routerVeth + socket }
        var unexplained: Int { lost - Int(explained) }

        var text: String {
            "sent \(sent.formatted()) (\(Int(Double(sent) / seconds).formatted())/s; \(sendErrors) send errors), received \(received.formatted()), "
                + "lost \(lost.formatted()): client veth \(clientVeth.formatted()), engine receive overruns \(engineOverruns.formatted()), "
                + "engine drops \(engineDrops.formatted()) (forwarded \(engineForwarded.formatted())), router veth \(routerVeth.formatted()), "
                + "receiving socket \(socket.formatted()), unexplained \(unexplained.formatted())"
        }
    }

    /// Floods `payload`-byte datagrams for `seconds` through an engine on a lab of its own and accounts for
    /// every one.
    static func run(payload: Int, seconds: Double) throws -> Accounting {
        let lab = try BenchLab(tag: "flood", throughWire: true)
        defer { lab.remove() }
        let engine = try EngineRuntime(wire: lab.ends!, uplink: PassThroughScheduler(), downlink: PassThroughScheduler())
        defer { engine.stop() }
        try engine.start()
        guard try !BenchTraffic.echoRoundTrips(from: lab.client, to: BenchLab.routerV4, count: 3, gap: 0.01).isEmpty else {
            throw BenchFailure("no echo reply through the flood's engine")
        }
        let wire = lab.wire!
        let port: UInt16 = 40_700
        let receiver = try BenchTraffic.socket(in: lab.router, .udp(.inet), timeout: 0.1)
        defer { try? receiver.close() }
        do {
            try receiver.bind(to: SocketAddress(BenchLab.routerV4, port: port))
        } catch {
            throw BenchFailure("bind the flood's receiver: \(error)")
        }
        try? receiver.setOption(.receiveBufferForce, Int32(4 << 20))
        let sender = try BenchTraffic.socket(in: lab.client, .udp(.inet), timeout: 1)
        defer { try? sender.close() }
        let destination = SocketAddress(BenchLab.routerV4, port: port)

        var before = Accounting()
        before.clientVeth = try LinkDrops.read(lab.client, "wl0").tx + LinkDrops.read(wire, "cl-wl0").rx
        before.routerVeth = try LinkDrops.read(wire, "rt-wl0").tx + LinkDrops.read(lab.router, "c-wl0").rx
        let engineBefore = engine.statistics(of: .uplink)

        let received = Atomic<Int>(0)
        let stop = Atomic<Bool>(false)
        let drained = DispatchSemaphore(value: 0)
        let drain = Thread {
            var bytes = [UInt8](repeating: 0, count: 2048)
            while true {
                let got = bytes.withUnsafeMutableBytes { try? receiver.receive(into: $0) }
                if got == payload { received.add(1, ordering: .relaxed) }
                if got == nil && stop.load(ordering: .relaxed) { break }
            }
            drained.signal()
        }
        drain.start()
        var outcome = Accounting()
        let datagram = [UInt8](repeating: 0x46, count: payload)
        let start = BenchTraffic.seconds()
        let end = start + seconds
        while BenchTraffic.seconds() < end {
            for _ in 0..<64 {
                let sent = datagram.withUnsafeBytes { try? sender.send($0, to: destination) }
                if sent == payload { outcome.sent += 1 } else { outcome.sendErrors += 1 }
            }
        }
        outcome.seconds = BenchTraffic.seconds() - start
        usleep(300_000)  // what is still in a queue arrives
        stop.store(true, ordering: .relaxed)
        _ = drained.wait(timeout: .now() + 2)
        outcome.received = received.load(ordering: .relaxed)

        outcome.clientVeth = try LinkDrops.read(lab.client, "wl0").tx + LinkDrops.read(wire, "cl-wl0").rx - before.clientVeth
        outcome.routerVeth = try LinkDrops.read(wire, "rt-wl0").tx + LinkDrops.read(lab.router, "c-wl0").rx - before.routerVeth
        let after = engine.statistics(of: .uplink)
        outcome.engineOverruns = after.receiveOverruns - engineBefore.receiveOverruns
        outcome.engineDrops = (after.truncated + after.oversized + after.sendFailures + after.dropped)
            - (engineBefore.truncated + engineBefore.oversized + engineBefore.sendFailures + engineBefore.dropped)
        outcome.engineForwarded = after.sent - engineBefore.sent
        outcome.socket = socketDrops(receiver)
        return outcome
    }

    /// The datagrams a socket dropped for want of room in its receive buffer (`SO_MEMINFO`,
    /// `SK_MEMINFO_DROPS`).
    static func socketDrops(_ socket: SocketDescriptor) -> UInt64 {
        var values = [UInt32](repeating: 0, count: 9)
        var length = socklen_t(values.count * 4)
        guard getsockopt(socket.rawValue, SOL_SOCKET, SO_MEMINFO, &values, &length) == 0, length >= 36 else { return 0 }
        return UInt64(values[8])
    }

    /// The flood's rows for the bench's table: per datagram received, and where the others went.
    static func rows(seconds: Double = 2) -> [BenchRow] {
        [64, 1472].map { payload in
            do {
                let outcome = try run(payload: payload, seconds: seconds)
                return BenchRow(
                    operation: "engine: unconditioned UDP flood, \(payload)-byte datagrams, \(Int(seconds)) s (time per datagram received)",
                    ours_us: outcome.received > 0 ? Summary(median: outcome.seconds * 1e6 / Double(outcome.received), p95: .nan, samples: 1) : nil,
                    floor_us: nil, peers: [:], notes: [outcome.text])
            } catch {
                return BenchRow(
                    operation: "engine: unconditioned UDP flood, \(payload)-byte datagrams", ours_us: nil, floor_us: nil, peers: [:],
                    notes: ["failed: \(error)"])
            }
        }
    }
}

/// An interface's drop counters as `/proc/net/dev` has them in its namespace: receive `drop` (`rx_dropped`
/// plus `rx_missed_errors`) and transmit `drop` (`tx_dropped`; a veth counts there what its peer could not take).
struct LinkDrops {
    var rx: UInt64
    var tx: UInt64

    static func read(_ namespace: NamedNamespace, _ interface: String) throws -> LinkDrops {
        // /proc/thread-self/net is the calling thread's namespace (/proc/self/net would be the process's).
        let text = try namespace.run { try String(contentsOfFile: "/proc/thread-self/net/dev", encoding: .utf8) }
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == interface else { continue }
            let fields = parts[1].split(separator: " ").compactMap { UInt64($0) }
            // Receive: bytes packets errs drop fifo frame compressed multicast; transmit: bytes packets errs drop …
            guard fields.count >= 12 else { break }
            return LinkDrops(rx: fields[3], tx: fields[11])
        }
        throw BenchFailure("\(interface) is not in /proc/net/dev of \(namespace.name)")
    }
}

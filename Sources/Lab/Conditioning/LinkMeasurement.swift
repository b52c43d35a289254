import Foundation
import Glibc
import LinkcondBase
import NetNamespace
import Profiles
import RouteNetlink
import Sandboxing
import Synchronization

/// Measures what crosses the sandbox, with real packets between a socket in the client namespace and one
/// in the server namespace (both held by this process, so each direction can be counted on its own).
///
/// This is how linkcond checks that a profile does what it says: round-trip time, loss per direction, and
/// throughput per direction, independent of what the kernel reports about its own qdiscs.
public struct LinkMeasurement: Sendable {
    /// Which way packets go: uplink is client to server, downlink server to client.
    public typealias Direction = LinkDirection

    public let client: NamedNamespace
    public let server: NamedNamespace
    public let clientAddress: IPAddress
    public let serverAddress: IPAddress

    /// Measures between the sandbox's client (wl0) and server over IPv4.
    public init(sandbox topology: SandboxTopology) throws(SandboxError) {
        do {
            client = try NamedNamespace(existing: topology.clientNamespace)
            server = try NamedNamespace(existing: topology.serverNamespace)
        } catch {
            throw .notUp(name: topology.name)
        }
        clientAddress = SandboxPlan.wifiSubnet.peerIPv4.address
        serverAddress = SandboxPlan.serverIPv4
    }

    /// Measures between a socket bound to `clientAddress` in `client` and one bound to `serverAddress` in
    /// `server` (the same family): an attachment's target and a namespace beyond its link.
    public init(client: NamedNamespace, clientAddress: IPAddress, server: NamedNamespace, serverAddress: IPAddress) {
        self.client = client
        self.clientAddress = clientAddress
        self.server = server
        self.serverAddress = serverAddress
    }

    private var family: AddressFamily { clientAddress.family }

    private func socket(in namespace: NamedNamespace, address: IPAddress) throws(SandboxError) -> (DatagramSocket, UInt16) {
        let socket = try DatagramSocket(family: family, in: namespace)
        return (socket, try socket.bind(address: address))
    }

    /// Round trips: what `ping` would show, over UDP.
    public struct RoundTrips: Sendable, Codable, Equatable {
        /// Round-trip times of the answered probes, in seconds, in the order sent.
        public var samples: [Double]
        public var sent: Int
        public var median: Double? {
            guard !samples.isEmpty else { return nil }
            let sorted = samples.sorted()
            return sorted[sorted.count / 2]
        }
        public var minimum: Double? { samples.min() }
    }

    /// Sends `count` probes from the client to an echo socket in the server namespace, one at a time,
    /// each waiting up to `timeout` seconds for its echo.
    public func roundTrips(count: Int, timeout: Double) throws(SandboxError) -> RoundTrips {
        let (clientSocket, _) = try socket(in: client, address: clientAddress)
        let (serverSocket, serverPort) = try socket(in: server, address: serverAddress)
        let stop = Atomic<Bool>(false)
        let echo = Thread {
            while !stop.load(ordering: .relaxed) {
                if let (bytes, source) = serverSocket.receive(timeout: 0.1) { serverSocket.reply(bytes, to: source) }
            }
        }
        echo.start()
        defer { stop.store(true, ordering: .relaxed) }
        var result = RoundTrips(samples: [], sent: 0)
        for sequence in 0..<count {
            let tag = rawBytesOf(UInt32(sequence)) + [UInt8](repeating: 0x5a, count: 60)
            let start = MonotonicClock.seconds()
            guard clientSocket.send(tag, to: serverAddress, port: serverPort) else { continue }
            result.sent += 1
            while true {
                let remaining = timeout - (MonotonicClock.seconds() - start)
                guard remaining > 0, let (bytes, _) = clientSocket.receive(timeout: remaining) else { break }
                if Array(bytes.prefix(4)) == Array(tag.prefix(4)) {
                    result.samples.append(MonotonicClock.seconds() - start)
                    break
                }
            }
        }
        return result
    }

    /// Packets counted at the far end.
    public struct Delivery: Sendable, Codable, Equatable {
        public var direction: Direction
        public var sent: Int
        public var received: Int
        /// Bytes received on the wire (payload plus IP/UDP and Ethernet headers, as qdiscs count them).
        public var wireBytesReceived: Int
        /// Seconds from the first to the last packet received.
        public var receiveSpan: Double
        public var lossFraction: Double { sent == 0 ? 0 : Double(sent - received) / Double(sent) }
        /// Throughput at the receiver in bits per second of wire bytes (nil below two packets).
        public var wireBitsPerSecond: Double? {
            guard received > 1, receiveSpan > 0 else { return nil }
            return Double(wireBytesReceived) * 8 / receiveSpan * Double(received - 1) / Double(received)
        }
    }

    /// Sends `count` datagrams of `payload` bytes one way, paced at `interval` seconds apart, and counts
    /// what arrives within `drain` seconds after the last one. With a short interval this is a
    /// throughput measurement (the link's queue fills and drains at its rate); with a long one, a loss
    /// measurement.
    public func deliver(_ direction: Direction, count: Int, payload: Int, interval: Double, drain: Double) throws(SandboxError) -> Delivery {
        let (clientSocket, clientPort) = try socket(in: client, address: clientAddress)
        let (serverSocket, serverPort) = try socket(in: server, address: serverAddress)
        let (sender, receiver) = direction == .uplink ? (clientSocket, serverSocket) : (serverSocket, clientSocket)
        let (destination, destinationPort) = direction == .uplink ? (serverAddress, serverPort) : (clientAddress, clientPort)
        let headerBytes = (family == .inet ? 20 : 40) + 8 + 14
        let counter = Mutex((received: 0, bytes: 0, first: 0.0, last: 0.0))
        let done = Atomic<Bool>(false)
        let receiving = Thread {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 8)
            defer { buffer.deallocate() }
            while !done.load(ordering: .relaxed) {
                guard let length = receiver.receiveLength(timeout: 0.05, into: buffer) else { continue }
                let now = MonotonicClock.seconds()
                counter.withLock { state in
                    if state.received == 0 { state.first = now }
                    state.received += 1
                    state.bytes += length + headerBytes
                    state.last = now
                }
            }
        }
        receiving.start()
        var sent = 0
        let start = MonotonicClock.seconds()
        var datagram = [UInt8](repeating: 0xa5, count: payload)
        for index in 0..<count {
            let due = start + Double(index) * interval
            let wait = due - MonotonicClock.seconds()
            if wait > 0 { usleep(UInt32(wait * 1_000_000)) }
            datagram.replaceSubrange(0..<4, with: rawBytesOf(UInt32(index)))
            if sender.send(datagram, to: destination, port: destinationPort) { sent += 1 }
        }
        // Wait until nothing has arrived for `drain` seconds.
        var lastCount = -1
        while true {
            usleep(UInt32(drain * 1_000_000))
            let current = counter.withLock { $0.received }
            if current == lastCount { break }
            lastCount = current
        }
        done.store(true, ordering: .relaxed)
        let state = counter.withLock { $0 }
        return Delivery(direction: direction, sent: sent, received: state.received, wireBytesReceived: state.bytes,
                        receiveSpan: state.last - state.first)
    }
}

private func rawBytesOf<T>(_ value: T) -> [UInt8] {
    withUnsafeBytes(of: value) { Array($0) }
}

import Foundation
import Glibc
import LinkcondBase
import LinkcondSystem
import NetNamespace
import RouteNetlink
import Synchronization

// In-process traffic for the engine rows: sockets are opened inside a namespace (the socket factory) and
// driven by threads of this process, so no external tool is needed. Every wait is bounded.

enum BenchTraffic {
    static func seconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    /// A socket of `kind` opened in `namespace`, with send and receive timeouts of `timeout` seconds; the
    /// caller closes it.
    static func socket(in namespace: NamedNamespace, _ kind: SocketKind, timeout: Double) throws -> SocketDescriptor {
        let socket = try namespace.openSocket(kind).release()
        try? socket.setTimeout(seconds: timeout)
        try? socket.setTimeout(seconds: timeout, send: true)
        return socket
    }

    // MARK: TCP throughput

    /// One TCP stream from `client` to `address`:`port` in `router` for `warmup + seconds`; returns bits per
    /// second over the last `seconds`. `window` is called at the start and at the end of that measurement window.
    static func tcpThroughput(
        from client: NamedNamespace, to router: NamedNamespace, address: IPAddress, port: UInt16, warmup: Double = 0.5, seconds: Double,
        congestionControl: String? = nil, window: (_ atEnd: Bool) -> Void = { _ in }
    ) throws -> Double {
        let listener = try socket(in: router, .tcp(.inet), timeout: 5)
        do {
            try listener.setOption(.reuseAddress, Int32(1))
            try listener.bind(to: SocketAddress(address, port: port))
            try listener.listen(backlog: 1)
        } catch {
            try? listener.close()
            throw BenchFailure("listen on \(address):\(port): \(error)")
        }
        let counter = StreamCounter()
        let receiver = Thread {
            defer {
                try? listener.close()
                counter.done.signal()
            }
            guard let connection = try? listener.accept() else { return }
            defer { try? connection.close() }
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 64)
            defer { buffer.deallocate() }
            while let got = try? connection.receive(into: buffer), got > 0 {
                counter.bytes.add(got, ordering: .relaxed)
            }
        }
        receiver.start()
        let sender = try socket(in: client, .tcp(.inet), timeout: 5)
        if let congestionControl {
            // The machine's default may be BBR, which keeps its queue short by itself; a queue's behaviour is
            // shown by a loss-based sender (TCP_CONGESTION).
            let set = congestionControl.withCString { setsockopt(sender.rawValue, Int32(IPPROTO_TCP), TCP_CONGESTION, $0, socklen_t(strlen($0))) }
            guard set == 0 else {
                try? sender.close()
                throw BenchFailure("setsockopt TCP_CONGESTION \(congestionControl): errno \(errno)")
            }
        }
        do {
            // Blocking: a connect that outlasts SO_SNDTIMEO ends "in progress".
            guard try sender.connect(to: SocketAddress(address, port: port)) else {
                throw SystemError("connect \(address):\(port)", .timedOut)
            }
        } catch {
            try? sender.close()
            _ = counter.done.wait(timeout: .now() + 6)
            throw BenchFailure("\(error)")
        }
        let stop = Atomic<Bool>(false)
        let senderDone = DispatchSemaphore(value: 0)
        let senderThread = Thread {
            let chunk = [UInt8](repeating: 0x5a, count: 256 * 1024)
            while !stop.load(ordering: .relaxed) {
                // A stall beyond the 5 s send timeout ends the stream.
                guard (try? chunk.withUnsafeBytes { try sender.send($0, flags: Int32(MSG_NOSIGNAL)) }) != nil else { break }
            }
            try? sender.shutdown(.write)
            senderDone.signal()
        }
        senderThread.start()
        usleep(UInt32(warmup * 1_000_000))
        window(false)
        let startBytes = counter.bytes.load(ordering: .relaxed)
        let start = Self.seconds()
        usleep(UInt32(seconds * 1_000_000))
        let endBytes = counter.bytes.load(ordering: .relaxed)
        let end = Self.seconds()
        window(true)
        stop.store(true, ordering: .relaxed)
        _ = senderDone.wait(timeout: .now() + 7)
        _ = counter.done.wait(timeout: .now() + 7)
        try? sender.close()
        return Double(endBytes - startBytes) * 8 / (end - start)
    }

    private final class StreamCounter: Sendable {
        let bytes = Atomic<Int>(0)
        let done = DispatchSemaphore(value: 0)
    }

    // MARK: Round-trip time

    /// `count` ICMP echo round trips from `client` to `target`, one at a time with `gap` seconds between them;
    /// the round-trip times in microseconds (lost echoes, after 1 s, are left out).
    static func echoRoundTrips(from client: NamedNamespace, to target: IPAddress, count: Int, gap: Double = 0.002) throws -> [Double] {
        let fd = try socket(in: client, SocketKind(.inet, .raw, protocol: Int32(IPPROTO_ICMP)), timeout: 1)
        defer { try? fd.close() }
        let destination = SocketAddress(target, port: 0)
        let identifier = UInt16.random(in: 1...UInt16.max)
        var samples: [Double] = []
        var buffer = [UInt8](repeating: 0, count: 2048)
        for sequence in 0..<count {
            var message: [UInt8] = [8, 0, 0, 0, UInt8(identifier >> 8), UInt8(identifier & 0xff), UInt8((sequence >> 8) & 0xff), UInt8(sequence & 0xff)]
            message += [UInt8](repeating: 0x42, count: 56)
            let sum = checksum(message)
            message[2] = UInt8(sum >> 8)
            message[3] = UInt8(sum & 0xff)
            let start = seconds()
            let sent = try? message.withUnsafeBytes { try fd.send($0, to: destination) }
            guard sent == message.count else { continue }
            while seconds() - start < 1 {
                guard let got = try? buffer.withUnsafeMutableBytes({ try fd.receive(into: $0) }), got > 0 else { break }
                let end = seconds()
                let offset = Int(buffer[0] & 0x0f) * 4
                guard got >= offset + 8, buffer[offset] == 0 else { continue }
                let replyIdentifier = UInt16(buffer[offset + 4]) << 8 | UInt16(buffer[offset + 5])
                let replySequence = Int(buffer[offset + 6]) << 8 | Int(buffer[offset + 7])
                if replyIdentifier == identifier, replySequence == sequence & 0xffff {
                    samples.append((end - start) * 1e6)
                    break
                }
            }
            usleep(UInt32(gap * 1_000_000))
        }
        return samples
    }

    static func checksum(_ bytes: [UInt8]) -> UInt16 {
        var sum: UInt32 = 0
        var index = 0
        while index + 1 < bytes.count {
            sum += UInt32(bytes[index]) << 8 | UInt32(bytes[index + 1])
            index += 2
        }
        if index < bytes.count { sum += UInt32(bytes[index]) << 8 }
        while sum >> 16 != 0 { sum = (sum & 0xffff) + (sum >> 16) }
        return ~UInt16(sum)
    }

    // MARK: Paced datagrams

    /// Sends 64-byte UDP datagrams from `client` to `address`:`port` in `router` at `rate` per second for
    /// `seconds` (a receiver drains them); returns the number sent.
    static func pacedDatagrams(from client: NamedNamespace, to router: NamedNamespace, address: IPAddress, port: UInt16, rate: Int, seconds: Double) throws -> Int {
        let receiver = try socket(in: router, .udp(.inet), timeout: 0.2)
        let destination = SocketAddress(address, port: port)
        do {
            try receiver.bind(to: destination)
        } catch {
            try? receiver.close()
            throw BenchFailure("\(error)")
        }
        try? receiver.setOption(.receiveBufferForce, Int32(16 << 20))
        let stop = Atomic<Bool>(false)
        let drained = DispatchSemaphore(value: 0)
        let drain = Thread {
            var buffer = [UInt8](repeating: 0, count: 2048)
            while !stop.load(ordering: .relaxed) { _ = try? buffer.withUnsafeMutableBytes { try receiver.receive(into: $0) } }
            try? receiver.close()
            drained.signal()
        }
        drain.start()
        let sender = try socket(in: client, .udp(.inet), timeout: 1)
        defer { try? sender.close() }
        let payload = [UInt8](repeating: 0x17, count: 64)
        var sent = 0
        let tick: UInt64 = 100_000
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let start = UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
        let end = start + UInt64(seconds * 1e9)
        var next = start
        while next < end {
            let due = Int(Double(next - start) / 1e9 * Double(rate))
            while sent < due {
                _ = try? payload.withUnsafeBytes { try sender.send($0, to: destination) }
                sent += 1
            }
            next += tick
            var deadline = timespec(tv_sec: Int(next / 1_000_000_000), tv_nsec: Int(next % 1_000_000_000))
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, nil)
        }
        usleep(200_000)  // let the last ones through the delay line
        stop.store(true, ordering: .relaxed)
        _ = drained.wait(timeout: .now() + 2)
        return sent
    }
}

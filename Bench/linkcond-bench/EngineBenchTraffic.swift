import Foundation
import Glibc
import LinkcondBase
import NetNamespace
import RouteNetlink
import Synchronization

// In-process traffic for the engine rows: sockets are opened inside a namespace (NamedNamespace.run) and
// driven by threads of this process, so no external tool is needed. Every wait is bounded.

enum BenchTraffic {
    static func seconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    static func socket(in namespace: NamedNamespace, _ family: Int32, _ type: Int32, _ proto: Int32, timeout: Double) throws -> Int32 {
        let fd = try namespace.run { Glibc.socket(family, type | Int32(SOCK_CLOEXEC.rawValue), proto) }
        guard fd >= 0 else { throw BenchFailure("socket in \(namespace.name): \(String(cString: strerror(errno)))") }
        var time = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - Double(Int(timeout))) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    static func withAddress<T>(_ ip: IPAddress, port: UInt16, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        var v4 = sockaddr_in()
        v4.sin_family = sa_family_t(AF_INET)
        v4.sin_port = port.bigEndian
        withUnsafeMutableBytes(of: &v4.sin_addr) { $0.copyBytes(from: ip.bytes) }
        return withUnsafePointer(to: &v4) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }

    // MARK: TCP throughput

    /// One TCP stream from `client` to `address`:`port` in `router` for `warmup + seconds`; returns bits per
    /// second over the last `seconds`. `window` is called at the start and at the end of that measurement window.
    static func tcpThroughput(
        from client: NamedNamespace, to router: NamedNamespace, address: IPAddress, port: UInt16, warmup: Double = 0.5, seconds: Double,
        window: (_ atEnd: Bool) -> Void = { _ in }
    ) throws -> Double {
        let listener = try socket(in: router, AF_INET, Int32(SOCK_STREAM.rawValue), 0, timeout: 5)
        var one: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard withAddress(address, port: port, { bind(listener, $0, $1) }) == 0, listen(listener, 1) == 0 else {
            close(listener)
            throw BenchFailure("listen on \(address):\(port): \(String(cString: strerror(errno)))")
        }
        let counter = StreamCounter()
        let receiver = Thread {
            defer { close(listener); counter.done.signal() }
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { return }
            defer { close(connection) }
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: 1 << 20, alignment: 64)
            defer { buffer.deallocate() }
            while true {
                let got = recv(connection, buffer, 1 << 20, 0)
                if got < 0 && errno == EINTR { continue }
                if got <= 0 { return }
                counter.bytes.add(got, ordering: .relaxed)
            }
        }
        receiver.start()
        let sender = try socket(in: client, AF_INET, Int32(SOCK_STREAM.rawValue), 0, timeout: 5)
        guard withAddress(address, port: port, { connect(sender, $0, $1) }) == 0 else {
            close(sender)
            _ = counter.done.wait(timeout: .now() + 6)
            throw BenchFailure("connect to \(address):\(port): \(String(cString: strerror(errno)))")
        }
        let stop = Atomic<Bool>(false)
        let senderDone = DispatchSemaphore(value: 0)
        let senderThread = Thread {
            let chunk = [UInt8](repeating: 0x5a, count: 256 * 1024)
            while !stop.load(ordering: .relaxed) {
                let sent = chunk.withUnsafeBytes { send(sender, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if sent < 0 && errno != EINTR { break }  // a stall beyond the 5 s send timeout ends the stream
            }
            shutdown(sender, Int32(SHUT_WR))
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
        close(sender)
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
        let fd = try socket(in: client, AF_INET, Int32(SOCK_RAW.rawValue), Int32(IPPROTO_ICMP), timeout: 1)
        defer { close(fd) }
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
            let sent = message.withUnsafeBytes { raw in withAddress(target, port: 0) { sendto(fd, raw.baseAddress, raw.count, 0, $0, $1) } }
            guard sent == message.count else { continue }
            while seconds() - start < 1 {
                let got = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                guard got > 0 else { break }
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
        let receiver = try socket(in: router, AF_INET, Int32(SOCK_DGRAM.rawValue), 0, timeout: 0.2)
        guard withAddress(address, port: port, { bind(receiver, $0, $1) }) == 0 else {
            close(receiver)
            throw BenchFailure("bind \(address):\(port): \(String(cString: strerror(errno)))")
        }
        var size: Int32 = 16 << 20
        setsockopt(receiver, SOL_SOCKET, SO_RCVBUFFORCE, &size, socklen_t(MemoryLayout<Int32>.size))
        let stop = Atomic<Bool>(false)
        let drained = DispatchSemaphore(value: 0)
        let drain = Thread {
            var buffer = [UInt8](repeating: 0, count: 2048)
            while !stop.load(ordering: .relaxed) { _ = buffer.withUnsafeMutableBytes { recv(receiver, $0.baseAddress, $0.count, 0) } }
            close(receiver)
            drained.signal()
        }
        drain.start()
        let sender = try socket(in: client, AF_INET, Int32(SOCK_DGRAM.rawValue), 0, timeout: 1)
        defer { close(sender) }
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
                _ = payload.withUnsafeBytes { raw in withAddress(address, port: port) { sendto(sender, raw.baseAddress, raw.count, 0, $0, $1) } }
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

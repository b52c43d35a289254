import Conditioning
import Foundation
import Glibc
import LinkcondBase
import NetNamespace
import Profiles
import Sandboxing
import XCTest

// Helpers of the engine's own tests (EngineFidelityTests, EngineFailureTests): numbered datagrams with the
// kernel's receive timestamps, a TCP transfer checked end to end, and the processes of a sandbox's engine.

/// Wall-clock nanoseconds (CLOCK_REALTIME), the clock of the kernel's `SO_TIMESTAMPNS` receive stamps.
func realtimeNanoseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
}

/// Numbered UDP datagrams from one namespace to another, each stamped by the kernel when it arrived
/// (`SO_TIMESTAMPNS`, taken as the frame enters the receiving stack: no scheduling delay of the reading
/// thread in it) and by the sender just before it was sent.
struct NumberedDatagrams {
    struct Arrival {
        /// The number the sender wrote into the datagram (0, 1, 2… in sending order).
        var sequence: Int
        /// When the kernel received it, and when the sender sent it (CLOCK_REALTIME ns).
        var received: Int64
        var sent: Int64
        /// One-way seconds.
        var oneWay: Double { Double(received - sent) / 1e9 }
    }

    struct Outcome {
        /// In arrival order.
        var arrivals: [Arrival]
        var sent: Int
        /// CLOCK_REALTIME just before the first datagram was sent.
        var start: Int64

        /// Pairs (i, j) with i sent before j but received after it: 0 when the order was kept.
        var inversions: Int {
            let order = arrivals.map(\.sequence)
            var count = 0
            for (index, value) in order.enumerated() {
                for later in order[(index + 1)...] where later < value { count += 1 }
            }
            return count
        }
    }

    var count: Int
    /// Payload bytes (at least 12: the sequence number and the send time).
    var payload: Int
    /// Seconds between datagrams; 0 sends them back to back.
    var interval: Double

    /// Sends the datagrams from `from` (bound to `fromAddress`) to a socket bound to `toAddress` in `to`, and
    /// collects what arrives until `drain` seconds pass with nothing.
    func run(from: NamedNamespace, _ fromAddress: IPAddress, to: NamedNamespace, _ toAddress: IPAddress, drain: Double) throws -> Outcome {
        let receiver = try to.run { () throws -> Int32 in
            let fd = try TestSocket.open(for: toAddress, type: Int32(SOCK_DGRAM.rawValue), timeout: drain)
            QueueBurst.force(fd, SO_RCVBUFFORCE, 16 << 20)
            var one: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, socklen_t(MemoryLayout<Int32>.size))
            try TestSocket.bind(fd, toAddress, port: 0)
            return fd
        }
        defer { close(receiver) }
        let sender = try from.run { () throws -> Int32 in
            let fd = try TestSocket.open(for: fromAddress, type: Int32(SOCK_DGRAM.rawValue), timeout: 2)
            QueueBurst.force(fd, SO_SNDBUFFORCE, 16 << 20)
            try TestSocket.bind(fd, fromAddress, port: 0)
            return fd
        }
        defer { close(sender) }
        let port = QueueBurst.port(of: receiver)
        var bytes = [UInt8](repeating: 0x5a, count: max(payload, 12))
        let start = realtimeNanoseconds()
        var sent = 0
        for sequence in 0..<count {
            if interval > 0 {
                let due = start + Int64(Double(sequence) * interval * 1e9)
                let wait = due - realtimeNanoseconds()
                if wait > 0 { usleep(UInt32(wait / 1000)) }
            }
            let now = realtimeNanoseconds()
            withUnsafeBytes(of: UInt32(sequence).littleEndian) { bytes.replaceSubrange(0..<4, with: $0) }
            withUnsafeBytes(of: now.littleEndian) { bytes.replaceSubrange(4..<12, with: $0) }
            if TestSocket.send(sender, bytes, to: toAddress, port: port) == 0 { sent += 1 }
        }
        var arrivals: [Arrival] = []
        while let (data, stamp) = Self.receive(receiver, capacity: bytes.count + 64) {
            guard data.count >= 12 else { continue }
            let sequence = Int(data[0..<4].enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) })
            let sentAt = Int64(bitPattern: data[4..<12].enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) })
            arrivals.append(Arrival(sequence: sequence, received: stamp, sent: sentAt))
        }
        return Outcome(arrivals: arrivals, sent: sent, start: start)
    }

    /// One datagram and its `SCM_TIMESTAMPNS` stamp; nil after the socket's receive timeout.
    static func receive(_ fd: Int32, capacity: Int) -> ([UInt8], Int64)? {
        var data = [UInt8](repeating: 0, count: capacity)
        var control = [UInt8](repeating: 0, count: 128)
        var controlLength = 0
        while true {
            let result: Int = data.withUnsafeMutableBytes { dataBytes in
                control.withUnsafeMutableBytes { controlBytes in
                    var vector = iovec(iov_base: dataBytes.baseAddress, iov_len: dataBytes.count)
                    return withUnsafeMutablePointer(to: &vector) { vectorPointer in
                        var message = msghdr()
                        message.msg_iov = vectorPointer
                        message.msg_iovlen = 1
                        message.msg_control = controlBytes.baseAddress
                        message.msg_controllen = controlBytes.count
                        let count = recvmsg(fd, &message, 0)
                        controlLength = Int(message.msg_controllen)
                        return count
                    }
                }
            }
            if result < 0 && errno == EINTR { continue }
            guard result >= 0 else { return nil }
            return (Array(data[0..<result]), timestamp(control, length: controlLength) ?? realtimeNanoseconds())
        }
    }

    /// The `SCM_TIMESTAMPNS` timespec in a control buffer (struct cmsghdr: size_t length, int level, int
    /// type, then the data aligned to size_t).
    private static func timestamp(_ control: [UInt8], length: Int) -> Int64? {
        var offset = 0
        let header = MemoryLayout<Int>.size + 8
        while offset + header <= length {
            let cmsgLength = control.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: Int.self) }
            let level = control.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + MemoryLayout<Int>.size, as: Int32.self) }
            let type = control.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + MemoryLayout<Int>.size + 4, as: Int32.self) }
            guard cmsgLength >= header else { return nil }
            if level == SOL_SOCKET && type == SO_TIMESTAMPNS && offset + header + 16 <= length {
                let seconds = control.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + header, as: Int.self) }
                let nanoseconds = control.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + header + 8, as: Int.self) }
                return Int64(seconds) * 1_000_000_000 + Int64(nanoseconds)
            }
            offset += (cmsgLength + MemoryLayout<Int>.size - 1) & ~(MemoryLayout<Int>.size - 1)
        }
        return nil
    }
}

/// A TCP stream of pseudo-random bytes from one namespace to another, hashed at both ends.
enum CheckedTCPTransfer {
    struct Outcome {
        var sentBytes: Int
        var receivedBytes: Int
        var sentHash: UInt64
        var receivedHash: UInt64
        var seconds: Double
        var error: String?
        var intact: Bool { error == nil && receivedBytes == sentBytes && receivedHash == sentHash }
    }

    /// FNV-1a, 64 bits.
    struct Hash {
        var value: UInt64 = 0xcbf2_9ce4_8422_2325
        mutating func add(_ bytes: ArraySlice<UInt8>) {
            for byte in bytes {
                value ^= UInt64(byte)
                value = value &* 0x0000_0100_0000_01b3
            }
        }
    }

    /// Sends `bytes` from `source` to a listener on `target`:`port` in `destination`; every socket operation
    /// gives up after `stall` seconds. `congestionControl` names the sender's algorithm (TCP_CONGESTION, e.g.
    /// `cubic`, loss-based as most senders are; nil keeps the system's, bbr on this machine). `hashed: false`
    /// sends zeros and checks the byte count alone, for a sender that must keep up with tens of Mbit/s in a
    /// debug build (the per-byte generator and hash do not).
    static func run(
        bytes: Int, from source: NamedNamespace, to target: IPAddress, in destination: NamedNamespace, port: UInt16 = 5001, stall: Double = 20,
        congestionControl: String? = nil, hashed: Bool = true
    ) throws -> Outcome {
        let listener = try destination.run { () throws -> Int32 in
            let fd = try TestSocket.open(for: target, type: Int32(SOCK_STREAM.rawValue), timeout: stall)
            var one: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            try TestSocket.bind(fd, target, port: port)
            guard listen(fd, 1) == 0 else { throw TestSocket.Failure(what: "listen", code: errno) }
            return fd
        }
        let received = ResultBox<(Int, UInt64, String?)>()
        let done = DispatchSemaphore(value: 0)
        Thread {
            defer {
                close(listener)
                done.signal()
            }
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else {
                received.result = .success((0, 0, "accept: \(String(cString: strerror(errno)))"))
                return
            }
            defer { close(connection) }
            var hash = Hash()
            var total = 0
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
                if count < 0 && errno == EINTR { continue }
                if count < 0 {
                    received.result = .success((total, hash.value, "receive stalled after \(total) bytes: \(String(cString: strerror(errno)))"))
                    return
                }
                if count == 0 { break }
                if hashed { hash.add(buffer[0..<count]) }
                total += count
            }
            received.result = .success((total, hash.value, nil))
        }.start()

        let sender = try source.run { try TestSocket.open(for: target, type: Int32(SOCK_STREAM.rawValue), timeout: stall) }
        defer { close(sender) }
        if let congestionControl {
            let set = congestionControl.withCString { setsockopt(sender, Int32(IPPROTO_TCP), TCP_CONGESTION, $0, socklen_t(strlen($0))) }
            guard set == 0 else { throw TestSocket.Failure(what: "setsockopt TCP_CONGESTION \(congestionControl)", code: errno) }
        }
        let start = MonotonicClock.seconds()
        var error: String?
        var sentHash = Hash()
        if TestSocket.connect(sender, target, port: port) != 0 {
            error = "connect: \(String(cString: strerror(errno)))"
        } else {
            var state: UInt64 = 0x9e37_79b9_7f4a_7c15
            var chunk = [UInt8](repeating: 0, count: 65536)
            var remaining = bytes
            sending: while remaining > 0 {
                let size = min(chunk.count, remaining)
                for index in 0..<size where hashed {
                    state ^= state << 13
                    state ^= state >> 7
                    state ^= state << 17
                    chunk[index] = UInt8(truncatingIfNeeded: state)
                }
                if hashed { sentHash.add(chunk[0..<size]) }
                var offset = 0
                while offset < size {
                    let sent = chunk[offset..<size].withUnsafeBytes { send(sender, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    if sent < 0 && errno == EINTR { continue }
                    if sent <= 0 {
                        error = "send stalled after \(bytes - remaining + offset) bytes: \(String(cString: strerror(errno)))"
                        break sending
                    }
                    offset += sent
                }
                remaining -= size
            }
            shutdown(sender, Int32(SHUT_WR))
        }
        done.wait()
        let (count, hash, receiveError) = try received.result!.get()
        return Outcome(
            sentBytes: bytes, receivedBytes: count, sentHash: sentHash.value, receivedHash: hash, seconds: MonotonicClock.seconds() - start,
            error: error ?? receiveError)
    }
}

extension SandboxTestCase {
    /// The pids of the `linkcond engine` processes of sandbox `name` (their command lines name it).
    func enginePIDs(_ name: String) -> [Int32] {
        processes(commandLineContaining: "engine --name \(name) ").filter { pid in
            (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)).map { !$0.contains(") Z ") } ?? false
        }
    }
}

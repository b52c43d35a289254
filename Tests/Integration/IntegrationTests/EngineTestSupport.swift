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
    /// The receiving socket's buffer (SO_RCVBUFFORCE): everything that arrives waits there until the sender
    /// is done, so it must hold the whole stream (the kernel counts about 2.3 KiB for a full-size datagram).
    var receiveBuffer: Int32 = 16 << 20
    /// Whether a sender that fell behind (a stall of the machine) catches up by sending back to back, keeping
    /// the stream's average rate, or lets its schedule slip, never sending faster than `interval` apart
    /// (but for one datagram), so no stall turns into a burst that a queue downstream would tail-drop.
    var catchUp = true

    /// Sends the datagrams from `from` (bound to `fromAddress`) to a socket bound to `toAddress` in `to`, and
    /// collects what arrives until `drain` seconds pass with nothing.
    func run(from: NamedNamespace, _ fromAddress: IPAddress, to: NamedNamespace, _ toAddress: IPAddress, drain: Double) throws -> Outcome {
        let receiver = try to.run { () throws -> Int32 in
            let fd = try TestSocket.open(for: toAddress, type: Int32(SOCK_DGRAM.rawValue), timeout: drain)
            QueueBurst.force(fd, SO_RCVBUFFORCE, receiveBuffer)
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
        // Connected, and one buffer written in place: the loop does as little per datagram as it can (in a
        // TCG guest every instruction of it is emulated, and a slow loop is a slow sender).
        let code = TestSocket.connect(sender, toAddress, port: port)
        guard code == 0 else { throw TestSocket.Failure(what: "connect a datagram socket to \(toAddress) port \(port)", code: code) }
        let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: max(payload, 12), alignment: 8)
        defer { bytes.deallocate() }
        bytes.initializeMemory(as: UInt8.self, repeating: 0x5a)
        let start = realtimeNanoseconds()
        let step = Int64(interval * 1e9)
        var due = start
        var sent = 0
        for sequence in 0..<count {
            if interval > 0 {
                due = catchUp ? start + Int64(Double(sequence) * interval * 1e9) : due + (sequence > 0 ? step : 0)
                let now = realtimeNanoseconds()
                if !catchUp && now - due > step { due = now - step }
                let wait = due - now
                if wait > 0 { usleep(UInt32(wait / 1000)) }
            }
            bytes.storeBytes(of: UInt32(sequence).littleEndian, toByteOffset: 0, as: UInt32.self)
            bytes.storeBytes(of: realtimeNanoseconds().littleEndian, toByteOffset: 4, as: Int64.self)
            if Glibc.send(sender, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count { sent += 1 }
        }
        var arrivals: [Arrival] = []
        arrivals.reserveCapacity(count)
        let data = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count + 64, alignment: 8)
        defer { data.deallocate() }
        while let (length, stamp) = Self.receive(receiver, into: data) {
            guard length >= 12 else { continue }
            let sequence = Int(UInt32(littleEndian: data.loadUnaligned(fromByteOffset: 0, as: UInt32.self)))
            let sentAt = Int64(littleEndian: data.loadUnaligned(fromByteOffset: 4, as: Int64.self))
            arrivals.append(Arrival(sequence: sequence, received: stamp, sent: sentAt))
        }
        return Outcome(arrivals: arrivals, sent: sent, start: start)
    }

    /// One datagram into `data` and its `SCM_TIMESTAMPNS` stamp; nil after the socket's receive timeout.
    static func receive(_ fd: Int32, into data: UnsafeMutableRawBufferPointer) -> (Int, Int64)? {
        var control = (UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        return withUnsafeMutableBytes(of: &control) { controlBytes in
            var vector = iovec(iov_base: data.baseAddress, iov_len: data.count)
            while true {
                var message = msghdr()
                let result = withUnsafeMutablePointer(to: &vector) { vectorPointer in
                    message.msg_iov = vectorPointer
                    message.msg_iovlen = 1
                    message.msg_control = controlBytes.baseAddress
                    message.msg_controllen = controlBytes.count
                    return recvmsg(fd, &message, 0)
                }
                if result < 0 && errno == EINTR { continue }
                guard result >= 0 else { return nil }
                return (result, timestamp(UnsafeRawBufferPointer(controlBytes), length: Int(message.msg_controllen)) ?? realtimeNanoseconds())
            }
        }
    }

    /// The `SCM_TIMESTAMPNS` timespec in a control buffer (struct cmsghdr: size_t length, int level, int
    /// type, then the data aligned to size_t).
    private static func timestamp(_ control: UnsafeRawBufferPointer, length: Int) -> Int64? {
        var offset = 0
        let header = MemoryLayout<Int>.size + 8
        while offset + header <= min(length, control.count) {
            let cmsgLength = control.loadUnaligned(fromByteOffset: offset, as: Int.self)
            let level = control.loadUnaligned(fromByteOffset: offset + MemoryLayout<Int>.size, as: Int32.self)
            let type = control.loadUnaligned(fromByteOffset: offset + MemoryLayout<Int>.size + 4, as: Int32.self)
            guard cmsgLength >= header else { return nil }
            if level == SOL_SOCKET && type == SO_TIMESTAMPNS && offset + header + 16 <= min(length, control.count) {
                let seconds = control.loadUnaligned(fromByteOffset: offset + header, as: Int.self)
                let nanoseconds = control.loadUnaligned(fromByteOffset: offset + header + 8, as: Int.self)
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

import Foundation
import Glibc
import LinkcondBase
import NetNamespace
import RouteNetlink

/// A TCP stream of deterministic pseudo-random bytes from one namespace to another, checked end to end.
enum TCPTransfer {
    struct Outcome {
        /// Bytes the receiver read, and their FNV-1a hash.
        var receivedBytes: Int
        var receivedHash: UInt64
        /// The hash of what was sent.
        var sentHash: UInt64
        /// Wall time from connect to the receiver's end of stream, in seconds.
        var seconds: Double
        /// Why the transfer stopped early, if it did.
        var error: String?
    }

    /// Sends `bytes` from `source` to a receiver bound to `target`:`port` in `destination`. Each socket
    /// operation is bounded by `stallTimeout` seconds: a stalled stream ends the transfer (with `error` set)
    /// instead of hanging.
    static func run(
        bytes: Int, from source: NamedNamespace, to target: IPAddress, in destination: NamedNamespace, port: UInt16,
        stallTimeout: Double = 5
    ) throws -> Outcome {
        let family = target.isIPv4 ? AF_INET : AF_INET6
        let listener = try Traffic.socket(in: destination, family, Int32(SOCK_STREAM.rawValue), 0, timeout: stallTimeout)
        var one: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var (bound, boundLength) = Traffic.address(target, port: port)
        let bindResult = withUnsafePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, boundLength) }
        }
        guard bindResult == 0, listen(listener, 1) == 0 else {
            close(listener)
            throw Traffic.fail("listen on \(target) port \(port)")
        }
        let receiver = Receiver(listener: listener)
        let thread = Thread { receiver.run() }
        thread.start()

        let sender = try Traffic.socket(in: source, family, Int32(SOCK_STREAM.rawValue), 0, timeout: stallTimeout)
        defer { close(sender) }
        var (storage, length) = Traffic.address(target, port: port)
        let start = Traffic.monotonicSeconds()
        let connected = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(sender, $0, length) }
        }
        var error: String?
        var generator = PatternGenerator()
        var sentHash = FNV1a()
        if connected != 0 {
            error = "connect: \(String(cString: strerror(errno)))"
        } else {
            var chunk = [UInt8](repeating: 0, count: 64 * 1024)
            var remaining = bytes
            sending: while remaining > 0 {
                let size = min(chunk.count, remaining)
                generator.fill(&chunk, count: size)
                sentHash.add(chunk[..<size])
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
        receiver.finished.wait()
        let seconds = Traffic.monotonicSeconds() - start
        let (count, hash, receiveError) = receiver.result
        return Outcome(
            receivedBytes: count, receivedHash: hash, sentHash: sentHash.value, seconds: seconds, error: error ?? receiveError)
    }

    /// The receiving end: accepts one connection and reads it to its end.
    private final class Receiver: @unchecked Sendable {
        let listener: Int32
        let finished = DispatchSemaphore(value: 0)
        var result: (Int, UInt64, String?) = (0, 0, nil)

        init(listener: Int32) {
            self.listener = listener
        }

        func run() {
            defer {
                close(listener)
                finished.signal()
            }
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else {
                result.2 = "accept: \(String(cString: strerror(errno)))"
                return
            }
            defer { close(connection) }
            var buffer = [UInt8](repeating: 0, count: 256 * 1024)
            var hash = FNV1a()
            var total = 0
            while true {
                let got = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
                if got < 0 && errno == EINTR { continue }
                if got < 0 {
                    result = (total, hash.value, "receive stalled after \(total) bytes: \(String(cString: strerror(errno)))")
                    return
                }
                if got == 0 { break }
                hash.add(buffer[..<got])
                total += got
            }
            result = (total, hash.value, nil)
        }
    }
}

/// xorshift64* bytes: the same stream on every run.
struct PatternGenerator {
    private var state: UInt64 = 0x9E37_79B9_7F4A_7C15

    mutating func fill(_ buffer: inout [UInt8], count: Int) {
        buffer.withUnsafeMutableBytes { raw in
            var index = 0
            while index < count {
                state ^= state >> 12
                state ^= state << 25
                state ^= state >> 27
                var word = state &* 0x2545_F491_4F6C_DD1D
                let take = min(8, count - index)
                withUnsafeBytes(of: &word) { raw.baseAddress!.advanced(by: index).copyMemory(from: $0.baseAddress!, byteCount: take) }
                index += take
            }
        }
    }
}

/// 64-bit FNV-1a.
struct FNV1a {
    private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325

    mutating func add(_ bytes: ArraySlice<UInt8>) {
        var hash = value
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        value = hash
    }
}

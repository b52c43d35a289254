import Foundation
import Glibc
import LinkcondBase
import NetNamespace
import RouteNetlink

/// Real traffic between the lab's namespaces over plain sockets, opened inside a namespace (a socket stays
/// bound to the namespace it was created in) and used from the test's thread. Every wait is bounded.
enum Traffic {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static func fail(_ what: String) -> Failure {
        Failure(description: "\(what): \(String(cString: strerror(errno)))")
    }

    /// Opens a socket inside `namespace` with a receive timeout of `timeout` seconds.
    static func socket(in namespace: NamedNamespace, _ family: Int32, _ type: Int32, _ proto: Int32, timeout: Double = 1) throws -> Int32 {
        let fd = try namespace.run { Glibc.socket(family, type | Int32(SOCK_CLOEXEC.rawValue), proto) }
        guard fd >= 0 else { throw fail("socket(\(family), \(type), \(proto)) in \(namespace.name)") }
        var time = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - Double(Int(timeout))) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    static func address(_ ip: IPAddress, port: UInt16) -> (sockaddr_storage, socklen_t) {
        var storage = sockaddr_storage()
        if ip.isIPv4 {
            var v4 = sockaddr_in()
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = port.bigEndian
            withUnsafeMutableBytes(of: &v4.sin_addr) { $0.copyBytes(from: ip.bytes) }
            withUnsafeMutableBytes(of: &storage) { raw in withUnsafeBytes(of: v4) { raw.copyMemory(from: $0) } }
            return (storage, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
        var v6 = sockaddr_in6()
        v6.sin6_family = sa_family_t(AF_INET6)
        v6.sin6_port = port.bigEndian
        withUnsafeMutableBytes(of: &v6.sin6_addr) { $0.copyBytes(from: ip.bytes) }
        withUnsafeMutableBytes(of: &storage) { raw in withUnsafeBytes(of: v6) { raw.copyMemory(from: $0) } }
        return (storage, socklen_t(MemoryLayout<sockaddr_in6>.size))
    }

    static func monotonicSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    // MARK: ICMP echo

    /// One echo request from `namespace` to `target` (ICMP or ICMPv6 over a raw socket); the round-trip
    /// time in seconds, or nil when no reply came within `timeout`.
    static func ping(from namespace: NamedNamespace, to target: IPAddress, timeout: Double = 1, payload: Int = 56) throws -> Double? {
        let v4 = target.isIPv4
        let fd = try socket(in: namespace, v4 ? AF_INET : AF_INET6, Int32(SOCK_RAW.rawValue), Int32(v4 ? IPPROTO_ICMP : IPPROTO_ICMPV6), timeout: 0.05)
        defer { close(fd) }
        let identifier = UInt16.random(in: 1...UInt16.max)
        let sequence = UInt16.random(in: 1...UInt16.max)
        var message: [UInt8] = [v4 ? 8 : 128, 0, 0, 0, UInt8(identifier >> 8), UInt8(identifier & 0xff), UInt8(sequence >> 8), UInt8(sequence & 0xff)]
        message += (0..<payload).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
        if v4 {
            let sum = internetChecksum(message)
            message[2] = UInt8(sum >> 8)
            message[3] = UInt8(sum & 0xff)
        }  // The kernel fills in the ICMPv6 checksum (it covers a pseudo-header).
        var (storage, length) = address(target, port: 0)
        let start = monotonicSeconds()
        let sent = message.withUnsafeBytes { raw in
            withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, raw.baseAddress, raw.count, 0, $0, length) }
            }
        }
        guard sent == message.count else { throw fail("send an echo request to \(target)") }
        var buffer = [UInt8](repeating: 0, count: 2048)
        while monotonicSeconds() - start < timeout {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0 { continue }  // receive timeout slice; check the deadline
            let received = monotonicSeconds()
            // Raw IPv4 sockets deliver the IP header too; raw ICMPv6 sockets only the message.
            let offset = v4 ? Int(buffer[0] & 0x0f) * 4 : 0
            guard count >= offset + 8 else { continue }
            let type = buffer[offset]
            let replyIdentifier = UInt16(buffer[offset + 4]) << 8 | UInt16(buffer[offset + 5])
            let replySequence = UInt16(buffer[offset + 6]) << 8 | UInt16(buffer[offset + 7])
            if type == (v4 ? 0 : 129), replyIdentifier == identifier, replySequence == sequence {
                return received - start
            }
        }
        return nil
    }

    /// The RFC 1071 checksum of `bytes`.
    static func internetChecksum(_ bytes: [UInt8]) -> UInt16 {
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

    // MARK: UDP

    /// Sends `count` datagrams from `source` to `target`:`port` in `destination`, and returns how many
    /// arrived intact (waiting at most `timeout` for the last).
    static func udpDatagrams(
        count: Int, from source: NamedNamespace, to target: IPAddress, in destination: NamedNamespace, port: UInt16, timeout: Double = 2
    ) throws -> Int {
        let family = target.isIPv4 ? AF_INET : AF_INET6
        let receiver = try socket(in: destination, family, Int32(SOCK_DGRAM.rawValue), 0, timeout: 0.05)
        defer { close(receiver) }
        var (bound, boundLength) = address(target, port: port)
        let bindResult = withUnsafePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(receiver, $0, boundLength) }
        }
        guard bindResult == 0 else { throw fail("bind \(target) port \(port)") }
        let sender = try socket(in: source, family, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(sender) }
        var (storage, length) = address(target, port: port)
        for index in 0..<count {
            let payload = Array("linkcond-engine datagram \(index)".utf8)
            let sent = payload.withUnsafeBytes { raw in
                withUnsafePointer(to: &storage) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(sender, raw.baseAddress, raw.count, 0, $0, length) }
                }
            }
            guard sent == payload.count else { throw fail("send datagram \(index) to \(target)") }
        }
        var seen = Set<Int>()
        var buffer = [UInt8](repeating: 0, count: 2048)
        let deadline = monotonicSeconds() + timeout
        while seen.count < count && monotonicSeconds() < deadline {
            let got = buffer.withUnsafeMutableBytes { recv(receiver, $0.baseAddress, $0.count, 0) }
            guard got > 0 else { continue }
            let text = String(decoding: buffer[..<got], as: UTF8.self)
            if text.hasPrefix("linkcond-engine datagram "), let index = Int(text.dropFirst(25)) { seen.insert(index) }
        }
        return seen.count
    }
}

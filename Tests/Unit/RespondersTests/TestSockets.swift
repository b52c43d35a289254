import Glibc
import XCTest

/// A minimal blocking client socket for the live tests (loopback only), with 5 s timeouts.
final class TestSocket {
    let fd: Int32

    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ what: String, _ code: Int32 = errno) {
            description = "\(what): \(String(cString: strerror(code)))"
        }
    }

    /// A connected TCP socket, or an unconnected-but-targeted UDP socket (via connect, so send/recv work).
    init(tcp: Bool, host: String, port: UInt16) throws {
        var storage = sockaddr_storage()
        let length: socklen_t
        let family: Int32
        if host.contains(":") {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else { throw Failure("bad address \(host)", 0) }
            withUnsafeMutableBytes(of: &storage) { raw in withUnsafeBytes(of: &address) { raw.copyMemory(from: $0) } }
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            family = AF_INET6
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { throw Failure("bad address \(host)", 0) }
            withUnsafeMutableBytes(of: &storage) { raw in withUnsafeBytes(of: &address) { raw.copyMemory(from: $0) } }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
            family = AF_INET
        }
        let type = tcp ? SOCK_STREAM : SOCK_DGRAM
        fd = socket(family, Int32(type.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure("socket") }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let result = withUnsafeBytes(of: &storage) { raw in
            connect(fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), length)
        }
        guard result == 0 else {
            let code = errno
            close(fd)
            throw Failure("connect to \(host) port \(port)", code)
        }
    }

    deinit { close(fd) }

    func send(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let result = bytes.withUnsafeBytes { raw in
                Glibc.send(fd, raw.baseAddress! + sent, raw.count - sent, Int32(MSG_NOSIGNAL))
            }
            guard result >= 0 else { throw Failure("send") }
            sent += result
        }
    }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// One receive (a datagram, or what a stream has ready); empty at end of stream.
    func receive(max: Int = 65536) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: max)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count >= 0 else { throw Failure("recv") }
        return Array(buffer[..<count])
    }

    /// Exactly `count` bytes from a stream.
    func receive(exactly count: Int) throws -> [UInt8] {
        var bytes: [UInt8] = []
        while bytes.count < count {
            let chunk = try receive(max: count - bytes.count)
            guard !chunk.isEmpty else { throw Failure("early end of stream", 0) }
            bytes += chunk
        }
        return bytes
    }

    /// Everything until the peer closes.
    func receiveAll() throws -> [UInt8] {
        var bytes: [UInt8] = []
        while true {
            let chunk = try receive()
            if chunk.isEmpty { return bytes }
            bytes += chunk
        }
    }

    func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }
}

/// Ports for the live tests: free for both TCP and UDP on 127.0.0.1 and ::1 at the moment of the call.
enum FreePorts {
    static func pick(_ count: Int) throws -> [UInt16] {
        var ports: [UInt16] = []
        var attempts = 0
        while ports.count < count {
            attempts += 1
            guard attempts < 200 else { throw TestSocket.Failure("no free port pair found", 0) }
            if let port = candidate(), !ports.contains(port) { ports.append(port) }
        }
        return ports
    }

    /// Binds TCP port 0 on 127.0.0.1, then checks the same port for UDP and on ::1.
    private static func candidate() -> UInt16? {
        let first = bind(ipv6: false, tcp: true, port: 0)
        guard first.fd >= 0 else { return nil }
        defer { close(first.fd) }
        var others: [Int32] = []
        defer { others.forEach { close($0) } }
        for (ipv6, tcp) in [(false, false), (true, true), (true, false)] {
            let other = bind(ipv6: ipv6, tcp: tcp, port: first.port)
            guard other.fd >= 0 else { return nil }
            others.append(other.fd)
        }
        return first.port
    }

    private static func bind(ipv6: Bool, tcp: Bool, port: UInt16) -> (fd: Int32, port: UInt16) {
        let type = tcp ? SOCK_STREAM : SOCK_DGRAM
        let fd = socket(ipv6 ? AF_INET6 : AF_INET, Int32(type.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return (-1, 0) }
        var storage = sockaddr_storage()
        var length: socklen_t
        if ipv6 {
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size))
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            address.sin6_addr = in6addr_loopback
            withUnsafeMutableBytes(of: &storage) { raw in withUnsafeBytes(of: &address) { raw.copyMemory(from: $0) } }
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
            withUnsafeMutableBytes(of: &storage) { raw in withUnsafeBytes(of: &address) { raw.copyMemory(from: $0) } }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
        }
        let bound = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, length) }
        }
        guard bound == 0 else {
            close(fd)
            return (-1, 0)
        }
        var actual = sockaddr_storage()
        var actualLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &actual) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &actualLength) }
        }
        let boundPort = withUnsafeBytes(of: &actual) { raw in
            UInt16(bigEndian: raw.load(fromByteOffset: 2, as: UInt16.self))
        }
        return (fd, boundPort)
    }
}

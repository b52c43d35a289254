import Glibc
import LinkcondBase
import NetNamespace
import RouteNetlink

/// Plain BSD sockets for sending real packets between the test's namespaces. A socket is opened inside
/// `NamedNamespace.run {}` and stays bound to that namespace afterwards.
enum TestSocket {
    struct Failure: Error, CustomStringConvertible {
        var what: String
        var code: Int32
        var description: String { "\(what): \(String(cString: strerror(code)))" }
    }

    /// A socket address for `address`:`port`.
    static func socketAddress(_ address: IPAddress, port: UInt16) -> (sockaddr_storage, socklen_t) {
        var storage = sockaddr_storage()
        if address.isIPv4 {
            var v4 = sockaddr_in()
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = port.bigEndian
            withUnsafeMutableBytes(of: &v4.sin_addr) { $0.copyBytes(from: address.bytes) }
            withUnsafeMutableBytes(of: &storage) { raw in withUnsafeBytes(of: v4) { raw.copyMemory(from: $0) } }
            return (storage, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
        var v6 = sockaddr_in6()
        v6.sin6_family = sa_family_t(AF_INET6)
        v6.sin6_port = port.bigEndian
        withUnsafeMutableBytes(of: &v6.sin6_addr) { $0.copyBytes(from: address.bytes) }
        withUnsafeMutableBytes(of: &storage) { raw in withUnsafeBytes(of: v6) { raw.copyMemory(from: $0) } }
        return (storage, socklen_t(MemoryLayout<sockaddr_in6>.size))
    }

    /// The address and port in a socket address.
    static func decode(_ storage: sockaddr_storage) -> (IPAddress?, UInt16) {
        var copy = storage
        switch Int32(storage.ss_family) {
        case AF_INET:
            return withUnsafeBytes(of: &copy) { raw in
                let v4 = raw.load(as: sockaddr_in.self)
                let bytes = withUnsafeBytes(of: v4.sin_addr) { Array($0) }
                return (IPAddress(bytes: bytes), UInt16(bigEndian: v4.sin_port))
            }
        case AF_INET6:
            return withUnsafeBytes(of: &copy) { raw in
                let v6 = raw.load(as: sockaddr_in6.self)
                let bytes = withUnsafeBytes(of: v6.sin6_addr) { Array($0) }
                return (IPAddress(bytes: bytes), UInt16(bigEndian: v6.sin6_port))
            }
        default:
            return (nil, 0)
        }
    }

    /// A new socket of `address`'s family with send/receive timeouts of `timeout` seconds.
    static func open(for address: IPAddress, type: Int32, timeout: Double = 2) throws -> Int32 {
        let fd = socket(address.isIPv4 ? AF_INET : AF_INET6, type | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(what: "socket", code: errno) }
        var time = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - Double(Int(timeout))) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    static func bind(_ fd: Int32, _ address: IPAddress, port: UInt16) throws {
        var (storage, length) = socketAddress(address, port: port)
        let result = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, length) }
        }
        guard result == 0 else { throw Failure(what: "bind \(address) port \(port)", code: errno) }
    }

    /// Connects (blocking, bounded by the socket's send timeout); returns 0 or the errno.
    static func connect(_ fd: Int32, _ address: IPAddress, port: UInt16) -> Int32 {
        var (storage, length) = socketAddress(address, port: port)
        let result = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, length) }
        }
        return result == 0 ? 0 : errno
    }

    /// Sends a datagram; returns 0 or the errno.
    static func send(_ fd: Int32, _ bytes: [UInt8], to address: IPAddress, port: UInt16) -> Int32 {
        var (storage, length) = socketAddress(address, port: port)
        let sent = bytes.withUnsafeBytes { raw in
            withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL), $0, length)
                }
            }
        }
        return sent == bytes.count ? 0 : errno
    }

    /// Receives one datagram (bounded by the socket's receive timeout): its bytes and its source.
    static func receive(_ fd: Int32) throws -> (bytes: [UInt8], source: IPAddress?, port: UInt16) {
        var buffer = [UInt8](repeating: 0, count: 65536)
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let count = buffer.withUnsafeMutableBytes { raw in
            withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, raw.baseAddress, raw.count, 0, $0, &length) }
            }
        }
        guard count >= 0 else { throw Failure(what: "recvfrom", code: errno) }
        let (source, port) = decode(storage)
        return (Array(buffer[..<count]), source, port)
    }

    /// Writes everything on a stream socket.
    static func sendAll(_ fd: Int32, _ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent < 0 && errno == EINTR { continue }
            guard sent > 0 else { throw Failure(what: "send", code: errno) }
            offset += sent
        }
    }

    /// Reads exactly `count` bytes from a stream socket (or fewer at end of stream / timeout).
    static func receive(_ fd: Int32, count: Int) throws -> [UInt8] {
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while result.count < count {
            let got = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, min($0.count, count - result.count), 0) }
            if got < 0 && errno == EINTR { continue }
            if got < 0 { throw Failure(what: "recv", code: errno) }
            if got == 0 { break }
            result.append(contentsOf: buffer[..<got])
        }
        return result
    }

    /// A random-ish payload so an echo cannot be confused with anything else.
    static func payload(_ tag: String) -> [UInt8] {
        Array("linkcond-it \(tag) \(getpid()) \(UInt64.random(in: 0...UInt64.max))".utf8)
    }
}

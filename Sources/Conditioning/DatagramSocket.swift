import Foundation
import Glibc
import RouteNetlink

/// A UDP socket for measurements, opened in whatever namespace the calling thread is in (open it inside
/// `NamedNamespace.run`; it stays in that namespace and may be used from any thread afterwards).
final class DatagramSocket: @unchecked Sendable {
    let fd: Int32
    let family: Int32

    init(family: Int32) throws(SandboxError) {
        fd = socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .namespace(.system(operation: "open a UDP socket", errno: errno)) }
        self.family = family
        var size: Int32 = 4 << 20
        // The FORCE variants (root) pass over net.core.rmem_max, which caps the plain ones at a few hundred KB.
        if setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, socklen_t(MemoryLayout<Int32>.size)) != 0 {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        if setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, socklen_t(MemoryLayout<Int32>.size)) != 0 {
            setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
    }

    deinit { close(fd) }

    /// Binds to `address` (nil: any) and `port` (0: ephemeral); returns the bound port.
    func bind(address: IPAddress?, port: UInt16 = 0) throws(SandboxError) -> UInt16 {
        var storage = Self.socketAddress(family: family, address: address, port: port)
        let result = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, Self.length(family)) }
        }
        guard result == 0 else { throw .namespace(.system(operation: "bind a UDP socket", errno: errno)) }
        var bound = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Self.port(of: bound)
    }

    func send(_ bytes: [UInt8], to address: IPAddress, port: UInt16) -> Bool {
        var storage = Self.socketAddress(family: family, address: address, port: port)
        let sent = withUnsafePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bytes.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, 0, socketAddress, Self.length(family)) }
            }
        }
        return sent == bytes.count
    }

    /// Waits up to `timeout` seconds for a datagram; returns it and where it came from.
    func receive(timeout: Double, capacity: Int = 2048) -> (bytes: [UInt8], from: sockaddr_storage)? {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, Int32(max(0, timeout * 1000))) > 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: capacity)
        var source = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let received = buffer.withUnsafeMutableBytes { raw in
            withUnsafeMutablePointer(to: &source) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, raw.baseAddress, raw.count, 0, $0, &length) }
            }
        }
        guard received >= 0 else { return nil }
        return (Array(buffer.prefix(received)), source)
    }

    /// Waits up to `timeout` seconds for a datagram and returns its length, reading it into `buffer`
    /// (reused across calls, so a fast receiver does not allocate per packet). `MSG_TRUNC` makes the length
    /// the datagram's own even when the buffer is smaller.
    func receiveLength(timeout: Double, into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, Int32(max(0, timeout * 1000))) > 0 else { return nil }
        let received = recv(fd, buffer.baseAddress, buffer.count, Int32(MSG_TRUNC))
        return received >= 0 ? received : nil
    }

    func reply(_ bytes: [UInt8], to source: sockaddr_storage) {
        var destination = source
        _ = withUnsafePointer(to: &destination) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bytes.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, 0, socketAddress, Self.length(family)) }
            }
        }
    }

    static func length(_ family: Int32) -> socklen_t {
        socklen_t(family == AF_INET ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size)
    }

    static func socketAddress(family: Int32, address: IPAddress?, port: UInt16) -> sockaddr_storage {
        var storage = sockaddr_storage()
        withUnsafeMutableBytes(of: &storage) { raw in
            if family == AF_INET {
                var value = sockaddr_in()
                value.sin_family = sa_family_t(AF_INET)
                value.sin_port = port.bigEndian
                if let address { withUnsafeMutableBytes(of: &value.sin_addr) { $0.copyBytes(from: address.bytes) } }
                withUnsafeBytes(of: value) { raw.copyMemory(from: $0) }
            } else {
                var value = sockaddr_in6()
                value.sin6_family = sa_family_t(AF_INET6)
                value.sin6_port = port.bigEndian
                if let address { withUnsafeMutableBytes(of: &value.sin6_addr) { $0.copyBytes(from: address.bytes) } }
                withUnsafeBytes(of: value) { raw.copyMemory(from: $0) }
            }
        }
        return storage
    }

    static func port(of storage: sockaddr_storage) -> UInt16 {
        withUnsafeBytes(of: storage) { raw in
            UInt16(bigEndian: raw.loadUnaligned(fromByteOffset: 2, as: UInt16.self))
        }
    }
}

/// Monotonic time in seconds.
func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

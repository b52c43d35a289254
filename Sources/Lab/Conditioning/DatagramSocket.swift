import Foundation
import Glibc
import LinkcondBase
import RouteNetlink
import Sandboxing

/// A UDP socket for measurements, opened in whatever namespace the calling thread is in (open it inside
/// `NamedNamespace.run`; it stays in that namespace and may be used from any thread afterwards).
final class DatagramSocket: @unchecked Sendable {
    let fd: Int32
    let family: AddressFamily

    init(family: AddressFamily) throws(SandboxError) {
        fd = socket(family.socketDomain, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
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
        let local = address.map { SocketAddress($0, port: port) } ?? SocketAddress(any: family, port: port)
        let result = local.withSockaddr { Glibc.bind(fd, $0, $1) }
        guard result == 0 else { throw .namespace(.system(operation: "bind a UDP socket", errno: errno)) }
        return SocketAddress.local(of: fd)?.port ?? 0
    }

    func send(_ bytes: [UInt8], to address: IPAddress, port: UInt16) -> Bool {
        let sent = SocketAddress(address, port: port).withSockaddr { socketAddress, length in
            bytes.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, 0, socketAddress, length) }
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
        guard let destination = SocketAddress(storage: source) else { return }
        _ = destination.withSockaddr { socketAddress, length in
            bytes.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, 0, socketAddress, length) }
        }
    }
}

import Glibc
import LinkcondBase
import LinkcondSystem
import NetNamespace
import Sandboxing

/// A UDP socket for measurements, opened inside a namespace by the socket factory; it stays in that
/// namespace and may be used from any thread. Closed with the object.
final class DatagramSocket: @unchecked Sendable {
    private let owned: OwnedSocket
    let family: AddressFamily
    private var socket: SocketDescriptor { owned.socket }

    /// A UDP socket of `family` in `namespace`, with 4 MiB kernel buffers each way.
    init(family: AddressFamily, in namespace: NamedNamespace) throws(SandboxError) {
        do {
            owned = try namespace.openSocket(.udp(family.domain))
        } catch {
            throw .namespace(error)
        }
        self.family = family
        // The FORCE variants (root) pass over net.core.rmem_max, which caps the plain ones at a few hundred KB.
        try? owned.socket.setBufferSize(4 << 20)
        try? owned.socket.setBufferSize(4 << 20, send: true)
    }

    /// Binds to `address` (nil: any) and `port` (0: ephemeral); returns the bound port.
    func bind(address: IPAddress?, port: UInt16 = 0) throws(SandboxError) -> UInt16 {
        let local = address.map { SocketAddress($0, port: port) } ?? SocketAddress(any: family, port: port)
        do {
            try socket.bind(to: local)
        } catch {
            throw .namespace(.system(operation: "bind a UDP socket to \(local)", errno: error.errno.rawValue))
        }
        return SocketAddress.local(of: socket)?.port ?? 0
    }

    func send(_ bytes: [UInt8], to address: IPAddress, port: UInt16) -> Bool {
        let sent = try? bytes.withUnsafeBytes { try socket.send($0, to: SocketAddress(address, port: port)) }
        return sent == bytes.count
    }

    /// Waits up to `timeout` seconds for a datagram; returns it and where it came from.
    func receive(timeout: Double, capacity: Int = 2048) -> (bytes: [UInt8], from: SocketAddressStorage)? {
        guard waitUntilReadable(timeout: timeout) else { return nil }
        var buffer = [UInt8](repeating: 0, count: capacity)
        var source = SocketAddressStorage()
        guard let received = try? buffer.withUnsafeMutableBytes({ try socket.receive(into: $0, from: &source) }) else { return nil }
        return (Array(buffer.prefix(received)), source)
    }

    /// Waits up to `timeout` seconds for a datagram and returns its length, reading it into `buffer`
    /// (reused across calls, so a fast receiver does not allocate per packet). `MSG_TRUNC` makes the length
    /// the datagram's own even when the buffer is smaller.
    func receiveLength(timeout: Double, into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        guard waitUntilReadable(timeout: timeout) else { return nil }
        return try? socket.receive(into: buffer, flags: Int32(MSG_TRUNC))
    }

    func reply(_ bytes: [UInt8], to source: SocketAddressStorage) {
        _ = try? bytes.withUnsafeBytes { try socket.send($0, to: source) }
    }

    private func waitUntilReadable(timeout: Double) -> Bool {
        let ready = try? socket.fileDescriptor.poll(for: Int16(POLLIN), timeoutMilliseconds: Int32(max(0, timeout * 1000)))
        return (ready ?? 0) != 0
    }
}

import Dispatch
import Foundation
import Glibc
import LinkcondBase
import LinkcondSystem
import Synchronization

/// Small servers on 127.0.0.1 or ::1 (ephemeral ports, no privileges) that the real round talks to.
final class LoopbackServer: @unchecked Sendable {
    enum DNSBehaviour: Sendable {
        /// Answers with an A record (4 bytes) or an AAAA record (16 bytes) when the question asks for that
        /// type, with no record otherwise.
        case answer([UInt8])
        /// Answers with this RCODE and no records.
        case rcode(UInt8)
        /// Reads queries and never answers.
        case silent
        /// Ignores the first `n` queries, then answers as ``answer(_:)``.
        case dropFirst(Int, [UInt8])
        /// Answers as ``answer(_:)``, each query this many seconds after it came (NLC's High Latency DNS).
        case delayed(Double, [UInt8])
    }

    static let loopbackV4 = IPAddress("127.0.0.1")!
    static let loopbackV6 = IPAddress("::1")!

    let fd: Int32
    let port: UInt16
    let address: IPAddress
    private let stopped = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)
    private let received = Mutex<[String]>([])
    private let queries = Atomic<Int>(0)

    /// What the TCP server read (request heads), or how many queries the DNS server saw.
    var requests: [String] { received.withLock { $0 } }
    var queryCount: Int { queries.load(ordering: .relaxed) }

    /// Binds `address`:`port` (0: an ephemeral port).
    private init(type: Int32, address: IPAddress, port: UInt16) throws {
        let descriptor = socket(address.family.socketDomain, type | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var one: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = SocketAddress(address, port: port).withSockaddr { bind(descriptor, $0, $1) }
        guard bound == 0, type != Int32(SOCK_STREAM.rawValue) || listen(descriptor, 16) == 0,
              let local = SocketAddress.local(of: SocketDescriptor(rawValue: descriptor))
        else {
            let code = errno
            close(descriptor)
            throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
        }
        fd = descriptor
        self.port = local.port
        self.address = address
    }

    /// An HTTP server answering every request with `response` (nil: accepting, reading, never answering).
    /// With `acceptLimit`, it stops listening after that many connections, so later connects are refused.
    static func http(_ response: String?, on address: IPAddress = loopbackV4, port: UInt16 = 0, acceptLimit: Int? = nil) throws -> LoopbackServer {
        let server = try LoopbackServer(type: Int32(SOCK_STREAM.rawValue), address: address, port: port)
        server.run { server.serveHTTP(response.map { Array($0.utf8) }, acceptLimit: acceptLimit) }
        return server
    }

    /// A DNS server on UDP.
    static func dns(_ behaviour: DNSBehaviour, on address: IPAddress = loopbackV4, port: UInt16 = 0) throws -> LoopbackServer {
        let server = try LoopbackServer(type: Int32(SOCK_DGRAM.rawValue), address: address, port: port)
        server.run { server.serveDNS(behaviour) }
        return server
    }

    /// Two servers of a kind on the same port, one on 127.0.0.1 and one on ::1 (tried on a few ports).
    static func pair(_ make: (IPAddress, UInt16) throws -> LoopbackServer) throws -> (LoopbackServer, LoopbackServer) {
        var lastError: Error = POSIXError(.EADDRINUSE)
        for _ in 0..<20 {
            let v4 = try make(loopbackV4, 0)
            do {
                return (v4, try make(loopbackV6, v4.port))
            } catch {
                lastError = error
                v4.stop()
            }
        }
        throw lastError
    }

    private func run(_ body: @escaping @Sendable () -> Void) {
        let thread = Thread { [done] in
            body()
            done.signal()
        }
        thread.start()
    }

    func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        done.wait()
        close(fd)
    }

    private func readable(_ fd: Int32) -> Bool {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&poller, 1, 20) > 0
    }

    private func serveHTTP(_ response: [UInt8]?, acceptLimit: Int?) {
        var held: [Int32] = []
        var accepted = 0
        defer { held.forEach { close($0) } }
        while !stopped.load(ordering: .relaxed) {
            guard readable(fd) else { continue }
            let connection = accept(fd, nil, nil)
            guard connection >= 0 else { continue }
            accepted += 1
            let lastOne = acceptLimit.map { accepted >= $0 } ?? false
            if lastOne { shutdown(fd, Int32(SHUT_RDWR)) }  // no longer listening: connects are refused
            defer {
                // Nothing more to accept (polling the shut-down socket would spin): wait for stop.
                if lastOne { while !stopped.load(ordering: .relaxed) { usleep(20_000) } }
            }
            var head: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 2048)
            let deadline = Date().addingTimeInterval(2)
            while !String(decoding: head, as: UTF8.self).contains("\r\n\r\n") && Date() < deadline
                && !stopped.load(ordering: .relaxed) {
                guard readable(connection) else { continue }
                let count = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
                if count <= 0 { break }
                head += buffer[..<count]
            }
            guard !head.isEmpty else {
                close(connection)  // connected and closed without a request (a link check)
                continue
            }
            received.withLock { $0.append(String(decoding: head, as: UTF8.self)) }
            guard let response else {
                held.append(connection)
                continue
            }
            _ = response.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            shutdown(connection, Int32(SHUT_WR))
            close(connection)
        }
    }

    private func serveDNS(_ behaviour: DNSBehaviour) {
        var buffer = [UInt8](repeating: 0, count: 1500)
        var later: [(due: Double, reply: [UInt8], to: sockaddr_storage, length: socklen_t)] = []
        while !stopped.load(ordering: .relaxed) {
            let now = MonotonicClock.seconds()
            for pending in later where pending.due <= now { sendReply(pending.reply, to: pending.to, length: pending.length) }
            later.removeAll { $0.due <= now }
            guard readable(fd) else { continue }
            var source = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let count = buffer.withUnsafeMutableBytes { raw in
                withUnsafeMutablePointer(to: &source) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, raw.baseAddress, raw.count, 0, $0, &length) }
                }
            }
            guard count >= 12 else { continue }
            let seen = queries.add(1, ordering: .relaxed).newValue
            let query = Array(buffer[..<count])
            switch behaviour {
            case .answer(let address): sendReply(Self.reply(to: query, rcode: 0, address: address), to: source, length: length)
            case .rcode(let rcode): sendReply(Self.reply(to: query, rcode: rcode, address: nil), to: source, length: length)
            case .silent: break
            case .dropFirst(let n, let address):
                if seen > n { sendReply(Self.reply(to: query, rcode: 0, address: address), to: source, length: length) }
            case .delayed(let seconds, let address):
                later.append((MonotonicClock.seconds() + seconds, Self.reply(to: query, rcode: 0, address: address), source, length))
            }
        }
    }

    private func sendReply(_ reply: [UInt8], to source: sockaddr_storage, length: socklen_t) {
        var source = source
        _ = reply.withUnsafeBytes { raw in
            withUnsafePointer(to: &source) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, raw.baseAddress, raw.count, 0, $0, length) }
            }
        }
    }

    /// The query's id and question, QR AA RD RA set, and an A or AAAA record by pointer when `address` is
    /// given and the question asks for its type (4 bytes: A, 16: AAAA).
    static func reply(to query: [UInt8], rcode: UInt8, address: [UInt8]?) -> [UInt8] {
        var end = 12
        while end < query.count && query[end] != 0 { end += Int(query[end]) + 1 }
        let asked: UInt16? = end + 2 < query.count ? UInt16(query[end + 1]) << 8 | UInt16(query[end + 2]) : nil
        end += 5
        let type: UInt16 = address?.count == 16 ? 28 : 1
        let record = address.flatMap { asked == type ? $0 : nil }
        var bytes = Array(query[0..<2]) + [0x85, 0x80 | rcode, 0, 1, 0, record == nil ? 0 : 1, 0, 0, 0, 0]
        bytes += query[12..<min(end, query.count)]
        if let record { bytes += [0xC0, 0x0C, UInt8(type >> 8), UInt8(type & 0xFF), 0, 1, 0, 0, 0, 5, 0, UInt8(record.count)] + record }
        return bytes
    }
}

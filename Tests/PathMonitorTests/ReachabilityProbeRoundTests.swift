import Dispatch
import Foundation
import Glibc
import LinkcondBase
import RouteNetlink
import Synchronization
import XCTest

@testable import PathMonitor

/// Small servers on 127.0.0.1 (ephemeral ports, no privileges) that the real round talks to.
final class LoopbackServer: @unchecked Sendable {
    enum DNSBehaviour: Sendable {
        /// Answers with an A record.
        case answer([UInt8])
        /// Answers with this RCODE and no records.
        case rcode(UInt8)
        /// Reads queries and never answers.
        case silent
        /// Ignores the first `n` queries, then answers with an A record.
        case dropFirst(Int, [UInt8])
    }

    let fd: Int32
    let port: UInt16
    private let stopped = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)
    private let received = Mutex<[String]>([])
    private let queries = Atomic<Int>(0)

    /// What the TCP server read (request heads), or how many queries the DNS server saw.
    var requests: [String] { received.withLock { $0 } }
    var queryCount: Int { queries.load(ordering: .relaxed) }

    private init(type: Int32) throws {
        let descriptor = socket(AF_INET, type | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var one: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard bound == 0, type != Int32(SOCK_STREAM.rawValue) || listen(descriptor, 16) == 0 else {
            let code = errno
            close(descriptor)
            throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
        }
        fd = descriptor
        port = UInt16(bigEndian: address.sin_port)
    }

    /// An HTTP server answering every request with `response` (nil: accepting, reading, never answering).
    static func http(_ response: String?) throws -> LoopbackServer {
        let server = try LoopbackServer(type: Int32(SOCK_STREAM.rawValue))
        server.run { server.serveHTTP(response.map { Array($0.utf8) }) }
        return server
    }

    /// A DNS server on UDP.
    static func dns(_ behaviour: DNSBehaviour) throws -> LoopbackServer {
        let server = try LoopbackServer(type: Int32(SOCK_DGRAM.rawValue))
        server.run { server.serveDNS(behaviour) }
        return server
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

    private func serveHTTP(_ response: [UInt8]?) {
        var held: [Int32] = []
        defer { held.forEach { close($0) } }
        while !stopped.load(ordering: .relaxed) {
            guard readable(fd) else { continue }
            let connection = accept(fd, nil, nil)
            guard connection >= 0 else { continue }
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
        while !stopped.load(ordering: .relaxed) {
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
            let reply: [UInt8]?
            switch behaviour {
            case .answer(let address): reply = Self.reply(to: query, rcode: 0, address: address)
            case .rcode(let rcode): reply = Self.reply(to: query, rcode: rcode, address: nil)
            case .silent: reply = nil
            case .dropFirst(let n, let address): reply = seen > n ? Self.reply(to: query, rcode: 0, address: address) : nil
            }
            guard let reply else { continue }
            _ = reply.withUnsafeBytes { raw in
                withUnsafePointer(to: &source) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, raw.baseAddress, raw.count, 0, $0, length) }
                }
            }
        }
    }

    /// The query's id and question, QR AA RD RA set, and an A record by pointer when `address` is given.
    static func reply(to query: [UInt8], rcode: UInt8, address: [UInt8]?) -> [UInt8] {
        var end = 12
        while end < query.count && query[end] != 0 { end += Int(query[end]) + 1 }
        end += 5
        var bytes = Array(query[0..<2]) + [0x85, 0x80 | rcode, 0, 1, 0, address == nil ? 0 : 1, 0, 0, 0, 0]
        bytes += query[12..<min(end, query.count)]
        if let address { bytes += [0xC0, 0x0C, 0, 1, 0, 1, 0, 0, 0, 5, 0, 4] + address }
        return bytes
    }
}

final class ReachabilityProbeRoundTests: XCTestCase {
    static let loopback = IPAddress("127.0.0.1")!
    static let noContent = "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"

    private var servers: [LoopbackServer] = []

    override func tearDown() {
        servers.forEach { $0.stop() }
        servers = []
        super.tearDown()
    }

    private func http(_ response: String?) throws -> LoopbackServer {
        let server = try LoopbackServer.http(response)
        servers.append(server)
        return server
    }

    private func dns(_ behaviour: LoopbackServer.DNSBehaviour) throws -> LoopbackServer {
        let server = try LoopbackServer.dns(behaviour)
        servers.append(server)
        return server
    }

    private func round(http: UInt16, dns: UInt16, timeout: Double = 1, host: String = "server.linkcond.test") -> NetworkProbeRound {
        NetworkProbeRound(namespace: nil, settings: ReachabilitySettings(
            timeout: timeout, host: host, port: http, nameservers: [Self.loopback], dnsPort: dns, dnsRetransmitInterval: 0.2))
    }

    private func kinds(_ results: [ProbeResult]) -> [String] {
        results.map { "\($0.kind)\($0.success ? "+" : "-")" }
    }

    func testOnline() throws {
        let web = try http(Self.noContent)
        let names = try dns(.answer([127, 0, 0, 1]))
        let results = round(http: web.port, dns: names.port).run(lastKnownAddress: nil, isCancelled: { false })
        XCTAssertEqual(kinds(results), ["dns+", "tcp+", "http+"])
        XCTAssertEqual(ProbeOutcome(results), .online)
        XCTAssertEqual(results[0].address, "127.0.0.1")
        XCTAssertEqual(results[1].address, "127.0.0.1")
        XCTAssertEqual(results[2].httpStatus, 204)
        XCTAssertTrue(results.allSatisfy { ($0.rtt ?? -1) >= 0 && ($0.rtt ?? 9) < 1 }, "\(results)")
        XCTAssertTrue(zip(results, results.dropFirst()).allSatisfy { $0.time <= $1.time })
        let request = try XCTUnwrap(web.requests.first)
        XCTAssertTrue(request.hasPrefix("GET /generate_204 HTTP/1.1\r\nHost: server.linkcond.test:\(web.port)\r\n"), request)
        XCTAssertEqual(names.queryCount, 1)
    }

    func testReusesTheConnectionToTheKnownAddress() throws {
        let web = try http(Self.noContent)
        let names = try dns(.answer([127, 0, 0, 1]))
        let results = round(http: web.port, dns: names.port).run(lastKnownAddress: Self.loopback, isCancelled: { false })
        XCTAssertEqual(ProbeOutcome(results), .online)
        XCTAssertEqual(results.filter { $0.kind == .tcp }.count, 1)
        XCTAssertEqual(web.requests.count, 1, "one connection")
    }

    func testPortalAnswers() throws {
        let names = try dns(.answer([127, 0, 0, 1]))
        for (response, status) in [
            ("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 22\r\n\r\n<html>Sign in</html>\r\n", 200),
            ("HTTP/1.1 302 Found\r\nLocation: http://portal.test/\r\nContent-Length: 0\r\n\r\n", 302),
            ("HTTP/1.0 200 OK\r\n\r\n<html>login until close</html>", 200),
        ] {
            let web = try http(response)
            let results = round(http: web.port, dns: names.port).run(lastKnownAddress: nil, isCancelled: { false })
            XCTAssertEqual(ProbeOutcome(results), .portal, response)
            XCTAssertEqual(results.last?.httpStatus, status)
        }
    }

    func testDNSDownButTCPWorksIsLimited() throws {
        let web = try http(Self.noContent)
        let names = try dns(.silent)
        let started = Date()
        let results = round(http: web.port, dns: names.port, timeout: 0.6).run(lastKnownAddress: Self.loopback, isCancelled: { false })
        let elapsed = Date().timeIntervalSince(started)
        XCTAssertEqual(ProbeOutcome(results), .limited)
        XCTAssertEqual(kinds(results), ["tcp+", "dns-"], "in the order they ended")
        XCTAssertEqual(results[1].error?.hasSuffix("timed out after 0.6 s"), true, results[1].error ?? "")
        XCTAssertGreaterThanOrEqual(names.queryCount, 3, "retransmitted every 0.2 s")
        XCTAssertGreaterThanOrEqual(elapsed, 0.55)
        XCTAssertLessThan(elapsed, 1.5, "one timeout, not one per step")
    }

    func testAnswersWithoutAnAddressFailDNS() throws {
        let web = try http(Self.noContent)
        let names = try dns(.rcode(3))
        let alone = round(http: web.port, dns: names.port).run(lastKnownAddress: nil, isCancelled: { false })
        XCTAssertEqual(kinds(alone), ["dns-"])
        XCTAssertEqual(alone[0].error, "127.0.0.1: NXDOMAIN")
        XCTAssertEqual(ProbeOutcome(alone), .failure, "no address to try TCP with")
        let known = round(http: web.port, dns: names.port).run(lastKnownAddress: Self.loopback, isCancelled: { false })
        XCTAssertEqual(ProbeOutcome(known), .limited)
    }

    func testNothingListeningFailsFast() throws {
        let names = try dns(.answer([127, 0, 0, 1]))
        let closed = try http(nil)
        let port = closed.port
        closed.stop()  // the port is free again: connects are refused
        let started = Date()
        let results = round(http: port, dns: names.port).run(lastKnownAddress: nil, isCancelled: { false })
        XCTAssertEqual(kinds(results), ["dns+", "tcp-"])
        XCTAssertEqual(results[1].error, "connect: Connection refused")
        XCTAssertEqual(ProbeOutcome(results), .failure)
        XCTAssertLessThan(Date().timeIntervalSince(started), 0.5)
        // Nobody answers DNS either (port unreachable comes back as ECONNREFUSED on the UDP socket).
        let deadDNS = try dns(.silent)
        let dnsPort = deadDNS.port
        deadDNS.stop()
        let nothing = round(http: port, dns: dnsPort).run(lastKnownAddress: Self.loopback, isCancelled: { false })
        XCTAssertEqual(ProbeOutcome(nothing), .failure)
        XCTAssertEqual(Set(kinds(nothing)), ["dns-", "tcp-"])
    }

    func testAServerThatNeverAnswersTimesOut() throws {
        let web = try http(nil)
        let names = try dns(.answer([127, 0, 0, 1]))
        let started = Date()
        let results = round(http: web.port, dns: names.port, timeout: 0.5).run(lastKnownAddress: nil, isCancelled: { false })
        XCTAssertEqual(kinds(results), ["dns+", "tcp+", "http-"])
        XCTAssertEqual(results[2].error, "timed out after 0.5 s")
        XCTAssertEqual(ProbeOutcome(results), .failure)
        XCTAssertLessThan(Date().timeIntervalSince(started), 1.2)
    }

    func testALostQueryIsRetransmitted() throws {
        let web = try http(Self.noContent)
        let names = try dns(.dropFirst(1, [127, 0, 0, 1]))
        let results = round(http: web.port, dns: names.port).run(lastKnownAddress: nil, isCancelled: { false })
        XCTAssertEqual(ProbeOutcome(results), .online)
        XCTAssertEqual(names.queryCount, 2)
        XCTAssertGreaterThanOrEqual(results[0].rtt ?? 0, 0.19)
    }

    func testANewAddressGetsAFreshConnection() throws {
        let web = try http(Self.noContent)
        let names = try dns(.answer([127, 0, 0, 1]))
        // The old address has nothing listening; the connect to it is dropped once DNS says otherwise.
        let results = round(http: web.port, dns: names.port).run(lastKnownAddress: IPAddress("127.0.0.2"), isCancelled: { false })
        XCTAssertEqual(ProbeOutcome(results), .online)
        XCTAssertEqual(results.filter { $0.kind == .tcp }.map(\.address), ["127.0.0.1"])
    }

    func testAnIPLiteralSkipsDNS() throws {
        let web = try http(Self.noContent)
        let results = round(http: web.port, dns: 9, host: "127.0.0.1").run(lastKnownAddress: nil, isCancelled: { false })
        XCTAssertEqual(kinds(results), ["tcp+", "http+"])
        XCTAssertEqual(ProbeOutcome(results), .online)
    }

    func testCancelEndsARoundSoon() throws {
        let names = try dns(.silent)
        let started = Date()
        let results = round(http: 9, dns: names.port, timeout: 5).run(lastKnownAddress: nil, isCancelled: {
            Date().timeIntervalSince(started) > 0.2
        })
        XCTAssertLessThan(Date().timeIntervalSince(started), 0.6)
        XCTAssertEqual(results.first?.error, "127.0.0.1: cancelled")
    }

    func testTheProberOverLoopback() throws {
        let web = try http(Self.noContent)
        let names = try dns(.answer([127, 0, 0, 1]))
        let settings = ReachabilitySettings(
            interval: 0.05, timeout: 1, port: web.port, nameservers: [Self.loopback], dnsPort: names.port)
        let prober = ReachabilityProber(namespace: nil, settings: settings)
        let log = UpdateLog()
        prober.start { log.append($0) }
        let updates = log.wait(for: 3)
        prober.cancel()
        XCTAssertEqual(updates.prefix(3).map(\.state), [.online, .online, .online])
        XCTAssertEqual(updates.first?.quality, .good)
        XCTAssertNotNil(updates.first?.medianRTT)
    }
}

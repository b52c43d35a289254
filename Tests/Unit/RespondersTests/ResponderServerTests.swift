import Foundation
import Synchronization
import Glibc
import LinkcondBase
import XCTest
@testable import Responders

/// Live tests: a real server on 127.0.0.1 and ::1 with high ports picked by the test.
final class ResponderServerTests: XCTestCase {
    private var server: ResponderServer!
    private var configuration: ResponderConfiguration!
    private var temporaryDirectory: URL!
    private var portalFlag: String!
    private let hosts = ["127.0.0.1", "::1"]

    override func setUpWithError() throws {
        temporaryDirectory = FileManager.default.temporaryDirectory
            .appendingPathComponent("linkcond-responders-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: temporaryDirectory, withIntermediateDirectories: true)
        portalFlag = temporaryDirectory.appendingPathComponent("portal").path
        let ports = try FreePorts.pick(3)
        configuration = ResponderConfiguration(
            httpPort: ports[0], echoPort: ports[1], dnsPort: ports[2],
            bindAddresses: hosts, portalFlagPath: portalFlag)
        server = ResponderServer(configuration: configuration)
        try server.start()
    }

    override func tearDownWithError() throws {
        server?.stop()
        server = nil
        if let temporaryDirectory { try? FileManager.default.removeItem(at: temporaryDirectory) }
    }

    // MARK: HTTP

    private func http(_ host: String, _ request: String) throws -> (head: String, body: [UInt8]) {
        let socket = try TestSocket(tcp: true, host: host, port: configuration.httpPort)
        try socket.send(request)
        let response = try socket.receiveAll()
        let end = try XCTUnwrap(HTTPRequestHead.endOfHead(in: response), "no end of head in \(response)")
        return (String(decoding: response[..<end], as: UTF8.self), Array(response[end...]))
    }

    func testGenerate204OnBothFamilies() throws {
        for host in hosts {
            let (head, body) = try http(host, "GET /generate_204 HTTP/1.1\r\nHost: server.linkcond.test\r\n\r\n")
            XCTAssertTrue(head.hasPrefix("HTTP/1.1 204 No Content\r\n"), head)
            XCTAssertTrue(head.contains("\r\nContent-Length: 0\r\n"), head)
            XCTAssertTrue(head.contains("\r\nConnection: close\r\n"), head)
            XCTAssertEqual(body, [], host)
        }
    }

    func testPortalFlagFileSwitchesGenerate204() throws {
        let request = "GET /generate_204 HTTP/1.1\r\nHost: server.linkcond.test\r\n\r\n"
        XCTAssertTrue(FileManager.default.createFile(atPath: portalFlag, contents: Data()))
        let (head, body) = try http("127.0.0.1", request)
        XCTAssertTrue(head.hasPrefix("HTTP/1.1 200 OK\r\n"), head)
        XCTAssertTrue(head.contains("Content-Type: text/html"), head)
        XCTAssertTrue(String(decoding: body, as: UTF8.self).contains("<form"))
        XCTAssertTrue(head.contains("Content-Length: \(body.count)\r\n"), head)

        try FileManager.default.removeItem(atPath: portalFlag)
        XCTAssertTrue(try http("::1", request).head.hasPrefix("HTTP/1.1 204 No Content\r\n"))
    }

    func testOtherHTTPAnswers() throws {
        let home = try http("127.0.0.1", "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertTrue(home.head.hasPrefix("HTTP/1.1 200 OK\r\n"))
        XCTAssertTrue(String(decoding: home.body, as: UTF8.self).contains("linkcond"))

        let head = try http("::1", "HEAD / HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertTrue(head.head.hasPrefix("HTTP/1.1 200 OK\r\n"))
        XCTAssertTrue(head.head.contains("Content-Length: \(home.body.count)\r\n"))
        XCTAssertEqual(head.body, [])

        XCTAssertTrue(try http("127.0.0.1", "GET /missing HTTP/1.1\r\n\r\n").head.hasPrefix("HTTP/1.1 404 "))
        let post = try http("127.0.0.1", "POST /generate_204 HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc")
        XCTAssertTrue(post.head.hasPrefix("HTTP/1.1 405 "))
        XCTAssertTrue(post.head.contains("Allow: GET, HEAD\r\n"))
        XCTAssertTrue(try http("127.0.0.1", "NONSENSE\r\n\r\n").head.hasPrefix("HTTP/1.1 400 "))
        // A request split over several segments is still read whole.
        let socket = try TestSocket(tcp: true, host: "127.0.0.1", port: configuration.httpPort)
        for part in ["GET /gener", "ate_204 HTTP/1.1\r", "\nHost: x\r\n", "\r\n"] {
            try socket.send(part)
            usleep(20_000)
        }
        XCTAssertTrue(String(decoding: try socket.receiveAll(), as: UTF8.self).hasPrefix("HTTP/1.1 204 "))
    }

    func testOversizedHTTPHeadIsRejected() throws {
        let socket = try TestSocket(tcp: true, host: "127.0.0.1", port: configuration.httpPort)
        try socket.send("GET / HTTP/1.1\r\nX: " + String(repeating: "a", count: 9000) + "\r\n\r\n")
        XCTAssertTrue(String(decoding: try socket.receiveAll(), as: UTF8.self).hasPrefix("HTTP/1.1 431 "))
    }

    // MARK: Echo

    func testTCPEcho() throws {
        for host in hosts {
            let socket = try TestSocket(tcp: true, host: host, port: configuration.echoPort)
            let payload = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            try socket.send(Array(payload[..<5]))
            XCTAssertEqual(try socket.receive(exactly: 5), Array(payload[..<5]))
            try socket.send(Array(payload[5...]))
            socket.shutdownWrite()
            XCTAssertEqual(try socket.receiveAll(), Array(payload[5...]), host)
        }
    }

    func testUDPEcho() throws {
        for host in hosts {
            let socket = try TestSocket(tcp: false, host: host, port: configuration.echoPort)
            for size in [1, 100, 1400, 8000] {
                let datagram = (0..<size).map { UInt8(truncatingIfNeeded: $0 &+ size) }
                try socket.send(datagram)
                XCTAssertEqual(try socket.receive(), datagram, "\(host) \(size)")
            }
        }
    }

    func testConcurrentConnectionsAreServed() throws {
        let sockets = try (0..<20).map { _ in
            try TestSocket(tcp: true, host: "127.0.0.1", port: configuration.echoPort)
        }
        // Every connection stays open while the others are served.
        for (index, socket) in sockets.enumerated().reversed() {
            try socket.send("hello \(index)")
            XCTAssertEqual(String(decoding: try socket.receive(exactly: "hello \(index)".utf8.count), as: UTF8.self),
                           "hello \(index)")
        }
    }

    // MARK: DNS

    private func dnsQuery(_ name: String, _ type: DNSRecordType, id: UInt16) throws -> [UInt8] {
        DNSMessage.query(id: id, name: try XCTUnwrap(DNSName(name)), type: type).encoded()
    }

    func testDNSOverUDP() throws {
        for host in hosts {
            let socket = try TestSocket(tcp: false, host: host, port: configuration.dnsPort)
            try socket.send(dnsQuery("server.linkcond.test", .a, id: 0x1111))
            let a = try DNSMessage(bytes: socket.receive())
            XCTAssertEqual(a.id, 0x1111)
            XCTAssertEqual(a.responseCode, .noError)
            XCTAssertEqual(a.answers.map(\.data), [[198, 19, 0, 2]], host)

            try socket.send(dnsQuery("Server.LinkCond.Test", .aaaa, id: 0x2222))
            let aaaa = try DNSMessage(bytes: socket.receive())
            XCTAssertEqual(aaaa.id, 0x2222)
            XCTAssertEqual(aaaa.answers.map(\.type), [.aaaa])
            XCTAssertEqual(aaaa.answers.first?.data, IPAddress("2001:2:0:100::2")?.bytes)

            try socket.send(dnsQuery("example.com", .a, id: 0x3333))
            XCTAssertEqual(try DNSMessage(bytes: socket.receive()).responseCode, .refused)

            try socket.send(Array(DNSMessageTests.serverQuery.prefix(20)))
            XCTAssertEqual(try DNSMessage(bytes: socket.receive()).responseCode, .formatError)
        }
    }

    func testDNSOverTCP() throws {
        for host in hosts {
            let socket = try TestSocket(tcp: true, host: host, port: configuration.dnsPort)
            for (id, type) in [(UInt16(1), DNSRecordType.a), (2, .aaaa)] {
                let query = try dnsQuery("x.y.linkcond.test", type, id: id)
                try socket.send([UInt8(query.count >> 8), UInt8(query.count & 0xFF)] + query)
                let prefix = try socket.receive(exactly: 2)
                let response = try DNSMessage(bytes: socket.receive(exactly: Int(prefix[0]) << 8 | Int(prefix[1])))
                XCTAssertEqual(response.id, id)
                XCTAssertEqual(response.answers.map(\.type), [type], host)
                XCTAssertEqual(response.answers.first?.data.count, type == .a ? 4 : 16)
            }
            socket.shutdownWrite()
            XCTAssertEqual(try socket.receiveAll(), [])
        }
    }

    // MARK: Lifecycle

    func testEndpointsAndDoubleStart() {
        XCTAssertTrue(server.isRunning)
        XCTAssertEqual(server.endpoints.count, 10)
        XCTAssertTrue(server.endpoints.contains("[::1]:\(configuration.httpPort)/tcp"))
        XCTAssertTrue(server.endpoints.contains("127.0.0.1:\(configuration.dnsPort)/udp"))
        XCTAssertThrowsError(try server.start()) { error in
            XCTAssertEqual(error as? ResponderError, .alreadyRunning)
        }
    }

    func testStopClosesEverythingAndRestartWorks() throws {
        let idle = try TestSocket(tcp: true, host: "127.0.0.1", port: configuration.echoPort)
        try idle.send("x")
        XCTAssertEqual(try idle.receive(exactly: 1), Array("x".utf8))  // accepted and being served
        let started = Date()
        server.stop()
        XCTAssertLessThan(Date().timeIntervalSince(started), 3)
        XCTAssertFalse(server.isRunning)
        XCTAssertEqual(try idle.receiveAll(), [])  // the open connection was ended
        XCTAssertThrowsError(try TestSocket(tcp: true, host: "127.0.0.1", port: configuration.httpPort))
        XCTAssertThrowsError(try TestSocket(tcp: true, host: "::1", port: configuration.dnsPort))

        try server.start()
        let (head, _) = try http("::1", "GET /generate_204 HTTP/1.1\r\n\r\n")
        XCTAssertTrue(head.hasPrefix("HTTP/1.1 204 "))
    }

    func testBindFailureThrowsBeforeAnythingServes() throws {
        server.stop()
        // The running server's own sockets occupy the ports: a second server on the same ports must fail.
        let first = ResponderServer(configuration: configuration)
        try first.start()
        defer { first.stop() }
        let second = ResponderServer(configuration: configuration)
        XCTAssertThrowsError(try second.start()) { error in
            let port = configuration.httpPort
            XCTAssertEqual(error as? ResponderError, .cannotListen(endpoint: "127.0.0.1:\(port)/tcp", step: "bind",
                                                                   errno: EADDRINUSE))
            XCTAssertEqual("\(error)", "cannot listen on 127.0.0.1:\(port)/tcp: Address already in use")
        }
        XCTAssertFalse(second.isRunning)
        XCTAssertEqual(second.endpoints, [])

        // Only the HTTP port is taken: the failed start must have released the sockets it bound before.
        first.stop()
        let blocker = try TestBlocker(port: configuration.dnsPort)
        XCTAssertThrowsError(try second.start()) { error in
            XCTAssertEqual("\(error)", "cannot listen on 127.0.0.1:\(configuration.dnsPort)/udp: Address already in use")
        }
        blocker.close()
        XCTAssertNoThrow(try FreePortsCheck.assertFree(configuration.httpPort))
        try second.start()
        second.stop()
    }

    func testConnectionCap() throws {
        server.stop()
        var capped = configuration!
        capped.maxConnections = 2
        server = ResponderServer(configuration: capped)
        try server.start()
        let sockets = try (0..<2).map { _ in try TestSocket(tcp: true, host: "127.0.0.1", port: capped.echoPort) }
        for socket in sockets {
            try socket.send("x")
            XCTAssertEqual(try socket.receive(exactly: 1), Array("x".utf8))
        }
        let third = try TestSocket(tcp: true, host: "127.0.0.1", port: capped.echoPort)
        try? third.send("y")
        XCTAssertEqual((try? third.receiveAll()) ?? [], [])  // closed (or reset) without an echo
    }

    func testInvalidConfigurationIsRejected() {
        var bad = configuration!
        bad.bindAddresses = ["localhost"]
        XCTAssertThrowsError(try ResponderServer(configuration: bad).start()) { error in
            XCTAssertEqual(error as? ResponderError, .invalidAddress(field: "bindAddresses", value: "localhost"))
        }
        bad = configuration!
        bad.ipv4Address = "198.19.0.300"
        XCTAssertThrowsError(try ResponderServer(configuration: bad).start())
    }
}

/// Holds a UDP port on 127.0.0.1 (to make a bind fail).
private final class TestBlocker {
    private var fd: Int32

    init(port: UInt16) throws {
        fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else { throw TestSocket.Failure("bind blocker") }
    }

    func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    deinit { close() }
}

private enum FreePortsCheck {
    /// Throws when a TCP listener on 127.0.0.1:port cannot be made.
    static func assertFree(_ port: UInt16) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        defer { close(fd) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else { throw TestSocket.Failure("port \(port) still bound") }
    }
}

final class ResponderSignalTests: XCTestCase {
    func testRunUntilTerminatedEndsOnSIGTERMAndOnStop() throws {
        let ports = try FreePorts.pick(3)
        let server = ResponderServer(configuration: ResponderConfiguration(
            httpPort: ports[0], echoPort: ports[1], dnsPort: ports[2], bindAddresses: ["127.0.0.1"]))
        defer { server.stop() }

        for viaSignal in [true, false] {
            let outcome = Mutex<Result<Int32?, ResponderError>?>(nil)
            let finished = DispatchSemaphore(value: 0)
            Thread {
                let result = Result { () throws(ResponderError) -> Int32? in try server.runUntilTerminated() }
                outcome.withLock { $0 = result }
                finished.signal()
            }.start()
            let deadline = Date().addingTimeInterval(5)
            while !server.isRunning && Date() < deadline { usleep(10_000) }
            XCTAssertTrue(server.isRunning)
            _ = try TestSocket(tcp: true, host: "127.0.0.1", port: ports[0])
            if viaSignal {
                kill(getpid(), SIGTERM)
            } else {
                server.stop()
            }
            guard finished.wait(timeout: .now() + 10) == .success else {
                server.stop()
                _ = finished.wait(timeout: .now() + 10)
                return XCTFail("runUntilTerminated did not return (signal: \(viaSignal))")
            }
            XCTAssertFalse(server.isRunning)
            let result = try XCTUnwrap(outcome.withLock { $0 })
            XCTAssertEqual(try result.get(), viaSignal ? SIGTERM : nil)
        }
    }
}

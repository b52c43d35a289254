import Dispatch
import Foundation
import Glibc
import LinkcondBase
import RouteNetlink
import Synchronization
import XCTest

@testable import PathMonitor

/// The real round against servers on the loopback interface. Nothing here bounds how long a round takes:
/// timings belong to the benchmark and the integration tier. What is checked is what the round did — which
/// probes, in which order, with which errors and samples.
final class ReachabilityProbeRoundTests: XCTestCase {
    static let loopback = LoopbackServer.loopbackV4
    static let noContent = "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"

    private var servers: [LoopbackServer] = []

    override func tearDown() {
        servers.forEach { $0.stop() }
        servers = []
        super.tearDown()
    }

    private func http(_ response: String?, acceptLimit: Int? = nil) throws -> LoopbackServer {
        let server = try LoopbackServer.http(response, acceptLimit: acceptLimit)
        servers.append(server)
        return server
    }

    private func dns(_ behaviour: LoopbackServer.DNSBehaviour) throws -> LoopbackServer {
        let server = try LoopbackServer.dns(behaviour)
        servers.append(server)
        return server
    }

    private func round(http: UInt16, dns: UInt16, timeout: Double = 1, host: String = "server.linkcond.test", nameservers: [IPAddress] = [loopback]) -> NetworkProbeRound {
        NetworkProbeRound(namespace: nil, settings: ReachabilitySettings(
            timeout: timeout, host: host, port: http, nameservers: nameservers, dnsPort: dns, dnsRetransmitInterval: 0.2))
    }

    /// A request with fixed timeouts (the old rules), or the given adaptive ones.
    private func request(
        _ family: ReachabilityFamily = .ipv4, known: IPAddress? = nil, timeout: Double = 1, adaptive: ProbeTimeouts? = nil
    ) -> ProbeRoundRequest {
        ProbeRoundRequest(family: family, lastKnownAddress: known, timeouts: adaptive ?? .fixed(timeout))
    }

    private func kinds(_ results: [ProbeResult]) -> [String] {
        results.map { "\($0.kind)\($0.success ? "+" : "-")" }
    }

    private let never: () -> Bool = { false }

    func testOnline() throws {
        let web = try http(Self.noContent)
        let names = try dns(.answer([127, 0, 0, 1]))
        let results = round(http: web.port, dns: names.port).run(request(), isCancelled: never)
        XCTAssertEqual(kinds(results), ["dns+", "tcp+", "http+"])
        XCTAssertEqual(ProbeOutcome(results), .online)
        XCTAssertEqual(results[0].address, "127.0.0.1")
        XCTAssertEqual(results[1].address, "127.0.0.1")
        XCTAssertEqual(results[2].httpStatus, 204)
        XCTAssertTrue(results.allSatisfy { ($0.rtt ?? -1) >= 0 && $0.family == .ipv4 && !$0.timedOut }, "\(results)")
        XCTAssertTrue(results.allSatisfy { $0.rttSample != nil }, "every probe gives its estimator a sample: \(results)")
        XCTAssertTrue(zip(results, results.dropFirst()).allSatisfy { $0.time <= $1.time })
        let request = try XCTUnwrap(web.requests.first)
        XCTAssertTrue(request.hasPrefix("GET /generate_204 HTTP/1.1\r\nHost: server.linkcond.test:\(web.port)\r\n"), request)
        XCTAssertEqual(names.queryCount, 1)
    }

    func testIPv6AsksForAAAAOverAnIPv6Nameserver() throws {
        let (web4, web6) = try LoopbackServer.pair { try LoopbackServer.http(Self.noContent, on: $0, port: $1) }
        let (names4, names6) = try LoopbackServer.pair { address, port in
            try LoopbackServer.dns(.answer(address == Self.loopback ? [127, 0, 0, 1] : LoopbackServer.loopbackV6.bytes), on: address, port: port)
        }
        servers += [web4, web6, names4, names6]
        let both = round(http: web4.port, dns: names4.port, nameservers: [Self.loopback, LoopbackServer.loopbackV6])
        let v6 = both.run(request(.ipv6), isCancelled: never)
        XCTAssertEqual(kinds(v6), ["dns+", "tcp+", "http+"])
        XCTAssertEqual(v6.map(\.address), ["::1", "::1", "::1"])
        XCTAssertTrue(v6.allSatisfy { $0.family == .ipv6 })
        XCTAssertEqual(names6.queryCount, 1, "the IPv6 nameserver")
        XCTAssertEqual(names4.queryCount, 0)
        XCTAssertEqual(web6.requests.count, 1)
        let v4 = both.run(request(.ipv4), isCancelled: never)
        XCTAssertEqual(v4.map(\.address), ["127.0.0.1", "127.0.0.1", "127.0.0.1"])
        XCTAssertEqual(names4.queryCount, 1)
        // An A-only answer to an AAAA question is no address: IPv6 has none.
        let v4Only = round(http: web4.port, dns: names4.port).run(request(.ipv6), isCancelled: never)
        XCTAssertEqual(kinds(v4Only), ["dns-"])
        XCTAssertEqual(v4Only.first?.error, "127.0.0.1: no AAAA record")
    }

    func testReusesTheConnectionToTheKnownAddress() throws {
        let web = try http(Self.noContent)
        let names = try dns(.answer([127, 0, 0, 1]))
        let results = round(http: web.port, dns: names.port).run(request(known: Self.loopback), isCancelled: never)
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
            let results = round(http: web.port, dns: names.port).run(request(), isCancelled: never)
            XCTAssertEqual(ProbeOutcome(results), .portal, response)
            XCTAssertEqual(results.last?.httpStatus, status)
        }
    }

    func testDNSDownButTCPWorksIsLimited() throws {
        let web = try http(Self.noContent)
        let names = try dns(.silent)
        let results = round(http: web.port, dns: names.port).run(request(known: Self.loopback, timeout: 0.6), isCancelled: never)
        XCTAssertEqual(ProbeOutcome(results), .limited)
        XCTAssertEqual(kinds(results), ["tcp+", "dns-"], "side by side: the connect ended first, and fixed mode checks nothing more")
        XCTAssertEqual(results[1].error?.hasSuffix("timed out after 0.6 s"), true, results[1].error ?? "")
        XCTAssertTrue(results[1].timedOut)
        XCTAssertGreaterThanOrEqual(names.queryCount, 3, "retransmitted every 0.2 s within the one timeout")
    }

    func testAdaptiveWaitsForASlowAnswerWhileTheLinkWorks() throws {
        let web = try http(Self.noContent)
        let names = try dns(.delayed(0.8, [127, 0, 0, 1]))
        let timeouts = ProbeTimeouts(dns: 0.3, transport: 0.5, dnsPatience: 5, isAdaptive: true)
        let results = round(http: web.port, dns: names.port, timeout: 3).run(request(known: Self.loopback, adaptive: timeouts), isCancelled: never)
        XCTAssertEqual(ProbeOutcome(results), .online, "a slow answer is not a lost one: \(kinds(results))")
        let answer = try XCTUnwrap(results.first { $0.kind == .dns })
        XCTAssertGreaterThanOrEqual(answer.rttSample ?? 0, 0.8, "the sample is the answer's own round trip")
        XCTAssertGreaterThanOrEqual(results.filter { $0.kind == .tcp }.count, 2, "the connect, then link checks while waiting")
        XCTAssertTrue(results.filter { $0.kind == .tcp }.allSatisfy(\.success))
        XCTAssertEqual(web.requests.count, 1, "checks connect and close; one request")

        // The same answer in fixed mode with a 0.3 s timeout is lost: limited.
        let fixed = round(http: web.port, dns: names.port).run(request(known: Self.loopback, timeout: 0.3), isCancelled: never)
        XCTAssertEqual(ProbeOutcome(fixed), .limited)
        // Without a working connect there is nothing to wait on: the query times out at its own timeout.
        let unknown = round(http: web.port, dns: names.port, timeout: 3).run(request(adaptive: timeouts), isCancelled: never)
        XCTAssertEqual(kinds(unknown), ["dns-"])
        XCTAssertEqual(unknown.first?.error, "127.0.0.1: timed out after 0.3 s")
    }

    func testAdaptiveGivesUpOnDNSAtThePatienceLimit() throws {
        let web = try http(Self.noContent)
        let names = try dns(.silent)
        let timeouts = ProbeTimeouts(dns: 0.3, transport: 0.5, dnsPatience: 1.2, isAdaptive: true)
        let results = round(http: web.port, dns: names.port).run(request(known: Self.loopback, adaptive: timeouts), isCancelled: never)
        XCTAssertEqual(ProbeOutcome(results), .limited)
        XCTAssertEqual(results.last?.kind, .dns)
        XCTAssertEqual(results.last?.error, "127.0.0.1: timed out after 1.2 s")
        XCTAssertEqual(results.last?.timedOut, true)
        XCTAssertTrue(results.dropLast().allSatisfy { $0.kind == .tcp && $0.success }, "\(kinds(results))")
        XCTAssertGreaterThanOrEqual(results.count, 3, "the connect and at least one check")
    }

    func testALinkCheckThatFailsEndsTheWaitForDNS() throws {
        // The server takes the first connect, then stops listening: the link check is refused.
        let web = try http(Self.noContent, acceptLimit: 1)
        let names = try dns(.silent)
        let timeouts = ProbeTimeouts(dns: 0.3, transport: 0.5, dnsPatience: 30, isAdaptive: true)
        let results = round(http: web.port, dns: names.port).run(request(known: Self.loopback, adaptive: timeouts), isCancelled: never)
        XCTAssertEqual(kinds(results).first, "tcp+")
        XCTAssertEqual(kinds(results).suffix(2), ["tcp-", "dns-"], "a refused check, then DNS given up: \(kinds(results))")
        XCTAssertEqual(results.dropLast().last?.error, "connect: Connection refused")
        XCTAssertEqual(ProbeOutcome(results), .failure, "the last connect failed: nothing gets through")
        XCTAssertEqual(results.last?.timedOut, true)
        XCTAssertFalse(results.last?.error?.hasSuffix("after 30.0 s") ?? true, "it did not wait for the patience limit")
    }

    func testAnswersWithoutAnAddressFailDNS() throws {
        let web = try http(Self.noContent)
        let names = try dns(.rcode(3))
        let alone = round(http: web.port, dns: names.port).run(request(), isCancelled: never)
        XCTAssertEqual(kinds(alone), ["dns-"])
        XCTAssertEqual(alone[0].error, "127.0.0.1: NXDOMAIN")
        XCTAssertFalse(alone[0].timedOut)
        XCTAssertEqual(ProbeOutcome(alone), .failure, "no address to try TCP with")
        let known = round(http: web.port, dns: names.port).run(request(known: Self.loopback), isCancelled: never)
        XCTAssertEqual(ProbeOutcome(known), .limited)
    }

    func testNothingListeningFails() throws {
        let names = try dns(.answer([127, 0, 0, 1]))
        let closed = try http(nil)
        let port = closed.port
        closed.stop()  // the port is free again: connects are refused
        let results = round(http: port, dns: names.port).run(request(), isCancelled: never)
        XCTAssertEqual(kinds(results), ["dns+", "tcp-"])
        XCTAssertEqual(results[1].error, "connect: Connection refused")
        XCTAssertFalse(results[1].timedOut, "refused, not timed out: no backoff")
        XCTAssertEqual(ProbeOutcome(results), .failure)
        // Nobody answers DNS either (port unreachable comes back as ECONNREFUSED on the UDP socket).
        let deadDNS = try dns(.silent)
        let dnsPort = deadDNS.port
        deadDNS.stop()
        let nothing = round(http: port, dns: dnsPort).run(request(known: Self.loopback), isCancelled: never)
        XCTAssertEqual(ProbeOutcome(nothing), .failure)
        XCTAssertEqual(Set(kinds(nothing)), ["dns-", "tcp-"])
    }

    func testAServerThatNeverAnswersTimesOut() throws {
        let web = try http(nil)
        let names = try dns(.answer([127, 0, 0, 1]))
        let results = round(http: web.port, dns: names.port).run(request(timeout: 0.5), isCancelled: never)
        XCTAssertEqual(kinds(results), ["dns+", "tcp+", "http-"])
        XCTAssertEqual(results[2].error, "timed out after 0.5 s")
        XCTAssertTrue(results[2].timedOut)
        XCTAssertEqual(ProbeOutcome(results), .failure)
        let adaptive = ProbeTimeouts(dns: 0.3, transport: 0.4, dnsPatience: 1, isAdaptive: true)
        let own = round(http: web.port, dns: names.port).run(request(adaptive: adaptive), isCancelled: never)
        XCTAssertEqual(own.last?.error, "timed out after 0.4 s", "adaptive: the exchange has its own transport timeout")
    }

    func testALostQueryIsRetransmittedWithItsOwnID() throws {
        let web = try http(Self.noContent)
        let names = try dns(.dropFirst(1, [127, 0, 0, 1]))
        let results = round(http: web.port, dns: names.port).run(request(), isCancelled: never)
        XCTAssertEqual(ProbeOutcome(results), .online)
        XCTAssertEqual(names.queryCount, 2)
        let answer = results[0]
        XCTAssertGreaterThanOrEqual(answer.rtt ?? 0, 0.19, "the lookup took the retransmission interval and more")
        let sample = try XCTUnwrap(answer.rttSample)
        XCTAssertGreaterThanOrEqual((answer.rtt ?? 0) - sample, 0.19, "the sample is the answered transmission's round trip alone")
    }

    func testANewAddressGetsAFreshConnection() throws {
        let web = try http(Self.noContent)
        let names = try dns(.answer([127, 0, 0, 1]))
        // The old address has nothing listening; the connect to it is dropped once DNS says otherwise.
        let results = round(http: web.port, dns: names.port).run(request(known: IPAddress("127.0.0.2")), isCancelled: never)
        XCTAssertEqual(ProbeOutcome(results), .online)
        XCTAssertEqual(results.filter { $0.kind == .tcp }.map(\.address), ["127.0.0.1"])
    }

    func testAnIPLiteralSkipsDNS() throws {
        let web = try http(Self.noContent)
        let results = round(http: web.port, dns: 9, host: "127.0.0.1").run(request(), isCancelled: never)
        XCTAssertEqual(kinds(results), ["tcp+", "http+"])
        XCTAssertEqual(ProbeOutcome(results), .online)
    }

    func testCancelEndsARound() throws {
        let names = try dns(.silent)
        var looks = 0
        // Cancelled at the round's third look: long before the 5 s timeout could end it.
        let results = round(http: 9, dns: names.port, timeout: 5).run(request(timeout: 5), isCancelled: {
            looks += 1
            return looks >= 3
        })
        XCTAssertEqual(results.first?.error, "127.0.0.1: cancelled", "ended by the cancel, not by the timeout")
        XCTAssertEqual(results.first?.timedOut, false)
    }

    func testTheProberOverLoopbackOnBothFamilies() throws {
        let (web4, web6) = try LoopbackServer.pair { try LoopbackServer.http(Self.noContent, on: $0, port: $1) }
        let (names4, names6) = try LoopbackServer.pair { address, port in
            try LoopbackServer.dns(.answer(address == Self.loopback ? [127, 0, 0, 1] : LoopbackServer.loopbackV6.bytes), on: address, port: port)
        }
        servers += [names4, names6, web4, web6]
        let settings = ReachabilitySettings(
            interval: 0.05, timeout: 1, port: web4.port, nameservers: [Self.loopback, LoopbackServer.loopbackV6], dnsPort: names4.port)
        let prober = ReachabilityProber(namespace: nil, settings: settings)
        let log = UpdateLog()
        prober.start { log.append($0) }
        let deadline = Date().addingTimeInterval(10)
        while !log.all.contains(where: { $0.ipv4?.state == .online && $0.ipv6?.state == .online }) && Date() < deadline { usleep(1000) }
        let both = try XCTUnwrap(log.all.first { $0.ipv4?.state == .online && $0.ipv6?.state == .online })
        XCTAssertEqual(both.state, .online)
        XCTAssertFalse(both.isSingleFamily)
        XCTAssertEqual(both.quality, .good)
        XCTAssertNotNil(both.medianRTT)

        // IPv6's web server goes away: IPv6 fails (refused), IPv4 carries on.
        web6.stop()
        let mark = log.all.count
        while !log.all.dropFirst(mark).contains(where: \.isSingleFamily) && Date() < deadline.addingTimeInterval(10) { usleep(1000) }
        prober.cancel()
        let single = try XCTUnwrap(log.all.dropFirst(mark).first(where: \.isSingleFamily))
        XCTAssertEqual(single.state, .online)
        XCTAssertEqual(single.ipv6?.state, .offline)
        XCTAssertEqual(single.ipv4?.state, .online)
        XCTAssertTrue(log.all.allSatisfy { $0.state == .online }, "online throughout: IPv4 never stopped working")
    }
}

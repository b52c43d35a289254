import Foundation
import Glibc
import LinkcondBase
import RouteNetlink
import XCTest

@testable import PathMonitor

final class ReachabilityResolverTests: XCTestCase {
    func testParsesNameserversAndSearch() {
        // What the sandbox writes to /etc/netns/CLIENT/resolv.conf.
        let sandbox = ResolverConfiguration(parsing: """
            # Written by linkcond: the sandbox's DNS server answers for *.linkcond.test.
            nameserver 198.19.0.2
            nameserver 2001:2:0:100::2
            search linkcond.test

            """)
        XCTAssertEqual(sandbox.nameservers, [IPAddress("198.19.0.2")!, IPAddress("2001:2:0:100::2")!])
        XCTAssertEqual(sandbox.searchDomains, ["linkcond.test"])
        XCTAssertEqual(sandbox.effectiveNameservers.first, IPAddress("198.19.0.2"))
    }

    func testOddButValidLines() {
        let text = "; comment\n\tnameserver\t198.18.0.53  \nnameserver fe80::1%eth0\nnameserver not-an-address\n"
            + "nameserver\noptions timeout:1 attempts:2\ndomain a.test\nsearch b.test c.test\n#nameserver 10.0.0.1\n"
            + "nameserver 198.18.0.54 # trailing comment\n"
        let parsed = ResolverConfiguration(parsing: text)
        XCTAssertEqual(parsed.nameservers, [IPAddress("198.18.0.53")!, IPAddress("fe80::1")!, IPAddress("198.18.0.54")!])
        XCTAssertEqual(parsed.searchDomains, ["b.test", "c.test"], "the last search/domain line wins")
    }

    func testCRLFLines() {
        let parsed = ResolverConfiguration(parsing: "nameserver 198.18.0.1\r\nnameserver 198.18.0.2\r\nsearch a.test\r\n")
        XCTAssertEqual(parsed.nameservers, [IPAddress("198.18.0.1")!, IPAddress("198.18.0.2")!])
        XCTAssertEqual(parsed.searchDomains, ["a.test"])
    }

    func testNoNameserverMeansTheLocalMachine() {
        let empty = ResolverConfiguration(parsing: "search x.test\n")
        XCTAssertEqual(empty.nameservers, [])
        XCTAssertEqual(empty.effectiveNameservers, [IPAddress("127.0.0.1")!])
        XCTAssertEqual(ResolverConfiguration.load(path: "/nonexistent/resolv.conf"), ResolverConfiguration())
    }

    func testLoadsAFileAndPicksTheHostFileWithoutANamespace() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("lc-resolv-\(getpid()).conf").path
        defer { unlink(path) }
        try "nameserver 198.18.7.7\n".write(toFile: path, atomically: false, encoding: .utf8)
        XCTAssertEqual(ResolverConfiguration.load(path: path).nameservers, [IPAddress("198.18.7.7")!])
        XCTAssertEqual(ResolverConfiguration.path(for: nil), "/etc/resolv.conf")
    }
}

final class ReachabilityDNSProbeTests: XCTestCase {
    /// An answer as the sandbox's DNS server sends it: the question echoed, one record of `recordType`
    /// (A unless told) by pointer.
    static func answer(id: UInt16, name: String = "server.linkcond.test", rcode: UInt8 = 0, type: UInt16 = 1,
                       address: [UInt8]? = [198, 19, 0, 2], recordType: UInt16? = nil) -> [UInt8] {
        var bytes: [UInt8] = [UInt8(id >> 8), UInt8(id & 0xFF), 0x85, 0x80 | rcode, 0, 1, 0, address == nil ? 0 : 1, 0, 0, 0, 0]
        for label in name.split(separator: ".") {
            bytes.append(UInt8(label.utf8.count))
            bytes += Array(label.utf8)
        }
        bytes += [0, UInt8(type >> 8), UInt8(type & 0xFF), 0, 1]
        if let address {
            let record = recordType ?? 1
            bytes += [0xC0, 0x0C, UInt8(record >> 8), UInt8(record & 0xFF), 0, 1, 0, 0, 0, 5, 0, UInt8(address.count)] + address
        }
        return bytes
    }

    func testQueryIsAStandardAQuery() throws {
        let query = try XCTUnwrap(DNSProbe.query(id: 0x1234, name: "server.linkcond.test"))
        XCTAssertEqual(Array(query.prefix(12)), [0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0], "id, RD, one question")
        XCTAssertEqual(Array(query.suffix(4)), [0, 1, 0, 1], "QTYPE A, QCLASS IN")
        XCTAssertEqual(query.count, 12 + 22 + 4)
        XCTAssertNil(DNSProbe.query(id: 1, name: "a..b"))
    }

    func testAnswers() {
        let name = "server.linkcond.test"
        XCTAssertEqual(DNSProbe.answer(Self.answer(id: 7), id: 7, name: name), .address(IPAddress("198.19.0.2")!))
        XCTAssertEqual(DNSProbe.answer(Self.answer(id: 7, name: "SERVER.linkcond.TEST"), id: 7, name: name),
                       .address(IPAddress("198.19.0.2")!), "names compare without case")
        XCTAssertEqual(DNSProbe.answer(Self.answer(id: 8), id: 7, name: name), .unrelated, "another id")
        XCTAssertEqual(DNSProbe.answer(Self.answer(id: 7, name: "other.linkcond.test"), id: 7, name: name), .unrelated)
        XCTAssertEqual(DNSProbe.answer(Self.answer(id: 7, type: 28), id: 7, name: name), .unrelated, "an AAAA question")
        XCTAssertEqual(DNSProbe.answer(Array(Self.answer(id: 7).prefix(5)), id: 7, name: name), .unrelated, "garbage")
        XCTAssertEqual(DNSProbe.answer(Self.answer(id: 7, rcode: 3, address: nil), id: 7, name: name), .failed("NXDOMAIN"))
        XCTAssertEqual(DNSProbe.answer(Self.answer(id: 7, rcode: 5, address: nil), id: 7, name: name), .failed("REFUSED"))
        XCTAssertEqual(DNSProbe.answer(Self.answer(id: 7, address: nil), id: 7, name: name), .failed("no A record"))
        XCTAssertEqual(DNSProbe.answer(Self.answer(id: 7, address: [1, 2, 3]), id: 7, name: name), .failed("no A record"), "RDATA of 3 bytes")
        var query = Self.answer(id: 7)
        query[2] &= 0x7F  // QR clear: our own query reflected
        XCTAssertEqual(DNSProbe.answer(query, id: 7, name: name), .unrelated)
    }

    func testAAAAQueriesAndAnswers() throws {
        let query = try XCTUnwrap(DNSProbe.query(id: 9, name: "server.linkcond.test", type: .aaaa))
        XCTAssertEqual(Array(query.suffix(4)), [0, 28, 0, 1], "QTYPE AAAA, QCLASS IN")
        let name = "server.linkcond.test"
        let v6: [UInt8] = [0x20, 0x01, 0, 2, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 2]
        XCTAssertEqual(DNSProbe.answer(Self.answer(id: 9, type: 28, address: v6, recordType: 28), id: 9, name: name, type: .aaaa),
                       .address(IPAddress("2001:2:0:100::2")!))
        XCTAssertEqual(DNSProbe.answer(Self.answer(id: 9, type: 28, address: nil), id: 9, name: name, type: .aaaa),
                       .failed("no AAAA record"))
        XCTAssertEqual(DNSProbe.answer(Self.answer(id: 9, type: 28), id: 9, name: name, type: .aaaa), .failed("no AAAA record"),
                       "a 4-byte A record in an AAAA answer is no AAAA address")
        XCTAssertEqual(DNSProbe.answer(Self.answer(id: 9), id: 9, name: name, type: .aaaa), .unrelated, "an A question")
        // Any ID the exchange sent is answered; others are not.
        XCTAssertEqual(DNSProbe.answer(Self.answer(id: 4), ids: [3, 4], name: name), .address(IPAddress("198.19.0.2")!))
        XCTAssertEqual(DNSProbe.answer(Self.answer(id: 5), ids: [3, 4], name: name), .unrelated)
    }
}

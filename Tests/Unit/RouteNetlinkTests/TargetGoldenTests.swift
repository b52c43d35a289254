import CMnl
import Glibc
import LinkcondBase
import Netlink
import NetlinkTesting
import RouteNetlink
import XCTest

/// The requests of per-destination trees (profile targets) — the prio with four bands and a priomap to
/// the untouched band, the downlink's prio 3:, the DNS-only and downlink netem leaves, the pfifo leaf,
/// u32 filters on IPv4/IPv6 prefixes with protocols and ports, and the delete of a filter priority —
/// compared byte for byte with what `tc` (iproute2 6.1) sends for the same command, as
/// ``TrafficControlGoldenTests`` does for the trees without targets.
///
/// The filters are written with ``U32Key``'s builders from the numbers in each fixture's `# command:`,
/// so each case checks that `match ip dst 198.19.0.0/24` and the others mean what tc makes of them:
/// offsets, masks, the split of an IPv6 prefix into 32-bit keys, the upper half of the port word for a
/// source port. `reply-filter` holds the kernel's own report of such filters.
final class TargetGoldenTests: XCTestCase {
    static let handle1 = TrafficControlHandle(major: 1, minor: 0)
    static let handle3 = TrafficControlHandle(major: 3, minor: 0)
    static let millisecond: UInt64 = 1_000_000

    static func prefix(_ text: String) -> IPPrefix { IPPrefix(text)! }

    static func filter(_ protocolNumber: EtherType, _ priority: UInt16, _ keys: [U32Key], _ major: UInt16, _ minor: UInt16) -> U32Filter {
        U32Filter(protocolNumber: protocolNumber, priority: priority, keys: keys, classID: TrafficControlHandle(major: major, minor: minor))
    }

    /// Fixture name → the tc command it was captured from, the parent and the filter linkcond sends for it.
    static let filterCases: [String: (command: String, parent: TrafficControlHandle, filter: U32Filter)] = [
        "filter-u32-ipv4-dst-tcp-dport": (
            "tc -n NS filter add dev x0 parent 1: protocol ip prio 5 u32 match ip dst 198.19.0.0/24 match ip protocol 6 0xff match ip dport 80 0xffff flowid 1:1",
            handle1, filter(.ipv4, 5, [.ipDestination(prefix("198.19.0.0/24")), .ipProtocol(6), .ipDestinationPort(80)], 1, 1)
        ),
        "filter-u32-ipv4-dst-udp-dns": (
            "tc -n NS filter add dev x0 parent 1: protocol ip prio 1001 u32 match ip dst 198.19.0.100/32 match ip protocol 17 0xff match ip dport 53 0xffff flowid 1:2",
            handle1, filter(.ipv4, 1001, [.ipDestination(prefix("198.19.0.100/32")), .ipProtocol(17), .ipDestinationPort(53)], 1, 2)
        ),
        "filter-u32-ipv4-dst-icmp": (
            "tc -n NS filter add dev x0 parent 1: protocol ip prio 6 u32 match ip dst 198.18.2.0/24 match ip protocol 1 0xff flowid 1:1",
            handle1, filter(.ipv4, 6, [.ipDestination(prefix("198.18.2.0/24")), .ipProtocol(1)], 1, 1)
        ),
        "filter-u32-ipv4-dst-prefix": (
            "tc -n NS filter add dev x0 parent 1: protocol ip prio 7 u32 match ip dst 198.19.0.0/16 flowid 1:1",
            handle1, filter(.ipv4, 7, [.ipDestination(prefix("198.19.0.0/16"))], 1, 1)
        ),
        "filter-u32-ipv6-dst-tcp-dport": (
            "tc -n NS filter add dev x0 parent 1: protocol ipv6 prio 8 u32 match ip6 dst 2001:2:0:100::/64 match ip6 protocol 6 0xff match ip6 dport 443 0xffff flowid 1:1",
            handle1, filter(.ipv6, 8, U32Key.ip6Destination(prefix("2001:2:0:100::/64")) + [.ip6Protocol(6), .ip6DestinationPort(443)], 1, 1)
        ),
        "filter-u32-ipv6-dst-host": (
            "tc -n NS filter add dev x0 parent 1: protocol ipv6 prio 9 u32 match ip6 dst 2001:2:0:100::2/128 flowid 1:1",
            handle1, filter(.ipv6, 9, U32Key.ip6Destination(prefix("2001:2:0:100::2/128")), 1, 1)
        ),
        "filter-u32-ipv6-dst-icmp": (
            "tc -n NS filter add dev x0 parent 1: protocol ipv6 prio 10 u32 match ip6 dst 2001:2::/48 match ip6 protocol 58 0xff flowid 1:1",
            handle1, filter(.ipv6, 10, U32Key.ip6Destination(prefix("2001:2::/48")) + [.ip6Protocol(58)], 1, 1)
        ),
        "filter-u32-ipv4-src-tcp-sport": (
            "tc -n NS filter add dev x0 parent 3: protocol ip prio 1 u32 match ip src 198.19.0.0/24 match ip protocol 6 0xff match ip sport 80 0xffff flowid 3:1",
            handle3, filter(.ipv4, 1, [.ipSource(prefix("198.19.0.0/24")), .ipProtocol(6), .ipSourcePort(80)], 3, 1)
        ),
        "filter-u32-ipv6-src-udp-sport": (
            "tc -n NS filter add dev x0 parent 3: protocol ipv6 prio 2 u32 match ip6 src 2001:2:0:100::/64 match ip6 protocol 17 0xff match ip6 sport 7 0xffff flowid 3:1",
            handle3, filter(.ipv6, 2, U32Key.ip6Source(prefix("2001:2:0:100::/64")) + [.ip6Protocol(17), .ip6SourcePort(7)], 3, 1)
        ),
        "filter-u32-ipv6-src-prefix": (
            "tc -n NS filter add dev x0 parent 3: protocol ipv6 prio 3 u32 match ip6 src 2001:2::/48 flowid 3:1",
            handle3, filter(.ipv6, 3, U32Key.ip6Source(prefix("2001:2::/48")), 3, 1)
        ),
    ]

    static func sendNetem(_ client: RouteNetlinkClient, _ fixture: Fixture, parent: TrafficControlHandle, handle: UInt16, delay: UInt64) throws {
        var parameters = NetemParameters()
        parameters.delay = delay
        try client.replaceQdisc(
            on: "x0", handle: TrafficControlHandle(major: handle, minor: 0), parent: parent,
            options: .netem(parameters, clock: try fixture.packetSchedulerClock))
    }

    /// Fixture name → the call that sends the same request. GoldenBytesTests.testEveryFixtureIsCovered
    /// counts these too.
    static let cases: [String: GoldenCase] = {
        var cases: [String: GoldenCase] = [:]
        cases["prio-bands-4"] = GoldenCase(
            command: "tc -n NS qdisc replace dev x0 root handle 1: prio bands 4 priomap 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0"
        ) { _, client in
            try client.replaceQdisc(on: "x0", handle: handle1, options: .prio(PrioOptions(bands: 4)))
        }
        cases["prio-bands-4-priomap-3"] = GoldenCase(
            command: "tc -n NS qdisc replace dev x0 root handle 1: prio bands 4 priomap 3 3 3 3 3 3 3 3 3 3 3 3 3 3 3 3"
        ) { _, client in
            try client.replaceQdisc(on: "x0", handle: handle1, options: .prio(PrioOptions(bands: 4, priorityMap: [UInt8](repeating: 3, count: 16))))
        }
        cases["prio-bands-2-priomap-1"] = GoldenCase(
            command: "tc -n NS qdisc replace dev x0 root handle 3: prio bands 2 priomap 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1"
        ) { _, client in
            try client.replaceQdisc(on: "x0", handle: handle3, options: .prio(PrioOptions(bands: 2, priorityMap: [UInt8](repeating: 1, count: 16))))
        }
        cases["netem-leaf-dns-only"] = GoldenCase(command: "tc -n NS qdisc replace dev x0 parent 1:3 handle 30: netem delay 1s") { fixture, client in
            try sendNetem(client, fixture, parent: TrafficControlHandle(major: 1, minor: 3), handle: 0x30, delay: 1000 * millisecond)
        }
        cases["netem-leaf-downlink"] = GoldenCase(command: "tc -n NS qdisc replace dev x0 parent 3:1 handle 10: netem delay 100ms") { fixture, client in
            try sendNetem(client, fixture, parent: TrafficControlHandle(major: 3, minor: 1), handle: 0x10, delay: 100 * millisecond)
        }
        cases["qdisc-replace-pfifo-leaf"] = GoldenCase(command: "tc -n NS qdisc replace dev x0 parent 1:4 handle 40: pfifo") { _, client in
            try client.replaceQdisc(on: "x0", handle: TrafficControlHandle(major: 0x40, minor: 0), parent: TrafficControlHandle(major: 1, minor: 4), options: .pfifo())
        }
        cases["filter-del-prio"] = GoldenCase(command: "tc -n NS filter del dev x0 parent 1: prio 5") { _, client in
            try client.deleteFilters(on: "x0", parent: handle1, priority: 5)
        }
        for (name, filter) in filterCases {
            cases[name] = GoldenCase(command: filter.command) { _, client in try client.addFilter(filter.filter, on: "x0", parent: filter.parent) }
        }
        return cases
    }()

    // MARK: Golden bytes

    func testTargetRequestsMatchIproute2() throws {
        XCTAssertTrue(Set(Self.cases.keys).isDisjoint(with: TrafficControlGoldenTests.cases.keys))
        XCTAssertTrue(Set(Self.cases.keys).isDisjoint(with: GoldenBytesTests.cases.keys))
        for name in Self.cases.keys.sorted() {
            try assertSendsFixture(name, Self.cases[name])
        }
    }

    /// In a batch, a filter is added with `NLM_F_ECHO` (tc 6.1 cannot say it): the request is tc's with that
    /// one flag more, and the kernel's copy of the filter comes back in the reply.
    func testReadingBackAddsOnlyTheEchoFlag() throws {
        for name in Self.filterCases.keys.sorted() {
            let (command, parent, filter) = try XCTUnwrap(Self.filterCases[name])
            let fixture = try Fixture.load(name)
            XCTAssertEqual(try fixture.command, command)
            let harness = try GoldenHarness(fixture)
            let reply = try harness.client.send([.addFilterReadingBack(filter, interface: "x0", parent: parent)], readingBack: false)
            XCTAssertNil(reply.firstError)
            XCTAssertEqual(harness.transport.sent.count, 1, name)
            var expected = try fixture.bytes
            expected.setU16(expected.u16(at: 6) | UInt16(NLM_F_ECHO), at: 6)
            assertSameRequest(try XCTUnwrap(harness.transport.sent.first), expected, name: name + " with NLM_F_ECHO", command: command, file: #filePath, line: #line)
        }
    }

    /// tc's request, read as the kernel's copy of the filter (the echo has the same layout, with a handle):
    /// the decoder gives back the filter's priority, protocol, class and keys.
    func testFilterDecodesFromTheRequestTcSends() throws {
        for name in Self.filterCases.keys.sorted() {
            let (_, parent, filter) = try XCTUnwrap(Self.filterCases[name])
            let messages = try NetlinkMessage.parse(datagram: try Fixture.load(name).bytes)
            let decoded = try TrafficFilter.decode(try XCTUnwrap(messages.first))
            XCTAssertEqual(decoded.kind, "u32", name)
            XCTAssertEqual(decoded.parent, parent, name)
            XCTAssertEqual(decoded.priority, filter.priority, name)
            XCTAssertEqual(decoded.protocolNumber, filter.protocolNumber.rawValue, name)
            XCTAssertEqual(decoded.classID, filter.classID, name)
            XCTAssertEqual(decoded.keys, filter.keys, name)
            XCTAssertTrue(decoded.isTerminal, name)
        }
    }

    // MARK: The kernel's filters

    /// A filter dump from the kernel (`tc filter show`, two target filters on an htb): each u32 priority
    /// comes as its hash table (no selector, no class) and its filter; the filters decode to what iproute2
    /// shows (the fixture's `# expect-filter:` lines, from tc's own text).
    func testKernelFilterDumpDecodesAsTcShowsIt() throws {
        let fixture = try Fixture.load("reply-filter")
        let decoded = try fixture.messages().filter { $0.type == UInt16(RTM_NEWTFILTER) }.map(TrafficFilter.decode)
        XCTAssertEqual(decoded.count, 6, "per priority: the classifier, its hash table, its filter")
        let filters = decoded.filter { !$0.keys.isEmpty }
        let expected = fixture.values("expect-filter")
        XCTAssertEqual(filters.count, expected.count)
        for (filter, line) in zip(filters, expected) {
            var fields: [String: String] = [:]
            for pair in line.split(separator: " ") {
                let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
                if parts.count == 2 { fields[parts[0]] = parts[1] }
            }
            XCTAssertEqual(filter.kind, "u32", line)
            XCTAssertTrue(filter.isTerminal, line)
            XCTAssertEqual(filter.u32Node, 0x800, line)
            XCTAssertEqual("\(filter.priority)", fields["prio"], line)
            XCTAssertEqual(filter.protocolNumber, fields["protocol"] == "ipv6" ? 0x86dd : 0x0800, line)
            let handle = "\(String(filter.handle >> 20, radix: 16))::\(String(filter.u32Node, radix: 16))"
            XCTAssertEqual(handle, fields["handle"], line)
            XCTAssertEqual(filter.classID?.description, fields["flowid"], line)
            let keys = filter.keys.map { key in
                func hex(_ value: UInt32) -> String { String(repeating: "0", count: 8 - String(value, radix: 16).count) + String(value, radix: 16) }
                return "\(hex(key.value))/\(hex(key.mask))@\(key.offset)"
            }
            XCTAssertEqual(keys.joined(separator: ","), fields["keys"], line)
        }
        XCTAssertEqual(filters.first?.keys, [.ipDestination(Self.prefix("198.19.0.0/24")), .ipProtocol(6), .ipDestinationPort(80)])
        XCTAssertEqual(filters.last?.keys, U32Key.ip6Source(Self.prefix("2001:2::/48")))
    }

    // MARK: Keys

    func testIPv6PrefixesSplitIntoWordsAsTcSplitsThem() {
        XCTAssertEqual(U32Key.ip6Destination(Self.prefix("::/0")), [], "no keys: every IPv6 packet")
        XCTAssertEqual(
            U32Key.ip6Destination(Self.prefix("2001:2::/48")),
            [U32Key(mask: 0xffff_ffff, value: 0x2001_0002, offset: 24), U32Key(mask: 0xffff_0000, value: 0, offset: 28)])
        XCTAssertEqual(U32Key.ip6Source(Self.prefix("2001:2:0:100::2/128")).map(\.offset), [8, 12, 16, 20])
        XCTAssertEqual(U32Key.ip6Source(Self.prefix("2001:2:0:100::/57")).last, U32Key(mask: 0xffff_ff80, value: 0x0000_0100, offset: 12))
        XCTAssertEqual(U32Key.ipDestination(Self.prefix("0.0.0.0/0")), U32Key(mask: 0, value: 0, offset: 16), "tc sends a key with mask 0")
        XCTAssertEqual(U32Key.address(Self.prefix("198.19.0.0/24"), source: true), [U32Key(mask: 0xffff_ff00, value: 0xc613_0000, offset: 12)])
    }

    func testPortKeysShareTheirWord() {
        XCTAssertEqual(U32Key.ipSourcePort(80), U32Key(mask: 0xffff_0000, value: 80 << 16, offset: 20))
        XCTAssertEqual(U32Key.ipDestinationPort(80).offset, U32Key.ipSourcePort(80).offset)
        XCTAssertEqual(U32Key.ip6SourcePort(7), U32Key(mask: 0xffff_0000, value: 7 << 16, offset: 40))
    }
}

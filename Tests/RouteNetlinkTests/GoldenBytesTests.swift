import CMnl
import Glibc
import LinkcondBase
import Netlink
import RouteNetlink
import XCTest

/// Every request linkcond sends, compared byte for byte with what iproute2 sends for the same command.
///
/// The fixtures are iproute2's own requests, captured by `scripts/capture-fixtures`. Each case builds the
/// same request with the RouteNetlink builders, injecting what iproute2 chose at capture time — the
/// sequence number, the interface index it resolved, the namespace descriptors it opened — and adds the
/// flags ``NetlinkConnection`` adds when it sends (`NLM_F_REQUEST | NLM_F_ACK` for requests,
/// `NLM_F_REQUEST | NLM_F_DUMP` for dumps).
final class GoldenBytesTests: XCTestCase {
    struct Case: Sendable {
        /// The fixture's `# command:` line: ties the Swift call below to the command that was captured.
        let command: String
        /// What NetlinkConnection adds to the builder's flags when it sends.
        let addedFlags: UInt16
        let build: @Sendable (Fixture) throws -> NetlinkMessageBuilder
    }

    static let requestFlags = UInt16(NLM_F_REQUEST | NLM_F_ACK)
    static let dumpFlags = UInt16(NLM_F_REQUEST | NLM_F_DUMP)

    static func prefix(_ text: String) -> IPPrefix { IPPrefix(text)! }
    static func address(_ text: String) -> IPAddress { IPAddress(text)! }
    static let inet = AddressFamily(rawValue: UInt8(AF_INET))
    static let inet6 = AddressFamily(rawValue: UInt8(AF_INET6))

    /// Fixture name → how linkcond builds the same request. Every request fixture must be here (and
    /// every entry must have a fixture): see ``testEveryFixtureIsCovered()``.
    static let cases: [String: Case] = [
        // Links
        "link-add-veth": Case(
            command: "ip -n NS link add wl0 type veth peer name c-wl0", addedFlags: requestFlags
        ) { _ in LinkRequest.createVeth(name: "wl0", peerName: "c-wl0") },
        "link-add-veth-netns": Case(
            command: "ip -n NS link add wl0 netns NS2 type veth peer name c-wl0 netns NS3", addedFlags: requestFlags
        ) { fixture in
            let fds = try fixture.namespaceFDs
            XCTAssertEqual(fds.count, 2, "one descriptor for each end's namespace")
            return LinkRequest.createVeth(name: "wl0", namespaceFD: fds[0], peerName: "c-wl0", peerNamespaceFD: fds.last!)
        },
        "link-add-ifb": Case(command: "ip -n NS link add ifb0 type ifb", addedFlags: requestFlags) { _ in
            LinkRequest.create(name: "ifb0", kind: "ifb")
        },
        "link-set-up": Case(command: "ip -n NS link set dev wl0 up", addedFlags: requestFlags) { fixture in
            LinkRequest.setUp(index: try fixture.interfaceIndex, true)
        },
        "link-set-down": Case(command: "ip -n NS link set dev wl0 down", addedFlags: requestFlags) { fixture in
            LinkRequest.setUp(index: try fixture.interfaceIndex, false)
        },
        "link-rename": Case(command: "ip -n NS link set dev wl0 name wl9", addedFlags: requestFlags) { fixture in
            LinkRequest.rename(index: try fixture.interfaceIndex, to: "wl9")
        },
        "link-move": Case(command: "ip -n NS link set dev c-wl0 netns NS2", addedFlags: requestFlags) { fixture in
            LinkRequest.move(index: try fixture.interfaceIndex, toNamespaceFD: try fixture.namespaceFDs[0])
        },
        "link-del": Case(command: "ip -n NS link del dev wl0", addedFlags: requestFlags) { fixture in
            LinkRequest.delete(index: try fixture.interfaceIndex)
        },
        // iproute2 asks for one link without NLM_F_ACK; NetlinkConnection.request adds NLM_F_ACK on top, so
        // the kernel also acks after the reply. Only the flag the two share is added here.
        "link-get": Case(command: "ip -n NS link show dev wl0", addedFlags: UInt16(NLM_F_REQUEST)) { _ in
            LinkRequest.get(name: "wl0")
        },

        // Addresses
        "addr-add-ipv4": Case(command: "ip -n NS addr add 198.18.1.2/24 dev wl0", addedFlags: requestFlags) { fixture in
            AddressRequest.add(prefix("198.18.1.2/24"), interfaceIndex: try fixture.interfaceIndex)
        },
        "addr-add-ipv6-nodad": Case(
            command: "ip -n NS addr add 2001:2:0:1::2/64 dev wl0 nodad", addedFlags: requestFlags
        ) { fixture in
            AddressRequest.add(prefix("2001:2:0:1::2/64"), interfaceIndex: try fixture.interfaceIndex, noDAD: true)
        },
        "addr-del-ipv4": Case(command: "ip -n NS addr del 198.18.1.2/24 dev wl0", addedFlags: requestFlags) { fixture in
            AddressRequest.delete(prefix("198.18.1.2/24"), interfaceIndex: try fixture.interfaceIndex)
        },

        // Routes
        "route-add-default-ipv4": Case(
            command: "ip -n NS route add default via 198.18.1.1 dev wl0 metric 100", addedFlags: requestFlags
        ) { fixture in
            RouteRequest.add(
                destination: nil, gateway: address("198.18.1.1"), interfaceIndex: try fixture.interfaceIndex,
                metric: 100, family: inet)
        },
        "route-add-default-ipv6": Case(
            command: "ip -n NS -6 route add default via 2001:2:0:1::1 dev wl0 metric 100", addedFlags: requestFlags
        ) { fixture in
            RouteRequest.add(
                destination: nil, gateway: address("2001:2:0:1::1"), interfaceIndex: try fixture.interfaceIndex,
                metric: 100, family: inet6)
        },
        "route-add-prefix": Case(
            command: "ip -n NS route add 198.19.0.0/24 dev wl0 metric 50", addedFlags: requestFlags
        ) { fixture in
            RouteRequest.add(
                destination: prefix("198.19.0.0/24"), gateway: nil, interfaceIndex: try fixture.interfaceIndex,
                metric: 50, family: inet)
        },
        "route-add-prefix-via": Case(
            command: "ip -n NS route add 198.19.1.0/24 via 198.18.1.1 dev wl0", addedFlags: requestFlags
        ) { fixture in
            RouteRequest.add(
                destination: prefix("198.19.1.0/24"), gateway: address("198.18.1.1"),
                interfaceIndex: try fixture.interfaceIndex, metric: nil, family: inet)
        },
        "route-del-prefix": Case(
            command: "ip -n NS route del 198.19.0.0/24 dev wl0 metric 50", addedFlags: requestFlags
        ) { fixture in
            RouteRequest.delete(
                destination: prefix("198.19.0.0/24"), gateway: nil, interfaceIndex: try fixture.interfaceIndex,
                metric: 50, family: inet)
        },
        "route-del-default-ipv4": Case(
            command: "ip -n NS route del default via 198.18.1.1 dev wl0 metric 100", addedFlags: requestFlags
        ) { fixture in
            RouteRequest.delete(
                destination: nil, gateway: address("198.18.1.1"), interfaceIndex: try fixture.interfaceIndex,
                metric: 100, family: inet)
        },

        // Qdiscs
        "qdisc-replace-pfifo": Case(
            command: "tc -n NS qdisc replace dev wl0 root handle 1: pfifo", addedFlags: requestFlags
        ) { fixture in
            QdiscRequest.replace(
                interfaceIndex: try fixture.interfaceIndex, handle: TrafficControlHandle(major: 1, minor: 0),
                parent: .root, kind: "pfifo")
        },
        "qdisc-replace-pfifo-limit": Case(
            command: "tc -n NS qdisc replace dev wl0 root handle 1: pfifo limit 100", addedFlags: requestFlags
        ) { fixture in
            // tc's fifo_parse_opt: TCA_OPTIONS holding a struct tc_fifo_qopt, only when a limit is given.
            QdiscRequest.replace(
                interfaceIndex: try fixture.interfaceIndex, handle: TrafficControlHandle(major: 1, minor: 0),
                parent: .root, kind: "pfifo"
            ) { message in
                message.put(UInt16(TCA_OPTIONS), structure: tc_fifo_qopt(limit: 100))
            }
        },
        "qdisc-del-root": Case(command: "tc -n NS qdisc del dev wl0 root", addedFlags: requestFlags) { fixture in
            QdiscRequest.delete(interfaceIndex: try fixture.interfaceIndex)
        },
        "qdisc-dump": Case(command: "tc -n NS -s qdisc show", addedFlags: dumpFlags) { _ in QdiscRequest.dump() },
    ]

    /// Builds the case's request as it would go on the wire and compares it with the fixture.
    func assertMatchesIproute2(_ name: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let golden = try XCTUnwrap(Self.cases[name], "no case for fixture \(name)", file: file, line: line)
        let fixture = try Fixture.load(name)
        XCTAssertEqual(try fixture.command, golden.command, "\(name).txt was captured from another command", file: file, line: line)
        let expected = try fixture.bytes
        XCTAssertGreaterThanOrEqual(expected.count, NetlinkMessage.headerLength, "\(name).txt", file: file, line: line)
        XCTAssertEqual(
            expected.u32(at: 8), try fixture.sequence, "\(name).txt: the header's sequence is not the message's",
            file: file, line: line)

        let builder = try golden.build(fixture)
        builder.sequence = try fixture.sequence
        builder.flags |= golden.addedFlags
        let actual = try builder.finish()
        assertSameRequest(actual, expected, name: name, command: golden.command, file: file, line: line)
    }

    func assertGroupMatches(_ group: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let names = Self.cases.keys.filter { $0.hasPrefix(group + "-") }.sorted()
        XCTAssertFalse(names.isEmpty, "no \(group) cases", file: file, line: line)
        for name in names {
            try assertMatchesIproute2(name, file: file, line: line)
        }
    }

    func testLinkRequestsMatchIproute2() throws { try assertGroupMatches("link") }
    func testAddressRequestsMatchIproute2() throws { try assertGroupMatches("addr") }
    func testRouteRequestsMatchIproute2() throws { try assertGroupMatches("route") }
    func testQdiscRequestsMatchIproute2() throws { try assertGroupMatches("qdisc") }

    /// Every file in Fixtures/ is used: request fixtures by a case above or in TrafficControlGoldenTests,
    /// reply fixtures by DecoderTests.
    func testEveryFixtureIsCovered() throws {
        let files = Set(try Fixture.allNames())
        let requests = Set(Self.cases.keys)
        let trafficControl = Set(TrafficControlGoldenTests.cases.keys)
        let replies = Set(DecoderTests.replyFixtures)
        XCTAssertTrue(requests.isDisjoint(with: replies))
        XCTAssertTrue(trafficControl.isDisjoint(with: requests.union(replies)))
        XCTAssertEqual(
            files.subtracting(requests).subtracting(trafficControl).subtracting(replies).sorted(), [],
            "fixtures no test uses: add a case to GoldenBytesTests.cases (or TrafficControlGoldenTests.cases) or a decoder test")
        XCTAssertEqual(
            requests.union(trafficControl).union(replies).subtracting(files).sorted(), [],
            "cases without a fixture: run scripts/capture-fixtures")
        let groups = ["link", "addr", "route", "qdisc"]
        for name in requests {
            XCTAssertTrue(groups.contains { name.hasPrefix($0 + "-") }, "\(name) is in no test group, so no test runs it")
        }
    }

    /// The comparison itself reports differences (guards against a helper that always passes).
    func testMismatchIsReportedWithTheFirstDifferingOffset() {
        XCTAssertNil(firstDifference([1, 2, 3], [1, 2, 3]))
        XCTAssertEqual(firstDifference([1, 2, 3], [1, 9, 3]), 1)
        XCTAssertEqual(firstDifference([1, 2], [1, 2, 3]), 2)
        let dump = hexDump(Array(0..<10), marking: 9)
        XCTAssertEqual(dump, "0000  00 01 02 03 04 05 06 07\n0008  08 09   <-- first difference")
    }
}

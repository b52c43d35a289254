import CMnl
import Glibc
import LinkcondBase
import Netlink
import RouteNetlink
import XCTest

/// Every request linkcond sends, compared byte for byte with what iproute2 sends for the same command.
///
/// The fixtures are iproute2's own requests, captured by `scripts/capture-fixtures`. Each case makes the
/// same call on a ``RouteNetlinkClient`` whose connection runs over a fake transport (``GoldenHarness``),
/// injecting what iproute2 chose at capture time — the sequence number, the interface index it resolved,
/// the namespace descriptors it opened — so the bytes compared are exactly what the connection sends,
/// flags included.
final class GoldenBytesTests: XCTestCase {
    typealias Case = GoldenCase

    static func prefix(_ text: String) -> IPPrefix { IPPrefix(text)! }
    static func address(_ text: String) -> IPAddress { IPAddress(text)! }
    static let handle1 = TrafficControlHandle(major: 1, minor: 0)

    /// Fixture name → the call that sends the same request. Every request fixture must be here (and
    /// every entry must have a fixture): see ``testEveryFixtureIsCovered()``.
    static let cases: [String: Case] = [
        // Links
        "link-add-veth": Case(command: "ip -n NS link add wl0 type veth peer name c-wl0") { _, client in
            try client.createVeth(name: "wl0", peerName: "c-wl0")
        },
        "link-add-veth-netns": Case(command: "ip -n NS link add wl0 netns NS2 type veth peer name c-wl0 netns NS3") { fixture, client in
            let fds = try fixture.namespaceFDs
            XCTAssertEqual(fds.count, 2, "one descriptor for each end's namespace")
            try client.createVeth(
                name: "wl0", in: NamespaceDescriptor(fileDescriptor: fds[0], name: "NS2"), peerName: "c-wl0",
                peerIn: NamespaceDescriptor(fileDescriptor: fds.last!, name: "NS3"))
        },
        "link-add-ifb": Case(command: "ip -n NS link add ifb0 type ifb") { _, client in
            try client.createLink(name: "ifb0", kind: "ifb")
        },
        "link-set-up": Case(command: "ip -n NS link set dev wl0 up") { _, client in try client.setLink("wl0", up: true) },
        "link-set-down": Case(command: "ip -n NS link set dev wl0 down") { _, client in try client.setLink("wl0", up: false) },
        "link-rename": Case(command: "ip -n NS link set dev wl0 name wl9") { _, client in try client.renameLink("wl0", to: "wl9") },
        "link-set-alias": Case(command: "ip -n NS link set dev wl0 alias linkcond /run/linkcond/lc1") { _, client in
            try client.setAlias("linkcond /run/linkcond/lc1", on: "wl0")
        },
        "link-move": Case(command: "ip -n NS link set dev c-wl0 netns NS2") { fixture, client in
            try client.moveLink("c-wl0", to: NamespaceDescriptor(fileDescriptor: try fixture.namespaceFDs[0], name: "NS2"))
        },
        "link-del": Case(command: "ip -n NS link del dev wl0") { _, client in try client.deleteLink("wl0") },
        // Asked as iproute2 asks: no NLM_F_ACK, the kernel's one reply is the answer.
        "link-get": Case(command: "ip -n NS link show dev wl0") { _, client in
            XCTAssertEqual(try client.link(named: "wl0").name, "wl0")
        },

        // Addresses
        "addr-add-ipv4": Case(command: "ip -n NS addr add 198.18.1.2/24 dev wl0") { _, client in
            try client.addAddress(prefix("198.18.1.2/24"), to: "wl0")
        },
        "addr-add-ipv6-nodad": Case(command: "ip -n NS addr add 2001:2:0:1::2/64 dev wl0 nodad") { _, client in
            try client.addAddress(prefix("2001:2:0:1::2/64"), to: "wl0", noDAD: true)
        },
        "addr-del-ipv4": Case(command: "ip -n NS addr del 198.18.1.2/24 dev wl0") { _, client in
            try client.deleteAddress(prefix("198.18.1.2/24"), from: "wl0")
        },

        // Routes
        "route-add-default-ipv4": Case(command: "ip -n NS route add default via 198.18.1.1 dev wl0 metric 100") { _, client in
            try client.addRoute(destination: nil, gateway: address("198.18.1.1"), interface: "wl0", metric: 100)
        },
        "route-add-default-ipv6": Case(command: "ip -n NS -6 route add default via 2001:2:0:1::1 dev wl0 metric 100") { _, client in
            try client.addRoute(destination: nil, gateway: address("2001:2:0:1::1"), interface: "wl0", metric: 100)
        },
        "route-add-prefix": Case(command: "ip -n NS route add 198.19.0.0/24 dev wl0 metric 50") { _, client in
            try client.addRoute(destination: prefix("198.19.0.0/24"), gateway: nil, interface: "wl0", metric: 50)
        },
        "route-add-prefix-via": Case(command: "ip -n NS route add 198.19.1.0/24 via 198.18.1.1 dev wl0") { _, client in
            try client.addRoute(destination: prefix("198.19.1.0/24"), gateway: address("198.18.1.1"), interface: "wl0")
        },
        "route-del-prefix": Case(command: "ip -n NS route del 198.19.0.0/24 dev wl0 metric 50") { _, client in
            try client.deleteRoute(destination: prefix("198.19.0.0/24"), gateway: nil, interface: "wl0", metric: 50)
        },
        "route-del-default-ipv4": Case(command: "ip -n NS route del default via 198.18.1.1 dev wl0 metric 100") { _, client in
            try client.deleteRoute(destination: nil, gateway: address("198.18.1.1"), interface: "wl0", metric: 100)
        },

        // Qdiscs
        "qdisc-replace-pfifo": Case(command: "tc -n NS qdisc replace dev wl0 root handle 1: pfifo") { _, client in
            try client.replaceQdisc(on: "wl0", handle: handle1, kind: "pfifo")
        },
        "qdisc-replace-pfifo-limit": Case(command: "tc -n NS qdisc replace dev wl0 root handle 1: pfifo limit 100") { _, client in
            // tc's fifo_parse_opt: TCA_OPTIONS holding a struct tc_fifo_qopt, only when a limit is given.
            try client.replaceQdisc(on: "wl0", handle: handle1, options: .pfifo(limit: 100))
        },
        "qdisc-del-root": Case(command: "tc -n NS qdisc del dev wl0 root") { _, client in try client.deleteRootQdisc(on: "wl0") },
        "qdisc-dump": Case(command: "tc -n NS -s qdisc show") { _, client in
            XCTAssertEqual(try client.qdiscs(), [])
        },
    ]

    func assertGroupMatches(_ group: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let names = Self.cases.keys.filter { $0.hasPrefix(group + "-") }.sorted()
        XCTAssertFalse(names.isEmpty, "no \(group) cases", file: file, line: line)
        for name in names {
            try assertSendsFixture(name, Self.cases[name], file: file, line: line)
        }
    }

    func testLinkRequestsMatchIproute2() throws { try assertGroupMatches("link") }
    func testAddressRequestsMatchIproute2() throws { try assertGroupMatches("addr") }
    func testRouteRequestsMatchIproute2() throws { try assertGroupMatches("route") }
    func testQdiscRequestsMatchIproute2() throws { try assertGroupMatches("qdisc") }

    /// Every file in Fixtures/ is used: request fixtures by a case above, in TrafficControlGoldenTests or in
    /// TargetGoldenTests, reply fixtures by DecoderTests.
    func testEveryFixtureIsCovered() throws {
        let files = Set(try Fixture.allNames())
        let requests = Set(Self.cases.keys)
        let trafficControl = Set(TrafficControlGoldenTests.cases.keys).union(TargetGoldenTests.cases.keys).union(AttachmentGoldenTests.cases.keys)
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

import CMnl
import LinkcondBase
import Netlink
import RouteNetlink
import XCTest

/// The requests `linkcond attach` and `detach` send beyond the sandbox's — the stand-in veth made with its
/// peer's hardware address, MTU and queue length in the target namespace, addresses and routes made again
/// with every property a dump reports (label, broadcast, metric, lifetimes, flags; table, protocol, scope,
/// preferred source, `onlink`, preference, expiry, metrics), and the ingress redirect that joins a wire's
/// two ends for netem — compared byte for byte with what iproute2 6.1 sends for the same command
/// (`scripts/capture-fixtures`, "Attachments").
///
/// The addresses and routes are given as a dump decodes them (``InterfaceAddress``, ``Route``), which is
/// how detach has them: the cases check that such a value is made again as the command makes it.
final class AttachmentGoldenTests: XCTestCase {
    typealias Case = GoldenCase

    static func prefix(_ text: String) -> IPPrefix { IPPrefix(text)! }
    static func address(_ text: String) -> IPAddress { IPAddress(text)! }

    static let cases: [String: Case] = [
        "attach-veth-peer": Case(
            command: "ip -n NS link add x1 index 7 type veth peer name wl1 index 5 address 02:00:00:00:00:05 mtu 1400 txqueuelen 500 netns NS3"
        ) { fixture, client in
            try client.createVeth(
                name: "x1", index: 7, peerName: "wl1", peerIndex: 5, peerIn: NamespaceDescriptor(fileDescriptor: try fixture.namespaceFDs[0], name: "NS3"),
                peer: VethPeerSettings(hardwareAddress: [2, 0, 0, 0, 0, 5], mtu: 1400, transmitQueueLength: 500))
        },
        "attach-addr-ipv4": Case(
            command: "ip -n NS addr add 198.18.1.2/24 broadcast 198.18.1.255 dev wl0 label wl0:1 scope global metric 5 valid_lft 100 preferred_lft 50 noprefixroute"
        ) { _, client in
            var dumped = InterfaceAddress(interfaceIndex: 9, prefix: prefix("198.18.1.2/24"), scope: .universe, flags: [.noPrefixRoute, .secondary])
            dumped.broadcast = address("198.18.1.255")
            dumped.label = "wl0:1"
            dumped.metric = 5
            dumped.validLifetime = 100
            dumped.preferredLifetime = 50
            try client.addAddress(dumped, to: "wl0")
        },
        "attach-addr-ipv6": Case(command: "ip -n NS addr add 2001:2:0:1::2/64 dev wl0 scope global nodad noprefixroute") { _, client in
            // The kernel's own flags (permanent, tentative) are not the request's to set.
            let dumped = InterfaceAddress(
                interfaceIndex: 9, prefix: prefix("2001:2:0:1::2/64"), scope: .universe, flags: [.noPrefixRoute, .permanent, .tentative])
            try client.addAddress(dumped, to: "wl0", extraFlags: .noDAD)
        },
        "attach-addr-ipv6-link-local": Case(command: "ip -n NS addr add fe80::1/64 dev wl0 scope link nodad") { _, client in
            try client.addAddress(
                InterfaceAddress(interfaceIndex: 9, prefix: prefix("fe80::1/64"), scope: .link, flags: [.permanent]), to: "wl0", extraFlags: .noDAD)
        },
        "attach-route-ipv4": Case(
            command: "ip -n NS route add 198.19.1.0/24 via 198.18.1.1 dev wl0 table 100 proto static scope global metric 50 src 198.18.1.2 onlink"
        ) { _, client in
            var dumped = Route(
                family: .inet, destination: prefix("198.19.1.0/24"), gateway: address("198.18.1.1"), outputInterface: 9, metric: 50,
                table: RouteTable(rawValue: 100), routingProtocol: .static)
            dumped.preferredSource = address("198.18.1.2")
            dumped.flags = UInt32(RTNH_F_ONLINK) | UInt32(RTNH_F_LINKDOWN)  // the kernel's marks are not sent
            try client.addRoute(dumped, interface: "wl0")
        },
        "attach-route-ipv4-link": Case(command: "ip -n NS route add 198.19.2.0/24 dev wl0 table main proto boot scope link metric 7") { _, client in
            try client.addRoute(
                Route(family: .inet, destination: prefix("198.19.2.0/24"), outputInterface: 9, metric: 7, scope: .link, routingProtocol: .boot),
                interface: "wl0")
        },
        "attach-route-ipv6": Case(
            command: "ip -n NS -6 route add 2001:2:0:5::/64 via fe80::2 dev wl0 table 1000 proto static metric 1024 pref high expires 100 mtu 1400"
        ) { _, client in
            var dumped = Route(
                family: .inet6, destination: prefix("2001:2:0:5::/64"), gateway: address("fe80::2"), outputInterface: 9, metric: 1024,
                table: RouteTable(rawValue: 1000), routingProtocol: .static)
            dumped.preference = 1
            dumped.expires = 100
            dumped.metrics = rawBytes(of: UInt16(8)) + rawBytes(of: UInt16(RTAX_MTU)) + rawBytes(of: UInt32(1400))
            try client.addRoute(dumped, interface: "wl0")
        },
        "attach-qdisc-ingress": Case(command: "tc -n NS qdisc add dev x0 ingress") { _, client in try client.addIngressQdisc(on: "x0") },
        "attach-filter-redirect": Case(
            command: "tc -n NS filter add dev x0 parent ffff: protocol all prio 1 u32 match u32 0 0 action mirred egress redirect dev x0"
        ) { _, client in
            try client.addRedirect(from: "x0", to: "x0")
        },
    ]

    func testAttachmentRequestsMatchIproute2() throws {
        for name in Self.cases.keys.sorted() {
            try assertSendsFixture(name, Self.cases[name])
        }
    }

    /// A route that is more than one interface's is refused before anything is sent.
    func testARouteThroughSeveralNextHopsIsRefused() throws {
        var route = Route(family: .inet, destination: Self.prefix("198.19.1.0/24"), outputInterface: 9)
        route.compound = ["nexthop"]
        let harness = try GoldenHarness(try Fixture.load("attach-route-ipv4"))
        XCTAssertThrowsError(try harness.client.addRoute(route, interface: "wl0")) { error in
            XCTAssertTrue("\(error)".contains("nexthop"), "\(error)")
        }
        XCTAssertEqual(harness.transport.sent.count, 0)
    }
}

import CMnl
import LinkcondBase
import Netlink
import RouteNetlink
import XCTest

/// What `linkcond attach` reads of an interface besides what the path monitor reads, decoded from the same
/// captured dumps as ``DecoderTests`` (scripts/capture-fixtures, "Replies"): the values follow from the
/// commands that made that namespace — `ip link add wl0 … mtu 1400 type veth peer name c-wl0 …` (default
/// queue length, the peer in the same namespace), `ip addr add 198.18.1.2/24 dev wl0` (label wl0, no
/// broadcast, no lifetimes), and the prefix routes the kernel made for the addresses.
final class SnapshotDecoderTests: XCTestCase {
    private func messages(_ name: String, type: Int32) throws -> [NetlinkMessage] {
        try Fixture.load(name).messages().filter { $0.type == UInt16(type) }
    }

    func testLinksCarryTheirQueueLengthAndNoPeerNamespace() throws {
        let links = try messages("reply-link", type: Int32(RTM_NEWLINK)).map(Link.decode)
        let veths = links.filter { $0.kind == "veth" }
        XCTAssertEqual(veths.count, 2)
        for link in veths {
            XCTAssertEqual(link.transmitQueueLength, 1000, "\(link.name): the kernel's default txqueuelen")
            XCTAssertNil(link.linkNamespaceID, "\(link.name): its peer is in the same namespace")
        }
    }

    func testAddressesCarryTheirLabelAndLifetimes() throws {
        let addresses = try messages("reply-addr", type: Int32(RTM_NEWADDR)).map(InterfaceAddress.decode)
        let ipv4 = try XCTUnwrap(addresses.first { $0.prefix == IPPrefix("198.18.1.2/24") })
        XCTAssertEqual(ipv4.label, "wl0")
        XCTAssertNil(ipv4.broadcast, "added without 'broadcast'")
        XCTAssertNil(ipv4.peer)
        for address in addresses {
            XCTAssertEqual(address.validLifetime, InterfaceAddress.forever, "\(address.prefix)")
            XCTAssertEqual(address.preferredLifetime, InterfaceAddress.forever, "\(address.prefix)")
            if !address.prefix.address.isIPv4 { XCTAssertNil(address.label, "IPv6 addresses have no label") }
        }
    }

    func testRoutesCarryWhatMakesThemAgain() throws {
        let routes = try messages("reply-route", type: Int32(RTM_NEWROUTE)).map(Route.decode)
        let prefix = try XCTUnwrap(routes.first { $0.destination == IPPrefix("198.18.1.0/24") })
        XCTAssertEqual(prefix.routingProtocol, .kernel)
        XCTAssertEqual(prefix.scope, .link)
        XCTAssertEqual(prefix.preferredSource, IPAddress("198.18.1.2"), "the kernel's prefix route names its source")
        for route in routes {
            XCTAssertTrue(route.compound.isEmpty)
            XCTAssertFalse(route.isOnLink)
            XCTAssertNil(route.expires)
        }
        let routes6 = try messages("reply-route6", type: Int32(RTM_NEWROUTE)).map(Route.decode)
        XCTAssertFalse(routes6.isEmpty)
        for route in routes6 {
            XCTAssertEqual(route.preference, 0, "\(route.destination.map(\.description) ?? "default"): pref medium")
            XCTAssertNil(route.expires, "configured routes do not expire")
        }
    }
}

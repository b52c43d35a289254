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

    /// A route whose cache info expires in the largest number of clock ticks a u32 holds decodes (the
    /// seconds rounded up without overflowing), where `(ticks + 99) / 100` trapped: found by scripts/fuzz,
    /// kept as Fuzz/regressions/rtnetlink-messages/route-cacheinfo-expires-near-uint32-max.
    func testARouteThatExpiresInTheLongestTimeDecodes() throws {
        func route(expiringIn ticks: UInt32) throws -> Route {
            // struct rtmsg (AF_INET6, /64, table main, proto kernel, scope universe, unicast), then RTA_CACHEINFO:
            // struct rta_cacheinfo, eight u32, the third rta_expires.
            var payload: [UInt8] = [UInt8(AF_INET6), 64, 0, 0, UInt8(RT_TABLE_MAIN.rawValue), UInt8(RTPROT_KERNEL), 0, 1, 0, 0, 0, 0]
            var cacheInfo = [UInt32](repeating: 0, count: 8)
            cacheInfo[2] = ticks
            payload += rawBytes(UInt16(4 + 32)) + rawBytes(UInt16(RTA_CACHEINFO.rawValue)) + cacheInfo.flatMap(rawBytes)
            return try Route.decode(NetlinkMessage(type: UInt16(RTM_NEWROUTE), payload: payload))
        }
        XCTAssertEqual(try route(expiringIn: .max).expires, 42_949_673)
        XCTAssertEqual(try route(expiringIn: 10_000).expires, 100)
        XCTAssertEqual(try route(expiringIn: 10_001).expires, 101)
        XCTAssertNil(try route(expiringIn: 0).expires)
    }

    private func rawBytes<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        withUnsafeBytes(of: value.littleEndian) { Array($0) }
    }
}

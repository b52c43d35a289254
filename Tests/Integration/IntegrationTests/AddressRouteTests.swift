import Foundation
import Glibc
import LinkcondBase
import NetNamespace
import Netlink
import RouteNetlink
import XCTest

/// Addresses and routes, read back over netlink and through iproute2, and proven with real packets.
final class AddressRouteTests: IntegrationTestCase {
    /// X (`x0`) ==veth== Y (`y0`), both ends and both lo up, carrier established.
    private struct Pair {
        var x, y: NamedNamespace
        var linksX, linksY: RouteNetlinkClient
    }

    private func makePair() throws -> Pair {
        let x = try makeNamespace("x")
        let y = try makeNamespace("y")
        let pair = Pair(x: x, y: y, linksX: try netlink(x), linksY: try netlink(y))
        try withDescriptor(y) { inY in try pair.linksX.createVeth(name: "x0", peerName: "y0", peerIn: inY) }
        for (links, name) in [(pair.linksX, "x0"), (pair.linksY, "y0")] {
            try links.setLink("lo", up: true)
            try links.setLink(name, up: true)
        }
        XCTAssertTrue(try eventually { try pair.linksX.link(named: "x0").carrier && pair.linksY.link(named: "y0").carrier })
        return pair
    }

    private static let v4X = IPPrefix("198.18.10.1/24")!
    private static let v4Y = IPPrefix("198.18.10.2/24")!
    private static let v6X = IPPrefix("2001:2:0:10::1/64")!
    private static let v6Y = IPPrefix("2001:2:0:10::2/64")!

    func testAddressesAddReadBackAndDelete() throws {
        let p = try makePair()
        let x0 = try p.linksX.link(named: "x0")
        try p.linksX.addAddress(Self.v4X, to: "x0")
        try p.linksX.addAddress(Self.v6X, to: "x0", noDAD: true)

        let onX0 = try p.linksX.addresses().filter { $0.interfaceIndex == x0.index }
        let v4 = onX0.first { $0.prefix == Self.v4X }
        let v6 = onX0.first { $0.prefix == Self.v6X }
        XCTAssertNotNil(v4, "addresses on x0: \(onX0.map(\.prefix))")
        XCTAssertNotNil(v6, "addresses on x0: \(onX0.map(\.prefix))")
        XCTAssertEqual(v4?.scope, .universe, "global scope expected")
        XCTAssertEqual(v6?.scope, .universe, "global scope expected")
        XCTAssertEqual(v6?.isTentative, false, "a nodad address must be usable at once")
        XCTAssertEqual(v6?.flags.contains(.noDAD), true, "IFA_F_NODAD not reported")
        // The kernel's own link-local address is there too (and is the only other IPv6 one).
        XCTAssertTrue(onX0.contains { $0.prefix.address.isLinkLocal }, "\(onX0.map(\.prefix))")
        // None of it shows on the other side.
        XCTAssertFalse(try p.linksY.addresses().contains { $0.prefix == Self.v4X || $0.prefix == Self.v6X })

        let shown = try Command.ip(["-n", p.x.name, "addr", "show", "dev", "x0"])
        XCTAssertTrue(shown.output.contains("inet 198.18.10.1/24"), shown.output)
        XCTAssertTrue(shown.output.contains("inet6 2001:2:0:10::1/64"), shown.output)

        // Without nodad the kernel runs duplicate address detection first: the address starts tentative.
        let withDAD = IPPrefix("2001:2:0:11::1/64")!
        try p.linksX.addAddress(withDAD, to: "x0")
        let fresh = try p.linksX.addresses().first { $0.prefix == withDAD }
        XCTAssertEqual(fresh?.isTentative, true, "flags \(String(describing: fresh?.flags))")

        // Adding the same address again is refused.
        let again = expectError(RouteNetlinkError.self) { try p.linksX.addAddress(Self.v4X, to: "x0") }
        XCTAssertEqual(again?.errno, EEXIST, "\(String(describing: again))")
        XCTAssertEqual(again?.description.contains("ip -n \(p.x.name) addr add 198.18.10.1/24 dev x0"), true, again?.description ?? "")

        for prefix in [Self.v4X, Self.v6X, withDAD] {
            try p.linksX.deleteAddress(prefix, from: "x0")
        }
        let left = try p.linksX.addresses().filter { $0.interfaceIndex == x0.index }
        XCTAssertFalse(left.contains { !$0.prefix.address.isLinkLocal }, "left on x0: \(left.map(\.prefix))")
        let shownAfter = try Command.ip(["-n", p.x.name, "addr", "show", "dev", "x0"])
        XCTAssertFalse(shownAfter.output.contains("198.18.10.1"), shownAfter.output)
        XCTAssertFalse(shownAfter.output.contains("2001:2:0:10::1"), shownAfter.output)

        let missing = expectError(RouteNetlinkError.self) { try p.linksX.deleteAddress(Self.v4X, from: "x0") }
        XCTAssertEqual(missing?.errno, EADDRNOTAVAIL, "\(String(describing: missing))")
    }

    func testRoutesAddReadBackAndDelete() throws {
        let p = try makePair()
        try p.linksX.addAddress(Self.v4X, to: "x0")
        try p.linksX.addAddress(Self.v6X, to: "x0", noDAD: true)
        let x0 = try p.linksX.index(of: "x0")
        let gateway4 = IPAddress("198.18.10.2")!
        let gateway6 = IPAddress("2001:2:0:10::2")!
        let via = IPPrefix("198.18.20.0/24")!
        let onLink = IPPrefix("198.18.30.0/24")!

        try p.linksX.addRoute(destination: nil, gateway: gateway4, interface: "x0", metric: 50)
        try p.linksX.addRoute(destination: via, gateway: gateway4, interface: "x0")
        try p.linksX.addRoute(destination: onLink, gateway: nil, interface: "x0", metric: 10)
        try p.linksX.addRoute(destination: nil, gateway: gateway6, interface: "x0", metric: 60)

        let main = try p.linksX.routes().filter { $0.table == .main }
        let default4 = main.first { $0.family == .inet && $0.isDefault }
        XCTAssertEqual(default4?.gateway, gateway4)
        XCTAssertEqual(default4?.metric, 50)
        XCTAssertEqual(default4?.outputInterface, x0)
        XCTAssertEqual(default4?.type, .unicast, "RTN_UNICAST")
        XCTAssertEqual(default4?.routingProtocol, .boot, "RTPROT_BOOT, as `ip route add` uses")

        let viaRoute = main.first { $0.destination == via }
        XCTAssertEqual(viaRoute?.gateway, gateway4)
        XCTAssertNil(viaRoute?.metric, "IPv4 metric 0 is not reported")
        XCTAssertEqual(viaRoute?.outputInterface, x0)
        XCTAssertEqual(viaRoute?.scope, .universe, "RT_SCOPE_UNIVERSE")

        let onLinkRoute = main.first { $0.destination == onLink }
        XCTAssertNil(onLinkRoute?.gateway)
        XCTAssertEqual(onLinkRoute?.metric, 10)
        XCTAssertEqual(onLinkRoute?.scope, .link, "a route without gateway is scope link")
        XCTAssertEqual(onLinkRoute?.outputInterface, x0)

        let default6 = main.first { $0.family == .inet6 && $0.isDefault && $0.type == .unicast }
        XCTAssertEqual(default6?.gateway, gateway6)
        XCTAssertEqual(default6?.metric, 60)
        XCTAssertEqual(default6?.outputInterface, x0)

        // The kernel's own prefix route for the address is read back as well.
        XCTAssertTrue(main.contains { $0.destination == IPPrefix("198.18.10.0/24") && $0.routingProtocol == .kernel })
        // Routes of one family only.
        XCTAssertTrue(try p.linksX.routes(family: .inet6).allSatisfy { $0.family == .inet6 })

        let shown4 = try Command.ip(["-n", p.x.name, "route", "show"])
        XCTAssertTrue(shown4.output.contains("default via 198.18.10.2 dev x0 metric 50"), shown4.output)
        XCTAssertTrue(shown4.output.contains("198.18.20.0/24 via 198.18.10.2 dev x0"), shown4.output)
        XCTAssertTrue(shown4.output.contains("198.18.30.0/24 dev x0 scope link metric 10"), shown4.output)
        let shown6 = try Command.ip(["-n", p.x.name, "-6", "route", "show"])
        XCTAssertTrue(shown6.output.contains("default via 2001:2:0:10::2 dev x0 metric 60"), shown6.output)

        // A route that exists already.
        let duplicate = expectError(RouteNetlinkError.self) {
            try p.linksX.addRoute(destination: nil, gateway: gateway4, interface: "x0", metric: 50)
        }
        XCTAssertEqual(duplicate?.errno, EEXIST, "\(String(describing: duplicate))")

        try p.linksX.deleteRoute(destination: nil, gateway: gateway4, interface: "x0", metric: 50)
        try p.linksX.deleteRoute(destination: via, gateway: gateway4, interface: "x0")
        try p.linksX.deleteRoute(destination: onLink, gateway: nil, interface: "x0", metric: 10)
        try p.linksX.deleteRoute(destination: nil, gateway: gateway6, interface: "x0", metric: 60)

        let after = try p.linksX.routes().filter { $0.table == .main }
        XCTAssertFalse(after.contains { $0.isDefault && $0.type == .unicast }, "\(after)")
        XCTAssertFalse(after.contains { $0.destination == via || $0.destination == onLink }, "\(after)")
        let shownAfter = try Command.ip(["-n", p.x.name, "route", "show"])
        XCTAssertFalse(shownAfter.output.contains("default"), shownAfter.output)
        XCTAssertFalse(shownAfter.output.contains("198.18.20.0"), shownAfter.output)

        // Deleting what is not there: ESRCH, with the command spelled out.
        let missing = expectError(RouteNetlinkError.self) {
            try p.linksX.deleteRoute(destination: nil, gateway: gateway4, interface: "x0", metric: 50)
        }
        XCTAssertEqual(missing?.errno, ESRCH, "\(String(describing: missing))")
        let description = missing?.description ?? ""
        XCTAssertTrue(description.contains("ip -n \(p.x.name) route del default via 198.18.10.2 dev x0 metric 50"), description)
        let missing6 = expectError(RouteNetlinkError.self) {
            try p.linksX.deleteRoute(destination: nil, gateway: gateway6, interface: "x0", metric: 60)
        }
        XCTAssertEqual(missing6?.errno, ESRCH, "\(String(describing: missing6))")
        XCTAssertEqual(missing6?.description.contains("ip -n \(p.x.name) -6 route del default via 2001:2:0:10::2"), true)

        // Mixed families are refused before anything is sent.
        let mixed = expectError(RouteNetlinkError.self) {
            try p.linksX.addRoute(destination: via, gateway: gateway6, interface: "x0")
        }
        if case .invalidArgument? = mixed {} else { XCTFail("expected .invalidArgument, got \(String(describing: mixed))") }
    }

    /// A route added over netlink steers real packets; deleting it stops them.
    func testRoutesCarryPacketsBetweenNamespaces() throws {
        let p = try makePair()
        try p.linksX.addAddress(Self.v4X, to: "x0")
        try p.linksX.addAddress(Self.v6X, to: "x0", noDAD: true)
        try p.linksY.addAddress(Self.v4Y, to: "y0")
        try p.linksY.addAddress(Self.v6Y, to: "y0", noDAD: true)
        // Y owns one address of each family behind itself, reachable from X only through a route.
        let far4 = IPPrefix("198.18.50.1/32")!
        let far6 = IPPrefix("2001:2:0:50::1/128")!
        try p.linksY.addAddress(far4, to: "lo")
        try p.linksY.addAddress(far6, to: "lo", noDAD: true)

        let cases: [(far: IPAddress, net: IPPrefix, gateway: IPAddress, source: IPAddress)] = [
            (far4.address, IPPrefix("198.18.50.0/24")!, Self.v4Y.address, Self.v4X.address),
            (far6.address, IPPrefix("2001:2:0:50::/64")!, Self.v6Y.address, Self.v6X.address),
        ]
        for (far, net, gateway, source) in cases {
            let port = UInt16(20_000 + UniqueName.next() % 20_000)
            let receiver = try p.y.run { () throws -> Int32 in
                let fd = try TestSocket.open(for: far, type: Int32(SOCK_DGRAM.rawValue))
                try TestSocket.bind(fd, far, port: port)
                return fd
            }
            defer { close(receiver) }
            let sender = try p.x.run { try TestSocket.open(for: far, type: Int32(SOCK_DGRAM.rawValue)) }
            defer { close(sender) }

            XCTAssertEqual(TestSocket.send(sender, [1], to: far, port: port), ENETUNREACH, "\(far) reachable without a route")

            try p.linksX.addRoute(destination: net, gateway: gateway, interface: "x0")
            let payload = TestSocket.payload("route \(far)")
            XCTAssertEqual(TestSocket.send(sender, payload, to: far, port: port), 0)
            let got = try TestSocket.receive(receiver)
            XCTAssertEqual(got.bytes, payload, "\(far)")
            XCTAssertEqual(got.source, source, "\(far)")

            try p.linksX.deleteRoute(destination: net, gateway: gateway, interface: "x0")
            XCTAssertEqual(TestSocket.send(sender, [2], to: far, port: port), ENETUNREACH, "\(far) still reachable after delete")
        }
    }
}

import LinkcondBase
import RouteNetlink
import Sandboxing
import XCTest

/// How an interface's configuration is compared with the one its stand-in has (attach) or gets back
/// (detach): what the kernel makes on its own is no difference, anything else is.
final class InterfaceConfigurationTests: XCTestCase {
    private func configuration(routes: [Route]) -> InterfaceConfiguration {
        InterfaceConfiguration(
            link: Link(index: 2, name: "eth0", flags: [.up], mtu: 1500, hardwareAddress: [2, 0, 0, 0, 0, 1]),
            addresses: [], routes: routes, sysctls: [:])
    }

    private let multicast = Route(
        family: .inet6, destination: IPPrefix("ff00::/8"), outputInterface: 2, metric: 256, table: .local, type: RouteType(rawValue: 5),  // RTN_MULTICAST
        routingProtocol: .kernel)

    func testTheKernelsIPv6MulticastRouteIsNoDifference() {
        // Read just after the interface came up: the kernel had not added ff00::/8 yet; the stand-in has it.
        let before = configuration(routes: [])
        XCTAssertEqual(before.differences(from: configuration(routes: [multicast])), [])
    }

    func testARouteSomeoneAddedIsADifference() {
        var added = multicast
        added.routingProtocol = .boot  // `ip route add` makes routes of protocol boot
        XCTAssertEqual(configuration(routes: []).differences(from: configuration(routes: [added])), ["a route ff00::/8 table 255 metric 256 it did not have"])
        var unicast = Route(family: .inet6, destination: IPPrefix("2001:2::/64"), outputInterface: 2, metric: 256, routingProtocol: .kernel)
        unicast.table = .main
        XCTAssertEqual(configuration(routes: []).differences(from: configuration(routes: [unicast])), ["a route 2001:2::/64 metric 256 it did not have"])
        XCTAssertEqual(configuration(routes: [multicast]).differences(from: configuration(routes: [])), ["no route ff00::/8 table 255 metric 256"])
    }
}

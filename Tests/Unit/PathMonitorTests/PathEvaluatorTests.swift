import LinkcondBase
import RouteNetlink
import TestRandomness
import XCTest

@testable import PathMonitor

/// The path evaluator as a pure function of hand-built tables.
final class PathEvaluatorTests: XCTestCase {
    static let loIndex: Int32 = 1
    static let wlIndex: Int32 = 2
    static let wwIndex: Int32 = 3

    // MARK: Table builders

    static func lo() -> Link {
        Link(
            index: loIndex, name: "lo", flags: [.up, .loopback, .lowerUp], hardwareType: .loopback,
            operationalState: .unknown, carrier: true, mtu: 65536)
    }

    /// A veth end as the sandbox makes it: `wl0` (wifi by name) or `ww0` (cellular by name).
    static func veth(
        _ name: String, index: Int32, up: Bool = true, carrier: Bool = true, state: OperationalState? = nil
    ) -> Link {
        var flags: LinkFlags = up ? .up : []
        if up && carrier { flags.insert(.lowerUp) }
        let operational = state ?? (up ? (carrier ? .up : .lowerLayerDown) : .down)
        return Link(
            index: index, name: name, kind: "veth", flags: flags, hardwareType: .ether,
            operationalState: operational, carrier: carrier, mtu: 1500)
    }

    static func wl0(up: Bool = true, carrier: Bool = true, state: OperationalState? = nil) -> Link {
        veth("wl0", index: wlIndex, up: up, carrier: carrier, state: state)
    }

    static func ww0(up: Bool = true, carrier: Bool = true, state: OperationalState? = nil) -> Link {
        veth("ww0", index: wwIndex, up: up, carrier: carrier, state: state)
    }

    static func address(_ text: String, on index: Int32, scope: RouteScope = .universe, flags: AddressFlags = .permanent)
        -> InterfaceAddress
    {
        InterfaceAddress(interfaceIndex: index, prefix: IPPrefix(text)!, scope: scope, flags: flags)
    }

    static func loopbackAddresses() -> [InterfaceAddress] {
        [address("127.0.0.1/8", on: loIndex, scope: .host), address("::1/128", on: loIndex, scope: .host)]
    }

    static func defaultRoute(
        via gateway: String?, on index: Int32, metric: UInt32? = nil, table: RouteTable = .main, type: RouteType = .unicast
    ) -> Route {
        let address = gateway.flatMap { IPAddress($0) }
        let family = address?.family ?? .inet
        return Route(
            family: family, gateway: address, outputInterface: index, metric: metric, table: table, type: type)
    }

    static func defaultRoute6(via gateway: String, on index: Int32, metric: UInt32 = 1024) -> Route {
        Route(family: .inet6, gateway: IPAddress(gateway)!, outputInterface: index, metric: metric)
    }

    static func subnetRoute(_ prefix: String, on index: Int32, metric: UInt32? = nil) -> Route {
        let destination = IPPrefix(prefix)!
        return Route(
            family: destination.address.family, destination: destination, outputInterface: index, metric: metric,
            scope: .link, routingProtocol: .kernel)
    }

    /// wl0 with a global IPv4 and IPv6 address, connected routes and default routes of both families.
    static func wifiRows(metric: UInt32 = 100, metric6: UInt32 = 1024) -> (addresses: [InterfaceAddress], routes: [Route]) {
        (
            [
                address("198.18.1.2/24", on: wlIndex),
                address("2001:2:1::2/64", on: wlIndex),
                address("fe80::fc00:ff:fe00:1/64", on: wlIndex, scope: .link),
            ],
            [
                subnetRoute("198.18.1.0/24", on: wlIndex, metric: metric),
                subnetRoute("2001:2:1::/64", on: wlIndex, metric: 256),
                subnetRoute("fe80::/64", on: wlIndex, metric: 256),
                defaultRoute(via: "198.18.1.1", on: wlIndex, metric: metric),
                defaultRoute6(via: "fe80::1", on: wlIndex, metric: metric6),
            ]
        )
    }

    /// ww0 with a global IPv4 address and an IPv4 default route.
    static func cellularRows(metric: UInt32 = 200) -> (addresses: [InterfaceAddress], routes: [Route]) {
        (
            [address("198.18.2.2/24", on: wwIndex)],
            [
                subnetRoute("198.18.2.0/24", on: wwIndex, metric: metric),
                defaultRoute(via: "198.18.2.1", on: wwIndex, metric: metric),
            ]
        )
    }

    static func wifiTables(dns: [String] = ["198.18.0.53"]) -> NetworkTables {
        let wifi = wifiRows()
        return NetworkTables(
            links: [lo(), wl0()], addresses: loopbackAddresses() + wifi.addresses, routes: wifi.routes,
            dnsServers: dns.map { IPAddress($0)! })
    }

    static func bothTables(wifiCarrier: Bool = true, wifiMetric: UInt32 = 100, cellularMetric: UInt32 = 200)
        -> NetworkTables
    {
        let wifi = wifiRows(metric: wifiMetric)
        let cellular = cellularRows(metric: cellularMetric)
        return NetworkTables(
            links: [lo(), wl0(carrier: wifiCarrier), ww0()],
            addresses: loopbackAddresses() + wifi.addresses + cellular.addresses,
            routes: (wifiCarrier ? wifi.routes : []) + cellular.routes,
            dnsServers: [IPAddress("198.18.0.53")!])
    }

    private func evaluate(_ tables: NetworkTables, _ options: PathEvaluationOptions = PathEvaluationOptions())
        -> NetworkPath
    {
        PathEvaluator.evaluate(tables, options: options)
    }

    private func assertUnsatisfied(
        _ tables: NetworkTables, _ reason: NetworkPath.UnsatisfiedReason,
        options: PathEvaluationOptions = PathEvaluationOptions(), file: StaticString = #filePath, line: UInt = #line
    ) {
        let path = evaluate(tables, options)
        XCTAssertEqual(
            path, NetworkPath(status: .unsatisfied, unsatisfiedReason: reason), path.summary, file: file, line: line)
    }

    // MARK: Satisfied

    func testSatisfiedWifiDualStack() {
        let path = evaluate(Self.wifiTables())
        XCTAssertEqual(
            path,
            NetworkPath(
                status: .satisfied, availableInterfaces: [PathInterface(name: "wl0", index: 2, type: .wifi)],
                isExpensive: false, isConstrained: false, supportsIPv4: true, supportsIPv6: true, supportsDNS: true,
                gateways: ["198.18.1.1", "fe80::1"]))
        XCTAssertTrue(path.usesInterfaceType(.wifi))
        XCTAssertEqual(path.summary, "satisfied via wl0 (wifi), IPv4+IPv6, DNS")
    }

    func testDefaultRouteWithoutGatewayCountsButAddsNoGateway() {
        // A point-to-point style default route (`ip route add default dev wl0`).
        let tables = NetworkTables(
            links: [Self.lo(), Self.wl0()], addresses: [Self.address("198.18.1.2/24", on: Self.wlIndex)],
            routes: [Self.defaultRoute(via: nil, on: Self.wlIndex)])
        let path = evaluate(tables)
        XCTAssertEqual(path.status, .satisfied)
        XCTAssertTrue(path.supportsIPv4)
        XCTAssertFalse(path.supportsIPv6)
        XCTAssertEqual(path.gateways, [])
    }

    func testDNSSupportNeedsAServerOfASupportedFamily() {
        XCTAssertFalse(evaluate(Self.wifiTables(dns: [])).supportsDNS, "no server configured")
        XCTAssertTrue(evaluate(Self.wifiTables(dns: ["2001:2:ff::53"])).supportsDNS)

        // IPv4-only path.
        var v4only = Self.wifiTables(dns: ["2001:2:ff::53"])
        v4only.routes.removeAll { $0.family == .inet6 }
        var path = evaluate(v4only)
        XCTAssertTrue(path.supportsIPv4)
        XCTAssertFalse(path.supportsIPv6)
        XCTAssertFalse(path.supportsDNS, "only an IPv6 server on an IPv4-only path")
        v4only.dnsServers.append(IPAddress("198.18.0.53")!)
        XCTAssertTrue(evaluate(v4only).supportsDNS)

        // IPv6-only path.
        var v6only = Self.wifiTables(dns: ["198.18.0.53"])
        v6only.routes.removeAll { $0.family == .inet }
        path = evaluate(v6only)
        XCTAssertFalse(path.supportsIPv4)
        XCTAssertTrue(path.supportsIPv6)
        XCTAssertFalse(path.supportsDNS, "only an IPv4 server on an IPv6-only path")

        // A local stub resolver (systemd-resolved's 127.0.0.53) counts whatever the families.
        XCTAssertTrue(evaluate(NetworkTables(
            links: v6only.links.values.map { $0 }, addresses: v6only.addresses, routes: v6only.routes,
            dnsServers: [IPAddress("127.0.0.53")!])).supportsDNS)

        // No DNS without a satisfied path.
        let down = NetworkTables(links: [Self.lo(), Self.wl0(carrier: false)], dnsServers: [IPAddress("127.0.0.53")!])
        XCTAssertFalse(evaluate(down).supportsDNS)
    }

    // MARK: Unsatisfied reasons

    func testNotAvailableWithOnlyLoopback() {
        assertUnsatisfied(
            NetworkTables(
                links: [Self.lo()], addresses: Self.loopbackAddresses(),
                routes: [Route(family: .inet, outputInterface: Self.loIndex, table: .local, type: .local)]),
            .notAvailable)
        assertUnsatisfied(NetworkTables(), .notAvailable)
    }

    func testNotAvailableWhenAllInterfacesAreAdministrativelyDown() {
        // Even with stale address and route rows, an interface that is not IFF_UP is not available.
        let wifi = Self.wifiRows()
        let cellular = Self.cellularRows()
        assertUnsatisfied(
            NetworkTables(
                links: [Self.lo(), Self.wl0(up: false), Self.ww0(up: false)],
                addresses: Self.loopbackAddresses() + wifi.addresses + cellular.addresses,
                routes: wifi.routes + cellular.routes),
            .notAvailable)
    }

    func testNoCarrier() {
        let wifi = Self.wifiRows()
        assertUnsatisfied(
            NetworkTables(links: [Self.lo(), Self.wl0(carrier: false)], addresses: wifi.addresses, routes: wifi.routes),
            .noCarrier)
        // Carrier reported but the operational state says the lower layer is down.
        assertUnsatisfied(
            NetworkTables(
                links: [Self.lo(), Self.wl0(state: .lowerLayerDown)], addresses: wifi.addresses, routes: wifi.routes),
            .noCarrier)
        // One interface down, one up without carrier: the furthest step is "up".
        assertUnsatisfied(
            NetworkTables(links: [Self.lo(), Self.wl0(up: false), Self.ww0(carrier: false)]), .noCarrier)
    }

    func testNoAddress() {
        let v4 = Self.defaultRoute(via: "198.18.1.1", on: Self.wlIndex, metric: 100)
        let v6 = Self.defaultRoute6(via: "fe80::1", on: Self.wlIndex)
        func tables(_ addresses: [InterfaceAddress]) -> NetworkTables {
            NetworkTables(links: [Self.lo(), Self.wl0()], addresses: Self.loopbackAddresses() + addresses, routes: [v4, v6])
        }
        assertUnsatisfied(tables([]), .noAddress)
        // Only a link-local IPv6 address.
        assertUnsatisfied(
            tables([Self.address("fe80::fc00:ff:fe00:1/64", on: Self.wlIndex, scope: .link)]), .noAddress)
        // A link-local address even if its scope were reported as global.
        assertUnsatisfied(tables([Self.address("fe80::fc00:ff:fe00:1/64", on: Self.wlIndex)]), .noAddress)
        // A global IPv6 address still in duplicate address detection.
        assertUnsatisfied(
            tables([Self.address("2001:2:1::2/64", on: Self.wlIndex, flags: .tentative)]), .noAddress)
        // One whose DAD failed.
        assertUnsatisfied(
            tables([Self.address("2001:2:1::2/64", on: Self.wlIndex, flags: [.tentative, .dadFailed])]),
            .noAddress)
        // An IPv4 link-local (169.254/16) address.
        assertUnsatisfied(tables([Self.address("169.254.7.9/16", on: Self.wlIndex, scope: .link)]), .noAddress)
        // Addresses of another interface do not count.
        assertUnsatisfied(tables([Self.address("198.18.1.2/24", on: 7)]), .noAddress)

        // Once DAD finishes, the same address makes the path satisfied.
        let path = evaluate(tables([Self.address("2001:2:1::2/64", on: Self.wlIndex, flags: .noDAD)]))
        XCTAssertEqual(path.status, .satisfied)
        XCTAssertTrue(path.supportsIPv6)
        XCTAssertFalse(path.supportsIPv4)
    }

    func testNoRoute() {
        let wifi = Self.wifiRows()
        let connectedOnly = wifi.routes.filter { !$0.isDefault }
        assertUnsatisfied(
            NetworkTables(links: [Self.lo(), Self.wl0()], addresses: wifi.addresses, routes: connectedOnly), .noRoute)
        assertUnsatisfied(NetworkTables(links: [Self.lo(), Self.wl0()], addresses: wifi.addresses), .noRoute)
    }

    func testInterfaceFilteredByRequiredType() {
        assertUnsatisfied(
            Self.wifiTables(), .interfaceFiltered, options: PathEvaluationOptions(requiredInterfaceType: .cellular))
        assertUnsatisfied(
            Self.wifiTables(), .interfaceFiltered, options: PathEvaluationOptions(requiredInterfaceType: .wiredEthernet))
        XCTAssertEqual(evaluate(Self.wifiTables(), PathEvaluationOptions(requiredInterfaceType: .wifi)).status, .satisfied)

        // With both usable, the required type picks one.
        let path = evaluate(Self.bothTables(), PathEvaluationOptions(requiredInterfaceType: .cellular))
        XCTAssertEqual(path.status, .satisfied)
        XCTAssertEqual(path.availableInterfaces.map(\.name), ["ww0"])
        XCTAssertTrue(path.isExpensive)
        XCTAssertEqual(path.gateways, ["198.18.2.1"])
        XCTAssertFalse(path.supportsIPv6, "wl0's IPv6 is filtered out with it")
    }

    func testInterfaceFilteredByProhibitedTypes() {
        assertUnsatisfied(
            Self.wifiTables(), .interfaceFiltered, options: PathEvaluationOptions(prohibitedInterfaceTypes: [.wifi]))
        assertUnsatisfied(
            Self.bothTables(), .interfaceFiltered,
            options: PathEvaluationOptions(prohibitedInterfaceTypes: [.wifi, .cellular]))
        XCTAssertEqual(
            evaluate(Self.wifiTables(), PathEvaluationOptions(prohibitedInterfaceTypes: [.cellular])).status, .satisfied)

        let path = evaluate(Self.bothTables(), PathEvaluationOptions(prohibitedInterfaceTypes: [.wifi]))
        XCTAssertEqual(path.availableInterfaces.map(\.name), ["ww0"])
        XCTAssertTrue(path.isExpensive)
    }

    // MARK: Several interfaces

    func testWifiAndCellularBothUsableWifiFirstNotExpensive() {
        let path = evaluate(Self.bothTables())
        XCTAssertEqual(path.status, .satisfied)
        XCTAssertEqual(
            path.availableInterfaces,
            [PathInterface(name: "wl0", index: 2, type: .wifi), PathInterface(name: "ww0", index: 3, type: .cellular)])
        XCTAssertFalse(path.isExpensive)
        XCTAssertFalse(path.isConstrained)
        XCTAssertTrue(path.usesInterfaceType(.wifi))
        XCTAssertEqual(path.gateways, ["198.18.1.1", "198.18.2.1", "fe80::1"], "by route metric: 100, 200, 1024")
    }

    func testLowestMetricWinsNotTheInterfaceIndex() {
        let path = evaluate(Self.bothTables(wifiMetric: 600, cellularMetric: 50))
        XCTAssertEqual(path.availableInterfaces.map(\.name), ["ww0", "wl0"])
        XCTAssertTrue(path.isExpensive)
        XCTAssertEqual(path.gateways.first, "198.18.2.1")
    }

    func testWifiCarrierLostCellularBecomesPrimaryAndExpensive() {
        let path = evaluate(Self.bothTables(wifiCarrier: false))
        XCTAssertEqual(path.status, .satisfied)
        XCTAssertEqual(path.availableInterfaces, [PathInterface(name: "ww0", index: 3, type: .cellular)])
        XCTAssertTrue(path.isExpensive)
        XCTAssertTrue(path.usesInterfaceType(.cellular))
        XCTAssertTrue(path.supportsIPv4)
        XCTAssertFalse(path.supportsIPv6)
        XCTAssertEqual(path.gateways, ["198.18.2.1"])

        // Even with wl0's routes still in the table (the kernel keeps them for a moment), no carrier, no use.
        var stale = Self.bothTables(wifiCarrier: false)
        stale.routes += Self.wifiRows().routes
        XCTAssertEqual(evaluate(stale), path)
    }

    func testExpensiveAndConstrainedOverridesByName() {
        var path = evaluate(Self.wifiTables(), PathEvaluationOptions(expensiveInterfaces: ["wl0"]))
        XCTAssertTrue(path.isExpensive)
        XCTAssertFalse(path.isConstrained)
        path = evaluate(Self.wifiTables(), PathEvaluationOptions(constrainedInterfaces: ["wl0"]))
        XCTAssertFalse(path.isExpensive)
        XCTAssertTrue(path.isConstrained)
        XCTAssertEqual(path.summary, "satisfied via wl0 (wifi), IPv4+IPv6, DNS, constrained")

        // The flags follow the preferred interface only.
        path = evaluate(
            Self.bothTables(), PathEvaluationOptions(expensiveInterfaces: ["ww0"], constrainedInterfaces: ["ww0"]))
        XCTAssertFalse(path.isExpensive)
        XCTAssertFalse(path.isConstrained)
        path = evaluate(
            Self.bothTables(wifiCarrier: false), PathEvaluationOptions(constrainedInterfaces: ["ww0"]))
        XCTAssertTrue(path.isExpensive)
        XCTAssertTrue(path.isConstrained)

        // A classifier override by name changes the type, hence the cost.
        path = evaluate(
            Self.wifiTables(), PathEvaluationOptions(classifier: InterfaceClassifier(overrides: ["wl0": .cellular])))
        XCTAssertEqual(path.availableInterfaces.first?.type, .cellular)
        XCTAssertTrue(path.isExpensive)
    }

    func testRequiresConnectionForADormantLink() {
        for carrier in [true, false] {
            let tables = NetworkTables(
                links: [Self.lo(), Self.wl0(carrier: carrier, state: .dormant)], addresses: Self.loopbackAddresses())
            let path = evaluate(tables)
            XCTAssertEqual(path.status, .requiresConnection, "carrier \(carrier)")
            XCTAssertEqual(path.availableInterfaces, [])
        }
        // A dormant link with an address and a default route is still not usable.
        let wifi = Self.wifiRows()
        let path = evaluate(
            NetworkTables(links: [Self.lo(), Self.wl0(state: .dormant)], addresses: wifi.addresses, routes: wifi.routes))
        XCTAssertEqual(path.status, .requiresConnection)
        // A usable interface beside a dormant one wins.
        let both = Self.bothTables()
        var tables = both
        tables.links[Self.wlIndex] = Self.wl0(state: .dormant)
        XCTAssertEqual(evaluate(tables).availableInterfaces.map(\.name), ["ww0"])
        XCTAssertEqual(evaluate(tables).status, .satisfied)
    }

    // MARK: Routes that do not count

    func testDefaultRouteInAnotherTableDoesNotCount() {
        let wifi = Self.wifiRows()
        let routes = wifi.routes.filter { !$0.isDefault } + [
            Self.defaultRoute(via: "198.18.1.1", on: Self.wlIndex, metric: 100, table: RouteTable(rawValue: 100)),
            Self.defaultRoute(via: "198.18.1.1", on: Self.wlIndex, metric: 100, table: .local),
        ]
        assertUnsatisfied(NetworkTables(links: [Self.lo(), Self.wl0()], addresses: wifi.addresses, routes: routes), .noRoute)
    }

    func testUnreachableDefaultRouteDoesNotCount() {
        let wifi = Self.wifiRows()
        let routes = wifi.routes.filter { !$0.isDefault } + [
            Self.defaultRoute(via: nil, on: Self.wlIndex, metric: 100, type: .unreachable),
            Route(family: .inet6, outputInterface: Self.wlIndex, metric: 1024, type: .unreachable),
        ]
        assertUnsatisfied(NetworkTables(links: [Self.lo(), Self.wl0()], addresses: wifi.addresses, routes: routes), .noRoute)
    }

    func testDefaultRouteThroughAnotherInterfaceDoesNotCount() {
        // wl0 has an address; the only default route goes out through ww0, which has no carrier.
        let routes = [Self.defaultRoute(via: "198.18.2.1", on: Self.wwIndex, metric: 100)]
        assertUnsatisfied(
            NetworkTables(
                links: [Self.lo(), Self.wl0(), Self.ww0(carrier: false)],
                addresses: [Self.address("198.18.1.2/24", on: Self.wlIndex)], routes: routes),
            .noRoute)
    }

    func testDefaultRouteWithoutAnAddressOfItsFamilyDoesNotCount() {
        // Only an IPv4 address, only an IPv6 default route.
        let tables = NetworkTables(
            links: [Self.lo(), Self.wl0()], addresses: [Self.address("198.18.1.2/24", on: Self.wlIndex)],
            routes: [Self.defaultRoute6(via: "fe80::1", on: Self.wlIndex)])
        assertUnsatisfied(tables, .noRoute)

        // Only an IPv6 address, only an IPv4 default route.
        assertUnsatisfied(
            NetworkTables(
                links: [Self.lo(), Self.wl0()], addresses: [Self.address("2001:2:1::2/64", on: Self.wlIndex)],
                routes: [Self.defaultRoute(via: "198.18.1.1", on: Self.wlIndex, metric: 100)]),
            .noRoute)

        // Both default routes but only an IPv4 address: IPv4 only, and the IPv6 gateway is not reported.
        var dual = tables
        dual.routes.append(Self.defaultRoute(via: "198.18.1.1", on: Self.wlIndex, metric: 100))
        let path = evaluate(dual)
        XCTAssertEqual(path.status, .satisfied)
        XCTAssertTrue(path.supportsIPv4)
        XCTAssertFalse(path.supportsIPv6)
        XCTAssertEqual(path.gateways, ["198.18.1.1"])
    }

    // MARK: Purity

    func testSameInputSameOutput() {
        let tables = Self.bothTables()
        let first = evaluate(tables)
        for _ in 0..<10 { XCTAssertEqual(evaluate(tables), first) }
        let options = PathEvaluationOptions(prohibitedInterfaceTypes: [.wifi])
        XCTAssertEqual(evaluate(tables, options), evaluate(tables, options))
    }

    func testOrderOfInputRowsDoesNotMatter() {
        let tables = Self.bothTables()
        let expected = evaluate(tables)
        let links = Array(tables.links.values)
        var generator = SplitMix64(seed: 0x6c69_6e6b_636f_6e64)
        for _ in 0..<50 {
            let shuffled = NetworkTables(
                links: links.shuffled(using: &generator), addresses: tables.addresses.shuffled(using: &generator),
                routes: tables.routes.shuffled(using: &generator),
                dnsServers: tables.dnsServers.shuffled(using: &generator))
            XCTAssertEqual(evaluate(shuffled), expected)
        }
        // Reversed, too, for every unsatisfied reason.
        let unsatisfied = [
            NetworkTables(links: [Self.lo(), Self.wl0(carrier: false), Self.ww0(up: false)]),
            NetworkTables(links: [Self.lo(), Self.wl0(), Self.ww0(carrier: false)]),
            NetworkTables(
                links: [Self.lo(), Self.wl0(), Self.ww0()], addresses: Self.wifiRows().addresses,
                routes: Self.cellularRows().routes),
        ]
        for tables in unsatisfied {
            let reversed = NetworkTables(
                links: tables.links.values.reversed(), addresses: tables.addresses.reversed(),
                routes: tables.routes.reversed())
            XCTAssertEqual(evaluate(reversed), evaluate(tables))
        }
    }

    /// NetworkManager gives IPv4 and IPv6 default routes of a connection the same metric (600 for wifi).
    /// The gateways must then not come out in whatever order the route rows happened to be dumped.
    func testGatewayOrderDoesNotDependOnRouteRowOrderWithEqualMetrics() {
        let wifi = Self.wifiRows(metric: 600, metric6: 600)
        let forward = NetworkTables(links: [Self.lo(), Self.wl0()], addresses: wifi.addresses, routes: wifi.routes)
        let backward = NetworkTables(
            links: [Self.lo(), Self.wl0()], addresses: wifi.addresses, routes: wifi.routes.reversed())
        XCTAssertEqual(evaluate(forward).gateways, evaluate(backward).gateways)
        XCTAssertEqual(evaluate(forward), evaluate(backward))
    }

    /// A dormant interface the filters exclude cannot be made usable by any action the monitor would see:
    /// it must not turn the path into requiresConnection.
    func testDormantInterfaceExcludedByTheFiltersDoesNotRequireConnection() {
        let tables = NetworkTables(links: [Self.lo(), Self.wl0(state: .dormant)])
        let path = evaluate(tables, PathEvaluationOptions(prohibitedInterfaceTypes: [.wifi]))
        XCTAssertEqual(path.status, .unsatisfied, path.summary)
        XCTAssertEqual(path.unsatisfiedReason, .notAvailable)
        XCTAssertEqual(evaluate(tables, PathEvaluationOptions(requiredInterfaceType: .cellular)).status, .unsatisfied)
    }
}


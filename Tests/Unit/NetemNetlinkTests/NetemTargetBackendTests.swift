import CMnl
import Conditioning
import Glibc
import LinkcondBase
import Netlink
import NetlinkTesting
import Profiles
import RouteNetlink
import Sandboxing
import XCTest

/// Profiles with targets on the netem backend, over the fake kernels of ``NetemBackendTests``: the trees
/// and filters a first apply builds, switches between targets and none (the order of each batch, and no
/// filter left behind), the DNS filters within targets, and read-back of the filters (a missing or
/// different one is an error; one another process left is found and removed).
extension NetemBackendTests {
    static let class13 = TrafficControlHandle(major: 1, minor: 3)
    static let class14 = TrafficControlHandle(major: 1, minor: 4)
    static let h3 = TrafficControlHandle(major: 3, minor: 0)
    static let class31 = TrafficControlHandle(major: 3, minor: 1)
    static let class32 = TrafficControlHandle(major: 3, minor: 2)
    static let pfifo40 = TrafficControlHandle(major: 0x40, minor: 0)
    static let wl0: Int32 = 20
    static let cwl0: Int32 = 21

    static let NEW = UInt16(RTM_NEWQDISC)
    static let ADD = UInt16(RTM_NEWTFILTER)
    static let DEL = UInt16(RTM_DELTFILTER)
    static let DUMP = UInt16(RTM_GETQDISC)

    /// `profile` with `targets` ("tcp 198.19.0.0/24 port 80" and the like: protocol, prefix, port).
    static func targeted(_ profile: Profile, _ targets: [(String?, String, UInt16?)]) throws -> Profile {
        var copy = profile
        copy.targets = try targets.map { try TrafficTarget(to: $0.1, protocol: $0.0, port: $0.2) }
        return copy
    }

    /// A 3G-like profile (1 s DNS delay) aimed at the server's web port over IPv4 and all of its IPv6 subnet.
    var web: Profile {
        get throws { try Self.targeted(try threeG, [("tcp", "198.19.0.0/24", 80), (nil, "2001:2:0:100::/64", nil)]) }
    }

    static func prioOptions(_ kernel: FakeTrafficControlKernel, _ index: Int32) throws -> PrioOptions {
        let root = try XCTUnwrap(kernel.qdiscs.first { $0.index == index && $0.parent == .root && $0.kind == "prio" }, "no prio at the root")
        return try PrioOptions.decode(options: root.options)
    }

    static func map(_ band: UInt8) -> [UInt8] { [UInt8](repeating: band, count: 16) }

    static func filter(_ family: EtherType, _ priority: UInt16, _ keys: [U32Key], _ classID: TrafficControlHandle) -> U32Filter {
        U32Filter(protocolNumber: family, priority: priority, keys: keys, classID: classID)
    }

    static func dns(_ family: EtherType, _ transport: UInt8, _ priority: UInt16, _ classID: TrafficControlHandle) -> U32Filter {
        family == .ipv4
            ? filter(.ipv4, priority, [.ipProtocol(transport), .ipDestinationPort(53)], classID)
            : filter(.ipv6, priority, [.ip6Protocol(transport), .ip6DestinationPort(53)], classID)
    }

    /// The filters a kernel holds on `index`, as U32Filter values (terminal u32 filters only).
    static func held(_ kernel: FakeTrafficControlKernel, _ index: Int32) throws -> [U32Filter] {
        try kernel.reported(index).map { reported in
            XCTAssertEqual(reported.kind, "u32")
            XCTAssertTrue(reported.isTerminal)
            return U32Filter(
                protocolNumber: EtherType(rawValue: reported.protocolNumber), priority: reported.priority, keys: reported.keys,
                classID: reported.classID ?? .unspecified)
        }
    }

    static func types(_ datagrams: [[UInt8]]) -> [[UInt16]] { datagrams.map { SentMessage.split($0).map(\.type) } }

    // MARK: First apply

    func testFirstApplyWithTargetsBuildsBothTreesAndTheirFilters() throws {
        let lab = try makeLab()
        let profile = try web
        try lab.backend.apply(profile)

        // Router: prio 3: whose default is the untouched pfifo at 3:2; the targets, by their source, to 3:1.
        XCTAssertEqual(try Self.prioOptions(lab.router, Self.cwl0), PrioOptions(bands: 2, priorityMap: Self.map(1)))
        let (down, downlink) = try netem(lab.router, parent: Self.class31)
        XCTAssertEqual(down, TrafficControlHandle(major: 0x10, minor: 0))
        XCTAssertEqual(downlink.delay, 100_000_000)
        XCTAssertEqual(downlink.rate, 780_000 / 8)
        XCTAssertTrue(lab.router.qdiscs.contains { $0.handle == Self.pfifo40 && $0.parent == Self.class32 && $0.kind == "pfifo" })
        XCTAssertEqual(try Self.held(lab.router, Self.cwl0), [
            Self.filter(.ipv4, 1, [.ipSource(IPPrefix("198.19.0.0/24")!), .ipProtocol(6), .ipSourcePort(80)], Self.class31),
            Self.filter(.ipv6, 2, U32Key.ip6Source(IPPrefix("2001:2:0:100::/64")!), Self.class31),
        ])
        // The router's batch: the prio made with everything to 3:1, the leaves, the filters, then the priomap.
        XCTAssertEqual(Self.types(lab.routerTransport.sent), [[Self.DUMP], [Self.NEW, Self.NEW, Self.NEW, Self.ADD, Self.ADD, Self.NEW, Self.DUMP]])

        // Client: four bands, default 1:4; DNS to a target (only the IPv6 subnet takes DNS) to 1:2, other DNS
        // to 1:3, targeted traffic by its destination to 1:1.
        XCTAssertEqual(try Self.prioOptions(lab.client, Self.wl0), PrioOptions(bands: 4, priorityMap: Self.map(3)))
        let v6 = U32Key.ip6Destination(IPPrefix("2001:2:0:100::/64")!)
        XCTAssertEqual(try Self.held(lab.client, Self.wl0), [
            Self.filter(.ipv6, 1, v6 + [.ip6Protocol(17), .ip6DestinationPort(53)], Self.class12),
            Self.filter(.ipv6, 2, v6 + [.ip6Protocol(6), .ip6DestinationPort(53)], Self.class12),
            Self.dns(.ipv4, 17, 3, Self.class13), Self.dns(.ipv4, 6, 4, Self.class13),
            Self.dns(.ipv6, 17, 5, Self.class13), Self.dns(.ipv6, 6, 6, Self.class13),
            Self.filter(.ipv4, 7, [.ipDestination(IPPrefix("198.19.0.0/24")!), .ipProtocol(6), .ipDestinationPort(80)], Self.class11),
            Self.filter(.ipv6, 8, v6, Self.class11),
        ])
        XCTAssertEqual(try netem(lab.client, parent: Self.class11).1.delay, 100_000_000)
        XCTAssertEqual(try netem(lab.client, parent: Self.class12).1.delay, 1_100_000_000, "conditions plus the DNS delay")
        let (dnsOnlyHandle, dnsOnly) = try netem(lab.client, parent: Self.class13)
        XCTAssertEqual(dnsOnlyHandle, TrafficControlHandle(major: 0x30, minor: 0))
        XCTAssertEqual(dnsOnly.delay, 1_000_000_000, "the DNS delay alone")
        XCTAssertNil(dnsOnly.rate)
        XCTAssertTrue(lab.client.qdiscs.contains { $0.handle == Self.pfifo40 && $0.parent == Self.class14 && $0.kind == "pfifo" })
    }

    func testDNSFiltersWithinTargetsFollowTheTargetsProtocolAndPort() throws {
        let lab = try makeLab()
        let profile = try Self.targeted(try threeG, [
            ("udp", "198.19.0.100", 53), ("tcp", "198.19.0.100", 80), ("icmp", "198.18.2.0/24", nil), (nil, "2001:2::/48", 443),
        ])
        try lab.backend.apply(profile)
        let host = IPPrefix("198.19.0.100/32")!
        let wide = U32Key.ip6Destination(IPPrefix("2001:2::/48")!)
        XCTAssertEqual(try Self.held(lab.client, Self.wl0), [
            // Only the UDP-53 target takes DNS; port 80, ICMP and port 443 do not.
            Self.filter(.ipv4, 1, [.ipDestination(host), .ipProtocol(17), .ipDestinationPort(53)], Self.class12),
            Self.dns(.ipv4, 17, 2, Self.class13), Self.dns(.ipv4, 6, 3, Self.class13),
            Self.dns(.ipv6, 17, 4, Self.class13), Self.dns(.ipv6, 6, 5, Self.class13),
            Self.filter(.ipv4, 6, [.ipDestination(host), .ipProtocol(17), .ipDestinationPort(53)], Self.class11),
            Self.filter(.ipv4, 7, [.ipDestination(host), .ipProtocol(6), .ipDestinationPort(80)], Self.class11),
            Self.filter(.ipv4, 8, [.ipDestination(IPPrefix("198.18.2.0/24")!), .ipProtocol(1)], Self.class11),
            // A port without a protocol: TCP and UDP; on IPv6, ICMP would be next header 58.
            Self.filter(.ipv6, 9, wide + [.ip6Protocol(6), .ip6DestinationPort(443)], Self.class11),
            Self.filter(.ipv6, 10, wide + [.ip6Protocol(17), .ip6DestinationPort(443)], Self.class11),
        ])
        XCTAssertEqual(try Self.held(lab.router, Self.cwl0).map(\.keys), [
            [.ipSource(host), .ipProtocol(17), .ipSourcePort(53)],
            [.ipSource(host), .ipProtocol(6), .ipSourcePort(80)],
            [.ipSource(IPPrefix("198.18.2.0/24")!), .ipProtocol(1)],
            U32Key.ip6Source(IPPrefix("2001:2::/48")!) + [.ip6Protocol(6), .ip6SourcePort(443)],
            U32Key.ip6Source(IPPrefix("2001:2::/48")!) + [.ip6Protocol(17), .ip6SourcePort(443)],
        ])
    }

    // MARK: Switching

    func testSwitchTargetsToNoneToTargetsRebuildsInPlaceAndLeavesNoFilter() throws {
        let lab = try makeLab()
        let targets = try web
        try lab.backend.apply(targets)
        var before = (lab.clientTransport.sent.count, lab.routerTransport.sent.count)

        // Targets → none. Client: grafts, the DNS filters (to 1:2) in range 1001…, the priomap back to 1:1 while
        // the old filters still steer, the old filters last to first, the sentinel, then two bands again.
        let report = try lab.backend.apply(try threeG)
        var client = Self.types(Array(lab.clientTransport.sent.dropFirst(before.0)))
        XCTAssertEqual(client, [[Self.NEW, Self.NEW] + [Self.ADD] * 4 + [Self.NEW] + [Self.DEL] * 9 + [Self.NEW, Self.DUMP]])
        let batch = try XCTUnwrap(lab.clientTransport.sent.last.map(SentMessage.split))
        XCTAssertEqual(batch[7..<16].map { UInt16($0.payload.load(tcmsg.self, at: 0)!.tcm_info >> 16) }, [8, 7, 6, 5, 4, 3, 2, 1, 9])
        XCTAssertEqual(try PrioOptions.decode(options: Array(batch[6].payload.dropFirst(MemoryLayout<tcmsg>.size + 12).dropFirst(4))), PrioOptions(bands: 4),
                       "the priomap changes first, with the four bands")
        // Router: one graft at the root replaces the whole prio tree.
        XCTAssertEqual(Self.types(Array(lab.routerTransport.sent.dropFirst(before.1))), [[Self.NEW, Self.DUMP]])
        XCTAssertEqual(report.roundTrips, 2)
        XCTAssertEqual(try Self.prioOptions(lab.client, Self.wl0), PrioOptions(bands: 2))
        XCTAssertEqual(lab.client.qdiscs.filter { $0.index == Self.wl0 }.count, 3, "prio and two netems: 1:3 and 1:4 went with their bands")
        XCTAssertEqual(try Self.held(lab.client, Self.wl0), [
            Self.dns(.ipv4, 17, 1001, Self.class12), Self.dns(.ipv4, 6, 1002, Self.class12),
            Self.dns(.ipv6, 17, 1003, Self.class12), Self.dns(.ipv6, 6, 1004, Self.class12),
        ])
        XCTAssertEqual(lab.router.qdiscs.map(\.kind), ["netem"])
        XCTAssertEqual(try netem(lab.router, parent: .root).0, Self.h1)
        XCTAssertTrue(lab.router.filters.isEmpty)

        // None → targets. Client: the prio grows to four bands keeping its priomap, new leaves and the pfifo,
        // the filters in range 1…, the priomap to 1:4, the old DNS filters and the sentinel.
        before = (lab.clientTransport.sent.count, lab.routerTransport.sent.count)
        try lab.backend.apply(targets)
        client = Self.types(Array(lab.clientTransport.sent.dropFirst(before.0)))
        XCTAssertEqual(client, [[Self.NEW] + [Self.NEW] * 4 + [Self.ADD] * 8 + [Self.NEW] + [Self.DEL] * 5 + [Self.DUMP]])
        XCTAssertEqual(Self.types(Array(lab.routerTransport.sent.dropFirst(before.1))), [[Self.NEW, Self.NEW, Self.NEW, Self.ADD, Self.ADD, Self.NEW, Self.DUMP]])
        XCTAssertEqual(try Self.prioOptions(lab.client, Self.wl0), PrioOptions(bands: 4, priorityMap: Self.map(3)))
        XCTAssertEqual(lab.client.priorities(Self.wl0), Array(1...8))
        XCTAssertEqual(try netem(lab.client, parent: Self.class11).0, TrafficControlHandle(major: 0x10, minor: 0))
        XCTAssertEqual(try Self.prioOptions(lab.router, Self.cwl0), PrioOptions(bands: 2, priorityMap: Self.map(1)))
        XCTAssertEqual(lab.router.priorities(Self.cwl0), [1, 2])

        // Targets → other targets: grafts and a filter swap only; the pfifo and the priomap stay.
        before = (lab.clientTransport.sent.count, lab.routerTransport.sent.count)
        try lab.backend.apply(try Self.targeted(try edge, [("udp", "198.19.0.0/24", 7)]))
        client = Self.types(Array(lab.clientTransport.sent.dropFirst(before.0)))
        XCTAssertEqual(client, [[Self.NEW] * 3 + [Self.ADD] * 5 + [Self.DEL] * 9 + [Self.DUMP]])
        XCTAssertEqual(Self.types(Array(lab.routerTransport.sent.dropFirst(before.1))), [[Self.NEW, Self.ADD] + [Self.DEL] * 3 + [Self.DUMP]])
        XCTAssertEqual(lab.client.priorities(Self.wl0), Array(1001...1005))
        XCTAssertEqual(try Self.held(lab.router, Self.cwl0), [
            Self.filter(.ipv4, 1001, [.ipSource(IPPrefix("198.19.0.0/24")!), .ipProtocol(17), .ipSourcePort(7)], Self.class31),
        ])
        XCTAssertEqual(try netem(lab.router, parent: Self.class31).1.delay, 400_000_000)

        // And clear removes both trees with their filters.
        XCTAssertEqual(try lab.backend.clear().count, 2)
        XCTAssertEqual(lab.client.qdiscs + lab.router.qdiscs, [])
        XCTAssertEqual(lab.client.filters + lab.router.filters, [])
    }

    func testAFreshBackendReadsTheFiltersAndReplacesThem() throws {
        let lab = try makeLab()
        try lab.backend.apply(try web)
        let other = try makeLab(memoryFrom: lab)
        try other.backend.apply(try threeG)
        XCTAssertEqual(lab.client.priorities(Self.wl0), [1001, 1002, 1003, 1004], "the filters read back were replaced, none kept")
        XCTAssertEqual(try Self.prioOptions(lab.client, Self.wl0), PrioOptions(bands: 2))
    }

    // MARK: Read-back

    func testMissingFilterIsAMismatch() throws {
        let lab = try makeLab()
        lab.client.losesFilter = { $0.priority == 7 }
        XCTAssertThrowsError(try lab.backend.apply(try web)) { error in
            guard case let .conditionsMismatch(site, differences) = error as? SandboxError else { return XCTFail("\(error)") }
            XCTAssertTrue(site.contains("uplink"), site)
            XCTAssertEqual(differences.count, 1)
            XCTAssertTrue(differences[0].hasPrefix("no u32 filter at prio 7 (protocol ip prio 7 u32 match u32 0xc6130000 0xffffff00 at 16"), differences[0])
        }
    }

    func testDifferentFilterIsAMismatch() throws {
        let lab = try makeLab()
        lab.router.tamperFilter = { $0.classID = TrafficControlHandle(major: 3, minor: 2).rawValue }
        XCTAssertThrowsError(try lab.backend.apply(try web)) { error in
            guard case let .conditionsMismatch(site, differences) = error as? SandboxError else { return XCTFail("\(error)") }
            XCTAssertTrue(site.contains("downlink"), site)
            XCTAssertTrue(differences[0].hasPrefix("u32 filter at prio 1: sent protocol ip prio 1 u32"), differences[0])
            XCTAssertTrue(differences[0].hasSuffix("flowid 3:2"), differences[0])
        }
    }

    /// Another process switched twice since this backend's last apply: the handles are back where this
    /// backend remembers them, but the filter range holds more filters than it remembers. The sentinel
    /// delete after the remembered ones is not refused, so the backend reads the tree and rebuilds it.
    func testSentinelFindsFiltersAnotherProcessLeft() throws {
        let lab = try makeLab()
        try lab.backend.apply(try threeG)  // range 1…4
        let other = try makeLab(memoryFrom: lab)
        try other.backend.apply(try Self.targeted(try edge, [("tcp", "198.19.0.0/24", 80)]))  // range 1001…1005
        try other.backend.apply(try Self.targeted(try edge, [(nil, "198.19.0.0/24", nil)]))  // range 1…7
        XCTAssertEqual(lab.client.priorities(Self.wl0), Array(1...7))
        let before = lab.clientTransport.sent.count

        try lab.backend.apply(try threeG)
        let client = Self.types(Array(lab.clientTransport.sent.dropFirst(before)))
        XCTAssertEqual(client.count, 3, "the batch whose sentinel found a filter, the filter dump, the retry: \(client)")
        XCTAssertEqual(try Self.prioOptions(lab.client, Self.wl0), PrioOptions(bands: 2))
        XCTAssertEqual(try Self.held(lab.client, Self.wl0).map(\.classID), [Self.class12] * 4)
        XCTAssertEqual(lab.client.filters.count, 4, "nothing of the other process's filters is left")
        XCTAssertEqual(lab.client.qdiscs.filter { $0.index == Self.wl0 }.count, 3)
    }

    func testTooManyTargetsAreRefusedBeforeTheKernel() throws {
        let lab = try makeLab()
        // Each target without a protocol or port takes three filters (DNS to it over UDP and TCP, and itself).
        let many = (0..<400).map { (String?(nil), "198.\(18 + $0 / 256).\($0 % 256).0/24", UInt16?(nil)) }
        XCTAssertThrowsError(try lab.backend.apply(try Self.targeted(try edge, many))) { error in
            XCTAssertTrue("\(error)".contains("more than the 1000"), "\(error)")
        }
        XCTAssertEqual(lab.sentMessages, 0)
    }
}

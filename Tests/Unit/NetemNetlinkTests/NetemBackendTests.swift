import CMnl
import Conditioning
import Foundation
import Glibc
import LinkcondBase
import Netlink
import NetlinkTesting
import Profiles
import RouteNetlink
import Sandboxing
import XCTest

/// The netem backend's conversation with the kernel, over fake transports: what it sends for a first
/// apply, a switch, a stale memory, an unknown index, a refusal and a read-back that differs — without root.
final class NetemBackendTests: XCTestCase {
    /// The client and router namespaces of a sandbox named "unit", each with its own fake kernel.
    struct Lab {
        let backend: NetemBackend
        let client: FakeTrafficControlKernel
        let router: FakeTrafficControlKernel
        let clientTransport: FakeTransport
        let routerTransport: FakeTransport
        let directory: String

        var sentMessages: Int { clientTransport.sentMessages.count + routerTransport.sentMessages.count }
        var sentDatagrams: Int { clientTransport.sent.count + routerTransport.sent.count }
    }

    /// Hands out one fixed connection per namespace name.
    struct Connections: NetlinkConnectionFactory {
        let byNamespace: [String: NetlinkConnection]
        func connection(namespace: String?) throws(NetlinkError) -> NetlinkConnection {
            guard let namespace, let connection = byNamespace[namespace] else {
                throw NetlinkError(kind: .system, operation: "open a netlink socket in \(namespace ?? "?")", errno: ENOENT)
            }
            return connection
        }
    }

    static func profile(_ name: String, down: (String, String), up: (String, String), dns: String? = nil) throws -> Profile {
        let dnsKey = dns.map { ", \"dnsDelay\": \"\($0)\"" } ?? ""
        return try ProfileParser.parse(
            text: """
                {"name": "\(name)", "description": "test", "downlink": {"rate": "\(down.0)", "delay": "\(down.1)"},
                 "uplink": {"rate": "\(up.0)", "delay": "\(up.1)"}\(dnsKey)}
                """, source: "\(name).json")
    }

    var edge: Profile { get throws { try Self.profile("edge", down: ("240kbit", "400ms"), up: ("200kbit", "440ms")) } }
    var threeG: Profile { get throws { try Self.profile("3g", down: ("780kbit", "100ms"), up: ("330kbit", "100ms"), dns: "1s") } }

    func makeLab(clientLinks: [String: Int32]? = nil, memoryFrom other: Lab? = nil) throws -> Lab {
        let topology = try SandboxTopology(name: "unit")
        let directory = other?.directory ?? NSTemporaryDirectory() + "linkcond-netem-\(UUID().uuidString)"
        let store = SandboxStore(directory: directory)
        if other == nil {
            // The store is this test's own: removed when it ends, pass or fail.
            addTeardownBlock { try? FileManager.default.removeItem(atPath: directory) }
            var state = SandboxState(name: "unit", cellular: false)
            state.complete = true
            try store.save(state)
        }
        let client = other?.client ?? FakeTrafficControlKernel(links: clientLinks ?? ["lo": 1, "wl0": 20])
        let router = other?.router ?? FakeTrafficControlKernel(links: ["lo": 1, "c-wl0": 21, "s0": 41])
        let (clientConnection, clientTransport) = client.connection()
        let (routerConnection, routerTransport) = router.connection()
        let connections = Connections(byNamespace: [topology.clientNamespace: clientConnection, topology.routerNamespace: routerConnection])
        let backend = NetemBackend(sandbox: Sandbox(topology: topology, store: store), clock: .standard, connections: connections)
        return Lab(backend: backend, client: client, router: router, clientTransport: clientTransport, routerTransport: routerTransport, directory: directory)
    }

    func netem(_ kernel: FakeTrafficControlKernel, parent: TrafficControlHandle) throws -> (TrafficControlHandle, NetemParameters) {
        let entry = try XCTUnwrap(kernel.qdiscs.first { $0.parent == parent && $0.kind == "netem" }, "no netem under \(parent)")
        return (entry.handle, try NetemParameters.decode(options: entry.options, clock: .standard))
    }

    static let h1 = TrafficControlHandle(major: 1, minor: 0)
    static let class11 = TrafficControlHandle(major: 1, minor: 1)
    static let class12 = TrafficControlHandle(major: 1, minor: 2)

    // MARK: First apply

    func testFirstApplyReadsTheTreesThenBuildsPrioFirstAndCountsWhatItSent() throws {
        let lab = try makeLab()
        let report = try lab.backend.apply(try edge)

        // Client: a dump to learn the tree, then one datagram: prio first, the two leaves, four filters, a dump.
        let client = lab.clientTransport.sent.map(SentMessage.split)
        XCTAssertEqual(client.count, 2)
        XCTAssertEqual(client.first?.map(\.type), [UInt16(RTM_GETQDISC)])
        XCTAssertEqual(client.last?.map(\.type), [UInt16(RTM_NEWQDISC)] + [UInt16(RTM_NEWQDISC)] * 2 + [UInt16(RTM_NEWTFILTER)] * 4 + [UInt16(RTM_GETQDISC)])
        let batch = try XCTUnwrap(client.last)
        XCTAssertEqual(batch[0].flags, UInt16(NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE), "prio: a plain replace")
        XCTAssertEqual(batch[1].flags, UInt16(NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE | NLM_F_EXCL), "leaves: grafts")
        XCTAssertEqual(batch.map(\.sequence), (0..<UInt32(batch.count)).map { batch[0].sequence + $0 }, "consecutive sequence numbers")
        // Router: a dump, then the root graft and a dump.
        XCTAssertEqual(lab.routerTransport.sent.map { SentMessage.split($0).map(\.type) }, [[UInt16(RTM_GETQDISC)], [UInt16(RTM_NEWQDISC), UInt16(RTM_GETQDISC)]])

        // What the kernel holds now.
        XCTAssertEqual(lab.client.qdiscs.first { $0.parent == .root }?.kind, "prio")
        XCTAssertEqual(try netem(lab.client, parent: Self.class11).0, TrafficControlHandle(major: 0x10, minor: 0))
        XCTAssertEqual(try netem(lab.client, parent: Self.class12).0, TrafficControlHandle(major: 0x20, minor: 0))
        XCTAssertEqual(Set(lab.client.filters.map { $0.info >> 16 }), [1, 2, 3, 4])
        XCTAssertTrue(lab.client.filters.allSatisfy { $0.classID == Self.class12.rawValue })
        let (root, downlink) = try netem(lab.router, parent: .root)
        XCTAssertEqual(root, Self.h1)
        XCTAssertEqual(downlink.rate, 240_000 / 8)
        XCTAssertEqual(downlink.delay, 400_000_000)

        // Counted by the connections, not worked out.
        XCTAssertEqual(report.requests, lab.sentMessages)
        XCTAssertEqual(report.requests, 12)
        XCTAssertEqual(report.roundTrips, lab.sentDatagrams)
        XCTAssertEqual(report.roundTrips, 4)
        let state = try XCTUnwrap(try lab.backend.sandbox.store.load("unit"))
        XCTAssertEqual(state.conditions["wifi"]?.profile, "edge")
        XCTAssertEqual(try state.conditions["wifi"]?.recordedProfile()?.uplink, try edge.uplink, "the record keeps the profile's document")
    }

    // MARK: Switching

    func testSwitchGraftsTheOtherHandlesInOneRoundTripPerNamespace() throws {
        let lab = try makeLab()
        try lab.backend.apply(try edge)
        let before = (lab.clientTransport.sent.count, lab.routerTransport.sent.count)
        let report = try lab.backend.apply(try threeG)

        let client = Array(lab.clientTransport.sent.dropFirst(before.0)).map(SentMessage.split)
        let router = Array(lab.routerTransport.sent.dropFirst(before.1)).map(SentMessage.split)
        // Client: two grafts, the DNS filters anew in the other priority range (echoed), the old ones
        // deleted last to first, the sentinel after them, the dump.
        XCTAssertEqual(
            client.map { $0.map(\.type) },
            [[UInt16(RTM_NEWQDISC)] * 2 + [UInt16(RTM_NEWTFILTER)] * 4 + [UInt16(RTM_DELTFILTER)] * 5 + [UInt16(RTM_GETQDISC)]])
        let batch = try XCTUnwrap(client.first)
        XCTAssertTrue(batch[2..<6].allSatisfy { $0.flags & UInt16(NLM_F_ECHO) != 0 }, "filters are added with NLM_F_ECHO")
        XCTAssertEqual(batch[6..<11].map { UInt16($0.payload.load(tcmsg.self, at: 0)!.tcm_info >> 16) }, [4, 3, 2, 1, 5])
        XCTAssertEqual(router.map { $0.map(\.type) }, [[UInt16(RTM_NEWQDISC), UInt16(RTM_GETQDISC)]])
        XCTAssertEqual(report.requests, 14)
        XCTAssertEqual(report.roundTrips, 2)

        XCTAssertEqual(try netem(lab.router, parent: .root).0, TrafficControlHandle(major: 2, minor: 0))
        let (main, uplink) = try netem(lab.client, parent: Self.class11)
        let (dns, uplinkDNS) = try netem(lab.client, parent: Self.class12)
        XCTAssertEqual(main, TrafficControlHandle(major: 0x11, minor: 0))
        XCTAssertEqual(dns, TrafficControlHandle(major: 0x21, minor: 0))
        XCTAssertEqual(uplink.delay, 100_000_000)
        XCTAssertEqual(uplinkDNS.delay, 1_100_000_000, "the DNS band carries the DNS delay on top")
        XCTAssertEqual(lab.client.priorities(20), [1001, 1002, 1003, 1004], "the DNS filters moved; none is left twice")

        // And back: the first handles and priorities again.
        try lab.backend.apply(try edge)
        XCTAssertEqual(try netem(lab.router, parent: .root).0, Self.h1)
        XCTAssertEqual(try netem(lab.client, parent: Self.class11).0, TrafficControlHandle(major: 0x10, minor: 0))
        XCTAssertEqual(lab.client.priorities(20), [1, 2, 3, 4])
    }

    func testStaleMemoryIsRefusedByTheExclusiveGraftThenReadAndRetried() throws {
        let lab = try makeLab()
        try lab.backend.apply(try edge)  // this backend remembers 1:, 10:, 20:
        let other = try makeLab(memoryFrom: lab)  // another process on the same kernels
        try other.backend.apply(try threeG)  // now 2:, 11:, 21:
        let before = (lab.clientTransport.sent.count, lab.routerTransport.sent.count)

        try lab.backend.apply(try edge)  // guesses 2:, 11:, 21: — the current ones
        let router = Array(lab.routerTransport.sent.dropFirst(before.1)).map { SentMessage.split($0).map(\.type) }
        XCTAssertEqual(router, [[UInt16(RTM_NEWQDISC), UInt16(RTM_GETQDISC)], [UInt16(RTM_NEWQDISC), UInt16(RTM_GETQDISC)]], "refused, then the other handle")
        let client = Array(lab.clientTransport.sent.dropFirst(before.0)).map { SentMessage.split($0).map(\.type) }
        XCTAssertEqual(client.count, 3, "refused batch, a filter dump, the retry: \(client)")
        XCTAssertEqual(try netem(lab.router, parent: .root).0, Self.h1)
        XCTAssertEqual(try netem(lab.router, parent: .root).1.delay, 400_000_000, "edge, not 3g changed in place")
        XCTAssertEqual(try netem(lab.client, parent: Self.class11).0, TrafficControlHandle(major: 0x10, minor: 0))
        XCTAssertEqual(try netem(lab.client, parent: Self.class11).1.delay, 440_000_000)
    }

    // MARK: Indexes

    func testUnknownVouchedIndexIsLookedUpAndTheBatchResent() throws {
        let lab = try makeLab(clientLinks: ["lo": 1, "wl0": 7])  // not the sandbox's 20
        try lab.backend.apply(try edge)
        let messages = lab.clientTransport.sentMessages
        XCTAssertTrue(messages.contains { $0.type == UInt16(RTM_GETLINK) }, "wl0 looked up after ENODEV")
        XCTAssertEqual(lab.client.qdiscs.filter { $0.index == 7 }.count, 3, "prio and two leaves on index 7")
    }

    // MARK: Failures

    func testReadBackMismatchIsAnError() throws {
        let lab = try makeLab()
        lab.router.tamper = { $0.options.withUnsafeMutableBytes { $0.storeBytes(of: UInt32(5), toByteOffset: 4, as: UInt32.self) } }  // limit
        XCTAssertThrowsError(try lab.backend.apply(try edge)) { error in
            guard case let .conditionsMismatch(site, differences) = error as? SandboxError else { return XCTFail("\(error)") }
            XCTAssertTrue(site.contains("downlink"), site)
            XCTAssertEqual(differences.count, 1)
            XCTAssertTrue(differences[0].hasPrefix("limit: sent "), differences[0])
            XCTAssertTrue(differences[0].hasSuffix("kernel has 5"), differences[0])
        }
    }

    func testRefusedNetemLeavesTheUplinkAsFoundAndCarriesTheKernelsWords() throws {
        let lab = try makeLab()
        lab.client.kinds.remove("netem")
        XCTAssertThrowsError(try lab.backend.apply(try edge)) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("Specified qdisc kind is unknown"), text)
            XCTAssertTrue(text.contains("tc -n lc-unit-client qdisc replace dev wl0 parent 1:1 handle 10: netem delay 440ms rate 200kbit limit"), text)
        }
        XCTAssertEqual(lab.client.qdiscs, [], "the prio root made for the attempt is removed again")
    }

    func testClearRemovesTheTreesAndInstalledDecodesThem() throws {
        let lab = try makeLab()
        try lab.backend.apply(try threeG)
        let installed = try lab.backend.installed()
        XCTAssertEqual(installed.map(\.site.direction), [.uplink, .downlink])
        let uplink = installed[0].stages.compactMap(\.text)
        XCTAssertEqual(uplink.count, 2)
        XCTAssertTrue(uplink[0].hasPrefix("rate 330kbit delay 100ms limit "), uplink[0])
        XCTAssertTrue(uplink[1].hasPrefix("rate 330kbit delay 1100ms limit "), uplink[1])
        XCTAssertEqual(installed.flatMap(\.stages).filter { $0.kind == "netem" }.map(\.agreesWithRecord), [true, true, true])
        XCTAssertEqual(installed[1].stages.first?.conditions, try threeG.downlink, "shown in the profile's own terms")

        // The kernel holds 3g, the record says edge: every netem says it does not agree.
        var state = try XCTUnwrap(try lab.backend.sandbox.store.load("unit"))
        state.record(try edge, on: nil)
        try lab.backend.sandbox.store.save(state)
        let stale = try lab.backend.installed()
        XCTAssertEqual(stale.flatMap(\.stages).filter { $0.kind == "netem" }.map(\.agreesWithRecord), [false, false, false])
        XCTAssertTrue(stale[0].stages[1].text?.hasPrefix("rate 330kbit delay 100ms") ?? false, "shown as the kernel reports it")

        XCTAssertEqual(try lab.backend.clear().count, 2)
        XCTAssertEqual(lab.client.qdiscs, [])
        XCTAssertEqual(lab.router.qdiscs, [])
        XCTAssertEqual(try lab.backend.sandbox.store.load("unit")?.conditions, [:])
    }
}

extension Array {
    static func * (elements: Array, count: Int) -> Array { Array((0..<count).flatMap { _ in elements }) }
}

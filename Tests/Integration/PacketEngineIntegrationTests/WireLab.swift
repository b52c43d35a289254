import Foundation
import Glibc
import LinkcondBase
import LinkEmulation
import NetNamespace
import Netlink
import PacketEngine
import RouteNetlink
import Synchronization
import XCTest

// Every test builds its own three namespaces, uniquely named `lcpe<pid>-<n>-{client,wire,router}`:
//
//   client: wl0 ==veth== [wire: cl-wl0 <engine> rt-wl0] ==veth== router: c-wl0
//
// and removes them in a teardown block, pass or fail. Addresses come from 198.18.0.0/15 and 2001:2::/48
// only; nothing in the host's namespace is touched.

/// Unique names for this process's namespaces.
enum LabName {
    private static let counter = Atomic<Int>(0)

    static var prefix: String { "lcpe\(getpid())-" }

    static func next() -> String {
        "\(prefix)\(counter.add(1, ordering: .relaxed).newValue)"
    }
}

/// The three namespaces around one wire, with their rtnetlink clients.
struct WireLab {
    static let clientV4 = IPAddress("198.18.10.2")!
    static let routerV4 = IPAddress("198.18.10.1")!
    static let clientV6 = IPAddress("2001:2:0:10::2")!
    static let routerV6 = IPAddress("2001:2:0:10::1")!

    let client: NamedNamespace
    let wire: NamedNamespace
    let router: NamedNamespace
    let clientLinks: RouteNetlinkClient
    let wireLinks: RouteNetlinkClient
    let routerLinks: RouteNetlinkClient

    /// The wire's two ends, for the engine.
    var ends: WireEnds { WireEnds(namespace: wire, clientSide: "cl-wl0", routerSide: "rt-wl0") }
}

/// Base class: skips without root; builds labs that are removed when the test ends.
class EngineTestCase: XCTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        guard geteuid() == 0 else {
            throw XCTSkip("requires root: creates network namespaces, veths and AF_PACKET sockets (run 'sudo swift test')")
        }
    }

    /// Creates client, wire and router namespaces joined by two veth pairs, with addresses on the client and
    /// router ends. With `prepare`, the wire is readied as the engine needs it (IPv6 off, up, offloads off on
    /// both ends, the peers prepared for `mode`). Everything is removed when the test ends.
    func makeLab(prepare: Bool = true, mode: OffloadMode = .disabled) throws -> WireLab {
        let base = LabName.next()
        var made: [NamedNamespace] = []
        addTeardownBlock {
            for namespace in made { try? namespace.delete() }
            for suffix in ["client", "wire", "router"] {
                if let left = try? NamedNamespace(existing: "\(base)-\(suffix)") { try? left.delete() }
            }
        }
        let client = try NamedNamespace.create("\(base)-client")
        made.append(client)
        let wire = try NamedNamespace.create("\(base)-wire")
        made.append(wire)
        let router = try NamedNamespace.create("\(base)-router")
        made.append(router)
        let lab = WireLab(
            client: client, wire: wire, router: router,
            clientLinks: RouteNetlinkClient(connection: try client.openNetlinkConnection(), namespace: client.name),
            wireLinks: RouteNetlinkClient(connection: try wire.openNetlinkConnection(), namespace: wire.name),
            routerLinks: RouteNetlinkClient(connection: try router.openNetlinkConnection(), namespace: router.name))
        // Distinct indexes on the two ends of each pair, so carrier changes are urgent linkwatch events.
        try withDescriptor(client) { inClient in
            try withDescriptor(router) { inRouter in
                try lab.wireLinks.createVeth(name: "cl-wl0", index: 21, peerName: "wl0", peerIndex: 11, peerIn: inClient)
                try lab.wireLinks.createVeth(name: "rt-wl0", index: 22, peerName: "c-wl0", peerIndex: 12, peerIn: inRouter)
            }
        }
        for (links, name, v4, v6) in [
            (lab.clientLinks, "wl0", WireLab.clientV4, WireLab.clientV6), (lab.routerLinks, "c-wl0", WireLab.routerV4, WireLab.routerV6),
        ] {
            try links.setLink("lo", up: true)
            try links.addAddress(IPPrefix(address: v4, length: 24)!, to: name)
            try links.addAddress(IPPrefix(address: v6, length: 64)!, to: name, noDAD: true)
            try links.setLink(name, up: true)
        }
        if prepare {
            try WirePreparation.prepare(lab.ends)
            try WirePreparation.preparePeer("wl0", in: client, mode: mode)
            try WirePreparation.preparePeer("c-wl0", in: router, mode: mode)
        }
        return lab
    }

    /// Starts an engine on the lab's wire and stops it when the test ends (before the namespaces go).
    func startEngine<S: FrameScheduler>(
        _ lab: WireLab, options: EngineOptions = EngineOptions(), uplink: sending S, downlink: sending S
    ) throws -> EngineRuntime<S> {
        let runtime = try EngineRuntime(wire: lab.ends, options: options, uplink: uplink, downlink: downlink)
        addTeardownBlock { runtime.stop() }
        try runtime.start()
        return runtime
    }

    /// The same with a reader of linkcond-bench's (`BenchReaders`) in place of the engine's ring.
    func startEngine<S: FrameScheduler, Source: FrameSource>(
        _ lab: WireLab, options: EngineOptions = EngineOptions(), uplink: sending S, downlink: sending S,
        source: (PacketSocket, SourceSizes) throws(PacketEngineError) -> Source
    ) throws -> EngineRuntime<S> {
        let runtime = try EngineRuntime(wire: lab.ends, options: options, uplink: uplink, downlink: downlink, source: source)
        addTeardownBlock { runtime.stop() }
        try runtime.start()
        return runtime
    }

    func withDescriptor<T>(_ namespace: NamedNamespace, _ body: (NamespaceDescriptor) throws -> T) throws -> T {
        let fd = open(namespace.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw NamespaceError.system(operation: "open \(namespace.path)", errno: errno) }
        defer { close(fd) }
        return try body(NamespaceDescriptor(fileDescriptor: fd, name: namespace.name))
    }

    /// After every test (teardown blocks have run by then): none of this process's namespaces is left.
    override func tearDownWithError() throws {
        XCTAssertEqual(leftoverNamespaces(), [], "namespaces left behind by \(name)")
        try super.tearDownWithError()
    }
}

/// Polls `condition` until it is true or `timeout` seconds have passed; returns its last value.
func eventually(timeout: Double = 3, interval: Double = 0.005, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while true {
        if try condition() { return true }
        if Date() >= deadline { return false }
        usleep(UInt32(interval * 1_000_000))
    }
}

/// The names of this process's namespaces still present.
func leftoverNamespaces() -> [String] {
    NamedNamespace.list().filter { $0.hasPrefix(LabName.prefix) }
}

import Conditioning
import Foundation
import Glibc
import LinkcondBase
import NetNamespace
import Profiles
import RouteNetlink
import Sandboxing
import Synchronization
import XCTest

/// The kernel-VM tier for profile targets on netem: targeted and untargeted traffic side by side, with
/// real packets, in one sandbox, through a switch from targets to none and to other targets.
///
/// The profile is 100 ms each way (so 200 ms more per round trip) with a 300 ms DNS delay. The server
/// namespace answers on its own sockets: a UDP echo on ports 7 and 53 (a "DNS query" is a datagram to port
/// 53, as the classifier sees it) and TCP listeners on port 80, over IPv4 and IPv6. Each round sends one of
/// every probe in turn, so what a check compares was measured in the same seconds.
///
/// Skipped on a kernel without sch_netem unless LINKCOND_REQUIRE_NETEM=1 (then it fails), as the other
/// netem tests; scripts/vm-test runs it in the VM.
final class NetemTargetTests: ConditioningTestCase {
    override class var backendKind: BackendKind { .netem }

    static let oneWay: UInt64 = 100_000_000
    static let dnsDelay: UInt64 = 300_000_000
    static let rounds = 5
    /// Below an expected round trip: netem never sends early (2 ms for tick rounding and clocks). Above it,
    /// what timers were late by while the probes ran (``TimerLatenessControl``, both hops) and a share of
    /// the delay.
    static let early = 0.002

    /// One kind of probe: UDP to a port (an echo) or a TCP connect, over one family.
    struct Probe: Hashable, CustomStringConvertible {
        var tcp: Bool
        var ipv6: Bool
        var port: UInt16
        var server: IPAddress { ipv6 ? SandboxPlan.serverIPv6 : SandboxPlan.serverIPv4 }
        var description: String { "\(tcp ? "tcp" : "udp")\(ipv6 ? "6" : "4"):\(port)" }
    }

    static let probes = [
        Probe(tcp: true, ipv6: false, port: 80), Probe(tcp: true, ipv6: true, port: 80),
        Probe(tcp: false, ipv6: false, port: 7), Probe(tcp: false, ipv6: true, port: 7),
        Probe(tcp: false, ipv6: false, port: 53), Probe(tcp: false, ipv6: true, port: 53),
    ]

    func testTargetedAndUntargetedTrafficSideBySideAndThroughSwitches() throws {
        let sandbox = try makeSandbox()
        try sandbox.up(server: .none)
        let client = try sandbox.clientNamespace()
        let responders = try TargetResponders(try NamedNamespace(existing: sandbox.topology.serverNamespace))
        defer { responders.stop() }
        XCTAssertNotNil(try waitUntilReachable(client, SandboxPlan.serverIPv4, port: 80), "no IPv4 path to the server")
        XCTAssertNotNil(try waitUntilReachable(client, SandboxPlan.serverIPv6, port: 80), "no IPv6 path to the server")
        let backend = NetemBackend(sandbox: sandbox)
        let table = MeasurementTable(.netem, "targets: 100 ms each way, DNS delay 300 ms")
        defer { table.print() }

        let baseline = try measure(client)
        for probe in Self.probes {
            table.add("baseline", "\(probe)", expected: "-", measured: baseline[probe].map { MeasureFormat.ms($0.median) } ?? "-", verdict: "info")
        }
        let conditions = try ProfileParser.parse(
            text: """
                {"name": "targeted", "description": "VM test", "downlink": {"delay": "100ms"}, "uplink": {"delay": "100ms"},
                 "dnsDelay": "300ms"}
                """, source: "targeted.json")

        // 1. Only TCP to the server's port 80 over IPv4: its handshake gets 200 ms; the UDP echo, IPv6 and
        //    the TCP port elsewhere do not; a DNS query gets the DNS delay alone (the answer is untargeted).
        var web = conditions
        web.targets = [try TrafficTarget(to: "\(SandboxPlan.serverIPv4)", protocol: "tcp", port: 80)]
        try check("1 tcp4:80", web, backend, client, baseline, table, expect: [
            Probe(tcp: true, ipv6: false, port: 80): 0.2, Probe(tcp: true, ipv6: true, port: 80): 0,
            Probe(tcp: false, ipv6: false, port: 7): 0, Probe(tcp: false, ipv6: true, port: 7): 0,
            Probe(tcp: false, ipv6: false, port: 53): 0.3, Probe(tcp: false, ipv6: true, port: 53): 0.3,
        ], uplinkFilters: 5, downlinkFilters: 1)

        // 2. The same conditions without targets: everything gets them, DNS the DNS delay on top.
        try check("2 no targets", conditions, backend, client, baseline, table, expect: [
            Probe(tcp: true, ipv6: false, port: 80): 0.2, Probe(tcp: true, ipv6: true, port: 80): 0.2,
            Probe(tcp: false, ipv6: false, port: 7): 0.2, Probe(tcp: false, ipv6: true, port: 7): 0.2,
            Probe(tcp: false, ipv6: false, port: 53): 0.5, Probe(tcp: false, ipv6: true, port: 53): 0.5,
        ], uplinkFilters: 4, downlinkFilters: nil)

        // 3. An IPv6 target, the server's whole subnet: all IPv6 traffic to it, DNS to it with the DNS delay
        //    on top; IPv4 untouched but for the DNS delay.
        var subnet = conditions
        subnet.targets = [try TrafficTarget(to: "2001:2:0:100::/64")]
        try check("3 ipv6 /64", subnet, backend, client, baseline, table, expect: [
            Probe(tcp: true, ipv6: false, port: 80): 0, Probe(tcp: true, ipv6: true, port: 80): 0.2,
            Probe(tcp: false, ipv6: false, port: 7): 0, Probe(tcp: false, ipv6: true, port: 7): 0.2,
            Probe(tcp: false, ipv6: false, port: 53): 0.3, Probe(tcp: false, ipv6: true, port: 53): 0.5,
        ], uplinkFilters: 7, downlinkFilters: 1)

        // 4. Back to the first targets: the rebuilt tree does what the first one did.
        try check("4 tcp4:80", web, backend, client, baseline, table, expect: [
            Probe(tcp: true, ipv6: false, port: 80): 0.2, Probe(tcp: true, ipv6: true, port: 80): 0,
            Probe(tcp: false, ipv6: false, port: 7): 0, Probe(tcp: false, ipv6: true, port: 7): 0,
            Probe(tcp: false, ipv6: false, port: 53): 0.3, Probe(tcp: false, ipv6: true, port: 53): 0.3,
        ], uplinkFilters: 5, downlinkFilters: 1)

        XCTAssertEqual(try backend.clear().count, 2)
        XCTAssertTrue(try sandbox.down())
    }

    /// Applies `profile`, prints the trees as tc shows them, checks the filter priorities on both sites
    /// (nil: no prio on the downlink, a netem at the root), then measures and compares each probe's median
    /// round trip with its baseline plus the extra the profile should add.
    private func check(
        _ step: String, _ profile: Profile, _ backend: NetemBackend, _ client: NamedNamespace, _ baseline: [Probe: Samples],
        _ table: MeasurementTable, expect: [Probe: Double], uplinkFilters: Int, downlinkFilters: Int?,
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let report = try backend.apply(profile)
        table.add(step, "apply", expected: "\(profile.targets.map(\.description).joined(separator: "; "))",
                  measured: String(format: "%d requests, %d round trips, %.0f ms", report.requests, report.roundTrips, report.duration * 1000),
                  verdict: "info")
        let topology = backend.sandbox.topology
        let router = try NamedNamespace(existing: topology.routerNamespace)
        for (namespace, device) in [(client, SandboxPlan.wifiInterface), (router, SandboxPlan.routerWifiInterface)] {
            let qdiscs = try spawnCapturing(namespace, "tc", ["qdisc", "show", "dev", device])
            let filters = try spawnCapturing(namespace, "tc", ["filter", "show", "dev", device])
            print("NETEM \(step): \(device)\n" + (qdiscs.output + filters.output).split(separator: "\n").map { "NETEM   " + $0 }.joined(separator: "\n"))
        }
        let pool = NamespaceConnectionPool()
        let up = try RouteNetlinkClient(namespace: topology.clientNamespace, connections: pool)
        let uplink = Set(try up.filters(on: SandboxPlan.wifiInterface, parent: TrafficControlHandle(major: 1, minor: 0)).map(\.priority))
        table.check(uplink.count == uplinkFilters, step, "filters up", expected: "\(uplinkFilters) priorities", measured: "\(uplink.sorted())",
                    "stale or missing filters on wl0", file: file, line: line)
        let down = try RouteNetlinkClient(namespace: topology.routerNamespace, connections: pool)
        let root = try down.qdiscs().first { $0.interfaceIndex == SandboxPlan.interfaceIndexes[SandboxPlan.routerWifiInterface] && $0.parent == .root }
        if let downlinkFilters {
            let downlink = Set(try down.filters(on: SandboxPlan.routerWifiInterface, parent: TrafficControlHandle(major: 3, minor: 0)).map(\.priority))
            table.check(root?.kind == "prio" && downlink.count == downlinkFilters, step, "filters down",
                        expected: "prio 3:, \(downlinkFilters) priorities", measured: "\(root?.kind ?? "-") \(root?.handle.description ?? ""), \(downlink.sorted())",
                        "the downlink tree is not the one with targets", file: file, line: line)
        } else {
            table.check(root?.kind == "netem", step, "root down", expected: "netem", measured: root?.kind ?? "-",
                        "the downlink is not a netem at the root", file: file, line: line)
        }

        let (medians, timers) = try TimerLatenessControl.during { try measure(client) }
        let late = 2 * timers.quantile(0.99) + Self.early
        for probe in Self.probes {
            let extra = expect[probe] ?? 0
            // The baseline's median, and how far above it this probe went unconditioned (its slowest of five).
            let base = (baseline[probe]?.median ?? 0) + (baseline[probe].map { $0.quantile(1) - $0.median } ?? 0)
            let median = medians[probe]?.median ?? .infinity
            let lower = extra == 0 ? 0 : extra - Self.early
            let upper = extra + base + late + 0.01 * extra
            table.check(
                median >= lower && median <= upper, step, "\(probe)",
                expected: "\(MeasureFormat.ms(extra)) + base (\(MeasureFormat.ms(lower))…\(MeasureFormat.ms(upper)))", measured: MeasureFormat.ms(median),
                extra == 0 ? "untargeted traffic was delayed" : "targeted traffic did not get its delay", file: file, line: line)
        }
    }

    /// The round trips of each probe over ``rounds`` rounds, one of each probe per round.
    private func measure(_ client: NamedNamespace) throws -> [Probe: Samples] {
        var samples: [Probe: [Double]] = [:]
        for _ in 0..<Self.rounds {
            for probe in Self.probes {
                if let seconds = try client.run({ try Self.roundTrip(probe) }) { samples[probe, default: []].append(seconds) }
            }
        }
        return samples.mapValues { Samples($0) }
    }

    /// One probe: a datagram and its echo, or a TCP handshake. Nil when nothing came back in 3 s.
    private static func roundTrip(_ probe: Probe) throws -> Double? {
        let type = probe.tcp ? Int32(SOCK_STREAM.rawValue) : Int32(SOCK_DGRAM.rawValue)
        let fd = try TestSocket.open(for: probe.server, type: type, timeout: 3)
        defer { close(fd) }
        let start = MonotonicClock.seconds()
        if probe.tcp {
            return TestSocket.connect(fd, probe.server, port: probe.port) == 0 ? MonotonicClock.seconds() - start : nil
        }
        let tag = TestSocket.payload("probe \(start)")
        guard TestSocket.send(fd, tag, to: probe.server, port: probe.port) == 0 else { return nil }
        while let reply = try? TestSocket.receive(fd) {
            if reply.bytes == tag { return MonotonicClock.seconds() - start }
        }
        return nil
    }
}

/// The server namespace's side of ``NetemTargetTests``: UDP echoes on ports 7 and 53 and TCP listeners on
/// port 80 (connections are accepted and closed), on the server's IPv4 and IPv6 addresses, served by one
/// thread until ``stop()``.
final class TargetResponders: @unchecked Sendable {
    private var sockets: [(fd: Int32, tcp: Bool)] = []
    private let stopped = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)

    init(_ server: NamedNamespace) throws {
        sockets = try server.run {
            var made: [(Int32, Bool)] = []
            for address in [SandboxPlan.serverIPv4, SandboxPlan.serverIPv6] {
                for (port, tcp) in [(UInt16(7), false), (53, false), (80, true)] {
                    let fd = try TestSocket.open(for: address, type: tcp ? Int32(SOCK_STREAM.rawValue) : Int32(SOCK_DGRAM.rawValue))
                    var one: Int32 = 1
                    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
                    try TestSocket.bind(fd, address, port: port)
                    if tcp { guard listen(fd, 64) == 0 else { throw TestSocket.Failure(what: "listen", code: errno) } }
                    made.append((fd, tcp))
                }
            }
            return made
        }
        let thread = Thread { [self] in serve() }
        thread.start()
    }

    private func serve() {
        defer { done.signal() }
        var polled = sockets.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
        var buffer = [UInt8](repeating: 0, count: 2048)
        while !stopped.load(ordering: .relaxed) {
            guard poll(&polled, nfds_t(polled.count), 100) > 0 else { continue }
            for (index, entry) in polled.enumerated() where entry.revents & Int16(POLLIN) != 0 {
                let fd = sockets[index].fd
                if sockets[index].tcp {
                    let connection = accept(fd, nil, nil)
                    if connection >= 0 { close(connection) }
                    continue
                }
                var source = sockaddr_storage()
                var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
                let count = withUnsafeMutablePointer(to: &source) { pointer in
                    pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT), $0, &length) }
                }
                guard count > 0 else { continue }
                _ = withUnsafePointer(to: &source) { pointer in
                    pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, buffer, count, 0, $0, length) }
                }
            }
        }
    }

    /// Stops the thread and closes the sockets.
    func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        done.wait()
        for socket in sockets { close(socket.fd) }
    }
}

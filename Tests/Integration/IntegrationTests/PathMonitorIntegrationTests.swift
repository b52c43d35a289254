import Conditioning
import Dispatch
import Foundation
import Glibc
import LinkcondBase
import NetNamespace
import Netlink
import PathMonitor
import RouteNetlink
import Sandboxing
import Synchronization
import XCTest

// The path monitor against a real sandbox (DESIGN.md, "The path monitor"; REFERENCE.md §4).
//
// Every test builds a sandbox of its own (unique name, private store) and watches its client namespace;
// the sandbox and every monitor are removed or cancelled by teardown blocks, pass or fail. Changes are made
// only inside the sandbox, through netlink sockets opened in the client or router namespace. The one test
// that watches the host's namespace only reads it.
//
// Many checks compare the monitor's `currentPath` with `PathEvaluator.evaluate` of tables read afresh
// from the kernel (links, addresses and routes dumped with RouteNetlinkClient, nameservers from the
// namespace's resolv.conf): the monitor must end on the kernel's truth, not on its own picture of it.

/// Records what a monitor's handler is given, in order.
private final class PathUpdateRecorder: Sendable {
    private struct State {
        var updates: [PathUpdate] = []
        var count = 0
        var last: PathUpdate?
    }

    private let state = Mutex(State())
    /// False: keep only the count and the last update (for the flap runs, whose memory is measured).
    private let keepsAll: Bool

    init(keepsAll: Bool = true) {
        self.keepsAll = keepsAll
    }

    var handler: @Sendable (PathUpdate) -> Void {
        { [self] update in record(update) }
    }

    func record(_ update: PathUpdate) {
        state.withLock {
            $0.count += 1
            $0.last = update
            if keepsAll { $0.updates.append(update) }
        }
    }

    var count: Int { state.withLock { $0.count } }
    var last: PathUpdate? { state.withLock { $0.last } }
    var updates: [PathUpdate] { state.withLock { $0.updates } }

    func updates(after mark: Int) -> [PathUpdate] {
        Array(updates.dropFirst(mark))
    }

    /// The first update after the first `mark` ones that satisfies `predicate`, waiting up to `timeout` seconds.
    /// (Needs a recorder that keeps all updates.)
    func wait(after mark: Int = 0, timeout: Double = 2, _ predicate: (PathUpdate) -> Bool) -> PathUpdate? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let found = updates(after: mark).first(where: predicate) { return found }
            if Date() >= deadline { return nil }
            usleep(500)
        }
    }
}

/// How the client's links reach the router: straight veth pairs (the netem backend's sandbox), or through
/// the userspace backend's wire namespace, where the engine forwards frames between two veth pairs and
/// relays a link change on one side to the other (PacketEngine's CarrierRelay). The path monitor must see
/// the same either way.
enum SandboxLayout: String, CaseIterable {
    case direct
    case wire
}

/// A sandbox that is up, with its client and router namespaces and a netlink client in each.
private struct MonitorLab: Sendable {
    let sandbox: Sandbox
    let layout: SandboxLayout
    let client: NamedNamespace
    let router: NamedNamespace
    let clientLinks: RouteNetlinkClient
    let routerLinks: RouteNetlinkClient

    var resolvConfPath: String { "\(client.etcPath)/resolv.conf" }
}


/// Resident memory of this process in bytes (`/proc/self/statm`, second field).
private func residentBytes() -> Int {
    guard let text = readTrimmed("/proc/self/statm") else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * sysconf(Int32(_SC_PAGESIZE))
}

/// Open descriptors of this process.
private func openDescriptorCount() -> Int {
    ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).count
}

/// The `nameserver` lines of a resolv.conf (scope suffixes dropped), as the monitor reads them.
private func resolvConfNameservers(_ path: String) -> [IPAddress] {
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
    return text.split(separator: "\n").compactMap { line in
        let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard words.count >= 2, words[0] == "nameserver" else { return nil }
        return IPAddress(String(words[1].split(separator: "%")[0]))
    }
}

final class PathMonitorIntegrationTests: SandboxTestCase {
    typealias T = SandboxPlan

    private static let wifiIPv4Gateway = T.wifiSubnet.routerIPv4.address
    private static let wifiIPv6Gateway = T.wifiSubnet.routerIPv6.address
    private static let cellularIPv4Gateway = T.cellularSubnet.routerIPv4.address
    private static let cellularIPv6Gateway = T.cellularSubnet.routerIPv6.address
    private static let wl0 = PathInterface(name: T.wifiInterface, index: T.interfaceIndexes[T.wifiInterface]!, type: .wifi)
    private static let ww0 = PathInterface(name: T.cellularInterface, index: T.interfaceIndexes[T.cellularInterface]!, type: .cellular)
    /// The latency the issue asks for: a link change is reported within 5 ms (measured about 0.3 ms here;
    /// through the userspace backend's wire, where the engine's carrier relay adds a hop, about 1 ms). It is
    /// counted from when a bare rtnetlink listener first heard the change on the monitor's side of the path
    /// (``LinkNotificationControl``, in the client's namespace and, through the wire, in the wire's), so
    /// what the kernel and the scheduler take on a busy machine is the control's as much as the monitor's,
    /// and the bound judges what the monitor (and the relay) add: a monitor that polled every 100 ms, or
    /// took its time evaluating, fails it on any machine. The class runs with nothing else of the suite
    /// beside it (scripts/test). Each change is made ``latencyTrials`` times and the bound judges the median
    /// (``LatencyTrials``): on a shared machine one wake-up in a few can wait a scheduling period behind
    /// other work (24 ms once, for the relay's process, while a bare listener in the same namespace heard the
    /// change after 0.3 ms), and a monitor or relay that is slow by design is slow every time.
    private static let latencyBound: UInt64 = 5_000_000
    private static let latencyTrials = 7

    /// Bare listeners on the monitor's side of the lab's path: the client's namespace and, through the wire,
    /// the wire's (where the relay hears the router's end change); stopped when the test ends.
    private func controls(_ lab: MonitorLab) throws -> [LinkNotificationControl] {
        var namespaces = [lab.client]
        if lab.layout == .wire { namespaces.append(try NamedNamespace(existing: lab.sandbox.topology.wireNamespace)) }
        let controls = try namespaces.map { try LinkNotificationControl($0) }
        addTeardownBlock { controls.forEach { $0.cancel() } }
        return controls
    }

    /// Nanoseconds from `t0` until the first of `controls` heard a link change (0 when none did within 0.5 s).
    private func heard(_ controls: [LinkNotificationControl], after t0: UInt64) -> UInt64 {
        controls.compactMap { $0.first(after: t0) }.min().map { $0 &- t0 } ?? 0
    }

    // MARK: Helpers

    /// Builds a sandbox (no server) in `layout` and waits until the kernel's own tables give a satisfied
    /// path, so a monitor started afterwards must report satisfied in its baseline. The wire layout is the
    /// userspace backend's sandbox, brought up as `linkcond up --backend userspace` does, engine included.
    private func makeLab(cellular: Bool = false, layout: SandboxLayout = .direct) throws -> MonitorLab {
        let sandbox = try makeSandbox()
        switch layout {
        case .direct:
            try sandbox.up(cellular: cellular)
        case .wire:
            let conditioning = SandboxConditioning(sandbox: sandbox, engineExecutable: try linkcondExecutable())
            let (backend, _) = try conditioning.prepare(.userspace, cellular: cellular, server: .none)
            XCTAssertEqual(backend.kind, .userspace)
            XCTAssertTrue(NamedNamespace.exists(sandbox.topology.wireNamespace), "no wire namespace")
        }
        let client = try NamedNamespace(existing: sandbox.topology.clientNamespace)
        let router = try NamedNamespace(existing: sandbox.topology.routerNamespace)
        let lab = MonitorLab(
            sandbox: sandbox, layout: layout, client: client, router: router, clientLinks: try sandbox.netlink(client),
            routerLinks: try sandbox.netlink(router))
        // The veths' operational state follows carrier through the kernel's linkwatch, asynchronously.
        let settled = try eventually(timeout: 3, interval: 0.01) {
            let path = try freshPath(lab)
            return path.status == .satisfied && path.supportsIPv4 && path.supportsIPv6
                && path.availableInterfaces.count == (cellular ? 2 : 1)
        }
        if !settled { XCTFail("the sandbox never became satisfied: \(try freshPath(lab).summary)") }
        return lab
    }

    /// A monitor of the lab's client namespace, started, and cancelled when the test ends.
    private func startMonitor(
        _ lab: MonitorLab, options: PathEvaluationOptions = PathEvaluationOptions(), recorder: PathUpdateRecorder,
        queue: DispatchQueue = DispatchQueue(label: "linkcond.test.path-monitor")
    ) throws -> PathMonitor {
        let monitor = PathMonitor(namespace: lab.client, options: options)
        addTeardownBlock { monitor.cancel() }
        try monitor.start(queue: queue, handler: recorder.handler)
        return monitor
    }

    /// The path of the client namespace computed from tables read afresh from the kernel.
    private func freshPath(_ lab: MonitorLab, options: PathEvaluationOptions = PathEvaluationOptions()) throws -> NetworkPath {
        let tables = NetworkTables(
            links: try lab.clientLinks.links(), addresses: try lab.clientLinks.addresses(), routes: try lab.clientLinks.routes(),
            dnsServers: resolvConfNameservers(lab.resolvConfPath))
        return PathEvaluator.evaluate(tables, options: options)
    }

    /// Asserts that the monitor's current path becomes (within 2 s) the path of the kernel's tables, and
    /// returns it.
    @discardableResult
    private func assertMatchesKernel(
        _ monitor: PathMonitor, _ lab: MonitorLab, _ when: String, file: StaticString = #filePath, line: UInt = #line
    ) throws -> NetworkPath? {
        var fresh = try freshPath(lab, options: monitor.options)
        let matched = try eventually(timeout: 2, interval: 0.005) {
            fresh = try freshPath(lab, options: monitor.options)
            return monitor.currentPath == fresh
        }
        var hint = ""
        if var reordered = monitor.currentPath, reordered != fresh, Set(reordered.gateways) == Set(fresh.gateways) {
            reordered.gateways = fresh.gateways
            if reordered == fresh {
                hint = "\n  (only the order of equal-metric gateways differs: it follows the order routes entered the monitor's tables)"
            }
        }
        XCTAssertTrue(
            matched,
            "\(when): the monitor says '\(monitor.currentPath?.summary ?? "nil")' but the kernel's tables say '\(fresh.summary)'"
                + "\n  monitor: \(String(describing: monitor.currentPath))\n  kernel:  \(fresh)" + hint,
            file: file, line: line)
        return monitor.currentPath
    }

    /// Waits until the monitor has applied no event and delivered no update for `quiet` seconds.
    private func waitUntilQuiet(_ monitor: PathMonitor, quiet: Double = 0.15, timeout: Double = 20) {
        var last = monitor.statistics
        var lastChange = Date()
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            usleep(10_000)
            let now = monitor.statistics
            if now != last {
                last = now
                lastChange = Date()
            } else if Date().timeIntervalSince(lastChange) >= quiet {
                return
            }
        }
        XCTFail("the monitor never went quiet within \(timeout) s (statistics \(monitor.statistics))")
    }

    /// Sets a link up or down with one netlink request and returns CLOCK_MONOTONIC read immediately before
    /// the request was sent (the index is looked up and the message built beforehand).
    private func timedSetLink(_ links: RouteNetlinkClient, _ name: String, up: Bool) throws -> UInt64 {
        let index = try links.index(of: name)
        let message = LinkRequest.setUp(index: index, up)
        let operation = "ip -n \(links.namespace ?? "-") link set dev \(name) \(up ? "up" : "down")"
        let t0 = MonotonicClock.nanoseconds()
        try links.connection.request(message, operation: operation)
        return t0
    }

    /// Waits for the update a change sent at `t0` causes and records both its times, with when the controls
    /// first heard the change, in `trials` (judged there against ``latencyBound``); returns the update.
    private func awaitTimedUpdate(
        _ recorder: PathUpdateRecorder, after mark: Int, t0: UInt64, _ label: String, controls: [LinkNotificationControl],
        trials: LatencyTrials, file: StaticString = #filePath, line: UInt = #line, _ predicate: (PathUpdate) -> Bool
    ) -> PathUpdate? {
        guard let update = recorder.wait(after: mark, predicate) else {
            XCTFail("\(label): no matching update within 2 s; got \(recorder.updates(after: mark).map(\.path.summary))", file: file, line: line)
            return nil
        }
        XCTAssertGreaterThanOrEqual(update.eventTime, t0, "\(label): the update's event was read before the change was sent", file: file, line: line)
        XCTAssertGreaterThanOrEqual(update.time, update.eventTime, "\(label)", file: file, line: line)
        let control = heard(controls, after: t0)
        trials.record("\(label): event read", update.eventTime &- t0, control: control)
        trials.record("\(label): update evaluated", update.time &- t0, control: control)
        return update
    }

    /// Adds the route unless the kernel already has it (IPv6 default routes survive some of the changes
    /// below, IPv4 ones do not).
    private func addDefaultRouteIfMissing(_ links: RouteNetlinkClient, via gateway: IPAddress, interface: String, metric: UInt32) throws {
        let index = try links.index(of: interface)
        let present = try links.routes().contains {
            $0.isDefault && $0.table == .main && $0.gateway == gateway && $0.outputInterface == index && ($0.metric ?? 0) == metric
        }
        if !present { try links.addRoute(destination: nil, gateway: gateway, interface: interface, metric: metric) }
    }

    private func addAddressIfMissing(_ links: RouteNetlinkClient, _ prefix: IPPrefix, interface: String) throws {
        let index = try links.index(of: interface)
        let present = try links.addresses().contains { $0.interfaceIndex == index && $0.prefix == prefix }
        if !present { try links.addAddress(prefix, to: interface, noDAD: true) }
    }

    /// Puts wl0's global addresses and default routes back, as `Sandbox.up` made them.
    private func restoreWifi(_ lab: MonitorLab) throws {
        try addAddressIfMissing(lab.clientLinks, T.wifiSubnet.peerIPv4, interface: T.wifiInterface)
        try addAddressIfMissing(lab.clientLinks, T.wifiSubnet.peerIPv6, interface: T.wifiInterface)
        try addDefaultRouteIfMissing(lab.clientLinks, via: Self.wifiIPv4Gateway, interface: T.wifiInterface, metric: T.wifiMetric)
        try addDefaultRouteIfMissing(lab.clientLinks, via: Self.wifiIPv6Gateway, interface: T.wifiInterface, metric: T.wifiMetric)
    }

    private func assertSatisfiedViaWifi(_ path: NetworkPath?, _ when: String, file: StaticString = #filePath, line: UInt = #line) {
        guard let path else { return XCTFail("\(when): no path", file: file, line: line) }
        XCTAssertEqual(path.status, .satisfied, "\(when): \(path.summary)", file: file, line: line)
        XCTAssertNil(path.unsatisfiedReason, when, file: file, line: line)
        XCTAssertEqual(path.availableInterfaces, [Self.wl0], when, file: file, line: line)
        XCTAssertTrue(path.usesInterfaceType(.wifi), when, file: file, line: line)
        XCTAssertTrue(path.supportsIPv4, when, file: file, line: line)
        XCTAssertTrue(path.supportsIPv6, when, file: file, line: line)
        XCTAssertTrue(path.supportsDNS, when, file: file, line: line)
        XCTAssertFalse(path.isExpensive, when, file: file, line: line)
        XCTAssertFalse(path.isConstrained, when, file: file, line: line)
        XCTAssertEqual(Set(path.gateways), [Self.wifiIPv4Gateway.description, Self.wifiIPv6Gateway.description], when, file: file, line: line)
        XCTAssertEqual(path.gateways.count, 2, when, file: file, line: line)
    }

    private func assertUnsatisfied(
        _ path: NetworkPath?, _ reason: NetworkPath.UnsatisfiedReason, _ when: String, file: StaticString = #filePath, line: UInt = #line
    ) {
        guard let path else { return XCTFail("\(when): no path", file: file, line: line) }
        XCTAssertEqual(path.status, .unsatisfied, "\(when): \(path.summary)", file: file, line: line)
        XCTAssertEqual(path.unsatisfiedReason, reason, "\(when): \(path.summary)", file: file, line: line)
        XCTAssertEqual(path.availableInterfaces, [], when, file: file, line: line)
        XCTAssertEqual(path.gateways, [], when, file: file, line: line)
        XCTAssertFalse(path.supportsIPv4 || path.supportsIPv6 || path.supportsDNS, when, file: file, line: line)
    }

    // MARK: 1. Baseline

    func testBaselineIsValidWhenStartReturnsAndDeliveredOnceToHandlerAndStreams() async throws {
        let lab = try makeLab()
        let recorder = PathUpdateRecorder()
        let monitor = PathMonitor(namespace: lab.client)
        addTeardownBlock { monitor.cancel() }
        XCTAssertNil(monitor.currentPath, "no path before the first start")
        XCTAssertEqual(monitor.generation, 0)
        let early = monitor.updates()  // subscribed before start

        try monitor.start(queue: DispatchQueue(label: "linkcond.test.baseline"), handler: recorder.handler)
        // Valid as soon as start returns, without waiting for anything.
        let current = monitor.currentUpdate
        assertSatisfiedViaWifi(current?.path, "currentPath right after start")
        XCTAssertEqual(current?.isBaseline, true)
        XCTAssertEqual(current?.sequence, 0)
        XCTAssertEqual(current?.generation, 1)
        XCTAssertEqual(monitor.generation, 1)
        XCTAssertTrue(monitor.isRunning)
        let late = monitor.updates()  // subscribed after start: learns the current path at once

        let first = recorder.wait { _ in true }
        XCTAssertEqual(first?.isBaseline, true, "the first handler call is the baseline")
        XCTAssertEqual(first?.sequence, 0)
        XCTAssertEqual(first?.generation, monitor.generation)
        XCTAssertEqual(first, current)
        try assertMatchesKernel(monitor, lab, "baseline")

        // Nothing changes, so nothing more is delivered: the start-up state is not reported as a change.
        usleep(300_000)
        XCTAssertEqual(recorder.count, 1, "handler calls: \(recorder.updates.map(\.path.summary))")
        XCTAssertEqual(monitor.statistics.updates, 1)
        XCTAssertEqual(monitor.statistics.resyncs, 0)

        monitor.cancel()
        XCTAssertFalse(monitor.isRunning)
        var fromEarly: [PathUpdate] = []
        for await update in early { fromEarly.append(update) }
        var fromLate: [PathUpdate] = []
        for await update in late { fromLate.append(update) }
        XCTAssertEqual(fromEarly, [current].compactMap { $0 }, "a stream subscribed before start gets the baseline, once")
        XCTAssertEqual(fromLate, [current].compactMap { $0 }, "a stream subscribed after start gets the baseline, once")
    }

    func testHostMonitorOnlyReadsAndItsBaselineAgreesWithIPRoute() throws {
        let before = try HostSnapshot.take()
        let recorder = PathUpdateRecorder()
        let monitor = PathMonitor()  // the host's own namespace: read only
        addTeardownBlock { monitor.cancel() }
        try monitor.start(queue: DispatchQueue(label: "linkcond.test.host"), handler: recorder.handler)
        guard let baseline = recorder.wait({ _ in true }) else { return XCTFail("no baseline from the host monitor") }
        XCTAssertTrue(baseline.isBaseline)
        XCTAssertEqual(baseline.sequence, 0)
        XCTAssertEqual(baseline.generation, 1)
        XCTAssertEqual(monitor.currentUpdate, baseline)
        let path = baseline.path
        print("host path: \(path.summary)")

        // The same evaluation of tables read here (the test thread is in the host's namespace; dumps only).
        let host = RouteNetlinkClient(connection: try NetlinkConnection(), namespace: nil)
        var fresh = path
        let agrees = try eventually(timeout: 2) {
            let tables = NetworkTables(
                links: try host.links(), addresses: try host.addresses(), routes: try host.routes(),
                dnsServers: resolvConfNameservers("/etc/resolv.conf"))
            fresh = PathEvaluator.evaluate(tables, options: monitor.options)
            return monitor.currentPath == fresh
        }
        XCTAssertTrue(agrees, "host monitor: '\(monitor.currentPath?.summary ?? "nil")', host tables: '\(fresh.summary)'")

        // And with iproute2 as an independent witness (no specific status is asserted: it is the host's).
        let v4 = try Command.ip(["-4", "route", "show", "default"]).output
        let v6 = try Command.ip(["-6", "route", "show", "default"]).output
        let lines = (v4 + "\n" + v6).split(separator: "\n").map(String.init)
        if path.status == .satisfied {
            for interface in path.availableInterfaces {
                XCTAssertTrue(lines.contains { $0.contains("dev \(interface.name) ") || $0.hasSuffix("dev \(interface.name)") },
                    "\(interface.name) is in the path but no default route leaves through it:\n\(lines)")
            }
            for gateway in path.gateways {
                XCTAssertTrue(lines.contains { $0.contains("via \(gateway) ") }, "gateway \(gateway) is not in `ip route show default`:\n\(lines)")
            }
            if path.supportsIPv4 { XCTAssertFalse(v4.isEmpty, "IPv4 supported without an IPv4 default route") }
            if path.supportsIPv6 { XCTAssertFalse(v6.isEmpty, "IPv6 supported without an IPv6 default route") }
        } else {
            XCTAssertTrue(path.availableInterfaces.isEmpty && path.gateways.isEmpty)
            XCTAssertNotNil(path.unsatisfiedReason)
        }
        if v4.isEmpty && v6.isEmpty { XCTAssertNotEqual(path.status, .satisfied, "satisfied without any default route") }

        monitor.cancel()
        let after = try HostSnapshot.take()
        XCTAssertEqual(before.links, after.links, "the host monitor changed host links")
        XCTAssertEqual(before.addresses, after.addresses, "the host monitor changed host addresses")
        XCTAssertEqual(before.routes, after.routes, "the host monitor changed host routes")
    }

    // MARK: 2. Latency of link changes

    /// Router end down/up (carrier), then the client's own interface down/up.
    ///
    /// Taking the client's OWN interface down makes the kernel flush its IPv4 routes (without telling
    /// anyone) and, with `keep_addr_on_down` off (the default), its IPv6 addresses and routes. When it
    /// comes up again the path is honestly unsatisfied with reason noRoute (the IPv4 address is still
    /// there, no default route is), until the addresses and routes are put back.
    func testLinkChangesAreReportedWithin5Milliseconds() throws {
        try checkLinkChangesAreReported(.direct)
    }

    /// The same through the userspace backend's wire: the router's end going down reaches the client's wl0
    /// as a loss of carrier through the engine's carrier relay, within the same bound, and the client's own
    /// wl0 going down reaches the router's c-wl0 (it loses carrier, and gets it back when wl0 comes up).
    func testLinkChangesThroughTheWireAreReportedWithin5Milliseconds() throws {
        try checkLinkChangesAreReported(.wire)
    }

    /// Waits (polling, 2 s at most) until the router's c-wl0 has carrier `carrier` and returns the milliseconds
    /// it took. Through the wire that is the engine's carrier relay, linkcond's own code: it must be within the
    /// latency bound of when a bare listener in the wire's namespace heard the client side change (the relay's
    /// input). Directly, c-wl0 is wl0's veth peer and the kernel alone changes its carrier (linkwatch), so only
    /// that it happens is checked. `t0` is when the client's own link change had completed (the request
    /// acknowledged): taking an interface down waits for the kernel to quiesce it, which takes milliseconds on
    /// a busy machine, before anything can reach the far side of a wire.
    @discardableResult
    private func awaitRouterCarrier(
        _ lab: MonitorLab, _ carrier: Bool, t0: UInt64, _ label: String, controls: [LinkNotificationControl], trials: LatencyTrials,
        file: StaticString = #filePath, line: UInt = #line
    ) throws -> Double? {
        let deadline = t0 + 2_000_000_000
        while MonotonicClock.nanoseconds() < deadline {
            let now = MonotonicClock.nanoseconds()
            if try lab.routerLinks.link(named: T.routerWifiInterface).carrier == carrier {
                let elapsed = Double(now &- t0) / 1e6
                if lab.layout == .wire {
                    // The wire's listener alone: the relay's input is the carrier change of wl0's peer there.
                    trials.record("\(label): c-wl0 \(carrier ? "got" : "lost") carrier", now &- t0, control: heard(Array(controls.suffix(1)), after: t0))
                }
                return elapsed
            }
            usleep(100)
        }
        XCTFail("\(label): the router's c-wl0 never \(carrier ? "got" : "lost") carrier", file: file, line: line)
        return nil
    }

    private func checkLinkChangesAreReported(_ layout: SandboxLayout) throws {
        let lab = try makeLab(layout: layout)
        let controls = try controls(lab)
        let recorder = PathUpdateRecorder()
        let monitor = try startMonitor(lab, recorder: recorder)
        assertSatisfiedViaWifi(monitor.currentPath, "baseline")
        _ = recorder.wait { $0.isBaseline }
        let trials = LatencyTrials()
        let name = layout.rawValue

        for _ in 1...Self.latencyTrials {
            // (a) The router's end goes down: wl0 keeps IFF_UP but loses carrier.
            var mark = recorder.count
            var t0 = try timedSetLink(lab.routerLinks, T.routerWifiInterface, up: false)
            if let update = awaitTimedUpdate(recorder, after: mark, t0: t0, "\(name): router c-wl0 down -> unsatisfied", controls: controls,
                                             trials: trials, { $0.path.status != .satisfied }) {
                assertUnsatisfied(update.path, .noCarrier, "router end down")
                XCTAssertFalse(update.isBaseline)
                XCTAssertEqual(update.generation, monitor.generation)
            }
            waitUntilQuiet(monitor)
            try assertMatchesKernel(monitor, lab, "router end down")

            // (b) The router's end comes up again: carrier is back, nothing was flushed.
            mark = recorder.count
            t0 = try timedSetLink(lab.routerLinks, T.routerWifiInterface, up: true)
            if let update = awaitTimedUpdate(recorder, after: mark, t0: t0, "\(name): router c-wl0 up -> satisfied", controls: controls,
                                             trials: trials, { $0.path.status == .satisfied }) {
                assertSatisfiedViaWifi(update.path, "router end up")
            }
            waitUntilQuiet(monitor)
            try assertMatchesKernel(monitor, lab, "router end up")

            // (c) The client's own wl0 goes down: no interface but loopback is up -> notAvailable.
            mark = recorder.count
            t0 = try timedSetLink(lab.clientLinks, T.wifiInterface, up: false)
            var completed = MonotonicClock.nanoseconds()
            if let update = awaitTimedUpdate(recorder, after: mark, t0: t0, "\(name): client wl0 down -> unsatisfied", controls: controls,
                                             trials: trials, { $0.path.status != .satisfied }) {
                assertUnsatisfied(update.path, .notAvailable, "client wl0 down")
            }
            // Through the wire, the router sees it as the client side of a cable would show it: no carrier.
            // (Directly, c-wl0 is wl0's peer and loses carrier at once, as any veth.)
            try awaitRouterCarrier(lab, false, t0: completed, "\(name): client wl0 down", controls: controls, trials: trials)
            waitUntilQuiet(monitor)
            try assertMatchesKernel(monitor, lab, "client wl0 down")
            XCTAssertFalse(
                try lab.clientLinks.routes().contains { $0.isDefault && $0.family == .inet && $0.table == .main },
                "the kernel was expected to flush wl0's IPv4 default route when wl0 went down")

            // (d) wl0 up again: carrier and the IPv4 address are back, no default route is -> noRoute.
            mark = recorder.count
            t0 = try timedSetLink(lab.clientLinks, T.wifiInterface, up: true)
            completed = MonotonicClock.nanoseconds()
            try awaitRouterCarrier(lab, true, t0: completed, "\(name): client wl0 up", controls: controls, trials: trials)
            let noRoute = recorder.wait(after: mark) { $0.path.unsatisfiedReason == .noRoute }
            assertUnsatisfied(noRoute?.path, .noRoute, "client wl0 up, before its routes are restored")
            waitUntilQuiet(monitor)
            try assertMatchesKernel(monitor, lab, "client wl0 up without routes")
            XCTAssertFalse(recorder.updates(after: mark).contains { $0.path.status == .satisfied }, "satisfied without a default route")

            // (e) Addresses and routes restored: satisfied again, both families.
            mark = recorder.count
            try restoreWifi(lab)
            let restored = recorder.wait(after: mark) { $0.path.status == .satisfied && $0.path.supportsIPv4 && $0.path.supportsIPv6 }
            waitUntilQuiet(monitor)
            assertSatisfiedViaWifi(restored?.path, "wl0 restored")
            try assertMatchesKernel(monitor, lab, "wl0 restored")
        }
        trials.check(bound: Self.latencyBound)
        print("path monitor statistics (latency test): \(monitor.statistics)")
    }

    // MARK: 3. Reasons

    func testRemovingRoutesAndAddressesGivesTheMatchingReason() throws {
        let lab = try makeLab()
        let recorder = PathUpdateRecorder()
        let monitor = try startMonitor(lab, recorder: recorder)
        let wl0 = T.wifiInterface
        assertSatisfiedViaWifi(monitor.currentPath, "baseline")

        // Only the IPv4 default route goes: still satisfied, over IPv6 alone.
        var mark = recorder.count
        try lab.clientLinks.deleteRoute(destination: nil, gateway: Self.wifiIPv4Gateway, interface: wl0, metric: T.wifiMetric)
        let v6only = recorder.wait(after: mark) { !$0.path.supportsIPv4 }
        XCTAssertEqual(v6only?.path.status, .satisfied, v6only?.path.summary ?? "no update")
        XCTAssertEqual(v6only?.path.supportsIPv6, true)
        XCTAssertEqual(v6only?.path.availableInterfaces, [Self.wl0])
        XCTAssertEqual(v6only?.path.gateways, [Self.wifiIPv6Gateway.description])
        XCTAssertEqual(v6only?.path.supportsDNS, true, "the IPv6 nameserver is still usable")
        waitUntilQuiet(monitor)
        try assertMatchesKernel(monitor, lab, "IPv4 default route deleted")

        // The IPv6 default route goes too: noRoute.
        mark = recorder.count
        try lab.clientLinks.deleteRoute(destination: nil, gateway: Self.wifiIPv6Gateway, interface: wl0, metric: T.wifiMetric)
        assertUnsatisfied(recorder.wait(after: mark) { $0.path.status != .satisfied }?.path, .noRoute, "both default routes deleted")
        waitUntilQuiet(monitor)
        try assertMatchesKernel(monitor, lab, "both default routes deleted")

        // Restored.
        mark = recorder.count
        try restoreWifi(lab)
        assertSatisfiedViaWifi(
            recorder.wait(after: mark) { $0.path.status == .satisfied && $0.path.supportsIPv4 && $0.path.supportsIPv6 }?.path,
            "default routes restored")
        waitUntilQuiet(monitor)
        try assertMatchesKernel(monitor, lab, "default routes restored")

        // wl0's global addresses go (the link-local one stays, and does not count): noAddress.
        mark = recorder.count
        try lab.clientLinks.deleteAddress(T.wifiSubnet.peerIPv4, from: wl0)
        try lab.clientLinks.deleteAddress(T.wifiSubnet.peerIPv6, from: wl0)
        assertUnsatisfied(recorder.wait(after: mark) { $0.path.status != .satisfied }?.path, .noAddress, "addresses deleted")
        waitUntilQuiet(monitor)
        try assertMatchesKernel(monitor, lab, "addresses deleted")

        // The addresses come back, the routes are not touched. Removing an interface's last IPv4 address
        // makes the kernel flush the IPv4 routes through it WITHOUT an RTM_DELROUTE (fib_disable_ip), while
        // the IPv6 default route survives the removal of the IPv6 address: the truth is now "satisfied over
        // IPv6 only", and a monitor that kept the silently flushed IPv4 default route would claim IPv4.
        mark = recorder.count
        try lab.clientLinks.addAddress(T.wifiSubnet.peerIPv4, to: wl0)
        try lab.clientLinks.addAddress(T.wifiSubnet.peerIPv6, to: wl0, noDAD: true)
        _ = recorder.wait(after: mark) { $0.path.status == .satisfied }
        waitUntilQuiet(monitor)
        let readdressed = try assertMatchesKernel(monitor, lab, "addresses restored, routes not yet")
        XCTAssertEqual(
            readdressed?.supportsIPv4, false,
            "the IPv4 default route was flushed with the address; the monitor must not report IPv4: \(readdressed?.summary ?? "nil")")

        // Routes restored as well: satisfied, both families.
        mark = recorder.count
        try restoreWifi(lab)
        _ = recorder.wait(after: mark) { $0.path.status == .satisfied && $0.path.supportsIPv4 && $0.path.supportsIPv6 }
        waitUntilQuiet(monitor)
        assertSatisfiedViaWifi(monitor.currentPath, "addresses and routes restored")
        try assertMatchesKernel(monitor, lab, "addresses and routes restored")
    }

    /// The path is a function of the kernel's tables, not of the order their rows reached the monitor:
    /// removing the IPv4 default route and adding it back leaves the kernel as it was (its dump lists IPv4
    /// routes before IPv6 ones), so the monitor's path must be the baseline again, gateways in the same order.
    func testTheSameKernelStateGivesTheSamePathWhateverTheHistory() throws {
        let lab = try makeLab()
        let recorder = PathUpdateRecorder()
        let monitor = try startMonitor(lab, recorder: recorder)
        let baseline = monitor.currentPath
        assertSatisfiedViaWifi(baseline, "baseline")
        waitUntilQuiet(monitor)
        let mark = recorder.count
        try lab.clientLinks.deleteRoute(destination: nil, gateway: Self.wifiIPv4Gateway, interface: T.wifiInterface, metric: T.wifiMetric)
        XCTAssertNotNil(recorder.wait(after: mark) { !$0.path.supportsIPv4 })
        try lab.clientLinks.addRoute(destination: nil, gateway: Self.wifiIPv4Gateway, interface: T.wifiInterface, metric: T.wifiMetric)
        XCTAssertNotNil(recorder.wait(after: mark) { $0.path.supportsIPv4 })
        waitUntilQuiet(monitor)
        let again = try assertMatchesKernel(monitor, lab, "IPv4 default route removed and added back")
        XCTAssertEqual(again, baseline, "same kernel tables, different path: \(String(describing: again?.gateways)) vs \(String(describing: baseline?.gateways))")
    }

    // MARK: 4. Cellular

    func testCellularTakesOverWhileWifiIsDownAndFiltersExcludeIt() throws {
        try checkCellularTakesOverWhileWifiIsDown(.direct)
    }

    /// The same through the wire: the router's end of wifi going down reaches wl0 through the carrier
    /// relay while cellular keeps its carrier, so the path moves to cellular, and back.
    func testCellularTakesOverWhileWifiIsDownThroughTheWire() throws {
        try checkCellularTakesOverWhileWifiIsDown(.wire)
    }

    private func checkCellularTakesOverWhileWifiIsDown(_ layout: SandboxLayout) throws {
        let lab = try makeLab(cellular: true, layout: layout)
        let recorder = PathUpdateRecorder()
        let monitor = try startMonitor(lab, recorder: recorder)
        let wifiOnlyRecorder = PathUpdateRecorder()
        let wifiOnly = try startMonitor(lab, options: PathEvaluationOptions(requiredInterfaceType: .wifi), recorder: wifiOnlyRecorder)
        let noCellularRecorder = PathUpdateRecorder()
        let noCellular = try startMonitor(
            lab, options: PathEvaluationOptions(prohibitedInterfaceTypes: [.cellular]), recorder: noCellularRecorder)
        let wifiGateways = [Self.wifiIPv4Gateway, Self.wifiIPv6Gateway].map(\.description)
        let cellularGateways = [Self.cellularIPv4Gateway, Self.cellularIPv6Gateway].map(\.description)

        func assertBothUplinks(_ path: NetworkPath?, _ when: String, file: StaticString = #filePath, line: UInt = #line) {
            XCTAssertEqual(path?.status, .satisfied, when, file: file, line: line)
            XCTAssertEqual(path?.availableInterfaces, [Self.wl0, Self.ww0], "wifi (metric 100) first: \(when)", file: file, line: line)
            XCTAssertEqual(path?.usesInterfaceType(.wifi), true, when, file: file, line: line)
            XCTAssertEqual(path?.isExpensive, false, when, file: file, line: line)
            XCTAssertEqual(path.map { Set($0.gateways.prefix(2)) }, Set(wifiGateways), "wifi's gateways first: \(when)", file: file, line: line)
            XCTAssertEqual(path.map { Set($0.gateways.suffix(2)) }, Set(cellularGateways), when, file: file, line: line)
        }
        func assertCellularOnly(_ path: NetworkPath?, _ when: String, file: StaticString = #filePath, line: UInt = #line) {
            XCTAssertEqual(path?.status, .satisfied, when, file: file, line: line)
            XCTAssertEqual(path?.availableInterfaces, [Self.ww0], when, file: file, line: line)
            XCTAssertEqual(path?.usesInterfaceType(.cellular), true, when, file: file, line: line)
            XCTAssertEqual(path?.isExpensive, true, when, file: file, line: line)
            XCTAssertEqual(path?.supportsIPv4, true, when, file: file, line: line)
            XCTAssertEqual(path?.supportsIPv6, true, when, file: file, line: line)
            XCTAssertEqual(path.map { Set($0.gateways) }, Set(cellularGateways), when, file: file, line: line)
        }
        func assertFilteredMonitorsSatisfiedViaWifi(_ when: String, file: StaticString = #filePath, line: UInt = #line) throws {
            for (name, filtered) in [("requiredInterfaceType .wifi", wifiOnly), ("prohibitedInterfaceTypes [.cellular]", noCellular)] {
                assertSatisfiedViaWifi(filtered.currentPath, "\(name), \(when)", file: file, line: line)
                try assertMatchesKernel(filtered, lab, "\(name), \(when)", file: file, line: line)
            }
        }
        func assertFilteredMonitorsExcludeCellular(_ when: String, file: StaticString = #filePath, line: UInt = #line) throws {
            for (name, filtered) in [("requiredInterfaceType .wifi", wifiOnly), ("prohibitedInterfaceTypes [.cellular]", noCellular)] {
                // ww0 is usable but the filter excludes it: the evaluator says interfaceFiltered (rather than
                // the reason wl0 alone would give).
                assertUnsatisfied(filtered.currentPath, .interfaceFiltered, "\(name), \(when)", file: file, line: line)
                try assertMatchesKernel(filtered, lab, "\(name), \(when)", file: file, line: line)
            }
        }

        assertBothUplinks(monitor.currentPath, "baseline")
        try assertFilteredMonitorsSatisfiedViaWifi("baseline")

        // wl0 loses carrier (the router's end goes down): cellular takes over, and it is expensive.
        var mark = recorder.count
        var filteredMarks = (wifiOnlyRecorder.count, noCellularRecorder.count)
        try lab.routerLinks.setLink(T.routerWifiInterface, up: false)
        assertCellularOnly(recorder.wait(after: mark) { $0.path.usesInterfaceType(.cellular) }?.path, "wl0 without carrier")
        XCTAssertFalse(recorder.updates(after: mark).contains { $0.path.status != .satisfied }, "the path never stopped being satisfied")
        _ = wifiOnlyRecorder.wait(after: filteredMarks.0) { $0.path.status != .satisfied }
        _ = noCellularRecorder.wait(after: filteredMarks.1) { $0.path.status != .satisfied }
        waitUntilQuiet(monitor)
        try assertMatchesKernel(monitor, lab, "wl0 without carrier")
        try assertFilteredMonitorsExcludeCellular("wl0 without carrier")

        // Carrier back: wifi first again, not expensive.
        mark = recorder.count
        filteredMarks = (wifiOnlyRecorder.count, noCellularRecorder.count)
        try lab.routerLinks.setLink(T.routerWifiInterface, up: true)
        assertBothUplinks(recorder.wait(after: mark) { $0.path.usesInterfaceType(.wifi) }?.path, "wl0 carrier back")
        _ = wifiOnlyRecorder.wait(after: filteredMarks.0) { $0.path.status == .satisfied }
        _ = noCellularRecorder.wait(after: filteredMarks.1) { $0.path.status == .satisfied }
        waitUntilQuiet(monitor)
        try assertMatchesKernel(monitor, lab, "wl0 carrier back")
        try assertFilteredMonitorsSatisfiedViaWifi("wl0 carrier back")

        // The client's own wl0 goes down: cellular again. When it comes up, its routes were flushed, so the
        // path honestly stays on cellular until they are restored.
        mark = recorder.count
        try lab.clientLinks.setLink(T.wifiInterface, up: false)
        assertCellularOnly(recorder.wait(after: mark) { $0.path.usesInterfaceType(.cellular) }?.path, "wl0 down")
        waitUntilQuiet(monitor)
        try assertMatchesKernel(monitor, lab, "wl0 down")
        for (name, filtered) in [("requiredInterfaceType .wifi", wifiOnly), ("prohibitedInterfaceTypes [.cellular]", noCellular)] {
            assertUnsatisfied(filtered.currentPath, .interfaceFiltered, "\(name), wl0 down")
        }
        try lab.clientLinks.setLink(T.wifiInterface, up: true)
        waitUntilQuiet(monitor)
        assertCellularOnly(try assertMatchesKernel(monitor, lab, "wl0 up, routes not restored"), "wl0 up, routes not restored")
        mark = recorder.count
        try restoreWifi(lab)
        _ = recorder.wait(after: mark) { $0.path.usesInterfaceType(.wifi) && $0.path.supportsIPv4 && $0.path.supportsIPv6 }
        waitUntilQuiet(monitor)
        waitUntilQuiet(wifiOnly)
        assertBothUplinks(try assertMatchesKernel(monitor, lab, "wl0 restored"), "wl0 restored")
        try assertFilteredMonitorsSatisfiedViaWifi("wl0 restored")
    }

    // MARK: 5. Quick succession

    func testDownAndUpInQuickSuccessionDeliversEveryStatusChange() throws {
        let lab = try makeLab()
        let recorder = PathUpdateRecorder()
        let monitor = try startMonitor(lab, recorder: recorder)
        let wl0 = T.wifiInterface
        XCTAssertNotNil(recorder.wait { $0.isBaseline })
        waitUntilQuiet(monitor)

        // (a) Routes: their notifications are sent synchronously, so four requests back to back land in one
        // burst. satisfied -> unsatisfied -> satisfied must come out as separate updates, in order.
        var mark = recorder.count
        try lab.clientLinks.deleteRoute(destination: nil, gateway: Self.wifiIPv4Gateway, interface: wl0, metric: T.wifiMetric)
        try lab.clientLinks.deleteRoute(destination: nil, gateway: Self.wifiIPv6Gateway, interface: wl0, metric: T.wifiMetric)
        try lab.clientLinks.addRoute(destination: nil, gateway: Self.wifiIPv4Gateway, interface: wl0, metric: T.wifiMetric)
        try lab.clientLinks.addRoute(destination: nil, gateway: Self.wifiIPv6Gateway, interface: wl0, metric: T.wifiMetric)
        _ = recorder.wait(after: mark) { $0.path.status == .satisfied && $0.path.supportsIPv4 && $0.path.supportsIPv6 }
        waitUntilQuiet(monitor)
        var burst = recorder.updates(after: mark)
        let statuses = burst.map(\.path.status)
        print("path monitor: routes removed and restored back to back -> \(burst.map(\.path.summary))")
        guard let down = statuses.firstIndex(of: .unsatisfied) else {
            return XCTFail("the unsatisfied moment was coalesced away: \(burst.map(\.path.summary))")
        }
        XCTAssertEqual(burst[down].path.unsatisfiedReason, .noRoute)
        XCTAssertTrue(statuses[down...].contains(.satisfied), "no satisfied after the unsatisfied one: \(statuses)")
        assertSatisfiedViaWifi(burst.last?.path, "last update of the route burst")
        assertSatisfiedViaWifi(monitor.currentPath, "after the route burst")
        try assertMatchesKernel(monitor, lab, "after the route burst")

        // (b) The router's end down and up, two requests back to back. The client namespace only learns of
        // wl0's carrier through linkwatch, which reports the state it finds when it runs: when it runs after
        // both requests the kernel itself never says "no carrier" (`ip monitor link` shows only the final
        // state). So a witness listener in the client namespace records what the kernel said, and whenever it
        // said "no carrier" the monitor must have delivered unsatisfied, then satisfied again.
        let witness = try lab.client.run { try NetlinkListener(groups: [1 /* RTNLGRP_LINK */]) }
        let witnessFD = witness.socket.fileDescriptor
        _ = fcntl(witnessFD, F_SETFL, fcntl(witnessFD, F_GETFL) | O_NONBLOCK)
        func witnessedWifiLinks(for seconds: Double, until done: ([Link]) -> Bool = { _ in false }) -> [Link] {
            var links: [Link] = []
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                var poller = pollfd(fd: witnessFD, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, 5) > 0 else {
                    if done(links) { break }
                    continue
                }
                while let messages = try? witness.receive() {
                    for message in messages where message.type == 16 /* RTM_NEWLINK */ {
                        if let link = try? Link.decode(message), link.name == wl0 { links.append(link) }
                    }
                }
            }
            return links
        }
        let routerIndex = try lab.routerLinks.index(of: T.routerWifiInterface)
        let downRequest = LinkRequest.setUp(index: routerIndex, false)
        let upRequest = LinkRequest.setUp(index: routerIndex, true)
        var trials = 0
        var kernelBlips = 0
        while trials < 20 && kernelBlips < 3 {
            trials += 1
            waitUntilQuiet(monitor, quiet: 0.05)
            _ = witnessedWifiLinks(for: 0.02)  // drain
            mark = recorder.count
            try lab.routerLinks.connection.request(downRequest, operation: "ip link set dev c-wl0 down")
            try lab.routerLinks.connection.request(upRequest, operation: "ip link set dev c-wl0 up")
            let said = witnessedWifiLinks(for: 1) { links in links.last.map { $0.carrier && $0.operationalState == .up } ?? false }
            waitUntilQuiet(monitor, quiet: 0.05)
            burst = recorder.updates(after: mark)
            let kernelSaidNoCarrier = said.contains { !$0.carrier }
            if kernelSaidNoCarrier {
                kernelBlips += 1
                let down = burst.firstIndex { $0.path.status == .unsatisfied }
                XCTAssertNotNil(down, "trial \(trials): the kernel reported wl0 without carrier but the monitor delivered \(burst.map(\.path.summary))")
                if let down {
                    XCTAssertEqual(burst[down].path.unsatisfiedReason, .noCarrier)
                    XCTAssertTrue(burst[down...].contains { $0.path.status == .satisfied }, "trial \(trials): \(burst.map(\.path.summary))")
                }
            } else {
                XCTAssertFalse(
                    burst.contains { $0.path.status != .satisfied },
                    "trial \(trials): the kernel never reported a loss of carrier, yet the monitor delivered \(burst.map(\.path.summary))")
            }
            XCTAssertEqual(monitor.currentPath?.status, .satisfied, "trial \(trials)")
        }
        print("path monitor: router end down+up back to back: the kernel reported the loss of carrier in \(kernelBlips) of \(trials) trials")
        XCTAssertGreaterThan(kernelBlips, 0, "the kernel coalesced every down+up pair; nothing was tested")
        assertSatisfiedViaWifi(monitor.currentPath, "after the quick flaps")
        try assertMatchesKernel(monitor, lab, "after the quick flaps")

        // Every delivered update reached the handler, in order, none twice.
        waitUntilQuiet(monitor)
        _ = eventually(timeout: 1) { recorder.count == Int(monitor.statistics.updates) }
        XCTAssertEqual(recorder.updates.map(\.sequence), Array(0..<UInt64(recorder.count)))
        XCTAssertEqual(UInt64(recorder.count), monitor.statistics.updates)
        XCTAssertTrue(recorder.updates.allSatisfy { $0.generation == 1 })
        XCTAssertEqual(recorder.updates.filter(\.isBaseline).count, 1)
    }

    // MARK: 6. A thousand flaps

    func testThousandFlapsEndOnTheTrueStateWithBoundedMemory() async throws {
        try await checkThousandFlapsEndOnTheTrueState(.direct)
    }

    /// The same through the wire: the carrier relay follows 1000 flaps of the router's end (its
    /// notifications may overflow; it reads the links afresh), so wl0 ends without carrier after a last
    /// down and with carrier after a last up, and the monitor ends on that truth.
    func testThousandFlapsThroughTheWireEndOnTheTrueState() async throws {
        try await checkThousandFlapsEndOnTheTrueState(.wire)
    }

    private func checkThousandFlapsEndOnTheTrueState(_ layout: SandboxLayout) async throws {
        let lab = try makeLab(layout: layout)
        let recorder = PathUpdateRecorder(keepsAll: false)
        let monitor = try startMonitor(lab, recorder: recorder)
        // A slow consumer: subscribed now, reads nothing until the end.
        let stream = monitor.updates()
        let routerIndex = try lab.routerLinks.index(of: T.routerWifiInterface)
        let downRequest = LinkRequest.setUp(index: routerIndex, false)
        let upRequest = LinkRequest.setUp(index: routerIndex, true)

        /// 1000 down/up pairs as fast as netlink takes them, then a last down if `endDown`.
        func flap(endDown: Bool, _ label: String) throws {
            let started = Date()
            for _ in 0..<1000 {
                try lab.routerLinks.connection.request(downRequest, operation: "ip link set dev c-wl0 down")
                try lab.routerLinks.connection.request(upRequest, operation: "ip link set dev c-wl0 up")
            }
            if endDown { try lab.routerLinks.connection.request(downRequest, operation: "ip link set dev c-wl0 down") }
            let sent = Date().timeIntervalSince(started)
            waitUntilQuiet(monitor, quiet: 0.3)
            print(String(format: "path monitor, %@, %@: 1000 flaps sent in %.2f s, quiet after %.2f s; statistics %@",
                layout.rawValue, label, sent, Date().timeIntervalSince(started), "\(monitor.statistics)"))
        }

        try flap(endDown: true, "run 1 (ends down)")
        let afterDown = try assertMatchesKernel(monitor, lab, "after 1000 flaps ending down")
        assertUnsatisfied(afterDown, .noCarrier, "after 1000 flaps ending down")
        XCTAssertTrue(eventually(timeout: 2) { recorder.last?.path == monitor.currentPath }, "the handler did not get the final state")
        XCTAssertEqual(recorder.last?.path.unsatisfiedReason, .noCarrier)
        let residentBefore = residentBytes()
        let descriptorsBefore = openDescriptorCount()

        try lab.routerLinks.connection.request(upRequest, operation: "ip link set dev c-wl0 up")
        try flap(endDown: false, "run 2 (ends up)")
        let afterUp = try assertMatchesKernel(monitor, lab, "after 1000 more flaps ending up")
        assertSatisfiedViaWifi(afterUp, "after 1000 more flaps ending up")
        XCTAssertTrue(eventually(timeout: 2) { recorder.last?.path == monitor.currentPath }, "the handler did not get the final state")
        let residentAfter = residentBytes()
        let growth = residentAfter - residentBefore
        print(String(format: "path monitor: resident memory %.1f MiB -> %.1f MiB over the second run (%+.2f MiB); handler calls %d",
            Double(residentBefore) / 1_048_576, Double(residentAfter) / 1_048_576, Double(growth) / 1_048_576, recorder.count))
        XCTAssertLessThan(growth, 5 << 20, "resident memory grew by \(growth) bytes over 1000 flaps")
        XCTAssertLessThanOrEqual(openDescriptorCount(), descriptorsBefore + 1, "descriptors leaked during the flaps")
        let statistics = monitor.statistics
        XCTAssertGreaterThan(statistics.events, 0)
        XCTAssertGreaterThan(statistics.updates, 2)
        XCTAssertEqual(UInt64(recorder.count), statistics.updates, "every delivered update reached the handler")

        // The slow consumer kept only the newest 64, ending with the final state.
        let final = monitor.currentUpdate
        monitor.cancel()
        var buffered: [PathUpdate] = []
        for await update in stream { buffered.append(update) }
        print("path monitor: the unread stream held \(buffered.count) updates of \(statistics.updates) delivered")
        XCTAssertLessThanOrEqual(buffered.count, 64)
        XCTAssertEqual(buffered.count, min(64, Int(statistics.updates)))
        XCTAssertEqual(buffered.last, final)
        XCTAssertEqual(buffered.map(\.sequence), buffered.map(\.sequence).sorted(), "the stream is in order")
    }

    /// A burst of notifications: thousands of host routes through wl0 sent as fast as netlink takes them
    /// (the kernel inserts an IPv4 route in microseconds), then the IPv4 default route removed. Whether the
    /// kernel drops notifications on the way (ENOBUFS, answered by a resync) depends on how fast the monitor
    /// drains; either way it must end on the kernel's truth, in reasonable time.
    func testNotificationFloodEndsOnTheTruth() throws {
        let lab = try makeLab()
        let recorder = PathUpdateRecorder()
        let monitor = try startMonitor(lab, recorder: recorder)
        // Tunable for exploring (the default keeps the test short): LINKCOND_TEST_FLOOD_ROUTES, _TIMEOUT.
        let environment = ProcessInfo.processInfo.environment
        let count = environment["LINKCOND_TEST_FLOOD_ROUTES"].flatMap { Int($0) } ?? 2000
        let timeout = environment["LINKCOND_TEST_FLOOD_TIMEOUT"].flatMap { Double($0) } ?? 20
        let index = try lab.clientLinks.index(of: T.wifiInterface)
        let requests = (0..<count).map { n in
            RouteRequest.add(
                destination: IPPrefix("198.18.\(64 + n / 256).\(n % 256)/32")!, gateway: Self.wifiIPv4Gateway, interfaceIndex: index,
                metric: nil, family: .inet)
        }
        let started = Date()
        for request in requests {
            try lab.clientLinks.connection.request(request, operation: "ip route add 198.18.x.y/32 via 198.18.1.1 dev wl0")
        }
        try lab.clientLinks.deleteRoute(destination: nil, gateway: Self.wifiIPv4Gateway, interface: T.wifiInterface, metric: T.wifiMetric)
        let sent = Date().timeIntervalSince(started)
        let caughtUp = recorder.wait(timeout: timeout) { !$0.path.supportsIPv4 }
        let elapsed = Date().timeIntervalSince(started)
        print(String(format: "path monitor: %d routes and the IPv4 default route's removal sent in %.2f s; the monitor reported it after %.2f s; statistics %@",
            count, sent, elapsed, "\(monitor.statistics)"))
        XCTAssertNotNil(caughtUp, "the monitor never reported the removal of the IPv4 default route (statistics \(monitor.statistics))")
        let path = try assertMatchesKernel(monitor, lab, "after the flood")
        XCTAssertEqual(path?.status, .satisfied)
        XCTAssertEqual(path?.supportsIPv4, false, "the IPv4 default route was removed at the end of the flood")
        XCTAssertEqual(path?.supportsIPv6, true)
    }

    // MARK: 7. Generations

    func testCancelDropsQueuedUpdatesAndRestartBumpsTheGeneration() throws {
        let lab = try makeLab()
        let recorder = PathUpdateRecorder()
        let queue = DispatchQueue(label: "linkcond.test.blocked")
        let monitor = try startMonitor(lab, recorder: recorder, queue: queue)
        let first = monitor.generation
        XCTAssertEqual(first, 1)
        XCTAssertEqual(recorder.wait { _ in true }?.isBaseline, true)
        XCTAssertThrowsError(try monitor.start(queue: queue, handler: recorder.handler), "start on a running monitor") { error in
            guard case .alreadyRunning = error as? PathMonitorError else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(monitor.generation, first, "a refused start does not bump the generation")

        // Block the handler's queue, make a change, wait until the update is delivered (and so queued
        // behind the block), cancel, unblock: the handler must not run for it.
        let gate = DispatchSemaphore(value: 0)
        let blocked = DispatchSemaphore(value: 0)
        queue.async {
            blocked.signal()
            gate.wait()
        }
        blocked.wait()
        let mark = recorder.count
        let updatesBefore = monitor.statistics.updates
        try lab.routerLinks.setLink(T.routerWifiInterface, up: false)
        XCTAssertTrue(eventually(timeout: 2, interval: 0.001) { monitor.currentPath?.status == .unsatisfied }, "no update for the change")
        XCTAssertEqual(monitor.statistics.updates, updatesBefore + 1)
        usleep(50_000)  // the handler call is enqueued right after currentPath is set
        monitor.cancel()
        XCTAssertFalse(monitor.isRunning)
        gate.signal()
        queue.sync {}
        XCTAssertEqual(recorder.updates(after: mark), [], "a handler call queued before cancel ran after it")

        // After cancel: changes are not delivered at all.
        let updatesAtCancel = monitor.statistics.updates
        try lab.routerLinks.setLink(T.routerWifiInterface, up: true)
        try lab.routerLinks.setLink(T.routerWifiInterface, up: false)
        try lab.routerLinks.setLink(T.routerWifiInterface, up: true)
        usleep(300_000)
        queue.sync {}
        XCTAssertEqual(recorder.updates(after: mark), [], "updates delivered after cancel")
        XCTAssertEqual(monitor.statistics.updates, updatesAtCancel)
        XCTAssertEqual(monitor.generation, first, "cancel alone does not bump the generation")

        // Start again: a new generation, a fresh baseline of the current (satisfied) state.
        try monitor.start(queue: queue, handler: recorder.handler)
        let second = monitor.generation
        XCTAssertEqual(second, first + 1)
        XCTAssertEqual(monitor.currentUpdate?.generation, second)
        XCTAssertEqual(monitor.currentUpdate?.isBaseline, true)
        XCTAssertEqual(monitor.currentUpdate?.sequence, 0)
        assertSatisfiedViaWifi(monitor.currentPath, "baseline of the second generation")
        let restart = recorder.count
        try lab.routerLinks.setLink(T.routerWifiInterface, up: false)
        XCTAssertNotNil(recorder.wait(after: restart) { $0.path.status == .unsatisfied }, "second generation: no update")
        try lab.routerLinks.setLink(T.routerWifiInterface, up: true)
        XCTAssertNotNil(recorder.wait(after: restart) { $0.path.status == .satisfied && !$0.isBaseline }, "second generation: no update")
        waitUntilQuiet(monitor)
        queue.sync {}
        let secondRun = recorder.updates(after: mark)
        XCTAssertEqual(secondRun.first?.isBaseline, true)
        XCTAssertEqual(secondRun.first?.sequence, 0)
        XCTAssertTrue(secondRun.allSatisfy { $0.generation == second }, "an update of generation \(first) after cancel: \(secondRun)")
        XCTAssertEqual(secondRun.map(\.sequence), Array(0..<UInt64(secondRun.count)))
        try assertMatchesKernel(monitor, lab, "second generation")
    }

    // MARK: 8. Restart

    func testRestartGivesAFreshBaselineAndReleasesTheOldRun() async throws {
        let lab = try makeLab()
        let recorder = PathUpdateRecorder()
        let monitor = try startMonitor(lab, recorder: recorder)
        let stream = monitor.updates()
        try lab.clientLinks.deleteRoute(destination: nil, gateway: Self.wifiIPv4Gateway, interface: T.wifiInterface, metric: T.wifiMetric)
        XCTAssertNotNil(recorder.wait { !$0.path.supportsIPv4 })
        waitUntilQuiet(monitor)
        let lastOfFirstRun = monitor.currentUpdate
        monitor.cancel()
        // The stream of the first run ends on cancel, after what it holds.
        var streamed: [PathUpdate] = []
        for await update in stream { streamed.append(update) }
        XCTAssertEqual(streamed.first?.isBaseline, true)
        XCTAssertEqual(streamed.last, lastOfFirstRun)

        // Changed while cancelled: the IPv4 route is back, the IPv6 one gone. The new baseline must show it.
        try addDefaultRouteIfMissing(lab.clientLinks, via: Self.wifiIPv4Gateway, interface: T.wifiInterface, metric: T.wifiMetric)
        try lab.clientLinks.deleteRoute(destination: nil, gateway: Self.wifiIPv6Gateway, interface: T.wifiInterface, metric: T.wifiMetric)
        let mark = recorder.count
        try monitor.start(queue: DispatchQueue(label: "linkcond.test.restart"), handler: recorder.handler)
        let baseline = monitor.currentUpdate
        XCTAssertEqual(baseline?.isBaseline, true)
        XCTAssertEqual(baseline?.sequence, 0)
        XCTAssertEqual(baseline?.generation, 2)
        XCTAssertEqual(baseline?.path.status, .satisfied)
        XCTAssertEqual(baseline?.path.supportsIPv4, true)
        XCTAssertEqual(baseline?.path.supportsIPv6, false)
        XCTAssertEqual(recorder.wait(after: mark) { _ in true }, baseline, "the handler's first call of the new run is its baseline")
        try assertMatchesKernel(monitor, lab, "after restart")
        // And it follows changes.
        try restoreWifi(lab)
        XCTAssertNotNil(recorder.wait(after: mark) { $0.path.supportsIPv6 && $0.generation == 2 })
        waitUntilQuiet(monitor)
        assertSatisfiedViaWifi(monitor.currentPath, "restored after restart")

        // Start/cancel cycles release the old runs' sockets and threads.
        monitor.cancel()
        usleep(250_000)  // the old loop notices within its 100 ms poll
        let descriptors = openDescriptorCount()
        for cycle in 0..<5 {
            try monitor.start(queue: DispatchQueue(label: "linkcond.test.cycle"), handler: recorder.handler)
            XCTAssertEqual(monitor.generation, UInt64(3 + cycle))
            XCTAssertEqual(monitor.currentUpdate?.isBaseline, true)
            monitor.cancel()
        }
        let released = eventually(timeout: 2) { openDescriptorCount() <= descriptors + 1 }
        XCTAssertTrue(released, "descriptors: \(descriptors) before five start/cancel cycles, \(openDescriptorCount()) after")
    }
}

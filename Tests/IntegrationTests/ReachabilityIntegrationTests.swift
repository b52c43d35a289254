import Conditioning
import Dispatch
import Foundation
import Glibc
import LinkcondBase
import NetNamespace
import PathMonitor
import RouteNetlink
import Sandboxing
import Synchronization
import XCTest

/// Collects a prober's updates from its handler queue and waits for them.
final class ReachabilityLog: Sendable {
    private let updates = Mutex<[ReachabilityUpdate]>([])

    func append(_ update: ReachabilityUpdate) { updates.withLock { $0.append(update) } }
    var all: [ReachabilityUpdate] { updates.withLock { $0 } }

    /// The first update at or after index `from` that satisfies `predicate`, waiting up to `timeout` seconds.
    func first(from: Int = 0, within timeout: Double, where predicate: (ReachabilityUpdate) -> Bool) -> ReachabilityUpdate? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let found = all.dropFirst(from).first(where: predicate) { return found }
            if Date() >= deadline { return nil }
            usleep(20_000)
        }
    }

    /// A one-line account of the updates from `from` on, for failure messages.
    func history(from: Int = 0) -> String {
        all.dropFirst(from).map { update in
            let results = update.results.map { result -> String in
                var text = "\(result.kind)" + (result.success ? "+" : "-")
                if let status = result.httpStatus { text += " \(status)" }
                if let error = result.error { text += " (\(error))" }
                return text
            }
            return "#\(update.round) \(update.state) [\(results.joined(separator: ", "))]"
        }.joined(separator: "; ")
    }
}

/// The prober against a real sandbox and the real `linkcond serve`. Each test builds its own sandbox
/// (unique name, temporary store) and removes it, pass or fail.
final class ReachabilityIntegrationTests: SandboxTestCase {

    /// Brings up a sandbox whose server is a captive portal while `portalFlag` exists; returns it with its
    /// client namespace, once the server answers on IPv4.
    private func sandboxWithServer(portalFlag: String? = nil) throws -> (Sandbox, NamedNamespace) {
        let sandbox = try makeSandbox()
        var arguments = ["serve", "--name", sandbox.topology.name]
        if let portalFlag { arguments += ["--portal-flag", portalFlag] }
        XCTAssertEqual(try sandbox.up(server: .process(executable: try linkcondExecutable(), arguments: arguments)), .created)
        let client = try sandbox.clientNamespace()
        XCTAssertNotNil(try waitUntilReachable(client, SandboxPlan.serverIPv4, port: SandboxPlan.httpPort))
        return (sandbox, client)
    }

    /// Starts a prober in `client` with default settings; cancelled when the test ends.
    private func startProber(_ client: NamedNamespace, settings: ReachabilitySettings = ReachabilitySettings()) -> (ReachabilityProber, ReachabilityLog) {
        let prober = ReachabilityProber(namespace: client, settings: settings)
        let log = ReachabilityLog()
        addTeardownBlock { prober.cancel() }
        prober.start(queue: DispatchQueue(label: "reachability-test")) { log.append($0) }
        return (prober, log)
    }

    /// Starts a path monitor in `client`; cancelled when the test ends.
    private func startMonitor(_ client: NamedNamespace) throws -> PathMonitor {
        let monitor = PathMonitor(namespace: client)
        try monitor.start()
        addTeardownBlock { monitor.cancel() }
        return monitor
    }

    func testOnlineWithSamplesThenPortalWhileThePathIsFine() throws {
        let flag = FileManager.default.temporaryDirectory.appendingPathComponent("lcit-portal-\(getpid())-\(UniqueName.next())").path
        addTeardownBlock { unlink(flag) }
        let (sandbox, client) = try sandboxWithServer(portalFlag: flag)
        let (prober, log) = startProber(client)

        let online = try XCTUnwrap(log.first(within: 10) { $0.state == .online }, log.history())
        XCTAssertEqual(online.previousState, .unknown)
        XCTAssertEqual(online.generation, prober.generation)
        XCTAssertEqual(online.results.map(\.kind), [.dns, .tcp, .http], log.history())
        XCTAssertEqual(online.results.first?.address, SandboxPlan.serverIPv4.description, "DNS answered with the server")
        XCTAssertEqual(online.results.last?.httpStatus, 204)
        let rtt = try XCTUnwrap(online.medianRTT)
        XCTAssertGreaterThan(rtt, 0)
        XCTAssertLessThan(rtt, 0.1, "an unconditioned veth pair")
        XCTAssertEqual(online.quality, .good)
        // Rounds keep coming while online: samples accumulate.
        let later = try XCTUnwrap(log.first(within: 5) { $0.round >= online.round + 3 }, log.history())
        XCTAssertEqual(later.state, .online)
        XCTAssertFalse(later.isStateChange)
        XCTAssertGreaterThanOrEqual(later.windowRounds, 4)
        XCTAssertEqual(later.lossFraction, 0)
        print("reachability: online after \(online.round + 1) round(s); median TCP connect \(String(format: "%.3f", rtt * 1000)) ms")

        // The portal switches on: the path does not change, the prober sees a portal.
        let monitor = try startMonitor(client)
        XCTAssertEqual(monitor.currentPath?.status, .satisfied)
        let mark = log.all.count
        let switched = MonotonicClock.nanoseconds()
        XCTAssertTrue(FileManager.default.createFile(atPath: flag, contents: Data()))
        let portal = try XCTUnwrap(log.first(from: mark, within: 8) { $0.state == .portal }, log.history(from: mark))
        XCTAssertEqual(portal.results.last?.httpStatus, 200)
        XCTAssertEqual(portal.previousState, .online)
        XCTAssertEqual(monitor.currentPath?.status, .satisfied, "the path stays satisfied behind a portal")
        print("reachability: portal seen \(String(format: "%.2f", Double(portal.time &- switched) / 1e9)) s after the flag was created")

        // And off again.
        let backMark = log.all.count
        unlink(flag)
        let back = try XCTUnwrap(log.first(from: backMark, within: 8) { $0.state == .online }, log.history(from: backMark))
        XCTAssertEqual(back.previousState, .portal)

        prober.cancel()
        XCTAssertFalse(prober.isRunning)
        XCTAssertTrue(try sandbox.down())
    }

    func testServerLinkDownIsOfflineWithinTheBoundAndUpIsOnlineWithinTheBound() throws {
        let (sandbox, client) = try sandboxWithServer()
        let settings = ReachabilitySettings()
        let (_, log) = startProber(client, settings: settings)
        _ = try XCTUnwrap(log.first(within: 10) { $0.state == .online }, log.history())
        let monitor = try startMonitor(client)

        // The server's link goes down: for the client that is 100 % loss behind a link that stays up.
        let server = try sandbox.netlink(try NamedNamespace(existing: sandbox.topology.serverNamespace))
        let mark = log.all.count
        try server.setLink(SandboxPlan.serverInterface, up: false)
        let down = MonotonicClock.nanoseconds()
        let offline = try XCTUnwrap(
            log.first(from: mark, within: settings.detectionBound + 3) { $0.state == .offline }, log.history(from: mark))
        let detection = Double(offline.time &- down) / 1e9
        XCTAssertLessThanOrEqual(detection, settings.detectionBound, log.history(from: mark))
        XCTAssertGreaterThan(offline.lossFraction, 0)
        XCTAssertEqual(monitor.currentPath?.status, .satisfied, "the client's own path never changed")

        // Backoff while offline: pauses of 1, 2, 4, 4 s.
        let afterOffline = try XCTUnwrap(log.first(from: mark, within: 20) { $0.state == .offline && $0.round >= offline.round + 2 }, log.history(from: mark))
        XCTAssertEqual(
            log.all.filter { $0.state == .offline && $0.round <= afterOffline.round }.map(\.nextRoundIn), [1, 2, 4],
            log.history(from: mark))

        // Up again. An admin-down flushes the server's IPv4 routes, so its default route is put back.
        let upMark = log.all.count
        try server.setLink(SandboxPlan.serverInterface, up: true)
        if try !server.routes(family: .inet).contains(where: { $0.isDefault && $0.table == .main }) {
            try server.addRoute(destination: nil, gateway: SandboxPlan.serverSubnet.routerIPv4.address, interface: SandboxPlan.serverInterface)
        }
        let up = MonotonicClock.nanoseconds()
        let online = try XCTUnwrap(
            log.first(from: upMark, within: settings.recoveryBound + 3) { $0.state == .online }, log.history(from: upMark))
        let recovery = Double(online.time &- up) / 1e9
        XCTAssertLessThanOrEqual(recovery, settings.recoveryBound, log.history(from: upMark))
        print(String(
            format: "reachability: server link down → offline in %.2f s (bound %.2f s); up → online in %.2f s (bound %.2f s)",
            detection, settings.detectionBound, recovery, settings.recoveryBound))
        XCTAssertTrue(try sandbox.down())
    }

    func testUnreachableNameserverIsLimitedAndComesBack() throws {
        let (sandbox, client) = try sandboxWithServer()
        let settings = ReachabilitySettings()
        let (_, log) = startProber(client, settings: settings)
        _ = try XCTUnwrap(log.first(within: 10) { $0.state == .online }, log.history())

        // Nothing answers at 198.19.0.3 (the server's subnet, no host): DNS fails, TCP to the known address works.
        let mark = log.all.count
        try client.writeEtcFile("resolv.conf", contents: "nameserver 198.19.0.3\nsearch \(SandboxPlan.zone)\n")
        let broken = MonotonicClock.nanoseconds()
        let limited = try XCTUnwrap(
            log.first(from: mark, within: settings.detectionBound + 3) { $0.state == .limited }, log.history(from: mark))
        let seconds = Double(limited.time &- broken) / 1e9
        XCTAssertLessThanOrEqual(seconds, settings.detectionBound, log.history(from: mark))
        XCTAssertEqual(limited.outcome, .limited)
        XCTAssertEqual(limited.results.first { $0.kind == .tcp }?.address, SandboxPlan.serverIPv4.description)
        XCTAssertEqual(limited.results.first { $0.kind == .dns }?.success, false)
        XCTAssertNotNil(limited.medianRTT, "TCP still gives RTT samples")
        XCTAssertTrue(log.all.dropFirst(mark).allSatisfy { $0.state != .offline }, "never offline: IP works")

        let fixMark = log.all.count
        try client.writeEtcFile("resolv.conf", contents: SandboxPlan.clientResolvConf)
        let fixed = MonotonicClock.nanoseconds()
        let online = try XCTUnwrap(log.first(from: fixMark, within: 10) { $0.state == .online }, log.history(from: fixMark))
        print(String(
            format: "reachability: nameserver unreachable → limited in %.2f s; restored → online in %.2f s",
            seconds, Double(online.time &- fixed) / 1e9))
        XCTAssertTrue(try sandbox.down())
    }
}

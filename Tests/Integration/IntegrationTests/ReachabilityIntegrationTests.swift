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

    /// The latest conclusion of `family` before index `before` (its timeouts are the ones in force then).
    func latest(_ family: ReachabilityFamily, before: Int) -> FamilyReachability? {
        all.prefix(before).last { $0.family == family }?.reachability(of: family)
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
            let families = [update.ipv4, update.ipv6].compactMap { $0.map { "\($0.family) \($0.state)" } }.joined(separator: ", ")
            return "#\(update.round) \(update.family) → \(update.state) (\(families)) [\(results.joined(separator: ", "))]"
        }.joined(separator: "; ")
    }
}

/// The prober against a real sandbox and the real `linkcond serve`. Each test builds its own sandbox
/// (unique name, temporary store) and removes it, pass or fail.
///
/// 100 % loss without netem: blackhole routes for the server's addresses in the router's namespace
/// (`ip -n ROUTER route add blackhole 198.19.0.2/32`, and the /128 for IPv6). The router drops what it
/// would forward there without a word (no ICMP error, unlike a missing route), so the client sees exactly
/// what 100 % loss looks like while its own path stays satisfied.
final class ReachabilityIntegrationTests: SandboxTestCase {

    /// Brings up a sandbox whose server is a captive portal while `portalFlag` exists; returns it with its
    /// client namespace, once the server answers on IPv4 and IPv6.
    private func sandboxWithServer(portalFlag: String? = nil) throws -> (Sandbox, NamedNamespace) {
        let sandbox = try makeSandbox()
        var arguments = ["serve", "--name", sandbox.topology.name]
        if let portalFlag { arguments += ["--portal-flag", portalFlag] }
        XCTAssertEqual(try sandbox.up(server: .process(executable: try linkcondExecutable(), arguments: arguments)), .created)
        let client = try sandbox.clientNamespace()
        XCTAssertNotNil(try waitUntilReachable(client, SandboxPlan.serverIPv4, port: SandboxPlan.httpPort))
        XCTAssertNotNil(try waitUntilReachable(client, SandboxPlan.serverIPv6, port: SandboxPlan.httpPort))
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

    /// Waits until both families are online; returns that update.
    private func bothOnline(_ log: ReachabilityLog, within seconds: Double = 10) throws -> ReachabilityUpdate {
        try XCTUnwrap(log.first(within: seconds) { $0.ipv4?.state == .online && $0.ipv6?.state == .online }, log.history())
    }

    /// Adds (or deletes) blackhole routes for the server's addresses in the router's namespace, one family at
    /// a time; returns the monotonic time right after each family's route changed.
    private func blackhole(_ sandbox: Sandbox, add: Bool) throws -> [ReachabilityFamily: UInt64] {
        var times: [ReachabilityFamily: UInt64] = [:]
        for (family, prefix) in [(ReachabilityFamily.ipv4, "\(SandboxPlan.serverIPv4)/32"), (.ipv6, "\(SandboxPlan.serverIPv6)/128")] {
            let result = try Command.ip(["-n", sandbox.topology.routerNamespace, "route", add ? "add" : "del", "blackhole", prefix])
            XCTAssertEqual(result.status, 0, result.errorOutput)
            times[family] = MonotonicClock.nanoseconds()
        }
        return times
    }

    private func seconds(_ from: UInt64, _ to: UInt64) -> Double { Double(Int64(bitPattern: to &- from)) / 1e9 }

    func testBothFamiliesOnlineWithSamplesThenPortalWhileThePathIsFine() throws {
        try measuredAgainIfTheMachineStalled {
            let flag = FileManager.default.temporaryDirectory.appendingPathComponent("lcit-portal-\(getpid())-\(UniqueName.next())").path
            addTeardownBlock { unlink(flag) }
            let (sandbox, client) = try sandboxWithServer(portalFlag: flag)
            let (prober, log) = startProber(client)

            let online = try bothOnline(log)
            XCTAssertEqual(online.state, .online)
            XCTAssertFalse(online.isSingleFamily)
            XCTAssertEqual(online.generation, prober.generation)
            for (family, server) in [(ReachabilityFamily.ipv4, SandboxPlan.serverIPv4), (.ipv6, SandboxPlan.serverIPv6)] {
                let round = try XCTUnwrap(log.all.first { $0.family == family && $0.outcome == .online }, log.history())
                XCTAssertEqual(round.results.map(\.kind), [.dns, .tcp, .http], log.history())
                XCTAssertEqual(round.results.first?.address, server.description, "\(family): DNS answered with the server's \(family) address")
                XCTAssertTrue(round.results.allSatisfy { $0.family == family && $0.address == server.description })
                XCTAssertEqual(round.results.last?.httpStatus, 204)
            }
            let rtt = try XCTUnwrap(online.medianRTT)
            XCTAssertGreaterThan(rtt, 0)
            XCTAssertLessThan(rtt, 0.1, "an unconditioned veth pair")
            XCTAssertEqual(online.quality, .good)
            // Rounds keep coming while online: samples accumulate, and the timeouts settle on the floor.
            let later = try XCTUnwrap(log.first(within: 8) { ($0.ipv4?.rounds ?? 0) >= 5 && ($0.ipv6?.rounds ?? 0) >= 5 }, log.history())
            XCTAssertEqual(later.state, .online)
            XCTAssertEqual(later.lossFraction, 0)
            // The timeouts are the ones RFC 6298 gives for the round trips measured: a fresh state machine fed
            // the same results comes to the same timeouts. Where every round trip was at most 0.1 s (a veth
            // pair on a quiet host), SRTT + 4·RTTVAR ≤ 0.1 + 4 × 0.1, so that is the floor, 0.5 s; under a slow
            // emulator a round trip of 0.3 s keeps them above it for a while.
            let laterIndex = try XCTUnwrap(log.all.firstIndex(of: later))
            for family in [ReachabilityFamily.ipv4, .ipv6] {
                var machine = ReachabilityStateMachine(settings: ReachabilitySettings())
                let rounds = log.all.prefix(laterIndex + 1).filter { $0.family == family }
                for round in rounds { _ = machine.record(round.results) }
                let reported = try XCTUnwrap(later.reachability(of: family)?.timeouts)
                XCTAssertEqual(reported, machine.timeouts, "\(family): the timeouts of the samples reported")
                let samples = rounds.flatMap(\.results).compactMap(\.rttSample)
                if samples.allSatisfy({ $0 <= 0.1 }) {
                    XCTAssertEqual(reported.longest, 0.5, "\(family): round trips of at most 0.1 s (\(samples)) settle on the floor")
                } else {
                    XCTAssertGreaterThanOrEqual(reported.longest, 0.5, "\(family): never below the floor")
                    print("reachability: \(family) round trips up to \(String(format: "%.3f", samples.max() ?? 0)) s: timeouts \(reported.dns) s, \(reported.transport) s")
                }
            }
            print("reachability: both families online after \(online.round + 1) update(s); median TCP connect \(String(format: "%.3f", rtt * 1000)) ms")

            // The portal switches on: the path does not change, the prober sees a portal on both families.
            let monitor = try startMonitor(client)
            XCTAssertEqual(monitor.currentPath?.status, .satisfied)
            let mark = log.all.count
            let switched = MonotonicClock.nanoseconds()
            XCTAssertTrue(FileManager.default.createFile(atPath: flag, contents: Data()))
            let portal = try XCTUnwrap(log.first(from: mark, within: 8) { $0.ipv4?.state == .portal && $0.ipv6?.state == .portal }, log.history(from: mark))
            XCTAssertEqual(portal.state, .portal)
            XCTAssertEqual(portal.results.last?.httpStatus, 200)
            XCTAssertEqual(monitor.currentPath?.status, .satisfied, "the path stays satisfied behind a portal")
            print("reachability: portal seen on both families \(String(format: "%.2f", seconds(switched, portal.time))) s after the flag was created")

            // And off again.
            let backMark = log.all.count
            unlink(flag)
            let back = try XCTUnwrap(log.first(from: backMark, within: 8) { $0.state == .online }, log.history(from: backMark))
            XCTAssertEqual(back.previousState, .portal)

            prober.cancel()
            XCTAssertFalse(prober.isRunning)
            XCTAssertTrue(try sandbox.down())
        }
    }

    /// 100 % loss on a fast link, adaptive timeouts: offline within the bound for the timeouts in force
    /// (2.6 s with the 0.5 s floor), under the issue's 3 s; online again within the recovery bound.
    func testBlackHoledServerIsOfflineWithinTheAdaptiveBound() throws {
        try measuredAgainIfTheMachineStalled {
            let (sandbox, client) = try sandboxWithServer()
            let settings = ReachabilitySettings()
            let (_, log) = startProber(client, settings: settings)
            _ = try bothOnline(log)
            _ = try XCTUnwrap(log.first(within: 8) { ($0.ipv4?.rounds ?? 0) >= 5 && ($0.ipv6?.rounds ?? 0) >= 5 }, log.history())
            let monitor = try startMonitor(client)

            let mark = log.all.count
            let lost = try blackhole(sandbox, add: true)
            let offline = try XCTUnwrap(log.first(from: mark, within: settings.detectionBound + 3) { $0.state == .offline }, log.history(from: mark))
            var detections: [String] = []
            for family in ReachabilityFamily.allCases {
                let inForce = try XCTUnwrap(log.latest(family, before: mark)).timeouts.longest
                let bound = settings.detectionBound(probeTimeout: inForce)
                let seen = try XCTUnwrap(log.all.dropFirst(mark).first { $0.family == family && $0.reachability(of: family)?.state == .offline })
                let detection = seconds(lost[family]!, seen.time)
                XCTAssertLessThanOrEqual(detection, bound, "\(family): \(log.history(from: mark))")
                // 3 s, the issue's target for LTE-class links, is what the bound comes to with the timeouts at
                // their floor (2.6 s): so it is wherever the round trips settled there (always on the host; not
                // always in an emulated VM, where the bound above still holds).
                if inForce <= 0.5 {
                    XCTAssertLessThanOrEqual(detection, 3, "\(family): the issue's target for LTE-class links")
                }
                XCTAssertTrue(seen.results.allSatisfy { $0.success || $0.timedOut }, "silent loss: every failure a timeout")
                detections.append(String(format: "%@ %.2f s (bound %.2f s, timeouts %.2f s)", "\(family)", detection, bound, inForce))
            }
            let overall = seconds(lost[.ipv6]!, offline.time)
            XCTAssertEqual(monitor.currentPath?.status, .satisfied, "the client's own path never changed")
            XCTAssertTrue(log.all.dropFirst(mark).prefix { $0 != offline }.allSatisfy { $0.state == .online }, "online until both families were offline")

            // Backoff while offline: pauses of 1, 2, 4 s, per family.
            _ = try XCTUnwrap(log.first(from: mark, within: 20) { $0.family == .ipv4 && ($0.ipv4?.state == .offline) && ($0.ipv4?.consecutiveFailures ?? 0) >= 4 })
            let pauses = log.all.dropFirst(mark).filter { $0.family == .ipv4 && $0.ipv4?.state == .offline }.prefix(3).map(\.nextRoundIn)
            XCTAssertEqual(pauses, [1, 2, 4], log.history(from: mark))

            let upMark = log.all.count
            let restored = try blackhole(sandbox, add: false)
            let online = try XCTUnwrap(
                log.first(from: upMark, within: settings.recoveryBound + 3) { $0.ipv4?.state == .online && $0.ipv6?.state == .online },
                log.history(from: upMark))
            let recovery = seconds(restored[.ipv6]!, online.time)
            XCTAssertLessThanOrEqual(recovery, settings.recoveryBound, log.history(from: upMark))
            print("reachability (adaptive): blackhole → offline: \(detections.joined(separator: "; ")); overall \(String(format: "%.2f", overall)) s; "
                + "restored → both online in \(String(format: "%.2f", recovery)) s (bound \(settings.recoveryBound) s)")
            XCTAssertTrue(try sandbox.down())
        }
    }

    /// The same loss in fixed mode: the old behaviour and its bound, 12.1 s on every link.
    func testBlackHoledServerIsOfflineWithinTheFixedBound() throws {
        try measuredAgainIfTheMachineStalled {
            let (sandbox, client) = try sandboxWithServer()
            let settings = ReachabilitySettings(timeoutMode: .fixed, families: [.ipv4])
            let (_, log) = startProber(client, settings: settings)
            _ = try XCTUnwrap(log.first(within: 10) { $0.state == .online }, log.history())
            let mark = log.all.count
            let lost = try blackhole(sandbox, add: true)
            let offline = try XCTUnwrap(log.first(from: mark, within: settings.detectionBound + 3) { $0.state == .offline }, log.history(from: mark))
            let detection = seconds(lost[.ipv4]!, offline.time)
            XCTAssertLessThanOrEqual(detection, settings.detectionBound, log.history(from: mark))
            XCTAssertGreaterThan(detection, 2 * settings.timeout, "two rounds of 5 s timeouts: the fixed mode does not adapt")
            let upMark = log.all.count
            let restored = try blackhole(sandbox, add: false)
            let online = try XCTUnwrap(log.first(from: upMark, within: settings.recoveryBound + 3) { $0.state == .online }, log.history(from: upMark))
            let recovery = seconds(restored[.ipv4]!, online.time)
            XCTAssertLessThanOrEqual(recovery, settings.recoveryBound, log.history(from: upMark))
            print(String(
                format: "reachability (fixed): blackhole → offline in %.2f s (bound %.2f s); restored → online in %.2f s (bound %.2f s)",
                detection, settings.detectionBound, recovery, settings.recoveryBound))
            XCTAssertTrue(try sandbox.down())
        }
    }

    func testServerLinkDownIsOfflineAndUpIsOnline() throws {
        try measuredAgainIfTheMachineStalled {
            let (sandbox, client) = try sandboxWithServer()
            let settings = ReachabilitySettings()
            let (_, log) = startProber(client, settings: settings)
            _ = try bothOnline(log)

            // The server's link goes down: for the client, loss behind a link that stays up (the router drops
            // what it sends towards a veth without carrier, then reports the neighbour unreachable).
            let server = try sandbox.netlink(try NamedNamespace(existing: sandbox.topology.serverNamespace))
            let mark = log.all.count
            try server.setLink(SandboxPlan.serverInterface, up: false)
            let down = MonotonicClock.nanoseconds()
            let offline = try XCTUnwrap(log.first(from: mark, within: settings.detectionBound + 3) { $0.state == .offline }, log.history(from: mark))
            let inForce = max(log.latest(.ipv4, before: mark)?.timeouts.longest ?? 5, log.latest(.ipv6, before: mark)?.timeouts.longest ?? 5)
            let detection = seconds(down, offline.time)
            XCTAssertLessThanOrEqual(detection, settings.detectionBound(probeTimeout: inForce), log.history(from: mark))
            XCTAssertGreaterThan(offline.lossFraction, 0)

            // Up again. An admin-down flushes the server's IPv4 routes, so its default route is put back.
            let upMark = log.all.count
            try server.setLink(SandboxPlan.serverInterface, up: true)
            if try !server.routes(family: .inet).contains(where: { $0.isDefault && $0.table == .main }) {
                try server.addRoute(destination: nil, gateway: SandboxPlan.serverSubnet.routerIPv4.address, interface: SandboxPlan.serverInterface)
            }
            let up = MonotonicClock.nanoseconds()
            let online = try XCTUnwrap(log.first(from: upMark, within: settings.recoveryBound + 3) { $0.state == .online }, log.history(from: upMark))
            let recovery = seconds(up, online.time)
            XCTAssertLessThanOrEqual(recovery, settings.recoveryBound, log.history(from: upMark))
            print(String(
                format: "reachability: server link down → offline in %.2f s (bound %.2f s); up → online in %.2f s (bound %.2f s)",
                detection, settings.detectionBound(probeTimeout: inForce), recovery, settings.recoveryBound))
            XCTAssertTrue(try sandbox.down())
        }
    }

    func testIPv6LosingItsDefaultRouteLeavesIPv4OnlineWithTheSingleFamilyFlag() throws {
        try measuredAgainIfTheMachineStalled {
            let (sandbox, client) = try sandboxWithServer()
            let settings = ReachabilitySettings()
            let (prober, log) = startProber(client, settings: settings)
            _ = try bothOnline(log)

            let mark = log.all.count
            try sandbox.removeDefaultRoutes(.wifi, family: .inet6)
            let removed = MonotonicClock.nanoseconds()
            let single = try XCTUnwrap(log.first(from: mark, within: settings.detectionBound + 3) { $0.isSingleFamily }, log.history(from: mark))
            XCTAssertEqual(single.state, .online, "IPv4 still works")
            XCTAssertEqual(single.ipv6?.state, .offline)
            XCTAssertEqual(single.ipv4?.state, .online)
            XCTAssertEqual(prober.currentState(of: .ipv6), .offline)
            let failure = try XCTUnwrap(log.all.dropFirst(mark).first { $0.family == .ipv6 && $0.outcome == .failure })
            XCTAssertTrue(failure.results.contains { $0.error?.contains("Network is unreachable") == true }, log.history(from: mark))
            XCTAssertTrue(log.all.dropFirst(mark).allSatisfy { $0.state == .online }, "never offline overall: \(log.history(from: mark))")
            XCTAssertTrue(log.all.dropFirst(mark).filter { $0.family == .ipv4 }.allSatisfy { $0.outcome == .online }, "IPv4's rounds unaffected")

            let backMark = log.all.count
            try sandbox.restoreDefaultRoutes(.wifi, family: .inet6)
            let restored = MonotonicClock.nanoseconds()
            let back = try XCTUnwrap(log.first(from: backMark, within: settings.recoveryBound + 3) { $0.ipv6?.state == .online }, log.history(from: backMark))
            XCTAssertFalse(back.isSingleFamily)
            XCTAssertEqual(back.state, .online)
            XCTAssertLessThanOrEqual(seconds(restored, back.time), settings.recoveryBound)
            print(String(
                format: "reachability: IPv6 default route removed → only IPv4 in %.2f s; restored → IPv6 online in %.2f s",
                seconds(removed, single.time), seconds(restored, back.time)))
            XCTAssertTrue(try sandbox.down())
        }
    }

    func testUnreachableNameserverIsLimitedAndComesBack() throws {
        try measuredAgainIfTheMachineStalled {
            let (sandbox, client) = try sandboxWithServer()
            let settings = ReachabilitySettings()
            let (_, log) = startProber(client, settings: settings)
            _ = try bothOnline(log)

            // Nothing answers at 198.19.0.3 (the server's subnet, no host), the only nameserver: both families'
            // queries (AAAA over IPv4 too) fail, TCP to the known addresses works.
            let mark = log.all.count
            try client.writeEtcFile("resolv.conf", contents: "nameserver 198.19.0.3\nsearch \(SandboxPlan.zone)\n")
            let broken = MonotonicClock.nanoseconds()
            let limited = try XCTUnwrap(
                log.first(from: mark, within: settings.detectionBound + 3) { $0.state == .limited }, log.history(from: mark))
            let seconds = self.seconds(broken, limited.time)
            XCTAssertLessThanOrEqual(seconds, settings.detectionBound, log.history(from: mark))
            XCTAssertEqual(limited.outcome, .limited)
            let server = limited.family == .ipv4 ? SandboxPlan.serverIPv4 : SandboxPlan.serverIPv6
            XCTAssertEqual(limited.results.first { $0.kind == .tcp }?.address, server.description)
            XCTAssertEqual(limited.results.first { $0.kind == .dns }?.success, false)
            XCTAssertNotNil(limited.medianRTT, "TCP still gives RTT samples")
            XCTAssertTrue(log.all.dropFirst(mark).allSatisfy { $0.state != .offline }, "never offline: IP works")

            let fixMark = log.all.count
            try client.writeEtcFile("resolv.conf", contents: SandboxPlan.clientResolvConf)
            let fixed = MonotonicClock.nanoseconds()
            let online = try XCTUnwrap(log.first(from: fixMark, within: 15) { $0.state == .online }, log.history(from: fixMark))
            print(String(
                format: "reachability: nameserver unreachable → limited in %.2f s; restored → online in %.2f s",
                seconds, self.seconds(fixed, online.time)))
            XCTAssertTrue(try sandbox.down())
        }
    }
}

import Foundation
import Glibc
import LinkcondBase
import LinkEmulation
import NetNamespace
import PacketEngine
import RouteNetlink
import XCTest

/// Real traffic through the engine between a client and a router namespace.
final class ForwardingTests: EngineTestCase {
    func testPingAndPing6CrossTheEngineBothWays() throws {
        let lab = try makeLab()
        let runtime = try startEngine(lab, uplink: PassThroughScheduler(), downlink: PassThroughScheduler())
        for (from, to) in [(lab.client, WireLab.routerV4), (lab.client, WireLab.routerV6), (lab.router, WireLab.clientV4), (lab.router, WireLab.clientV6)] {
            // The first echo may wait for neighbour resolution; allow a few.
            var rtt: Double?
            for _ in 0..<5 where rtt == nil { rtt = try Traffic.ping(from: from, to: to, timeout: 1) }
            XCTAssertNotNil(rtt, "no echo reply from \(to) to \(from.name)")
        }
        for direction in Direction.allCases {
            let statistics = runtime.statistics(of: direction)
            XCTAssertGreaterThan(statistics.sent, 0, "\(direction): \(statistics)")
            XCTAssertEqual(statistics.truncated, 0, "\(direction)")
            XCTAssertEqual(statistics.sendFailures, 0, "\(direction): last errno \(statistics.lastSendError)")
        }
    }

    func testUDPCrossesBothWaysAndNothingIsReadBack() throws {
        let lab = try makeLab()
        let uplink = SwitchableScheduler()
        uplink.countedPort = 40_001
        let downlink = SwitchableScheduler()
        downlink.countedPort = 40_002
        let runtime = try startEngine(lab, uplink: uplink, downlink: downlink)
        let count = 200
        XCTAssertEqual(try Traffic.udpDatagrams(count: count, from: lab.client, to: WireLab.routerV4, in: lab.router, port: 40_001), count)
        XCTAssertEqual(try Traffic.udpDatagrams(count: count, from: lab.router, to: WireLab.clientV6, in: lab.client, port: 40_002), count)
        // Each datagram was offered exactly once, in its own direction only: the engine never reads what it
        // sent (a loop would show it twice, or in the other direction).
        XCTAssertEqual(try runtime.perform(on: .uplink) { $0.countedUDP }, count)
        XCTAssertEqual(try runtime.perform(on: .downlink) { $0.countedUDP }, count)
        try runtime.perform(on: .uplink) { $0.countedPort = 40_002 }
        try runtime.perform(on: .downlink) { $0.countedPort = 40_001 }
        XCTAssertEqual(try Traffic.udpDatagrams(count: 20, from: lab.client, to: WireLab.routerV4, in: lab.router, port: 40_003), 20)
        XCTAssertEqual(try runtime.perform(on: .uplink) { $0.countedUDP }, 0, "uplink saw downlink's datagrams")
        XCTAssertEqual(try runtime.perform(on: .downlink) { $0.countedUDP }, 0, "downlink saw uplink's datagrams")
        for direction in Direction.allCases {
            let statistics = runtime.statistics(of: direction)
            // Everything received was forwarded, once.
            XCTAssertEqual(statistics.received, statistics.forwardedAtOnce, "\(direction): \(statistics)")
            XCTAssertEqual(statistics.sent, statistics.received, "\(direction): \(statistics)")
            XCTAssertEqual(statistics.outgoingSkipped, 0, "\(direction)")
            XCTAssertEqual(statistics.truncated, 0, "\(direction)")
        }
    }

    func testTCPTransferWithDefaultVethOffloadsCrossesIntactAfterPreparation() throws {
        let lab = try makeLab(prepare: false)
        // veth starts with checksum offload and segmentation on: the reason the wire must be prepared.
        let before = try InterfaceOffloads.features(of: "wl0", in: lab.client)
        XCTAssertEqual(before["tx-checksum-ip-generic"], true, "veth default changed? \(before)")
        XCTAssertEqual(before["tx-tcp-segmentation"], true)
        try WirePreparation.prepare(lab.ends)
        try WirePreparation.preparePeer("wl0", in: lab.client)
        try WirePreparation.preparePeer("c-wl0", in: lab.router)
        for (namespace, name) in [(lab.client, "wl0"), (lab.router, "c-wl0"), (lab.wire, "cl-wl0"), (lab.wire, "rt-wl0")] {
            let features = try InterfaceOffloads.features(of: name, in: namespace)
            let stillOn = features.filter { InterfaceOffloads.isWireOffload($0.key) && $0.value }.map(\.key)
            XCTAssertEqual(stillOn, [], "\(name) in \(namespace.name)")
        }
        let runtime = try startEngine(lab, uplink: PassThroughScheduler(), downlink: PassThroughScheduler())
        let size = 8 << 20
        for (from, to, fromName, target) in [
            (lab.client, lab.router, "client", WireLab.routerV4), (lab.router, lab.client, "router", WireLab.clientV6),
        ] {
            let outcome = try TCPTransfer.run(bytes: size, from: from, to: target, in: to, port: 40_010)
            XCTAssertNil(outcome.error, "from \(fromName): \(outcome)")
            XCTAssertEqual(outcome.receivedBytes, size, "from \(fromName)")
            XCTAssertEqual(outcome.receivedHash, outcome.sentHash, "from \(fromName): data changed on the way")
        }
        for direction in Direction.allCases {
            let statistics = runtime.statistics(of: direction)
            XCTAssertEqual(statistics.truncated, 0, "\(direction): frames larger than the MTU reached the engine")
            XCTAssertEqual(statistics.sendFailures, 0, "\(direction): last errno \(statistics.lastSendError)")
        }
    }

    func testCorruptedTCPSegmentIsDroppedByTheReceiversChecksum() throws {
        let lab = try makeLab()
        let runtime = try startEngine(lab, uplink: SwitchableScheduler(), downlink: SwitchableScheduler())
        let before = try SNMPCounters.read(in: lab.router)
        try runtime.perform(on: .uplink) { $0.mode = .corruptTCP(count: 3) }
        let size = 2 << 20
        let outcome = try TCPTransfer.run(bytes: size, from: lab.client, to: WireLab.routerV4, in: lab.router, port: 40_020)
        let after = try SNMPCounters.read(in: lab.router)
        XCTAssertEqual(try runtime.perform(on: .uplink) { $0.corrupted }, 3, "the scheduler found no data segment to corrupt")
        // The receiver's TCP caught every flipped bit and dropped the segment; retransmission repaired the
        // stream, so the data arrived unchanged.
        XCTAssertNil(outcome.error, "\(outcome)")
        XCTAssertEqual(outcome.receivedHash, outcome.sentHash, "a corrupted segment was delivered to the application")
        let tcpErrors = after["Tcp", "InCsumErrors"] - before["Tcp", "InCsumErrors"]
        XCTAssertEqual(tcpErrors, 3, "TCP checksum errors in \(lab.router.name): before \(before.all["Tcp"] ?? [:]), after \(after.all["Tcp"] ?? [:])")
    }

    func testDropAllStopsTrafficButKeepsCarrier() throws {
        let lab = try makeLab()
        let runtime = try startEngine(lab, uplink: SwitchableScheduler(), downlink: SwitchableScheduler())
        XCTAssertNotNil(try firstReply(from: lab.client, to: WireLab.routerV4))
        try runtime.perform(on: .uplink) { $0.mode = .dropAll }
        try runtime.perform(on: .downlink) { $0.mode = .dropAll }
        for _ in 0..<3 {
            XCTAssertNil(try Traffic.ping(from: lab.client, to: WireLab.routerV4, timeout: 0.3), "a reply crossed a wire that drops everything")
        }
        XCTAssertEqual(try Traffic.udpDatagrams(count: 10, from: lab.client, to: WireLab.routerV4, in: lab.router, port: 40_030, timeout: 0.3), 0)
        // 100 % loss is not a link change: both sides keep carrier.
        XCTAssertTrue(try lab.clientLinks.link(named: "wl0").carrier)
        XCTAssertTrue(try lab.routerLinks.link(named: "c-wl0").carrier)
        XCTAssertGreaterThan(runtime.statistics(of: .uplink).dropped, 0)
        try runtime.perform(on: .uplink) { $0.mode = .pass }
        try runtime.perform(on: .downlink) { $0.mode = .pass }
        XCTAssertNotNil(try firstReply(from: lab.client, to: WireLab.routerV4), "traffic did not resume after the drop ended")
    }

    func testFixedDelayAddsToTheRoundTripTime() throws {
        let lab = try makeLab()
        let runtime = try startEngine(lab, uplink: SwitchableScheduler(), downlink: SwitchableScheduler())
        XCTAssertNotNil(try firstReply(from: lab.client, to: WireLab.routerV4))
        let baseline = try minimumRTT(from: lab.client, to: WireLab.routerV4, samples: 10)
        let delay: UInt64 = 20_000_000
        try runtime.perform(on: .uplink) { $0.mode = .delay(delay) }
        try runtime.perform(on: .downlink) { $0.mode = .delay(delay) }
        let delayed = try minimumRTT(from: lab.client, to: WireLab.routerV4, samples: 10)
        let added = delayed - baseline
        let expected = 2 * Double(delay) / 1e9
        // A frame never leaves before it is due, so the added time is at least the two delays (less the
        // baseline's own jitter); scheduling under load may add a little, never another whole delay.
        XCTAssertGreaterThanOrEqual(added, expected - 0.000_5, "baseline \(baseline * 1e3) ms, delayed \(delayed * 1e3) ms")
        XCTAssertLessThan(added, expected + 0.015, "baseline \(baseline * 1e3) ms, delayed \(delayed * 1e3) ms")
        for direction in Direction.allCases {
            let lateness = runtime.statistics(of: direction).lateness
            XCTAssertGreaterThanOrEqual(lateness.count, 10, "\(direction): departures were not timed")
            XCTAssertLessThan(lateness.maximum, 1_000_000_000, "\(direction): \(lateness.summary)")
        }
    }

    func testStoppingTheRuntimeAndRelayStopsForwardingAndReleasesThreadsAndDescriptors() throws {
        let lab = try makeLab()
        let descriptorsBefore = openDescriptors()
        let runtime = try EngineRuntime(wire: lab.ends, uplink: PassThroughScheduler(), downlink: PassThroughScheduler())
        try runtime.start()
        let relay = try CarrierRelay(wire: lab.ends)
        try relay.start()
        XCTAssertTrue(eventually { Set(engineThreads()) == ["lc-uplink", "lc-downlink", "lc-carrier"] }, "threads: \(engineThreads())")
        let opened = openDescriptors().subtracting(descriptorsBefore)
        XCTAssertGreaterThanOrEqual(opened.count, 4 + 2 * 3 + 3, "sockets, timers, wake signals, epoll, relay: \(opened)")
        XCTAssertEqual(inheritableDescriptors(opened), [], "descriptors without close-on-exec")
        XCTAssertEqual(try packetSockets(in: lab.wire), 4)
        XCTAssertNotNil(try firstReply(from: lab.client, to: WireLab.routerV4))
        runtime.stop()
        relay.stop()
        XCTAssertFalse(runtime.isRunning)
        // stop() joined the threads. pthread_join returns when the kernel clears the thread's id, which it
        // does on the way out, a moment before the task leaves /proc/self/task: so a joined thread may still
        // be listed there for a moment (once seen on a loaded host); a thread that was not stopped stays.
        XCTAssertTrue(eventually { engineThreads().isEmpty }, "engine or relay threads still running after stop: \(engineThreads())")
        XCTAssertEqual(try packetSockets(in: lab.wire), 0, "packet sockets left open in the wire namespace")
        XCTAssertEqual(openDescriptors(), descriptorsBefore, "descriptors opened by the runtime or the relay are still open")
        XCTAssertNil(try Traffic.ping(from: lab.client, to: WireLab.routerV4, timeout: 0.5), "a reply crossed a stopped engine")
        runtime.stop()  // idempotent
        // The scheduler is still reachable (on the calling thread now).
        XCTAssertGreaterThan(try runtime.perform(on: .uplink) { $0.forwarded }, 0)
    }

    // MARK: Helpers

    private func firstReply(from namespace: NamedNamespace, to target: IPAddress) throws -> Double? {
        for _ in 0..<5 {
            if let rtt = try Traffic.ping(from: namespace, to: target, timeout: 1) { return rtt }
        }
        return nil
    }

    private func minimumRTT(from namespace: NamedNamespace, to target: IPAddress, samples: Int) throws -> Double {
        var best = Double.infinity
        for _ in 0..<samples {
            if let rtt = try Traffic.ping(from: namespace, to: target, timeout: 1) { best = min(best, rtt) }
        }
        XCTAssertTrue(best.isFinite, "no echo reply at all")
        return best
    }
}

import EngineBenchIO
import Foundation
import Glibc
import LinkEmulation
import PacketEngine
import XCTest

/// Both readers through the same checks: the engine's ring and linkcond-bench's `recvmmsg` (the other
/// tests use the ring).
class ReceiveMethodTestCase: EngineTestCase {
    /// Starts an engine reading with this case's method; with `segmenting`, super-frames are read with
    /// `PACKET_VNET_HDR` and cut in the engine (counted there).
    func startReading<S: FrameScheduler>(
        _ lab: WireLab, uplink: sending S, downlink: sending S, segmenting: SegmentationCounters? = nil
    ) throws -> EngineRuntime<S> {
        throw XCTSkip("a receive method's subclass runs the checks")
    }

    func checkTrafficCrossesBothWaysWithoutReadBack() throws {
        let lab = try makeLab()
        let uplink = SwitchableScheduler()
        uplink.countedPort = 40_101
        let downlink = SwitchableScheduler()
        downlink.countedPort = 40_102
        let runtime = try startReading(lab, uplink: uplink, downlink: downlink)
        XCTAssertEqual(try Traffic.udpDatagrams(count: 200, from: lab.client, to: WireLab.routerV4, in: lab.router, port: 40_101), 200)
        XCTAssertEqual(try Traffic.udpDatagrams(count: 200, from: lab.router, to: WireLab.clientV6, in: lab.client, port: 40_102), 200)
        XCTAssertEqual(try runtime.perform(on: .uplink) { $0.countedUDP }, 200)
        XCTAssertEqual(try runtime.perform(on: .downlink) { $0.countedUDP }, 200)
        let outcome = try TCPTransfer.run(bytes: 8 << 20, from: lab.client, to: WireLab.routerV4, in: lab.router, port: 40_110)
        XCTAssertNil(outcome.error, "\(outcome)")
        XCTAssertEqual(outcome.receivedHash, outcome.sentHash)
        for direction in Direction.allCases {
            let statistics = runtime.statistics(of: direction)
            XCTAssertEqual(statistics.sent, statistics.received, "\(direction): \(statistics)")
            XCTAssertEqual(statistics.truncated, 0, "\(direction)")
            XCTAssertEqual(statistics.outgoingSkipped, 0, "\(direction)")
        }
    }

    func checkSegmentationInTheEngineFindsTheVnetHeader() throws {
        let lab = try makeLab(mode: .segmentInEngine)
        let counters = SegmentationCounters()
        let runtime = try startReading(lab, uplink: SwitchableScheduler(), downlink: SwitchableScheduler(), segmenting: counters)
        let before = try SNMPCounters.read(in: lab.router)
        try runtime.perform(on: .uplink) { $0.mode = .corruptTCP(count: 2) }
        let outcome = try TCPTransfer.run(bytes: 8 << 20, from: lab.client, to: WireLab.routerV4, in: lab.router, port: 40_120)
        XCTAssertNil(outcome.error, "\(outcome)")
        XCTAssertEqual(outcome.receivedHash, outcome.sentHash)
        XCTAssertEqual(try SNMPCounters.read(in: lab.router)["Tcp", "InCsumErrors"] - before["Tcp", "InCsumErrors"], 2)
        XCTAssertGreaterThan(counters.superFrames.load(ordering: .relaxed), 0, counters.description)
        XCTAssertEqual(counters.unsupported.load(ordering: .relaxed), 0, counters.description)
    }

    func checkALinkFlapNeitherStopsNorSpinsTheEngine() throws {
        let lab = try makeLab()
        let runtime = try startReading(lab, uplink: SwitchableScheduler(), downlink: SwitchableScheduler())
        let relay = try CarrierRelay(wire: lab.ends)
        addTeardownBlock { relay.stop() }
        try relay.start()
        XCTAssertNotNil(try Traffic.ping(from: lab.client, to: WireLab.routerV4, timeout: 1))
        try lab.routerLinks.setLink("c-wl0", up: false)
        XCTAssertTrue(try eventually { try !lab.clientLinks.link(named: "wl0").carrier })
        try lab.routerLinks.setLink("c-wl0", up: true)
        XCTAssertTrue(try eventually { try lab.clientLinks.link(named: "wl0").carrier })
        // The ends went down and up: their sockets reported ENETDOWN once, which must not leave epoll
        // reporting an error forever (a thread spinning at full CPU).
        let cpuBefore = Direction.allCases.map { runtime.statistics(of: $0) }.reduce(0) { $0 + $1.userCPU + $1.systemCPU }
        usleep(300_000)
        let cpuAfter = Direction.allCases.map { runtime.statistics(of: $0) }.reduce(0) { $0 + $1.userCPU + $1.systemCPU }
        XCTAssertLessThan(cpuAfter - cpuBefore, 60_000_000, "the engine kept busy on an idle wire")
        var replied = false
        for _ in 0..<5 where !replied { replied = try Traffic.ping(from: lab.client, to: WireLab.routerV4, timeout: 1) != nil }
        XCTAssertTrue(replied, "no traffic after the flap")
    }

    /// Frames that arrive while the direction's thread cannot read (here: held in a control job) fill the
    /// ring or the socket buffer; the kernel drops the rest, and the statistics count every one of them:
    /// what the engine received plus what the kernel dropped is at least what was sent.
    func checkFramesTheKernelDropsAreCountedAsOverruns() throws {
        let lab = try makeLab()
        let uplink = SwitchableScheduler()
        let runtime = try startReading(lab, uplink: uplink, downlink: SwitchableScheduler())
        XCTAssertNotNil(try Traffic.ping(from: lab.client, to: WireLab.routerV4, timeout: 1), "no path before the flood")
        let quiet = runtime.statistics(of: .uplink)
        XCTAssertEqual(quiet.receiveOverruns, 0, "overruns on an idle wire: \(quiet)")

        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            _ = try? runtime.perform(on: .uplink) { _ in
                started.signal()
                release.wait()
            }
            finished.signal()
        }
        started.wait()
        let count = 20_000
        let arrived: Int
        do {
            defer { release.signal() }
            arrived = try Traffic.udpDatagrams(count: count, from: lab.client, to: WireLab.routerV4, in: lab.router, port: 40_130, timeout: 0.1)
        }
        finished.wait()
        XCTAssertEqual(arrived, 0, "datagrams crossed while the uplink thread was held")
        let before = quiet.received
        var statistics = runtime.statistics(of: .uplink)
        // The held thread drains what the ring (or buffer) kept once it runs again.
        _ = eventually { statistics = runtime.statistics(of: .uplink); return statistics.received - before + statistics.receiveOverruns >= UInt64(count) }
        XCTAssertGreaterThan(statistics.receiveOverruns, 0, "a full ring dropped nothing? \(statistics)")
        XCTAssertGreaterThanOrEqual(statistics.received - before + statistics.receiveOverruns, UInt64(count), "\(statistics)")
        XCTAssertLessThan(statistics.receiveOverruns, UInt64(count), "nothing was kept for the thread: \(statistics)")
    }

    func checkStopLeavesNoSocket() throws {
        let lab = try makeLab()
        let runtime = try startReading(lab, uplink: PassThroughScheduler(), downlink: PassThroughScheduler())
        XCTAssertNotNil(try Traffic.ping(from: lab.client, to: WireLab.routerV4, timeout: 1))
        runtime.stop()
        XCTAssertEqual(try packetSockets(in: lab.wire), 0, "a packet socket (or a ring mapping holding one) is left")
    }
}

/// The engine's own reader: a `TPACKET_V2` ring.
final class RingReceiveTests: ReceiveMethodTestCase {
    override func startReading<S: FrameScheduler>(
        _ lab: WireLab, uplink: sending S, downlink: sending S, segmenting: SegmentationCounters? = nil
    ) throws -> EngineRuntime<S> {
        guard let segmenting else { return try startEngine(lab, uplink: uplink, downlink: downlink) }
        return try startEngine(lab, uplink: uplink, downlink: downlink, source: BenchReaders.segmentingRing(counters: segmenting))
    }

    func testTrafficCrossesBothWaysWithoutReadBack() throws { try checkTrafficCrossesBothWaysWithoutReadBack() }
    func testSegmentationInTheEngineFindsTheVnetHeader() throws { try checkSegmentationInTheEngineFindsTheVnetHeader() }
    func testALinkFlapNeitherStopsNorSpinsTheEngine() throws { try checkALinkFlapNeitherStopsNorSpinsTheEngine() }
    func testStopUnmapsTheRingsSoNoSocketIsLeft() throws { try checkStopLeavesNoSocket() }
    func testFramesTheKernelDropsAreCountedAsOverruns() throws { try checkFramesTheKernelDropsAreCountedAsOverruns() }
}

/// linkcond-bench's `recvmmsg` reader (`RecvmmsgSource`).
final class RecvmmsgReceiveTests: ReceiveMethodTestCase {
    override func startReading<S: FrameScheduler>(
        _ lab: WireLab, uplink: sending S, downlink: sending S, segmenting: SegmentationCounters? = nil
    ) throws -> EngineRuntime<S> {
        guard let segmenting else { return try startEngine(lab, uplink: uplink, downlink: downlink, source: BenchReaders.recvmmsg) }
        return try startEngine(lab, uplink: uplink, downlink: downlink, source: BenchReaders.segmentingRecvmmsg(counters: segmenting))
    }

    func testTrafficCrossesBothWaysWithoutReadBack() throws { try checkTrafficCrossesBothWaysWithoutReadBack() }
    func testSegmentationInTheEngineFindsTheVnetHeader() throws { try checkSegmentationInTheEngineFindsTheVnetHeader() }
    func testALinkFlapNeitherStopsNorSpinsTheEngine() throws { try checkALinkFlapNeitherStopsNorSpinsTheEngine() }
    func testStopLeavesNoSocket() throws { try checkStopLeavesNoSocket() }
    func testFramesTheKernelDropsAreCountedAsOverruns() throws { try checkFramesTheKernelDropsAreCountedAsOverruns() }
}

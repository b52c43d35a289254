import EngineBenchIO
import Foundation
import Glibc
import LinkEmulation
import PacketEngine
import XCTest

/// linkcond-bench's segmenting reader (``OffloadMode/segmentInEngine``): the peers keep TSO and checksum
/// offload, the engine reads super-frames with `PACKET_VNET_HDR` from its ring and segments them itself.
final class SegmentInEngineTests: EngineTestCase {

    func testTCPCrossesIntactAsSegmentsTheEngineCut() throws {
        let lab = try makeLab(mode: .segmentInEngine)
        let peer = try InterfaceOffloads.features(of: "wl0", in: lab.client)
        XCTAssertEqual(peer["tx-tcp-segmentation"], true, "segmentInEngine keeps TSO on the peer")
        XCTAssertEqual(peer["tx-udp-segmentation"], false, "UDP segmentation must be off: the engine cannot cut it")
        let uplink = SwitchableScheduler()
        uplink.countedPort = 40_060
        let counters = SegmentationCounters()
        let runtime = try startEngine(lab, uplink: uplink, downlink: SwitchableScheduler(), source: BenchReaders.segmentingRing(counters: counters))
        let size = 8 << 20
        for (from, to, target) in [(lab.client, lab.router, WireLab.routerV4), (lab.router, lab.client, WireLab.clientV6)] {
            let outcome = try TCPTransfer.run(bytes: size, from: from, to: target, in: to, port: 40_050)
            XCTAssertNil(outcome.error, "\(outcome)")
            XCTAssertEqual(outcome.receivedBytes, size)
            XCTAssertEqual(outcome.receivedHash, outcome.sentHash)
        }
        XCTAssertEqual(try Traffic.udpDatagrams(count: 50, from: lab.client, to: WireLab.routerV4, in: lab.router, port: 40_060), 50)
        XCTAssertEqual(try runtime.perform(on: .uplink) { $0.countedUDP }, 50)
        XCTAssertNotNil(try Traffic.ping(from: lab.client, to: WireLab.routerV6, timeout: 1))
        XCTAssertGreaterThan(counters.superFrames.load(ordering: .relaxed), 0, "no super-frame was read: \(counters.description)")
        XCTAssertGreaterThan(counters.checksumsCompleted.load(ordering: .relaxed), 0, counters.description)
        XCTAssertEqual(counters.unsupported.load(ordering: .relaxed), 0, counters.description)
        XCTAssertEqual(counters.overflows.load(ordering: .relaxed), 0, counters.description)
        for direction in Direction.allCases {
            let statistics = runtime.statistics(of: direction)
            XCTAssertEqual(statistics.truncated, 0, "\(direction): \(statistics)")
            XCTAssertEqual(statistics.sendFailures, 0, "\(direction): errno \(statistics.lastSendError)")
            // Nothing larger than an MTU left the engine.
            XCTAssertEqual(statistics.sent, statistics.received, "\(direction): \(statistics)")
        }
    }

    func testCorruptedSegmentIsStillCaughtByTheReceiver() throws {
        let lab = try makeLab(mode: .segmentInEngine)
        let counters = SegmentationCounters()
        let runtime = try startEngine(
            lab, uplink: SwitchableScheduler(), downlink: SwitchableScheduler(), source: BenchReaders.segmentingRing(counters: counters))
        let before = try SNMPCounters.read(in: lab.router)
        try runtime.perform(on: .uplink) { $0.mode = .corruptTCP(count: 3) }
        let outcome = try TCPTransfer.run(bytes: 2 << 20, from: lab.client, to: WireLab.routerV4, in: lab.router, port: 40_070)
        let after = try SNMPCounters.read(in: lab.router)
        XCTAssertEqual(try runtime.perform(on: .uplink) { $0.corrupted }, 3)
        XCTAssertNil(outcome.error, "\(outcome)")
        XCTAssertEqual(outcome.receivedHash, outcome.sentHash, "a corrupted segment was delivered")
        XCTAssertEqual(after["Tcp", "InCsumErrors"] - before["Tcp", "InCsumErrors"], 3)
        XCTAssertGreaterThan(counters.superFrames.load(ordering: .relaxed), 0, "the test did not exercise segmentation")
    }
}

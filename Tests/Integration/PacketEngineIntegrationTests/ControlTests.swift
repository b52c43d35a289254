import Foundation
import Glibc
import LinkEmulation
import PacketEngine
import XCTest

/// `EngineRuntime.perform`: work run on a direction's own thread between batches.
final class ControlTests: EngineTestCase {
    func testConcurrentPerformsAllRunOnceWhileTrafficFlows() throws {
        let lab = try makeLab()
        let runtime = try startEngine(lab, uplink: SwitchableScheduler(), downlink: SwitchableScheduler())
        let finished = DispatchSemaphore(value: 0)
        let result = OutcomeBox()
        let traffic = Thread {
            result.outcome = try? TCPTransfer.run(bytes: 16 << 20, from: lab.client, to: WireLab.routerV4, in: lab.router, port: 40_200)
            finished.signal()
        }
        traffic.start()
        XCTAssertTrue(eventually { runtime.statistics(of: .uplink).received > 200 }, "the transfer did not start")
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            for _ in 0..<100 {
                let direction: Direction = worker % 2 == 0 ? .uplink : .downlink
                _ = try? runtime.perform(on: direction) { scheduler in
                    scheduler.controlCounter += 1
                    return scheduler.controlCounter
                }
            }
        }
        XCTAssertEqual(try runtime.perform(on: .uplink) { $0.controlCounter }, 200)
        XCTAssertEqual(try runtime.perform(on: .downlink) { $0.controlCounter }, 200)
        XCTAssertEqual(finished.wait(timeout: .now() + 30), .success, "the transfer did not end")
        XCTAssertNil(result.outcome?.error, "\(String(describing: result.outcome))")
        XCTAssertEqual(result.outcome?.receivedHash, result.outcome?.sentHash)
    }

    private final class OutcomeBox: @unchecked Sendable {
        var outcome: TCPTransfer.Outcome?
    }

    func testPerformReplacesTheSchedulerAndErrorsReachTheCaller() throws {
        let lab = try makeLab()
        let runtime = try startEngine(lab, uplink: SwitchableScheduler(), downlink: SwitchableScheduler())
        XCTAssertNotNil(try Traffic.ping(from: lab.client, to: WireLab.routerV4, timeout: 1))
        try runtime.perform(on: .uplink) { scheduler in
            let replacement = SwitchableScheduler()
            replacement.countedPort = 40_210
            scheduler = replacement
        }
        XCTAssertEqual(try Traffic.udpDatagrams(count: 30, from: lab.client, to: WireLab.routerV4, in: lab.router, port: 40_210), 30)
        XCTAssertEqual(try runtime.perform(on: .uplink) { $0.countedUDP }, 30, "the replacement did not take over")
        XCTAssertEqual(try runtime.perform(on: .uplink) { $0.offered }, 30, "the replacement saw frames before it was installed")

        struct Refusal: Error {}
        XCTAssertThrowsError(try runtime.perform(on: .downlink) { _ in throw Refusal() }) { error in
            XCTAssertTrue(error is Refusal, "\(error)")
        }
    }

    func testPerformRunsOnTheCallerBeforeStartAndAfterStop() throws {
        let lab = try makeLab()
        let runtime = try EngineRuntime(wire: lab.ends, uplink: SwitchableScheduler(), downlink: SwitchableScheduler())
        try runtime.perform(on: .uplink) { $0.controlCounter = 7 }
        try runtime.start()
        XCTAssertEqual(try runtime.perform(on: .uplink) { $0.controlCounter }, 7)
        runtime.stop()
        XCTAssertEqual(try runtime.perform(on: .uplink) { $0.controlCounter }, 7)
        XCTAssertThrowsError(try runtime.start(), "a stopped runtime must not start again")
    }
}

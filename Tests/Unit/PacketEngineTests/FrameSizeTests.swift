import Glibc
import LinkEmulation
import XCTest

@testable import PacketEngine

/// Frames longer than the slots they were meant for, against an embedded wire: a long frame read the slow
/// way crosses and has the slots grown between batches; what cannot cross is dropped under its own
/// counter (truncated, oversized), never as something else and never uncounted.
final class FrameSizeTests: XCTestCase {
    private func long(id: UInt8, _ length: Int) -> [UInt8] { TestFrame.udp(id: id, length: length) }

    func testALongFrameReadTheSlowWayCrossesWholeAndHasTheSlotsGrownBeforeTheNextBatch() {
        let direction = EmbeddedDirection(ScriptedScheduler(), slotSize: 9100, sendSlotSize: 1518)
        let wire = direction.wire
        wire.mtu = 9000
        direction.wire.push(TestFrame.udp(id: 1))
        direction.run()
        XCTAssertEqual(wire.mtuReadings, 0, "an end's MTU was read for a frame that fit")
        let jumbo = long(id: 2, 9018)
        wire.push(jumbo, copied: true)
        wire.push(TestFrame.udp(id: 3))
        direction.run()
        XCTAssertEqual(wire.sentIDs, [1, 2, 3])
        XCTAssertEqual(wire.sent[1].bytes, jumbo, "the long frame changed on the way")
        XCTAssertEqual(direction.statistics.copied, 1)
        XCTAssertEqual(wire.growRequests, [9018], "the source was not grown to the MTU with a VLAN tag")
        XCTAssertEqual(wire.watchedDescriptors, [77], "the waiter does not watch the rebuilt source")
        XCTAssertEqual(direction.statistics.ringRebuilds, 1)
        XCTAssertGreaterThanOrEqual(direction.batch.slotSize, 9018, "the send slots did not grow with the MTU")
        // The slots hold it now: another long frame asks for nothing more.
        wire.push(long(id: 4, 9018), copied: true)
        direction.run()
        XCTAssertEqual(wire.sentIDs.last, 4)
        XCTAssertEqual(wire.growRequests, [9018])
        XCTAssertEqual(direction.statistics.truncated + direction.statistics.oversized, 0, "\(direction.statistics)")
    }

    func testATruncatedFrameIsDroppedUnofferedCountedAndHasTheSlotsGrown() {
        let scheduler = ScriptedScheduler()
        let direction = EmbeddedDirection(scheduler, slotSize: 4000)
        direction.wire.mtu = 4000
        direction.wire.push(long(id: 1, 1518), truncated: true)
        direction.wire.push(TestFrame.udp(id: 2))
        direction.run()
        XCTAssertEqual(scheduler.offers.map(\.id), [2], "a truncated frame reached the model")
        XCTAssertEqual(direction.wire.sentIDs, [2])
        XCTAssertEqual(direction.statistics.truncated, 1)
        XCTAssertEqual(direction.wire.growRequests, [4018])
    }

    func testARebuildThatFailsIsCountedOnceAndLongFramesKeepCrossing() {
        let direction = EmbeddedDirection(ScriptedScheduler(), slotSize: 9100)
        let wire = direction.wire
        wire.mtu = 9000
        let failure = PacketEngineError(operation: "rebuild the receive ring of cl-wl0 for 9018-byte frames", errno: ENOMEM)
        wire.growFailure = failure
        for id in 1...3 {
            wire.push(long(id: UInt8(id), 9018), copied: true)
            direction.run()
        }
        XCTAssertEqual(wire.sentIDs, [1, 2, 3])
        XCTAssertEqual(direction.statistics.copied, 3)
        XCTAssertEqual(direction.statistics.rebuildFailures, 1, "a failed rebuild was tried again for the same size")
        XCTAssertEqual(direction.statistics.lastRebuildFailure, failure)
        XCTAssertEqual(direction.statistics.ringRebuilds, 0)
        XCTAssertEqual(wire.growRequests, [9018])
        XCTAssertEqual(wire.watchedDescriptors, [])
    }

    func testAHeldFrameLongerThanASendSlotLeavesWholeAndInOrder() {
        let scheduler = ScriptedScheduler()
        // Frame 2 is held until the time it arrives (it leaves in the same batch), frame 4 for 1 ms.
        scheduler.decide = { id, at in id == 2 ? .hold(until: at) : id == 4 ? .hold(until: at + 1_000_000) : .forward }
        let direction = EmbeddedDirection(scheduler, slotSize: 9100, sendSlotSize: 1518)
        let wire = direction.wire
        wire.mtu = 1500  // the ends do not say more: only the frames themselves make the slots grow
        let second = long(id: 2, 4000)
        wire.push(TestFrame.udp(id: 1))
        wire.push(second, copied: true)
        wire.push(TestFrame.udp(id: 3))
        wire.push(long(id: 4, 9000), copied: true)
        direction.run()
        XCTAssertEqual(wire.sentIDs, [1, 2, 3])
        XCTAssertEqual(wire.sent[1].bytes, second)
        direction.advanceTime(by: 1_000_000)
        XCTAssertEqual(wire.sentIDs, [1, 2, 3, 4])
        XCTAssertEqual(wire.sent[3].bytes.count, 9000)
        XCTAssertEqual(direction.statistics.oversized, 0, "\(direction.statistics)")
        XCTAssertEqual(direction.statistics.departed, 2)
        XCTAssertGreaterThanOrEqual(direction.batch.slotSize, 9000)
    }

    func testAFrameTheSendingEndRefusesForItsLengthIsOversizedNotASendFailure() {
        let direction = EmbeddedDirection(ScriptedScheduler())
        direction.wire.sendResults = [.failed(EMSGSIZE)]
        for id in 1...3 { direction.wire.push(TestFrame.udp(id: UInt8(id))) }
        direction.run()
        XCTAssertEqual(direction.wire.sentIDs, [2, 3])
        XCTAssertEqual(direction.statistics.oversized, 1)
        XCTAssertEqual(direction.statistics.sendFailures, 0)
        XCTAssertEqual(direction.statistics.received, direction.statistics.sent + direction.statistics.oversized)
    }

    func testAdaptingToTheMTUThroughTheMailboxGrowsTheSlotsBeforeAnyLongFrame() {
        let direction = EmbeddedDirection(ScriptedScheduler(), sendSlotSize: 1518)
        direction.wire.mtu = 65_535
        XCTAssertTrue(direction.enqueue { loop, _ in loop.adaptToMTU() })
        direction.run()
        XCTAssertEqual(direction.wire.growRequests, [65_553])
        XCTAssertGreaterThanOrEqual(direction.batch.slotSize, 65_553)
        XCTAssertEqual(direction.statistics.ringRebuilds, 1)
        // A smaller MTU shrinks nothing.
        direction.wire.mtu = 1500
        XCTAssertTrue(direction.enqueue { loop, _ in loop.adaptToMTU() })
        direction.run()
        XCTAssertEqual(direction.wire.growRequests, [65_553])
    }
}

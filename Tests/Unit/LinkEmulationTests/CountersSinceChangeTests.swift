import LinkEmulation
import Profiles
import XCTest

/// The counters `show` prints start over with each change of conditions, as a new tc qdisc's do, while
/// the totals since the direction was built keep counting.
final class CountersSinceChangeTests: XCTestCase {
    func testAReplaceStartsTheCountersOverAndKeepsTheTotals() {
        // 1 Mbit/s with a two-frame DropTail: of five frames at once, two are sent, three tail-dropped.
        let conditions = LinkConditions(rate: 1_000_000, queue: .dropTail(.packets(2)))
        let harness = Harness(conditions, direction: .downlink)
        for id in 0..<5 { harness.offer(FrameBuilder.frame(protocol: 17, payload: 958, id: UInt64(id)), at: t0) }
        harness.drain()
        XCTAssertEqual(harness.emulator.countersSinceChange, harness.emulator.counters, "no change yet: both count from the start")
        XCTAssertEqual(harness.emulator.counters.tailDroppedFrames, 3)
        XCTAssertEqual(harness.emulator.counters.sojourn.count, 2)

        harness.emulator.replace(conditions: LinkConditions(rate: 1_000_000, queue: .dropTail(.packets(3))))
        var since = harness.emulator.countersSinceChange
        XCTAssertEqual(since.offeredFrames, 0)
        XCTAssertEqual(since.tailDroppedFrames, 0)
        XCTAssertEqual(since.sojourn.count, 0, "the sojourn histogram restarts with the change")

        for id in 5..<10 { harness.offer(FrameBuilder.frame(protocol: 17, payload: 958, id: UInt64(id)), at: t0 + second) }
        harness.drain()
        since = harness.emulator.countersSinceChange
        let totals = harness.emulator.counters
        XCTAssertEqual(since.offeredFrames, 5)
        XCTAssertEqual(since.passedFrames, 3)
        XCTAssertEqual(since.tailDroppedFrames, 2)
        XCTAssertEqual(since.queueDroppedFrames, 2)
        XCTAssertEqual(since.sojourn.count, 3)
        XCTAssertEqual(totals.offeredFrames, 10)
        XCTAssertEqual(totals.passedFrames, 5)
        XCTAssertEqual(totals.tailDroppedFrames, 5)
        XCTAssertEqual(since.offeredFrames, since.passedFrames + since.lostFrames + since.queueDroppedFrames + since.backlogFrames)
    }

    func testARestoreAfterARolledBackChangeKeepsCountingFromTheChangeBefore() {
        let first = LinkConditions(rate: 1_000_000, queue: .dropTail(.packets(2)))
        let harness = Harness(first, direction: .downlink)
        harness.emulator.replace(conditions: first)
        for id in 0..<4 { harness.offer(FrameBuilder.frame(protocol: 17, payload: 958, id: UInt64(id)), at: t0) }
        harness.drain()
        let before = harness.emulator.countersSinceChange
        XCTAssertEqual(before.offeredFrames, 4)

        harness.emulator.replace(conditions: LinkConditions(delay: 5 * ms))
        XCTAssertEqual(harness.emulator.countersSinceChange.offeredFrames, 0)
        harness.emulator.restore(conditions: first, options: harness.emulator.options)
        XCTAssertEqual(harness.emulator.conditions, first)
        XCTAssertEqual(harness.emulator.countersSinceChange.offeredFrames, 4, "the rolled-back change did not start the counters over")
        XCTAssertEqual(harness.emulator.countersSinceChange.tailDroppedFrames, before.tailDroppedFrames)
        XCTAssertEqual(harness.emulator.counters.offeredFrames, 4)
    }

    func testFramesHeldAcrossAChangeCountAsOfferedAfterIt() {
        let harness = Harness(LinkConditions(rate: 1_000_000, delay: 50 * ms), direction: .downlink)
        for id in 0..<3 { harness.offer(FrameBuilder.frame(protocol: 17, payload: 958, id: UInt64(id)), at: t0) }
        XCTAssertEqual(harness.emulator.counters.backlogFrames, 3)
        harness.emulator.replace(conditions: LinkConditions(rate: 2_000_000, delay: 50 * ms))
        var since = harness.emulator.countersSinceChange
        XCTAssertEqual(since.offeredFrames, 3, "the three frames held across the change")
        XCTAssertEqual(since.offeredBytes, 3000)
        harness.offer(FrameBuilder.frame(protocol: 17, payload: 958, id: 3), at: t0 + ms)
        harness.drain()
        since = harness.emulator.countersSinceChange
        XCTAssertEqual(since.offeredFrames, 4)
        XCTAssertEqual(since.passedFrames, 4)
        XCTAssertEqual(since.offeredFrames + since.duplicatedFrames, since.passedFrames + since.lostFrames + since.queueDroppedFrames + since.backlogFrames)
    }
}

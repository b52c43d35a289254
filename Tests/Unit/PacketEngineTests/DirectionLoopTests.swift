import LinkEmulation
import Profiles
import XCTest

@testable import PacketEngine

/// The direction loop's forwarding and timing against an embedded wire: order, flushes, the departure
/// timer, departures exactly when due, spinning, arrival times; with test schedulers and the real
/// ``DirectionEmulator``. All on a virtual clock: no root, no sockets, no wall-clock bounds.
final class DirectionLoopTests: XCTestCase {
    private let millisecond: UInt64 = 1_000_000

    func testFramesLeaveInTheOrderTheyArrivedWithTheirBytesUntouched() {
        let direction = EmbeddedDirection(ScriptedScheduler(), batchSize: 4)
        let frames = (0..<10).map { TestFrame.udp(id: UInt8($0), length: 60 + $0 * 7) }
        for frame in frames { direction.wire.push(frame) }
        XCTAssertFalse(direction.run(), "the loop stopped instead of waiting")
        XCTAssertEqual(direction.wire.sent.map(\.bytes), frames)
        XCTAssertEqual(direction.wire.sendCalls, [4, 4, 2], "one send per batch read")
        XCTAssertEqual(direction.wire.referenceViolations, 0, "a frame was sent after its batch was given back")
        XCTAssertEqual(direction.wire.waitingCount, 0)
        let statistics = direction.statistics
        XCTAssertEqual(statistics.received, 10)
        XCTAssertEqual(statistics.receivedBytes, UInt64(frames.map(\.count).reduce(0, +)))
        XCTAssertEqual(statistics.forwardedAtOnce, 10)
        XCTAssertEqual(statistics.sent, 10)
        XCTAssertEqual(statistics.sentBytes, statistics.receivedBytes)
        XCTAssertEqual(statistics.lateness.count, 0, "frames forwarded at once have no lateness")
        XCTAssertNil(direction.wire.timerDeadline, "nothing is held, so nothing arms the timer")
    }

    func testDueDeparturesLeaveBeforeTheNextReadAndADuplicateRightBehindItsOriginal() {
        let scheduler = ScriptedScheduler()
        let start = 1_000_000_000 as UInt64
        // Frame 1 is held 5 ms; frame 3 is forwarded with a copy due at once (a duplicate).
        scheduler.decide = { id, at in
            switch id {
            case 1: .hold(until: at + 5_000_000)
            case 3: .forwardAndHoldCopy(until: at)
            default: .forward
            }
        }
        let direction = EmbeddedDirection(scheduler, batchSize: 8)
        direction.wire.push(TestFrame.udp(id: 1))
        direction.run()
        XCTAssertEqual(direction.wire.sentIDs, [])
        // Frame 2 is waiting when frame 1 falls due: the departure is sent before the read, so reading never
        // delays it.
        direction.wire.push(TestFrame.udp(id: 2))
        direction.advanceTime(to: start + 5 * millisecond)
        XCTAssertEqual(direction.wire.sentIDs, [1, 2])
        XCTAssertEqual(direction.wire.sendCalls, [1, 1])
        XCTAssertEqual(direction.wire.sent.map(\.due), [start + 5 * millisecond, 0])
        // The duplicate, due the moment its original is forwarded, follows it in the same send, before the
        // frame read after it.
        direction.wire.push(TestFrame.udp(id: 3))
        direction.wire.push(TestFrame.udp(id: 4))
        direction.run()
        XCTAssertEqual(direction.wire.sentIDs, [1, 2, 3, 3, 4])
        XCTAssertEqual(direction.wire.sendCalls, [1, 1, 3])
        XCTAssertEqual(direction.statistics.forwardedAtOnce, 3)
        XCTAssertEqual(direction.statistics.held, 1)
        XCTAssertEqual(direction.statistics.departed, 2)
        XCTAssertEqual(direction.statistics.lateness.count, 2)
        XCTAssertEqual(direction.statistics.lateness.maximum, 0, "sent at the virtual instant they were due")
    }

    func testAFrameHeldForNoTimeIsSentInTheFlushOfItsBatchInOrder() {
        let scheduler = ScriptedScheduler()
        scheduler.decide = { id, at in id % 2 == 0 ? .hold(until: at) : .forward }
        let direction = EmbeddedDirection(scheduler, batchSize: 8)
        for id in 1...6 { direction.wire.push(TestFrame.udp(id: UInt8(id))) }
        direction.run()
        XCTAssertEqual(direction.wire.sentIDs, [1, 2, 3, 4, 5, 6])
        XCTAssertEqual(direction.wire.sendCalls, [6], "forwarded and departing frames were not sent together")
        XCTAssertEqual(direction.wire.sent.map { $0.due != 0 }, [false, true, false, true, false, true])
        XCTAssertEqual(direction.wire.timerArmings, 0)
    }

    func testAFullSendBatchIsFlushedBeforeMoreIsQueued() {
        let scheduler = ScriptedScheduler()
        scheduler.decide = { _, at in .hold(until: at + 10_000_000) }
        let direction = EmbeddedDirection(scheduler, batchSize: 4)
        for id in 0..<6 { direction.wire.push(TestFrame.udp(id: UInt8(id))) }
        direction.run()
        XCTAssertEqual(direction.wire.sentCount, 0)
        direction.advanceTime(by: 10 * millisecond)
        // Six departures through a batch of four: a send when it is full, then the rest.
        XCTAssertEqual(direction.wire.sendCalls, [4, 2])
        XCTAssertEqual(direction.wire.sentIDs, [0, 1, 2, 3, 4, 5])

        // Forwarded frames and a duplicate of each overflow one batch read of four in the middle of it.
        scheduler.decide = { _, at in .forwardAndHoldCopy(until: at) }
        direction.wire.forgetSent()
        for id in 10..<14 { direction.wire.push(TestFrame.udp(id: UInt8(id))) }
        direction.run()
        XCTAssertEqual(direction.wire.sentIDs, [10, 10, 11, 11, 12, 12, 13, 13])
        XCTAssertEqual(direction.wire.sendCalls, [4, 4])
        XCTAssertEqual(direction.wire.referenceViolations, 0)
    }

    func testTheTimerIsArmedForTheNextDepartureAndNotReArmedForALaterOne() {
        let scheduler = ScriptedScheduler()
        let start = 1_000_000_000 as UInt64
        scheduler.decide = { id, _ in .hold(until: start + UInt64(id) * 1_000_000) }
        let direction = EmbeddedDirection(scheduler)
        direction.wire.push(TestFrame.udp(id: 10))
        direction.run()
        XCTAssertEqual(direction.wire.timerDeadline, start + 10 * millisecond)
        XCTAssertEqual(direction.wire.timerArmings, 1)
        // A frame due later leaves the armed deadline alone (the early wake-up is harmless).
        direction.wire.push(TestFrame.udp(id: 15))
        direction.advanceTime(by: 2 * millisecond)
        XCTAssertEqual(direction.wire.timerArmings, 1, "re-armed for a later deadline")
        XCTAssertEqual(direction.loop.armedDeadline, start + 10 * millisecond)
        // A frame due earlier re-arms it.
        direction.wire.push(TestFrame.udp(id: 5))
        direction.run()
        XCTAssertEqual(direction.wire.timerArmings, 2)
        XCTAssertEqual(direction.wire.timerDeadline, start + 5 * millisecond)
        // When it fires, the next departure arms it again.
        direction.advanceTime(to: start + 5 * millisecond)
        XCTAssertEqual(direction.wire.sentIDs, [5])
        XCTAssertEqual(direction.wire.timerDeadline, start + 10 * millisecond)
        XCTAssertEqual(direction.wire.timerArmings, 3)
        direction.advanceTime(to: start + 10 * millisecond)
        XCTAssertEqual(direction.wire.sentIDs, [5, 10])
        XCTAssertEqual(direction.wire.timerDeadline, start + 15 * millisecond)
        direction.advanceTime(to: start + 15 * millisecond)
        XCTAssertEqual(direction.wire.sentIDs, [5, 10, 15])
        XCTAssertNil(direction.wire.timerDeadline, "armed with nothing held")
        XCTAssertNil(direction.loop.armedDeadline)
        XCTAssertEqual(direction.wire.timerArmings, 4)
    }

    func testHeldFramesLeaveOnlyWhenDue() {
        let scheduler = ScriptedScheduler()
        scheduler.decide = { _, at in .hold(until: at + 10_000_000) }
        let direction = EmbeddedDirection(scheduler)
        let start = direction.wire.now
        direction.wire.push(TestFrame.udp(id: 1))
        direction.run()
        direction.advanceTime(to: start + 10 * millisecond - 1)
        XCTAssertEqual(direction.wire.sentCount, 0, "a frame left before it was due")
        XCTAssertEqual(scheduler.heldCount, 1)
        direction.advanceTime(by: 1)
        XCTAssertEqual(direction.wire.sent.map(\.time), [start + 10 * millisecond])
        XCTAssertEqual(direction.statistics.lateness.maximum, 0)
        // A departure found late (the thread woke late) is sent at once, and its lateness recorded.
        direction.wire.push(TestFrame.udp(id: 2))
        direction.run()
        direction.advanceTime(by: 13 * millisecond)
        XCTAssertEqual(direction.wire.sent.last?.time, start + 23 * millisecond)
        XCTAssertEqual(direction.statistics.lateness.maximum, 3 * millisecond)
    }

    func testSpinningWakesEarlyAndSendsOnTheDueTime() {
        let scheduler = ScriptedScheduler()
        scheduler.decide = { _, at in .hold(until: at + 10_000_000) }
        let spin: UInt64 = 50_000
        let direction = EmbeddedDirection(scheduler, spin: spin)
        let start = direction.wire.now
        direction.wire.push(TestFrame.udp(id: 1))
        direction.run()
        XCTAssertEqual(direction.wire.timerDeadline, start + 10 * millisecond - spin, "the timer fires a spin early")
        // Each reading of the clock moves it 1 µs; the loop reads it until the frame is due.
        direction.wire.clockTick = 1000
        let readings = direction.wire.clockReadings
        direction.advanceTime(to: start + 10 * millisecond - spin)
        XCTAssertEqual(direction.wire.sentIDs, [1])
        let sentAt = direction.wire.sent[0].time
        XCTAssertGreaterThanOrEqual(sentAt, start + 10 * millisecond, "sent before it was due")
        XCTAssertLessThan(sentAt, start + 10 * millisecond + 5000, "the spin overshot by more than a few clock readings")
        XCTAssertGreaterThanOrEqual(direction.wire.clockReadings - readings, 50, "it did not spin on the clock")
        // Without a spin the same frame waits for the timer at its due time.
        let waiting = EmbeddedDirection(ScriptedScheduler())
        waiting.loop.scheduler.decide = { _, at in .hold(until: at + 10_000_000) }
        waiting.wire.push(TestFrame.udp(id: 1))
        waiting.run()
        XCTAssertEqual(waiting.wire.timerDeadline, waiting.wire.now + 10 * millisecond)
    }

    func testADepartureWithinTheSpinIsNotSleptOn() {
        let scheduler = ScriptedScheduler()
        scheduler.decide = { _, at in .hold(until: at + 20_000) }
        let direction = EmbeddedDirection(scheduler, spin: 50_000)
        direction.wire.clockTick = 1000
        direction.wire.push(TestFrame.udp(id: 7))
        direction.run()
        XCTAssertEqual(direction.wire.sentIDs, [7], "a frame due within the spin was left for the timer")
        XCTAssertEqual(direction.wire.timerArmings, 0)
        XCTAssertEqual(direction.statistics.waits, 1, "only the final wait, with nothing held")
    }

    func testEachFrameIsOfferedAtItsOwnArrivalTime() {
        let scheduler = ScriptedScheduler()
        let direction = EmbeddedDirection(scheduler)
        let start = direction.wire.now
        direction.wire.push(TestFrame.udp(id: 1), arrival: start - 300)
        direction.wire.push(TestFrame.udp(id: 2), arrival: start - 100)
        direction.wire.push(TestFrame.udp(id: 3))
        direction.run()
        XCTAssertEqual(scheduler.offers.map(\.id), [1, 2, 3])
        XCTAssertEqual(scheduler.offers.map(\.at), [start - 300, start - 100, start], "a frame without a stamp arrives when read")
    }

    /// The real model: a 8 Mbit/s serializer and a 20 ms delay line, timed exactly on the virtual clock.
    func testTheEmulatorsDeparturesAreSentWhenItSaysTheyAreDue() {
        let conditions = LinkConditions(rate: 8_000_000, delay: 20_000_000)
        let emulator = DirectionEmulator(conditions: conditions, options: DirectionOptions(direction: .uplink, seed: 1))
        let direction = EmbeddedDirection(emulator, batchSize: 4)
        let start = direction.wire.now
        // Five 1000-byte frames at once: each takes 1 ms at 8 Mbit/s, then 20 ms in the delay line.
        for id in 1...5 { direction.wire.push(TestFrame.udp(id: UInt8(id), length: 1000)) }
        direction.run()
        XCTAssertEqual(direction.statistics.held, 5)
        XCTAssertEqual(direction.wire.timerDeadline, start + 21 * millisecond)
        var time = start
        while direction.loop.scheduler.nextDeparture != nil {
            guard let deadline = direction.wire.timerDeadline, deadline > time else {
                return XCTFail("frames held, but the timer is not armed ahead: \(String(describing: direction.wire.timerDeadline))")
            }
            time = deadline
            direction.advanceTime(to: time)
        }
        XCTAssertEqual(direction.wire.sentIDs, [1, 2, 3, 4, 5])
        XCTAssertEqual(direction.wire.sent.map(\.time), (1...5).map { start + (20 + UInt64($0)) * millisecond })
        XCTAssertEqual(direction.wire.sent.map(\.due), direction.wire.sent.map(\.time))
        XCTAssertEqual(direction.wire.timerArmings, 5, "one arming per departure")
        XCTAssertEqual(direction.loop.scheduler.counters.passedFrames, 5)
        XCTAssertEqual(direction.statistics.lateness.maximum, 0)
    }

    func testTheEmulatorForwardsUnconditionedFramesAtOnceAndDropsWhatItLoses() {
        let direction = EmbeddedDirection(DirectionEmulator(conditions: .unconditioned, options: DirectionOptions(direction: .uplink)))
        for id in 0..<20 { direction.wire.push(TestFrame.udp(id: UInt8(id))) }
        direction.run()
        XCTAssertEqual(direction.wire.sentIDs, (0..<20).map { UInt8($0) })
        XCTAssertEqual(direction.statistics.forwardedAtOnce, 20)
        XCTAssertEqual(direction.wire.timerArmings, 0)

        direction.loop.scheduler.replace(conditions: LinkConditions(loss: .random(probability: 1, correlation: 0)))
        direction.wire.forgetSent()
        for id in 0..<20 { direction.wire.push(TestFrame.udp(id: UInt8(id))) }
        direction.run()
        XCTAssertEqual(direction.wire.sentCount, 0)
        XCTAssertEqual(direction.statistics.dropped, 20)
        XCTAssertEqual(direction.loop.scheduler.counters.lostFrames, 20)
    }
}

import Glibc
import LinkEmulation
import XCTest

@testable import PacketEngine

/// The direction loop's control path and its error accounting against an embedded wire: control jobs run
/// between batches and read or replace the scheduler, stop, send failures, receive errors, truncated and
/// outgoing frames.
final class DirectionLoopControlTests: XCTestCase {
    func testAControlJobRunsBetweenBatchesAndCanReplaceTheScheduler() {
        let first = ScriptedScheduler()
        let direction = EmbeddedDirection(first, batchSize: 4)
        var seen: (offered: Int, sent: Int, label: String)?
        // Queued while the second frame of the first batch is offered, as another thread might.
        first.onOffer = { [unowned direction] count in
            guard count == 2 else { return }
            direction.enqueue { loop, onDirectionThread in
                XCTAssertTrue(onDirectionThread)
                let scheduler = loop.scheduler
                seen = (scheduler.offers.count, direction.wire.sentCount, scheduler.label)
                let replacement = ScriptedScheduler()
                replacement.label = "second"
                replacement.decide = { _, _ in .drop }
                loop.scheduler = replacement
            }
        }
        for id in 0..<10 { direction.wire.push(TestFrame.udp(id: UInt8(id))) }
        direction.run()
        // It ran after the whole first batch was offered and sent, before the next was read.
        XCTAssertEqual(seen?.offered, 4)
        XCTAssertEqual(seen?.sent, 4)
        XCTAssertEqual(seen?.label, "first")
        XCTAssertEqual(direction.wire.sentIDs, [0, 1, 2, 3])
        XCTAssertEqual(direction.loop.scheduler.label, "second")
        XCTAssertEqual(direction.loop.scheduler.offers.map(\.id), [4, 5, 6, 7, 8, 9], "the replacement saw frames before it was installed")
        XCTAssertEqual(direction.statistics.dropped, 6)
        XCTAssertEqual(direction.wire.wakeRequests, 1, "queueing the job did not wake the direction")
    }

    func testAJobQueuedWhileTheLoopSleepsRunsAtItsNextWakeUp() {
        let direction = EmbeddedDirection(ScriptedScheduler())
        direction.run()
        var label: String?
        XCTAssertTrue(direction.enqueue { loop, _ in label = loop.scheduler.label })
        XCTAssertNil(label, "the job ran on the submitter while the mailbox was open")
        direction.run()
        XCTAssertEqual(label, "first")
        XCTAssertFalse(direction.loop.mailbox.hasPending)
    }

    func testStopEndsTheLoopClosesTheMailboxAndLeavesHeldFramesWithTheScheduler() {
        let scheduler = ScriptedScheduler()
        scheduler.decide = { _, at in .hold(until: at + 1_000_000) }
        let direction = EmbeddedDirection(scheduler)
        direction.wire.push(TestFrame.udp(id: 1))
        direction.run()
        var ranLast = false
        direction.enqueue { _, onDirectionThread in ranLast = onDirectionThread }
        direction.loop.requestStop()
        direction.wire.push(TestFrame.udp(id: 2))
        XCTAssertTrue(direction.run(), "the loop did not stop")
        XCTAssertTrue(ranLast, "a job queued before the stop did not run on the direction")
        XCTAssertEqual(direction.wire.waitingCount, 1, "a frame was read after the stop")
        XCTAssertEqual(scheduler.heldCount, 1)
        // Closed: a job now runs at once on its submitter; time passing sends nothing.
        var ranOnSubmitter = false
        XCTAssertFalse(direction.enqueue { _, onDirectionThread in ranOnSubmitter = !onDirectionThread })
        XCTAssertTrue(ranOnSubmitter)
        XCTAssertTrue(direction.advanceTime(by: 5_000_000))
        XCTAssertEqual(direction.wire.sentCount, 0)
        direction.loop.close()
        XCTAssertEqual(direction.wire.closes, 3, "the source, the sink and the waiter are each closed")
    }

    func testSendFailuresAreCountedAndSkipOneFrameEach() {
        let direction = EmbeddedDirection(ScriptedScheduler(), batchSize: 8)
        // A partial send, an interrupted call, then two refusals of one frame each.
        direction.wire.sendLimit = 3
        direction.wire.sendResults = [.interrupted]
        for id in 0..<8 { direction.wire.push(TestFrame.udp(id: UInt8(id))) }
        direction.run()
        XCTAssertEqual(direction.wire.sentIDs, [0, 1, 2, 3, 4, 5, 6, 7])
        XCTAssertEqual(direction.wire.sendCalls, [3, 3, 2])
        XCTAssertEqual(direction.statistics.sendFailures, 0, "an interrupted send is retried, not counted")

        direction.wire.forgetSent()
        direction.wire.sendLimit = .max
        direction.wire.sendResults = [.failed(ENETDOWN), .failed(ENOBUFS)]
        for id in 10..<14 { direction.wire.push(TestFrame.udp(id: UInt8(id))) }
        direction.run()
        XCTAssertEqual(direction.wire.sentIDs, [12, 13])
        XCTAssertEqual(direction.statistics.sendFailures, 2)
        XCTAssertEqual(direction.statistics.lastSendError, ENOBUFS)
        XCTAssertEqual(direction.statistics.sent, 10)
        XCTAssertEqual(direction.statistics.received, 12)
    }

    func testReceiveErrorsAreCountedAndReadingResumes() {
        let direction = EmbeddedDirection(ScriptedScheduler())
        direction.wire.receiveResults = [.interrupted, .failed(ENETDOWN)]
        direction.wire.push(TestFrame.udp(id: 1))
        direction.run()
        // The interrupted read is retried at once; the failed one waits until the source is readable again.
        XCTAssertEqual(direction.statistics.receiveErrors, 1)
        XCTAssertEqual(direction.statistics.lastReceiveError, ENETDOWN)
        XCTAssertEqual(direction.wire.sentIDs, [1])

        // An error reported beside the reads (a ring's socket after its end went down): taken once, counted once.
        direction.wire.pendingError = ENETDOWN
        direction.run()
        XCTAssertEqual(direction.statistics.receiveErrors, 2)
        XCTAssertEqual(direction.wire.pendingError, 0, "the error was not taken")
        direction.wire.push(TestFrame.udp(id: 2))
        direction.run()
        XCTAssertEqual(direction.wire.sentIDs, [1, 2])
        XCTAssertEqual(direction.statistics.receiveErrors, 2)
    }

    func testTruncatedAndOutgoingFramesAreCountedAndNeverOffered() {
        let scheduler = ScriptedScheduler()
        let direction = EmbeddedDirection(scheduler)
        direction.wire.push(TestFrame.udp(id: 1))
        direction.wire.push(TestFrame.udp(id: 2), truncated: true)
        direction.wire.push(TestFrame.udp(id: 3), outgoing: true)
        direction.wire.push(TestFrame.udp(id: 4))
        direction.run()
        XCTAssertEqual(scheduler.offers.map(\.id), [1, 4])
        XCTAssertEqual(direction.wire.sentIDs, [1, 4])
        XCTAssertEqual(direction.statistics.truncated, 1)
        XCTAssertEqual(direction.statistics.outgoingSkipped, 1)
        XCTAssertEqual(direction.statistics.received, 2)
    }

    func testOverrunsAndWaitsAreCountedOnTheDirectionsThread() {
        let direction = EmbeddedDirection(ScriptedScheduler())
        direction.wire.overruns = 7
        direction.run()
        direction.run()
        XCTAssertEqual(direction.statistics.waits, 2)
        var read: DirectionStatistics?
        direction.enqueue { loop, _ in
            loop.recordThreadCounters()
            read = loop.statistics
        }
        direction.run()
        XCTAssertEqual(read?.receiveOverruns, 7)
        XCTAssertGreaterThan((read?.userCPU ?? 0) + (read?.systemCPU ?? 0), 0, "the thread's CPU time was not read")
        direction.wire.overruns = 2
        direction.loop.recordThreadCounters()
        XCTAssertEqual(direction.statistics.receiveOverruns, 9, "overruns are summed")
    }
}

import LinkEmulation
import XCTest

@testable import PacketEngine

/// The polling after traffic, on a virtual clock: a direction polls its ring instead of sleeping while
/// its recent frames came close together, for a bounded window, never after a lull; a frame found while
/// polling is read without a wait; a run of preempted polls stops the spinning for a while; a frame sent one way
/// has the other direction poll for the reply, and a direction whose polls for replies find nothing is
/// woken for them only now and then. No root, no sockets, no wall-clock bounds.
final class TrafficPollingTests: XCTestCase {
    private let microsecond: UInt64 = 1000
    private let polling = TrafficPolling(maximum: 100_000, replies: true)

    /// Frames forwarded at once, one per run, stamped `gap` after the last one pushed (read then, or when
    /// the loop is done polling if that is later).
    private func traffic(_ direction: EmbeddedDirection<ScriptedScheduler>, frames: Int, gap: UInt64) {
        for id in 0..<frames {
            let stamp = (lastStamp[ObjectIdentifier(direction)] ?? direction.wire.now) + gap
            lastStamp[ObjectIdentifier(direction)] = stamp
            direction.wire.now = max(direction.wire.now, stamp)
            direction.wire.push(TestFrame.udp(id: UInt8(truncatingIfNeeded: id)), arrival: stamp)
            direction.run()
        }
    }

    private var lastStamp: [ObjectIdentifier: UInt64] = [:]

    func testAfterCloselySpacedFramesTheLoopPollsAndReadsTheNextFrameWithoutAWait() {
        let direction = EmbeddedDirection(ScriptedScheduler(), polling: polling)
        direction.wire.clockTick = 100
        traffic(direction, frames: 12, gap: 20 * microsecond)
        XCTAssertGreaterThanOrEqual(direction.loop.poller.shortShare, TrafficPoller.pollingShare)
        let waits = direction.statistics.waits
        let hits = direction.statistics.pollHits
        // The next frame comes while the loop polls after the last one: it is read without a sleep.
        direction.wire.now += 20 * microsecond
        lastStamp[ObjectIdentifier(direction)] = direction.wire.now
        direction.wire.push(TestFrame.udp(id: 50), arrival: direction.wire.now)
        direction.wire.arrivesWhilePolling = (TestFrame.udp(id: 51), afterChecks: direction.wire.pollChecks + 30)
        direction.run()
        XCTAssertEqual(direction.wire.sentIDs.suffix(2), [50, 51])
        XCTAssertEqual(direction.statistics.pollHits, hits + 1, "the frame was not found by polling")
        // Two waits: the one that found frame 50 waiting (pushed while the loop was away), and the last one.
        XCTAssertEqual(direction.statistics.waits, waits + 2, "it slept between the two frames")
    }

    func testAPollEndsAtItsBoundedWindowAndTheLoopSleeps() {
        let direction = EmbeddedDirection(ScriptedScheduler(), polling: polling)
        direction.wire.clockTick = 100
        traffic(direction, frames: 40, gap: 20 * microsecond)
        // After the last frame (stamped at the clock's reading) the loop polled about 4 gaps of 20 µs.
        direction.wire.now += 20 * microsecond
        let stamp = direction.wire.now
        lastStamp[ObjectIdentifier(direction)] = stamp
        direction.wire.push(TestFrame.udp(id: 1), arrival: stamp)
        let spun = direction.statistics.pollSpin
        let waits = direction.statistics.waits
        direction.run()
        let window = direction.statistics.pollSpin - spun
        // The wait that found the frame waiting, and the one after the window.
        XCTAssertEqual(direction.statistics.waits, waits + 2, "it did not go to sleep after the window")
        XCTAssertGreaterThan(window, 60 * microsecond, "it polled less than the recent gaps say")
        XCTAssertLessThanOrEqual(window, 4 * 20 * microsecond, "it polled past four gaps")
        XCTAssertGreaterThanOrEqual(direction.wire.now, stamp + 75 * microsecond)

        // Widely spaced frames never poll, whatever the maximum.
        let sparse = EmbeddedDirection(ScriptedScheduler(), polling: polling)
        sparse.wire.clockTick = 100
        traffic(sparse, frames: 40, gap: 150 * microsecond)
        XCTAssertEqual(sparse.statistics.pollSpin, 0)
        XCTAssertEqual(sparse.statistics.pollHits, 0)
        // Nor does a loop with polling off.
        let off = EmbeddedDirection(ScriptedScheduler(), polling: .off)
        off.wire.clockTick = 100
        traffic(off, frames: 40, gap: 20 * microsecond)
        XCTAssertEqual(off.statistics.pollSpin, 0)
    }

    func testAfterALullTheWindowClosesAndOneLongGapDoesNotStopDenseTraffic() {
        let direction = EmbeddedDirection(ScriptedScheduler(), polling: polling)
        direction.wire.clockTick = 100
        traffic(direction, frames: 20, gap: 20 * microsecond)
        // One stall of 5 ms in dense traffic: it still polls after the next frame.
        traffic(direction, frames: 1, gap: 5_000 * microsecond)
        XCTAssertGreaterThanOrEqual(direction.loop.poller.shortShare, TrafficPoller.pollingShare)
        // Idle: a run of long gaps closes the window; then no frame makes it poll.
        traffic(direction, frames: 8, gap: 2_000 * microsecond)
        let spun = direction.statistics.pollSpin
        traffic(direction, frames: 5, gap: 2_000 * microsecond)
        XCTAssertEqual(direction.statistics.pollSpin, spun, "it polled after a lull")
        XCTAssertLessThan(direction.loop.poller.shortShare, TrafficPoller.pollingShare)
        // Idle with nothing at all: the loop sleeps at once, with no timer.
        let readings = direction.wire.clockReadings
        XCTAssertFalse(direction.advanceTime(by: 10_000 * microsecond))
        XCTAssertLessThan(direction.wire.clockReadings - readings, 5, "it spun while idle")
        XCTAssertNil(direction.wire.timerDeadline)
    }

    /// A direction polling after dense traffic, with no preempted spin yet.
    private func pollingDirection() -> EmbeddedDirection<ScriptedScheduler> {
        let direction = EmbeddedDirection(ScriptedScheduler(), timing: .adaptiveLead(maximum: 200 * microsecond), polling: polling)
        direction.wire.clockTick = 100
        traffic(direction, frames: 20, gap: 20 * microsecond)
        XCTAssertEqual(direction.statistics.spinPreemptions, 0)
        XCTAssertGreaterThan(direction.statistics.pollSpin, 0)
        return direction
    }

    /// The next frame, with the clock jumping 30 µs in the middle of the poll after it: the thread was not
    /// running for a while.
    private func preemptedPoll(_ direction: EmbeddedDirection<ScriptedScheduler>) {
        lastStamp[ObjectIdentifier(direction)] = direction.wire.now
        direction.wire.jump = (reading: direction.wire.clockReadings + 40, by: 30 * microsecond)
        traffic(direction, frames: 1, gap: 20 * microsecond)
        XCTAssertNil(direction.wire.jump, "the clock was not read as often as a poll reads it")
    }

    func testOnePreemptedPollDoesNotStopTheSpinning() {
        let direction = pollingDirection()
        // A tick landed in one poll: the direction goes on spinning and polling.
        preemptedPoll(direction)
        XCTAssertEqual(direction.statistics.spinPreemptions, 1)
        XCTAssertEqual(direction.loop.pacer.lead(at: direction.wire.now), direction.loop.lead, "one preemption stopped the spinning")
        let spun = direction.statistics.pollSpin
        traffic(direction, frames: 5, gap: 20 * microsecond)
        XCTAssertGreaterThan(direction.statistics.pollSpin, spun, "it stopped polling after one preemption")
    }

    func testARunOfPreemptedPollsStopsTheSpinningForAWhile() {
        let direction = pollingDirection()
        XCTAssertGreaterThan(direction.loop.lead, 0)
        // Two in a row are not yet enough; the third makes it back off, neither spinning for departures nor polling.
        for _ in 0..<2 { preemptedPoll(direction) }
        XCTAssertEqual(direction.loop.pacer.lead(at: direction.wire.now), direction.loop.lead, "two preemptions stopped the spinning")
        preemptedPoll(direction)
        XCTAssertEqual(direction.statistics.spinPreemptions, 3)
        XCTAssertEqual(direction.loop.pacer.lead(at: direction.wire.now), 0, "departures are still spun for")
        let spun = direction.statistics.pollSpin
        traffic(direction, frames: 5, gap: 20 * microsecond)
        XCTAssertEqual(direction.statistics.pollSpin, spun, "it polled while backing off")
        // After the back-off it polls again.
        direction.wire.now += DeparturePacer.backoff
        lastStamp[ObjectIdentifier(direction)] = direction.wire.now
        traffic(direction, frames: 2, gap: 20 * microsecond)
        XCTAssertGreaterThan(direction.statistics.pollSpin, spun)
        XCTAssertEqual(direction.loop.pacer.lead(at: direction.wire.now), direction.loop.lead)
    }

    func testAFrameSentOneWayHasTheOtherDirectionPollForTheReply() {
        let request = EmbeddedDirection(ScriptedScheduler(), polling: polling)
        let reply = EmbeddedDirection(ScriptedScheduler(), polling: polling)
        request.loop.partner = reply.loop
        reply.loop.partner = request.loop
        for direction in [request, reply] { direction.wire.clockTick = 100 }
        reply.wire.now = request.wire.now
        // The reply direction sleeps in its wait; the request direction forwards a frame.
        XCTAssertFalse(reply.run())
        let wakes = reply.wire.wakeRequests
        request.wire.push(TestFrame.udp(id: 1))
        request.run()
        XCTAssertEqual(request.wire.sentIDs, [1])
        XCTAssertEqual(reply.wire.wakeRequests, wakes + 1, "the sleeping direction was not woken to poll for the reply")
        // Woken, it polls (it had no traffic of its own) and finds the reply.
        reply.wire.now = request.wire.now
        reply.wire.arrivesWhilePolling = (TestFrame.udp(id: 2), afterChecks: reply.wire.pollChecks + 50)
        reply.run()
        XCTAssertEqual(reply.wire.sentIDs, [2])
        XCTAssertEqual(reply.statistics.pollHits, 1)
        XCTAssertGreaterThan(reply.loop.poller.score, 128, "a found reply did not count")
    }

    func testADirectionWhosePollsForRepliesFindNothingIsWokenForThemOnlyNowAndThen() {
        let request = EmbeddedDirection(ScriptedScheduler(), polling: polling)
        let reply = EmbeddedDirection(ScriptedScheduler(), polling: polling)
        request.loop.partner = reply.loop
        for direction in [request, reply] { direction.wire.clockTick = 100 }
        reply.run()
        var woken = 0
        for id in 0..<64 {
            // A frame one way every 2 ms, nothing ever comes back: each poll for a reply runs out.
            request.wire.now += 2_000 * microsecond
            reply.wire.now = request.wire.now
            let wakes = reply.wire.wakeRequests
            request.wire.push(TestFrame.udp(id: UInt8(id)))
            request.run()
            if reply.wire.wakeRequests > wakes { woken += 1 }
            reply.run()
        }
        XCTAssertLessThan(reply.loop.poller.score, TrafficPoller.acceptedScore)
        // The first six requests wake it (from a score of 128 each miss takes an eighth: 59 after six), then
        // one in 16 (the 16th, 32nd, 48th and 64th).
        XCTAssertEqual(woken, 6 + 4)
        XCTAssertEqual(reply.statistics.pollHits, 0)
        XCTAssertLessThanOrEqual(reply.statistics.pollSpin, UInt64(woken) * 101 * microsecond, "a poll for a reply outlasted its bound")
    }
}

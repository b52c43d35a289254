import AllocationCounting
import LinkEmulation
import Profiles
import XCTest

@testable import PacketEngine

/// The steady state of a direction allocates nothing per frame: frames forwarded, held, duplicated,
/// corrupted and departed through the loop and the real ``DirectionEmulator``, counted with the test
/// executable's counting malloc (`AllocationCounting`, this thread's allocations only).
final class AllocationTests: XCTestCase {
    private final class Probe {
        var value = 0
    }

    /// The control: the counter sees what the Swift runtime allocates on this thread.
    func testTheCounterSeesAnAllocationOfTheSwiftRuntime() {
        let before = lc_thread_allocations()
        let probe = Probe()
        probe.value = 1
        withExtendedLifetime(probe) {}
        XCTAssertGreaterThanOrEqual(lc_thread_allocations() - before, 1, "the counting malloc is not the one Swift calls")
    }

    func testForwardingHoldingAndDepartingAllocateNothingPerFrameOnceWarm() {
        let conditions = LinkConditions(
            rate: 1_000_000_000, delay: 5_000_000, jitter: 1_000_000, loss: .random(probability: 0.01, correlation: 0),
            duplicate: Chance(0.01), corrupt: Chance(0.01), queueLimit: 100_000)
        let emulator = DirectionEmulator(conditions: conditions, options: DirectionOptions(direction: .uplink, seed: 42))
        let direction = EmbeddedDirection(emulator, batchSize: 64, slots: 4096)
        direction.wire.recordsFrames = false
        var frame = TestFrame.udp(id: 0, length: 1000)
        let perRound = 32
        let roundTime: UInt64 = 500_000

        // Warm-up: a burst larger than anything the steady state holds grows the model's pool and rings,
        // then steady rounds settle every other buffer.
        for index in 0..<2000 {
            frame[TestFrame.idOffset] = UInt8(truncatingIfNeeded: index)
            direction.wire.push(frame)
        }
        direction.run()
        for _ in 0..<100 { direction.advanceTime(by: roundTime) }
        for round in 0..<200 { pump(direction, &frame, round: round, count: perRound, by: roundTime) }

        let rounds = 2000
        let sentBefore = direction.wire.sentCount
        let allocationsBefore = lc_thread_allocations()
        for round in 0..<rounds { pump(direction, &frame, round: round, count: perRound, by: roundTime) }
        let allocations = lc_thread_allocations() - allocationsBefore
        let sent = direction.wire.sentCount - sentBefore

        let frames = rounds * perRound
        XCTAssertEqual(allocations, 0, "\(allocations) allocations for \(frames) frames")
        // The path measured is the real one: frames were held, departed, duplicated, corrupted and lost.
        XCTAssertGreaterThan(sent, frames * 9 / 10)
        let counters = emulator.counters
        XCTAssertGreaterThan(counters.duplicatedFrames, 0)
        XCTAssertGreaterThan(counters.corruptedFrames, 0)
        XCTAssertGreaterThan(counters.lostFrames, 0)
        let statistics = direction.statistics
        XCTAssertGreaterThan(statistics.departed, UInt64(frames) * 9 / 10)
        XCTAssertGreaterThan(statistics.lateness.count, 0)
        XCTAssertEqual(direction.wire.referenceViolations, 0)
    }

    func testForwardingAtOnceAllocatesNothingPerFrame() {
        let emulator = DirectionEmulator(conditions: .unconditioned, options: DirectionOptions(direction: .downlink, seed: 1))
        let direction = EmbeddedDirection(emulator, batchSize: 64, slots: 4096)
        direction.wire.recordsFrames = false
        var frame = TestFrame.udp(id: 0, length: 1500)
        for round in 0..<50 { pump(direction, &frame, round: round, count: 100, by: 100_000) }
        let allocationsBefore = lc_thread_allocations()
        for round in 0..<1000 { pump(direction, &frame, round: round, count: 100, by: 100_000) }
        let allocations = lc_thread_allocations() - allocationsBefore
        XCTAssertEqual(allocations, 0, "\(allocations) allocations for 100000 frames")
        XCTAssertEqual(direction.statistics.forwardedAtOnce, 105_000)
        XCTAssertEqual(direction.wire.sentCount, 105_000)
    }

    /// Pushes `count` frames (numbered from `round`), lets the loop read them, and moves the clock on.
    private func pump<S: FrameScheduler>(_ direction: EmbeddedDirection<S>, _ frame: inout [UInt8], round: Int, count: Int, by time: UInt64) {
        for index in 0..<count {
            frame[TestFrame.idOffset] = UInt8(truncatingIfNeeded: round &+ index)
            direction.wire.push(frame)
        }
        direction.run()
        direction.advanceTime(by: time)
    }
}

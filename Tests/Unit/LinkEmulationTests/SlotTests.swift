import LinkEmulation
import Profiles
import XCTest

/// Slotting with netem's rule: a frame ready after the current slot opened waits for a new slot drawn
/// from that moment; a slot closes after `packets` frames or once `bytes` are reached.
final class SlotTests: XCTestCase {
    private func udp(_ id: UInt64, length: Int = 100) -> [UInt8] { FrameBuilder.frame(protocol: 17, payload: length - 42, id: id) }

    func testFramesLeaveInBurstsWhenSlotsOpen() {
        // Slots of exactly 10 ms, frames every 1 ms from t0. The first frame opens a slot at t0 + 10; every
        // frame ready by then (0...10) leaves in it; frame 11 finds it past and opens one at t0 + 21; and so on.
        let harness = Harness(LinkConditions(slot: Slot(minDelay: 10 * ms)))
        for k: UInt64 in 0..<40 { harness.offer(udp(k), at: t0 + k * ms) }
        harness.drain()
        var slotOpens = t0 + 10 * ms
        for k: UInt64 in 0..<40 {
            let ready = t0 + k * ms
            if ready > slotOpens { slotOpens = ready + 10 * ms }
            XCTAssertEqual(harness.departureTimes[k], slotOpens, "frame \(k)")
        }
        XCTAssertEqual(Set(harness.departures.map(\.time)).count, 4, "four bursts: at 10, 21, 32 and 43 ms")
    }

    func testASlotCarriesAtMostItsPackets() {
        // A burst of 7 with 3 per slot: 3 at t0 + 10, 3 at the next slot 10 ms after that one, 1 after.
        let harness = Harness(LinkConditions(slot: Slot(minDelay: 10 * ms, packets: 3)))
        for k: UInt64 in 0..<7 { harness.offer(udp(k), at: t0) }
        harness.drain()
        let expected: [UInt64] = [10, 10, 10, 20, 20, 20, 30]
        XCTAssertEqual(harness.departures.map(\.time), expected.map { t0 + $0 * ms })
    }

    func testASlotClosesOnceItsBytesAreReached() {
        // bytes 2000 and 1500-byte frames: the second frame crosses the limit and still goes (netem's rule),
        // so two frames per slot.
        let harness = Harness(LinkConditions(slot: Slot(minDelay: 10 * ms, bytes: 2000)))
        for k: UInt64 in 0..<5 { harness.offer(udp(k, length: 1500), at: t0) }
        harness.drain()
        XCTAssertEqual(harness.departures.map(\.time), [10, 10, 20, 20, 30].map { t0 + $0 * ms })
        // bytes 3000 and 1000-byte frames: exactly three fill a slot.
        let exact = Harness(LinkConditions(slot: Slot(minDelay: 10 * ms, bytes: 3000)))
        for k: UInt64 in 0..<4 { exact.offer(udp(k, length: 1000), at: t0) }
        exact.drain()
        XCTAssertEqual(exact.departures.map(\.time), [10, 10, 10, 20].map { t0 + $0 * ms })
    }

    func testSlotWaitsAreUniformBetweenMinAndMax() {
        // One frame per slot: each departure is the previous one plus a wait from [5 ms, 15 ms).
        let harness = Harness(LinkConditions(slot: Slot(minDelay: 5 * ms, maxDelay: 15 * ms, packets: 1)), seed: 9)
        let count = 5000
        for k in 0..<count { harness.offer(udp(UInt64(k)), at: t0) }
        harness.drain()
        let times = [t0] + harness.departures.map(\.time)
        let waits = zip(times, times.dropFirst()).map { Double($1 - $0) }
        XCTAssertTrue(waits.allSatisfy { $0 >= Double(5 * ms) && $0 < Double(15 * ms) })
        let mean = waits.reduce(0, +) / Double(count)
        // Uniform on [5, 15) ms: mean 10 ms, σ = 10 ms / √12.
        assertWithinBound(mean, expected: Double(10 * ms), standardDeviation: Double(10 * ms) / 12.0.squareRoot() / Double(count).squareRoot(), "mean wait")
    }

    func testFramesWaitingForASlotCountAgainstTheQueueLimit() {
        let harness = Harness(LinkConditions(slot: Slot(minDelay: 10 * ms, packets: 2), queueLimit: 4))
        let verdicts = (0..<6).map { harness.offer(udp(UInt64($0)), at: t0) }
        XCTAssertEqual(verdicts, [.held, .held, .held, .held, .dropped, .dropped])
    }
}

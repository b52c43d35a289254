import LinkEmulation
import Profiles
import XCTest

/// The rate serializer and the queue limit: departure times from length × 8 / rate, queueing, tail drop.
final class SerializerTests: XCTestCase {
    /// A UDP frame of exactly `length` bytes on the wire (14 Ethernet + 20 IPv4 + 8 UDP + payload).
    private func frame(length: Int, id: UInt64) -> [UInt8] {
        let built = FrameBuilder.frame(protocol: 17, payload: length - 42, id: id)
        precondition(built.count == length)
        return built
    }

    func testABurstLeavesOneSerializationApartAfterTheDelay() {
        // 1500 bytes at 12 Mbit/s: 1500 × 8 / 12e6 s = 1 ms exactly.
        let delay = 10 * ms
        let harness = Harness(LinkConditions(rate: 12_000_000, delay: delay))
        for id in 1...20 { XCTAssertEqual(harness.offer(frame(length: 1500, id: UInt64(id)), at: t0), .held) }
        harness.drain()
        let times = harness.departureTimes
        for k in 1...20 {
            XCTAssertEqual(times[UInt64(k)], t0 + UInt64(k) * ms + delay, "frame \(k) leaves after k serializations and the delay")
        }
        XCTAssertEqual(harness.departures.map(\.id), (1...20).map(UInt64.init), "order kept")
    }

    func testFractionsOfANanosecondAreCarriedAcrossABurst() {
        // 1000 bytes at 7 Mbit/s: 8000 / 7e6 s = 1 142 857.142857... ns. The k-th frame finishes at
        // ⌊k × 8000 × 1e9 / 7e6⌋ exactly, not at k × ⌊1 142 857.14⌋ (which drifts by 0.14 ns per frame).
        let rate: UInt64 = 7_000_000
        let harness = Harness(LinkConditions(rate: rate))
        for id in 1...1000 { harness.offer(frame(length: 1000, id: UInt64(id)), at: t0) }
        harness.drain()
        let times = harness.departureTimes
        for k: UInt64 in [1, 2, 3, 7, 100, 999, 1000] {
            XCTAssertEqual(times[k], t0 + k * 8000 * second / rate, "frame \(k)")
        }
    }

    func testAnIdleLinkStartsOnArrival() {
        // 500 bytes at 1 Mbit/s: 4 ms; frames 10 ms apart never wait for each other.
        let harness = Harness(LinkConditions(rate: 1_000_000, delay: 3 * ms))
        for k: UInt64 in 0..<10 { harness.offer(frame(length: 500, id: k), at: t0 + k * 10 * ms) }
        harness.drain()
        for (id, time) in harness.departureTimes {
            XCTAssertEqual(time, t0 + id * 10 * ms + 4 * ms + 3 * ms, "frame \(id): serialization + delay, no queueing")
        }
    }

    func testQueueingAddsToLatencyAsFramesArriveFasterThanTheRate() {
        // 1000-byte frames every 1 ms into 4 Mbit/s (2 ms each): the k-th (from 0) starts at 2k ms, so it
        // waits k ms for the ones ahead; latency = delay + serialization + queueing = 5 + 2 + k ms.
        let harness = Harness(LinkConditions(rate: 4_000_000, delay: 5 * ms))
        for k: UInt64 in 0..<50 { harness.offer(frame(length: 1000, id: k), at: t0 + k * ms) }
        harness.drain()
        for (id, time) in harness.departureTimes {
            XCTAssertEqual(time - (t0 + id * ms), 5 * ms + 2 * ms + id * ms, "frame \(id)")
        }
    }

    func testTailDropAtTheLimitIsCountedAndNothingBelowItIsDropped() {
        // 1500 bytes at 1.2 Mbit/s: 10 ms each. Limit 10 frames in the transmitter.
        let conditions = LinkConditions(rate: 1_200_000, queueLimit: 10)
        let exact = Harness(conditions)
        for id: UInt64 in 0..<10 { XCTAssertEqual(exact.offer(frame(length: 1500, id: id), at: t0), .held) }
        XCTAssertEqual(exact.emulator.counters.queueDroppedFrames, 0, "a burst of exactly the limit fits")

        let over = Harness(conditions)
        let verdicts = (0..<15).map { over.offer(frame(length: 1500, id: UInt64($0)), at: t0) }
        XCTAssertEqual(verdicts, Array(repeating: .held, count: 10) + Array(repeating: .dropped, count: 5))
        var counters = over.emulator.counters
        XCTAssertEqual(counters.queueDroppedFrames, 5)
        XCTAssertEqual(counters.queueDroppedBytes, 5 * 1500)
        XCTAssertEqual(counters.transmitQueueFrames, 10)

        // 35 ms later three frames have left the transmitter: three fit again, the fourth does not.
        for id: UInt64 in 100..<103 { XCTAssertEqual(over.offer(frame(length: 1500, id: id), at: t0 + 35 * ms), .held) }
        XCTAssertEqual(over.offer(frame(length: 1500, id: 103), at: t0 + 35 * ms), .dropped)
        counters = over.emulator.counters
        XCTAssertEqual(counters.queueDroppedFrames, 6)
        over.drain()
        XCTAssertEqual(Set(over.departures.map(\.id)), Set((0..<10).map(UInt64.init) + [100, 101, 102]))
    }

    func testTheByteLimitDropsTheFrameThatWouldExceedIt() {
        let options = DirectionOptions(direction: .uplink, queueLimitBytes: 4000, seed: 1)
        let harness = Harness(LinkConditions(rate: 1_200_000), options)
        XCTAssertEqual(harness.offer(frame(length: 1500, id: 1), at: t0), .held)
        XCTAssertEqual(harness.offer(frame(length: 1500, id: 2), at: t0), .held)
        XCTAssertEqual(harness.offer(frame(length: 1500, id: 3), at: t0), .dropped, "4500 bytes > 4000")
        XCTAssertEqual(harness.offer(frame(length: 1000, id: 4), at: t0), .held, "4000 bytes fit exactly")
        XCTAssertEqual(harness.emulator.counters.queueDroppedBytes, 1500)
    }

    func testTheLimitDoesNotCountFramesInTheDelayLine() {
        // 100 frames held in a 1 s delay line, each alone in the transmitter: a limit of 5 drops none.
        let harness = Harness(LinkConditions(rate: 100_000_000, delay: second, queueLimit: 5))
        for k: UInt64 in 0..<100 { XCTAssertEqual(harness.offer(frame(length: 1500, id: k), at: t0 + k * ms), .held) }
        let counters = harness.emulator.counters
        XCTAssertEqual(counters.queueDroppedFrames, 0)
        XCTAssertEqual(counters.backlogFrames, 100)
        XCTAssertLessThanOrEqual(counters.transmitQueueFrames, 1)
    }

    func testTheDerivedLimitIsTheOneNetemGets() {
        // 10 Mbit/s × 100 ms = 125 000 bytes in flight: ⌈125000 / 64 × 1.25⌉ = 2442 small packets beats
        // ⌈125000 / 1500 × 4⌉ = 334 and netem's 1000.
        let emulator = DirectionEmulator(
            conditions: LinkConditions(rate: 10_000_000, delay: 100 * ms), options: DirectionOptions(direction: .uplink, seed: 1))
        XCTAssertEqual(emulator.queueLimit, 2442)
        XCTAssertEqual(LinkConditions(rate: 10_000_000, delay: 100 * ms).derivedQueueLimit(), 2442)
        XCTAssertEqual(LinkConditions(rate: 1_000_000, delay: 10 * ms).derivedQueueLimit(), 1000, "never below netem's default")
        XCTAssertEqual(LinkConditions(rate: 10_000_000, delay: 100 * ms, queueLimit: 7).effectiveQueueLimit(), 7)
    }

    func testAGSOSizedFrameIsAcceptedWholeAndTakesItsTime() {
        // 65 550 bytes at 1 Gbit/s: 524 400 ns.
        var big = [UInt8](repeating: 0, count: 65_550)
        for index in big.indices { big[index] = UInt8(truncatingIfNeeded: index &* 7) }
        let harness = Harness(LinkConditions(rate: 1_000_000_000))
        XCTAssertEqual(harness.offer(big, at: t0), .held)
        harness.drain()
        XCTAssertEqual(harness.departures.count, 1)
        XCTAssertEqual(harness.departures.first?.bytes, big)
        XCTAssertEqual(harness.departures.first?.time, t0 + 524_400)
    }
}

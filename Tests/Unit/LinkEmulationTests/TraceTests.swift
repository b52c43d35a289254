import LinkEmulation
import Profiles
import TestRandomness
import XCTest

/// Delivery traces: the mm-link format, its summary, and byte-accurate delivery along it.
final class TraceTests: XCTestCase {
    private func parseError(_ text: String) -> EmulationInputError? {
        do {
            let trace = try DeliveryTrace(parsing: text, source: "up.trace")
            XCTFail("accepted \(trace.milliseconds)")
            return nil
        } catch {
            return error
        }
    }

    // MARK: The format

    func testTheFormatAllowsBlankLinesCRLFAndATrailingNewline() throws {
        let trace = try DeliveryTrace(parsing: "0\n1\n1\r\n\n  5  \n12\n")
        XCTAssertEqual(trace.milliseconds, [0, 1, 1, 5, 12])
        XCTAssertEqual(trace.periodMilliseconds, 12)
    }

    func testErrorsNameTheLineAndWhatWasExpected() {
        XCTAssertEqual(
            parseError("1\n2\n12a\n")?.description,
            "up.trace: line 3: \"12a\" is not a whole number of milliseconds: expected one non-negative integer per line: "
                + "the millisecond of a 1500-byte delivery opportunity")
        XCTAssertEqual(
            parseError("1\n5\n\n4\n")?.description,
            "up.trace: line 4: 4 is earlier than 5 on line 2: expected non-decreasing milliseconds (sort the trace)")
        XCTAssertEqual(parseError("-3\n")?.line, 1)
        XCTAssertEqual(parseError("1.5\n")?.kind, .invalidValue)
        XCTAssertEqual(parseError("1\n99999999999\n")?.line, 2)
        XCTAssertEqual(parseError("1\n99999999999\n")?.kind, .outOfRange)
        XCTAssertEqual(parseError("\n\n")?.kind, .empty)
        XCTAssertEqual(parseError("")?.kind, .empty)
        let zero = parseError("0\n0\n")
        XCTAssertEqual(zero?.line, 2)
        XCTAssertEqual(
            zero?.description,
            "up.trace: line 2: the trace ends at 0 ms, so it would last no time: expected a last line above 0: the trace "
                + "repeats with the last line's millisecond as its period")
        XCTAssertThrowsError(try DeliveryTrace(milliseconds: [3, 2, 5]))
    }

    func testTheSummaryGivesDurationMeanAndPerSecondRates() throws {
        let oneMillisecond = try DeliveryTrace(parsing: "1\n")
        XCTAssertEqual(oneMillisecond.summary.duration, ms)
        XCTAssertEqual(oneMillisecond.summary.meanRate, 12_000_000, "1500 × 8 bits every ms")
        // 1000 opportunities in the first second, 500 in the second (which ends at 2000 ms).
        let first = (1...1000).map { UInt32($0 - 1) }
        let second = (0..<500).map { UInt32(1000 + 2 * $0 + 1) } + [2000]
        let trace = try DeliveryTrace(milliseconds: first + second)
        let summary = trace.summary
        XCTAssertEqual(summary.duration, 2 * 1_000_000_000)
        XCTAssertEqual(summary.opportunities, 1501)
        XCTAssertEqual(summary.meanRate, 1501 * 12_000 / 2)
        XCTAssertEqual(summary.perSecondRates, [12_000_000, 501 * 12_000], "the opportunity at 2000 ms counts in the last second")
    }

    // MARK: Delivery

    private func udp(length: Int, id: UInt64) -> [UInt8] { FrameBuilder.frame(protocol: 17, payload: length - 42, id: id) }

    private func harness(_ trace: DeliveryTrace, delay: UInt64 = 0, queueLimit: UInt32? = nil) -> Harness {
        Harness(LinkConditions(delay: delay, queueLimit: queueLimit), DirectionOptions(direction: .downlink, trace: trace, seed: 1))
    }

    func testOneOpportunityPerMillisecondCarries12MbitOf1500ByteFrames() throws {
        let harness = harness(try DeliveryTrace(parsing: "1\n"), delay: 7 * ms)
        for id: UInt64 in 1...100 { XCTAssertEqual(harness.offer(udp(length: 1500, id: id), at: t0), .held) }
        harness.drain()
        for (id, time) in harness.departureTimes { XCTAssertEqual(time, t0 + id * ms + 7 * ms, "frame \(id)") }
        // 100 frames × 1500 bytes in 100 ms: 12 Mbit/s.
        XCTAssertEqual(Double(100 * 1500 * 8) / 0.1, 12_000_000)
    }

    func testSmallFramesShareAnOpportunityAndLargeOnesSpanSeveral() throws {
        let harness = harness(try DeliveryTrace(parsing: "1\n"))
        for id: UInt64 in 1...4 { harness.offer(udp(length: 500, id: id), at: t0) }  // 3 in the first, 1 in the second
        harness.offer(udp(length: 2500, id: 5), at: t0)  // 1000 left in the second, 1500 in the third
        harness.offer(udp(length: 1500, id: 6), at: t0)  // the fourth
        harness.drain()
        XCTAssertEqual(harness.departureTimes, [1: t0 + ms, 2: t0 + ms, 3: t0 + ms, 4: t0 + 2 * ms, 5: t0 + 3 * ms, 6: t0 + 4 * ms])

        // A 4000-byte frame on an idle link takes three opportunities; the 500 bytes left in the third
        // carry a 500-byte frame queued behind it, and the next frame starts a fourth.
        let large = self.harness(try DeliveryTrace(parsing: "1\n"))
        large.offer(udp(length: 4000, id: 1), at: t0)
        large.offer(udp(length: 500, id: 2), at: t0)
        large.offer(udp(length: 100, id: 3), at: t0)
        large.drain()
        XCTAssertEqual(large.departureTimes, [1: t0 + 3 * ms, 2: t0 + 3 * ms, 3: t0 + 4 * ms])
    }

    func testUnusedOpportunitiesAreLost() throws {
        let harness = harness(try DeliveryTrace(parsing: "1\n"))
        harness.offer(udp(length: 100, id: 1), at: t0)  // uses 100 bytes of the opportunity at 1 ms
        // 10.5 ms later, three full frames: no credit from the idle opportunities, one per ms from 11 ms.
        for id: UInt64 in 2...4 { harness.offer(udp(length: 1500, id: id), at: t0 + 10 * ms + ms / 2) }
        // A frame arriving exactly at an opportunity cannot use it: it has already passed.
        harness.offer(udp(length: 100, id: 5), at: t0 + 20 * ms)
        harness.drain()
        XCTAssertEqual(harness.departureTimes, [1: t0 + ms, 2: t0 + 11 * ms, 3: t0 + 12 * ms, 4: t0 + 13 * ms, 5: t0 + 21 * ms])
    }

    func testTheTraceRepeatsWithItsLastLineAsPeriod() throws {
        // Opportunities at 2, 2 and 5 ms, repeating every 5 ms: 2, 2, 5, 7, 7, 10, 12, 12, 15...
        let harness = harness(try DeliveryTrace(parsing: "2\n2\n5\n"))
        for id: UInt64 in 1...9 { harness.offer(udp(length: 1500, id: id), at: t0) }
        harness.drain()
        let expected: [UInt64] = [2, 2, 5, 7, 7, 10, 12, 12, 15]
        for (index, milliseconds) in expected.enumerated() {
            XCTAssertEqual(harness.departureTimes[UInt64(index + 1)], t0 + milliseconds * ms, "frame \(index + 1)")
        }
    }

    func testALongRunDeliversTheTracesMeanRate() throws {
        // A 2-second trace with a varying rate (from a fixed-seed generator), kept saturated for 10 periods
        // with frames of mixed sizes: delivered bytes = opportunities × 1500, to within one frame.
        var random = SplitMix64(seed: 17)
        var milliseconds: [UInt32] = []
        for millisecond: UInt32 in 0..<2000 {
            for _ in 0..<(random.next() % 4) { milliseconds.append(millisecond) }
        }
        milliseconds.append(2000)
        let trace = try DeliveryTrace(milliseconds: milliseconds)
        let harness = harness(trace, queueLimit: 100_000)
        let periods: UInt64 = 10
        let end = t0 + periods * 2 * second
        // 300 full frames up front, then 20 Mbit/s, above the trace's 18 Mbit/s mean: the queue never empties.
        var id: UInt64 = 0
        for _ in 0..<300 {
            harness.offer(udp(length: 1500, id: id), at: t0)
            id += 1
        }
        var time = t0
        while time < end {
            let length = 100 + Int(random.next() % 1401)
            harness.offer(udp(length: length, id: id), at: time)
            id += 1
            time += UInt64(length) * 8 * second / 20_000_000
        }
        harness.advance(to: end)
        let delivered = harness.departures.filter { $0.time <= end }.reduce(0) { $0 + $1.bytes.count }
        let capacity = Int(periods) * trace.milliseconds.count * DeliveryTrace.bytesPerOpportunity
        XCTAssertLessThanOrEqual(delivered, capacity)
        XCTAssertGreaterThanOrEqual(delivered, capacity - 1500, "every opportunity was used")
        XCTAssertEqual(Double(delivered) * 8 / Double(periods * 2), trace.summary.meanRate, accuracy: trace.summary.meanRate * 0.001)
        XCTAssertEqual(harness.emulator.counters.queueDroppedFrames, 0)
    }

    func testATraceReplacesTheRate() throws {
        // rate 8 kbit/s would take 1.5 s per frame; the trace delivers one per ms instead.
        let harness = Harness(
            LinkConditions(rate: 8000), DirectionOptions(direction: .uplink, trace: try DeliveryTrace(parsing: "1\n"), seed: 1))
        for id: UInt64 in 1...3 { harness.offer(udp(length: 1500, id: id), at: t0) }
        harness.drain()
        XCTAssertEqual(harness.departureTimes, [1: t0 + ms, 2: t0 + 2 * ms, 3: t0 + 3 * ms])
    }

    func testTheQueueLimitAppliesToATrace() throws {
        let harness = harness(try DeliveryTrace(parsing: "1\n"), queueLimit: 5)
        let verdicts = (1...8).map { harness.offer(udp(length: 1500, id: UInt64($0)), at: t0) }
        XCTAssertEqual(verdicts.filter { $0 == .dropped }.count, 3)
        XCTAssertEqual(harness.emulator.counters.queueDroppedFrames, 3)
    }
}


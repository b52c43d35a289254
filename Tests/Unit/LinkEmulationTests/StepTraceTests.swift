import LinkEmulation
import Profiles
import XCTest

/// Delay and loss traces: their text format with bad lines named, and the engine following them from the
/// direction's first frame.
final class StepTraceTests: XCTestCase {
    private func udp(_ id: UInt64) -> [UInt8] { FrameBuilder.frame(protocol: 17, payload: 100, id: id) }

    func testTheFormatReadsStepsAndAnOptionalPeriod() throws {
        let delay = try StepTrace(parsing: "# steps\n0 50ms\n1000 200ms\n\n1500 50ms\n3000\n", kind: .delay, source: "d.trace")
        XCTAssertEqual(delay.steps.map(\.millisecond), [0, 1000, 1500])
        XCTAssertEqual(delay.steps.map(\.value), [50e6, 200e6, 50e6])
        XCTAssertEqual(delay.period, 3000)
        XCTAssertEqual(delay.value(at: 999 * ms), 50e6)
        XCTAssertEqual(delay.value(at: 1000 * ms), 200e6)
        XCTAssertEqual(delay.value(at: 4200 * ms), 200e6, "repeats every 3 s")
        XCTAssertEqual(try StepTrace(parsing: delay.text, kind: .delay), delay)
        let loss = try StepTrace(parsing: "0 0%\n500 100%\n", kind: .loss)
        XCTAssertNil(loss.period)
        XCTAssertEqual(loss.value(at: 10 * second), 1, "the last value holds for ever")
    }

    func testBadLinesAreNamedByFileAndLine() {
        func error(_ text: String, _ kind: StepTrace.Kind = .delay) -> EmulationInputError? {
            do {
                _ = try StepTrace(parsing: text, kind: kind, source: "d.trace")
                return nil
            } catch { return error }
        }
        XCTAssertEqual(error("0 50ms\n100 fast\n")?.description.hasPrefix("d.trace: line 2: \"fast\" is not a delay"), true)
        XCTAssertEqual(error("0 50ms\n100 50 ms\n")?.line, 2)
        XCTAssertEqual(error("5 50ms\n")?.problem, "the trace starts at 5 ms, not 0")
        XCTAssertEqual(error("0 50ms\n# note\n200 1ms\n100 2ms\n")?.problem, "100 ms is not after 200 ms on line 3")
        XCTAssertEqual(error("0 50ms\n100 2ms\n100 3ms\n")?.kind, .outOfOrder)
        XCTAssertEqual(error("0 1%\n100 150%\n", .loss)?.problem, "\"150%\" is out of range")
        XCTAssertEqual(error("0 1%\n100\n200 1%\n", .loss)?.line, 3)
        XCTAssertEqual(error("# nothing\n")?.kind, .empty)
    }

    func testTheDelayFollowsItsTraceFromTheFirstFrame() throws {
        // 20 ms, then 80 ms from 1 s, then 20 ms again from 2 s; repeating every 3 s. Frames every 100 ms
        // from an arbitrary start: time 0 is the first frame.
        let trace = try StepTrace(parsing: "0 20ms\n1000 80ms\n2000 20ms\n3000\n", kind: .delay)
        let harness = Harness(LinkConditions(delayTrace: trace), seed: 1)
        for k: UInt64 in 0..<60 { harness.offer(udp(k), at: t0 + k * 100 * ms) }
        harness.drain()
        let times = harness.departureTimes
        for k: UInt64 in 0..<60 {
            let phase = (k * 100) % 3000
            let expected: UInt64 = (1000..<2000).contains(phase) ? 80 * ms : 20 * ms
            // Order is kept: frames after the step down wait for those sent before it.
            let earliest = t0 + k * 100 * ms + expected
            XCTAssertGreaterThanOrEqual(times[k]!, earliest, "frame \(k)")
            if !(2000..<2100).contains(phase) { XCTAssertEqual(times[k]!, earliest, "frame \(k)") }
        }
    }

    func testTheLossFollowsItsTrace() throws {
        // Nothing lost for 1 s, everything for the next second, then 50% for ever.
        let trace = try StepTrace(parsing: "0 0%\n1000 100%\n2000 50%\n", kind: .loss)
        let harness = Harness(LinkConditions(lossTrace: trace), seed: 3)
        for k: UInt64 in 0..<4000 { harness.offer(udp(k), at: t0 + k * ms) }
        harness.drain()
        let passed = Set(harness.departures.map(\.id))
        XCTAssertTrue((0..<1000).allSatisfy { passed.contains($0) })
        XCTAssertFalse((1000..<2000).contains { passed.contains($0) })
        let late = (2000..<4000).filter { passed.contains($0) }.count
        assertWithinBound(Double(late), expected: 1000, standardDeviation: (2000 * 0.25).squareRoot(), "50% lost")
        XCTAssertEqual(harness.emulator.counters.lostFrames, UInt64(4000 - passed.count))
    }
}

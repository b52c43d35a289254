import Conditioning
import Profiles
import XCTest

/// `linkcond show`'s words for conditions: the jitter with its distribution and model, the loss as the
/// profile writes it, the queue with its discipline and parameters, and traces with their range.
final class ConditionsTextTests: XCTestCase {
    let ms: UInt64 = 1_000_000

    func testJitterPrintsWithItsDistributionAndModel() {
        XCTAssertEqual(ConditionsText.describe(LinkConditions(delay: 30 * ms, jitter: 10 * ms)), "delay 30ms ± 10ms uniform (ordered)")
        XCTAssertEqual(
            ConditionsText.describe(LinkConditions(delay: 30 * ms, jitter: 10 * ms, delayCorrelation: 0.25, distribution: .normal, jitterModel: .netem)),
            "delay 30ms ± 10ms normal 25% (netem)")
        XCTAssertEqual(ConditionsText.describe(LinkConditions(loss: .random(probability: 0.03, correlation: 0.25))), "delay 0 loss 3% 25%")
    }

    func testQueuesPrintWithTheirDisciplineAndParameters() {
        func text(_ queue: LinkQueue) -> String { ConditionsText.describe(LinkConditions(rate: 240_000, delay: 400 * ms, queue: queue)) }
        XCTAssertEqual(text(.dropTail(.packets(40))), "rate 240kbit delay 400ms queue droptail 40 packets")
        XCTAssertEqual(text(.dropTail(.time(250 * ms))), "rate 240kbit delay 400ms queue droptail 250ms")
        XCTAssertEqual(text(LinkQueue(.codel(CoDelSettings()))), "rate 240kbit delay 400ms queue codel target 5ms interval 100ms limit 1000 packets")
        XCTAssertEqual(
            text(LinkQueue(.pie(PIESettings()))), "rate 240kbit delay 400ms queue pie target 15ms tupdate 15ms alpha 0.125 beta 1.25 limit 1000 packets")
        XCTAssertEqual(
            text(LinkQueue(.red(REDSettings(minimum: 30_000, maximum: 90_000, adaptive: true)))),
            "rate 240kbit delay 400ms queue red min 30KB max 90KB probability 2% burst 50 adaptive limit 360KB")
        XCTAssertEqual(ConditionsText.describe(LinkConditions(rate: 240_000), limit: 120), "rate 240kbit delay 0 limit 120")
    }

    func testTracesPrintWithTheirRange() throws {
        var delay = try StepTrace(parsing: "0 50ms\n1000 200ms\n3000\n", kind: .delay)
        delay.file = "d.trace"
        var loss = try StepTrace(parsing: "0 1%\n", kind: .loss)
        loss.file = "l.trace"
        XCTAssertEqual(
            ConditionsText.describe(LinkConditions(delayTrace: delay, lossTrace: loss)),
            "delay trace d.trace (50ms–200ms in 2 steps, repeats every 3s) loss trace l.trace (1% in 1 steps)")
    }
}

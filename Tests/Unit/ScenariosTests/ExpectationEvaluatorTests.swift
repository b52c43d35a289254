import Timeline
import XCTest

@testable import Scenarios

final class ExpectationEvaluatorTests: XCTestCase {
    /// Milliseconds to nanoseconds.
    private func ms(_ value: UInt64) -> UInt64 { value * 1_000_000 }

    private func event(_ t: UInt64, _ lane: TimelineLane, _ state: String?) -> TimelineEvent {
        TimelineEvent(t: ms(t), lane: lane, kind: "update", summary: state ?? "sample", state: state)
    }

    /// lte 0–10 s, tunnel 10–30 s, 3g 30–45 s (the run ends at 45 s).
    private lazy var steps = [
        StepRecord(name: "lte", action: "apply lte", start: 0, end: ms(10_000)),
        StepRecord(name: "tunnel", action: "apply 100-loss", start: ms(10_000), end: ms(30_000)),
        StepRecord(name: "3g", action: "apply 3g", start: ms(30_000), end: ms(45_000)),
    ]

    private func reaches(
        _ lane: TimelineLane, _ state: String, within: UInt64, after step: String, name: String = "r"
    ) -> Expectation {
        Expectation(name: name, lane: lane, rule: .reaches(state: state, within: ms(within), afterStep: step))
    }

    private func holds(
        _ lane: TimelineLane, _ state: String, during step: String, grace: UInt64 = 0, name: String = "h"
    ) -> Expectation {
        Expectation(name: name, lane: lane, rule: .holds(state: state, duringStep: step, grace: ms(grace)))
    }

    private func evaluate(_ expectation: Expectation, _ events: [TimelineEvent]) -> ExpectationResult {
        ExpectationEvaluator.evaluate([expectation], events: events, steps: steps)[0]
    }

    /// Reachability online at 1.2 s, a sample without state, then offline at 17.412 s.
    private lazy var tunnelEvents = [
        event(1_200, .reachability, "online"),
        event(5_000, .reachability, nil),
        event(6_000, .reachability, "online"),
        event(17_412, .reachability, "offline"),
        event(33_000, .reachability, "online"),
    ]

    // MARK: reaches

    func testReachesMet() {
        let result = evaluate(reaches(.reachability, "offline", within: 12_000, after: "tunnel", name: "notices"), tunnelEvents)
        XCTAssertEqual(
            result,
            ExpectationResult(
                name: "notices", rule: "reachability reaches offline within 12 s of step 'tunnel'", lane: .reachability,
                passed: true, evidence: "offline at 17.412 s, 7.412 s after 'tunnel' started; limit 12 s",
                measured: 7.412, limit: 12, at: 17.412, step: "tunnel", holds: false))
    }

    func testReachesExactlyAtTheLimitPasses() {
        let result = evaluate(reaches(.reachability, "offline", within: 7_412, after: "tunnel"), tunnelEvents)
        XCTAssertTrue(result.passed)
        XCTAssertEqual(result.measured, 7.412)
    }

    func testReachesMissedByBeingLate() {
        let result = evaluate(reaches(.reachability, "offline", within: 5_000, after: "tunnel"), tunnelEvents)
        XCTAssertFalse(result.passed)
        XCTAssertEqual(result.measured, 7.412)
        XCTAssertEqual(result.limit, 5)
        XCTAssertEqual(result.evidence, "offline only at 17.412 s, 7.412 s after 'tunnel' started; limit 5 s")
    }

    func testReachesNever() {
        let result = evaluate(reaches(.reachability, "portal", within: 5_000, after: "tunnel"), tunnelEvents)
        XCTAssertFalse(result.passed)
        XCTAssertNil(result.measured)
        XCTAssertEqual(result.limit, 5)
        XCTAssertEqual(
            result.evidence,
            "never portal after 'tunnel' started at 10.000 s (the run ended at 45.000 s; last state online from "
                + "33.000 s); limit 5 s")
    }

    func testReachesNeverOnALaneWithoutStates() {
        let result = evaluate(reaches(.app, "ready", within: 5_000, after: "lte"), tunnelEvents)
        XCTAssertFalse(result.passed)
        XCTAssertEqual(
            result.evidence,
            "never ready after 'lte' started at 0.000 s (the run ended at 45.000 s; the app lane recorded no state); "
                + "limit 5 s")
    }

    func testReachesAlreadyInTheStateCountsAsZero() {
        // Online since 1.2 s (the repeated "online" at 6 s does not restart it), carried into 'tunnel'.
        let result = evaluate(reaches(.reachability, "online", within: 3_000, after: "tunnel"), tunnelEvents)
        XCTAssertTrue(result.passed)
        XCTAssertEqual(result.measured, 0)
        XCTAssertEqual(
            result.evidence, "already online when 'tunnel' started at 10.000 s (since 1.200 s); limit 3 s")
    }

    func testReachesWithAnEventAtTheStepStart() {
        let events = [event(1_000, .path, "unsatisfied"), event(10_000, .path, "satisfied")]
        let result = evaluate(reaches(.path, "satisfied", within: 1_000, after: "tunnel"), events)
        XCTAssertTrue(result.passed)
        XCTAssertEqual(result.measured, 0)
        XCTAssertEqual(result.evidence, "already satisfied when 'tunnel' started at 10.000 s (since 10.000 s); limit 1 s")
    }

    func testReachesLooksPastTheStepsEnd() {
        // 'lte' ends at 10 s; offline comes at 17.412 s, within the 20 s allowed.
        let result = evaluate(reaches(.reachability, "offline", within: 20_000, after: "lte"), tunnelEvents)
        XCTAssertTrue(result.passed)
        XCTAssertEqual(result.measured, 17.412)
    }

    func testReachesIgnoresOtherLanesAndEarlierVisits() {
        let events = [
            event(2_000, .path, "unsatisfied"),  // before the step
            event(3_000, .path, "satisfied"),
            event(12_000, .reachability, "unsatisfied"),  // another lane
            event(14_000, .path, nil),  // no state
            event(15_500, .path, "unsatisfied"),
        ]
        let result = evaluate(reaches(.path, "unsatisfied", within: 6_000, after: "tunnel"), events)
        XCTAssertTrue(result.passed)
        XCTAssertEqual(result.measured, 5.5)
        XCTAssertEqual(result.evidence, "unsatisfied at 15.500 s, 5.500 s after 'tunnel' started; limit 6 s")
    }

    func testReachesAStepThatDidNotRun() {
        let result = ExpectationEvaluator.evaluate(
            [reaches(.path, "satisfied", within: 1_000, after: "3g")], events: tunnelEvents, steps: Array(steps.prefix(2)))[0]
        XCTAssertFalse(result.passed)
        XCTAssertEqual(result.evidence, "step '3g' did not run")
        XCTAssertNil(result.measured)
        XCTAssertEqual(result.limit, 1)
    }

    // MARK: holds

    private lazy var pathEvents = [
        event(500, .path, "satisfied"),
        event(8_000, .path, "satisfied"),
        event(12_000, .reachability, "offline"),
        event(21_200, .path, "unsatisfied"),
        event(22_000, .path, "satisfied"),
        event(25_000, .path, "requiresConnection"),
        event(25_300, .path, "satisfied"),
        event(30_000, .path, "unsatisfied"),  // at the step's end: belongs to the next step
    ]

    func testHoldsNeedsAStateFromTheStartOfTheCheck() {
        let result = evaluate(holds(.path, "satisfied", during: "lte", name: "kept"), pathEvents)
        XCTAssertEqual(
            result,
            ExpectationResult(
                name: "kept", rule: "path holds satisfied during step 'lte'", lane: .path, passed: false,
                evidence: "no path state recorded by 0.000 s, when the check began; not satisfied for 0.500 s of "
                    + "10.000 s checked (0.000–10.000 s)", at: 0, step: "lte", holds: true))
        let graced = evaluate(holds(.path, "satisfied", during: "lte", grace: 500), pathEvents)
        XCTAssertTrue(graced.passed)
        XCTAssertEqual(graced.rule, "path holds satisfied during step 'lte' (after a 0.5 s grace)")
        XCTAssertEqual(graced.evidence, "satisfied throughout 'lte' after the 0.5 s grace (0.500–10.000 s)")
        XCTAssertNil(graced.measured)
        XCTAssertNil(graced.limit)
    }

    func testHoldsBroken() {
        let result = evaluate(holds(.path, "satisfied", during: "tunnel"), pathEvents)
        XCTAssertFalse(result.passed)
        XCTAssertEqual(
            result.evidence,
            "unsatisfied at 21.200 s, 11.200 s into 'tunnel'; not satisfied for 1.100 s of 20.000 s checked "
                + "(10.000–30.000 s)")
    }

    func testHoldsIgnoresTheEventAtTheStepsEnd() {
        let events = [event(500, .path, "satisfied"), event(30_000, .path, "unsatisfied")]
        let result = evaluate(holds(.path, "satisfied", during: "tunnel"), events)
        XCTAssertTrue(result.passed)
        XCTAssertEqual(result.evidence, "satisfied throughout 'tunnel' (10.000–30.000 s)")
    }

    func testHoldsBrokenByTheStateCarriedFromBeforeTheStep() {
        let events = [
            event(1_000, .reachability, "online"), event(8_000, .reachability, "offline"),
            event(9_000, .reachability, "offline"), event(12_000, .reachability, "online"),
        ]
        let result = evaluate(holds(.reachability, "online", during: "tunnel"), events)
        XCTAssertFalse(result.passed)
        XCTAssertEqual(
            result.evidence,
            "offline when the check began at 10.000 s (since 8.000 s); not online for 2.000 s of 20.000 s checked "
                + "(10.000–30.000 s)")
    }

    func testHoldsGraceCoversAnEarlyDeviation() {
        // Handover: unsatisfied for 400 ms right after the step starts, then satisfied.
        let events = [
            event(500, .path, "satisfied"), event(10_100, .path, "unsatisfied"), event(10_500, .path, "satisfied"),
        ]
        XCTAssertFalse(evaluate(holds(.path, "satisfied", during: "tunnel"), events).passed)
        let graced = evaluate(holds(.path, "satisfied", during: "tunnel", grace: 1_000), events)
        XCTAssertTrue(graced.passed)
        XCTAssertEqual(graced.evidence, "satisfied throughout 'tunnel' after the 1 s grace (11.000–30.000 s)")
        // Still unsatisfied when the grace ends.
        let late = evaluate(holds(.path, "satisfied", during: "tunnel", grace: 300), events)
        XCTAssertFalse(late.passed)
        XCTAssertEqual(
            late.evidence,
            "unsatisfied when the check began at 10.300 s (since 10.100 s); not satisfied for 0.200 s of 19.700 s "
                + "checked after the 0.3 s grace (10.300–30.000 s)")
    }

    func testHoldsDeviationAfterTheGrace() {
        let events = [event(500, .path, "satisfied"), event(20_000, .path, "unsatisfied")]
        let result = evaluate(holds(.path, "satisfied", during: "tunnel", grace: 1_000), events)
        XCTAssertFalse(result.passed)
        XCTAssertEqual(
            result.evidence,
            "unsatisfied at 20.000 s, 10.000 s into 'tunnel'; not satisfied for 10.000 s of 19.000 s checked after "
                + "the 1 s grace (11.000–30.000 s)")
    }

    func testHoldsOnAStepShorterThanItsGrace() {
        let short = [StepRecord(name: "h", action: "hand over to cellular", start: ms(1_000), end: ms(1_500))]
        let result = ExpectationEvaluator.evaluate(
            [holds(.path, "satisfied", during: "h", grace: 1_000)], events: [event(0, .path, "satisfied")], steps: short)[0]
        XCTAssertFalse(result.passed)
        XCTAssertEqual(result.evidence, "'h' lasted 0.500 s, no longer than its 1 s grace: nothing was checked")
    }

    func testHoldsAStepThatDidNotRun() {
        let result = ExpectationEvaluator.evaluate(
            [holds(.path, "satisfied", during: "3g")], events: pathEvents, steps: [])[0]
        XCTAssertFalse(result.passed)
        XCTAssertEqual(result.evidence, "step '3g' did not run")
    }

    func testHoldsOnTheAppLane() {
        let events = [event(9_000, .app, "feed loaded"), event(31_000, .app, "error: timeout")]
        XCTAssertTrue(evaluate(holds(.app, "feed loaded", during: "tunnel"), events).passed)
        let broken = evaluate(holds(.app, "feed loaded", during: "3g"), events)
        XCTAssertEqual(
            broken.evidence,
            "error: timeout at 31.000 s, 1.000 s into '3g'; not feed loaded for 14.000 s of 15.000 s checked "
                + "(30.000–45.000 s)")
    }

    // MARK: Lane states and ordering

    func testLaneStateAtATime() {
        XCTAssertNil(ExpectationEvaluator.state(of: .reachability, at: ms(1_000), in: tunnelEvents))
        XCTAssertEqual(ExpectationEvaluator.state(of: .reachability, at: ms(1_200), in: tunnelEvents), "online")
        XCTAssertEqual(ExpectationEvaluator.state(of: .reachability, at: ms(17_411), in: tunnelEvents), "online")
        XCTAssertEqual(ExpectationEvaluator.state(of: .reachability, at: ms(17_412), in: tunnelEvents), "offline")
        XCTAssertEqual(ExpectationEvaluator.state(of: .reachability, at: .max, in: tunnelEvents), "online")
        XCTAssertNil(ExpectationEvaluator.state(of: .path, at: .max, in: tunnelEvents))
    }

    func testEventsOutOfOrderAndAtTheSameTime() {
        let events = [
            event(17_412, .reachability, "offline"),
            event(1_200, .reachability, "online"),
            event(20_000, .reachability, "limited"),
            event(20_000, .reachability, "portal"),  // same time: the later one in the list wins
        ]
        XCTAssertEqual(ExpectationEvaluator.state(of: .reachability, at: ms(10_000), in: events), "online")
        XCTAssertEqual(ExpectationEvaluator.state(of: .reachability, at: ms(20_000), in: events), "portal")
        XCTAssertEqual(evaluate(reaches(.reachability, "offline", within: 12_000, after: "tunnel"), events).measured, 7.412)
    }

    func testResultsKeepTheExpectationsOrder() {
        let expectations = [
            holds(.path, "satisfied", during: "tunnel", name: "b"),
            reaches(.reachability, "offline", within: 12_000, after: "tunnel", name: "a"),
            holds(.reachability, "online", during: "3g", grace: 3_000, name: "c"),
        ]
        let results = ExpectationEvaluator.evaluate(expectations, events: tunnelEvents + pathEvents, steps: steps)
        XCTAssertEqual(results.map(\.name), ["b", "a", "c"])
        XCTAssertEqual(results.map(\.passed), [false, true, true])
        XCTAssertEqual(results.map(\.lane), [.path, .reachability, .reachability])
        XCTAssertEqual(
            results.map(\.rule),
            [
                "path holds satisfied during step 'tunnel'", "reachability reaches offline within 12 s of step 'tunnel'",
                "reachability holds online during step '3g' (after a 3 s grace)",
            ])
    }

    /// An expectation on one family reads the prober's per-family state from each update's details, not the
    /// overall state: here the overall state stays online (IPv4 works) while IPv6 goes offline at 12 s.
    func testAFamilyExpectationReadsThatFamilysState() {
        func update(_ t: UInt64, overall: String, ipv4: String, ipv6: String) -> TimelineEvent {
            TimelineEvent(
                t: ms(t), lane: .reachability, kind: "reachability-update", summary: overall, state: overall,
                details: ["ipv4": .string(ipv4), "ipv6": .string(ipv6)])
        }
        let events = [
            update(1_000, overall: "online", ipv4: "online", ipv6: "online"),
            update(12_000, overall: "online", ipv4: "online", ipv6: "offline"),
            TimelineEvent(t: ms(13_000), lane: .reachability, kind: "sample", summary: "a probe", state: nil),
        ]
        var expectation = reaches(.reachability, "offline", within: 5_000, after: "tunnel")
        expectation.family = .ipv6
        let result = evaluate(expectation, events)
        XCTAssertTrue(result.passed, result.evidence)
        XCTAssertEqual(result.measured ?? -1, 2.0, accuracy: 1e-9)
        XCTAssertEqual(result.rule, "reachability (ipv6) reaches offline within 5 s of step 'tunnel'")
        expectation.family = .ipv4
        XCTAssertFalse(evaluate(expectation, events).passed)
        expectation.family = nil
        XCTAssertFalse(evaluate(expectation, events).passed, "the overall state never went offline")
    }

    // MARK: when each verdict was settled

    /// The reports mark an expectation where its verdict was settled: when the state was reached, when the
    /// window ran out without it, when a held state was first left, or when the step it held through ended.
    func testEachVerdictKnowsWhenItWasSettled() {
        XCTAssertEqual(evaluate(reaches(.reachability, "offline", within: 12_000, after: "tunnel"), tunnelEvents).at, 17.412)
        XCTAssertEqual(evaluate(reaches(.reachability, "offline", within: 5_000, after: "tunnel"), tunnelEvents).at, 15, "late: judged when the window ran out")
        XCTAssertEqual(evaluate(reaches(.reachability, "portal", within: 5_000, after: "tunnel"), tunnelEvents).at, 15, "never: judged when the window ran out")
        XCTAssertEqual(evaluate(reaches(.reachability, "portal", within: 60_000, after: "3g"), tunnelEvents).at, 45, "never, and the run ended first")
        XCTAssertEqual(evaluate(reaches(.reachability, "online", within: 5_000, after: "lte"), tunnelEvents).at, 1.2)
        let held = evaluate(holds(.reachability, "online", during: "lte", grace: 2_000), tunnelEvents)
        XCTAssertTrue(held.passed)
        XCTAssertEqual(held.at, 10, "held: judged when the step ended")
        let left = evaluate(holds(.reachability, "online", during: "tunnel"), tunnelEvents)
        XCTAssertFalse(left.passed)
        XCTAssertEqual(left.at, 17.412, "left: judged when the state was first left")
        XCTAssertNil(evaluate(holds(.path, "satisfied", during: "missing"), tunnelEvents).at, "a step that did not run settles nothing")
    }
}

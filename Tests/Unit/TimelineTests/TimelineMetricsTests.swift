import Foundation
import XCTest

@testable import Timeline

/// Metrics as a pure function of constructed events. Expected numbers are worked out by hand from the inputs.
final class TimelineMetricsTests: XCTestCase {
    typealias F = ReportFixtures

    private func report(_ events: [TimelineEvent], duration: Double = 40, steps: [StepRecord] = []) -> RunReport {
        RunReport(
            metadata: RunMetadata(name: "t", description: "", sandbox: "lc", startedAt: "x", duration: F.ns(duration), steps: steps),
            events: events, expectations: [])
    }

    /// LTE at 1 s, 100 % loss at 10 s, 3G at 20 s, LTE at 30 s; reachability offline 6.2 s into the loss,
    /// online 3 s after 3G; the path never changes.
    private let tunnelEvents: [TimelineEvent] = [
        F.conditions(1, "lte", profile: "lte", action: "apply lte"),
        F.path(1.1, "satisfied", baseline: true),
        F.reachability(1.5, "online", previous: "unknown", quality: "good", rttMs: 60, loss: 0),
        F.conditions(10, "100-loss", profile: "100-loss", action: "apply 100-loss"),
        F.path(12, "satisfied"),  // a path update without a status change is no reaction
        F.reachability(16.2, "offline", previous: "online", quality: "minimal", rttMs: nil, loss: 1),
        F.conditions(20, "3g", profile: "3g", action: "apply 3g"),
        F.reachability(23, "online", previous: "offline", quality: "moderate", rttMs: 120, loss: 0.2),
        F.conditions(30, "lte", profile: "lte", action: "apply lte"),
    ]

    func testReactionsPerChange() {
        let metrics = TimelineMetrics(report(tunnelEvents))
        XCTAssertEqual(metrics.changes.map(\.to), ["lte", "100-loss", "3g", "lte"])
        XCTAssertEqual(metrics.changes.map(\.from), [nil, "lte", "100-loss", "3g"])
        XCTAssertEqual(metrics.changes.map(\.index), [1, 2, 3, 4])
        XCTAssertEqual(metrics.changes.map(\.windowEnd), [F.ns(10), F.ns(20), F.ns(30), F.ns(40)])

        // Change 1: the path's baseline is no reaction; the prober's unknown → online is.
        let first = metrics.changes[0]
        XCTAssertEqual(first.reaction(.path), .init(lane: .path, before: nil))
        XCTAssertEqual(first.reaction(.reachability)?.state, "online")
        XCTAssertEqual(first.reaction(.reachability)!.delay!, 0.5, accuracy: 1e-9)
        XCTAssertEqual(first.reaction(.reachability)?.t, F.ns(1.5))
        XCTAssertFalse(first.reaction(.app)!.reacted)

        // Change 2 (100 % loss): the path does not react, the prober does after 6.2 s.
        let loss = metrics.changes[1]
        XCTAssertEqual(loss.reaction(.path)?.text, "did not react")
        XCTAssertEqual(loss.reaction(.path)?.before, "satisfied")
        XCTAssertEqual(loss.reaction(.reachability)?.state, "offline")
        XCTAssertEqual(loss.reaction(.reachability)?.before, "online")
        XCTAssertEqual(loss.reaction(.reachability)!.delay!, 6.2, accuracy: 1e-9)
        XCTAssertEqual(loss.reaction(.reachability)?.text, "offline after 6.200 s")
        XCTAssertEqual(loss.profile, "100-loss")
        XCTAssertEqual(loss.action, "apply 100-loss")
        XCTAssertEqual(loss.netlinkMs, 3.4)

        // Change 3 (3G): online after 3 s. Change 4: nothing happens.
        XCTAssertEqual(metrics.changes[2].reaction(.reachability)?.state, "online")
        XCTAssertEqual(metrics.changes[2].reaction(.reachability)!.delay!, 3, accuracy: 1e-9)
        XCTAssertEqual(metrics.changes[3].reactions.map(\.lane), [.path, .reachability, .app])
        XCTAssertEqual(metrics.changes[3].reactions.map(\.reacted), [false, false, false])
    }

    func testRecovery() {
        let metrics = TimelineMetrics(report(tunnelEvents))
        let path = metrics.changes.map { $0.recovery(.path)!.outcome }
        // Change 1: the path had no state, then became satisfied; afterwards it never leaves it.
        XCTAssertEqual(path, [.recovered, .stayedGood, .stayedGood, .stayedGood])
        XCTAssertEqual(metrics.changes[0].recovery(.path)!.delay!, 0.1, accuracy: 1e-9)

        let reachability = metrics.changes.map { $0.recovery(.reachability)! }
        XCTAssertEqual(reachability.map(\.outcome), [.recovered, .notRecovered, .recovered, .stayedGood])
        XCTAssertEqual(reachability[0].delay!, 0.5, accuracy: 1e-9)
        XCTAssertNil(reachability[1].delay)
        XCTAssertEqual(reachability[2].delay!, 3, accuracy: 1e-9)
        XCTAssertEqual(reachability[2].t, F.ns(23))
        XCTAssertEqual(reachability[2].text, "online after 3.000 s")
        XCTAssertEqual(reachability[1].text, "not online before the next change")
        // The app lane has no good state, so no recovery.
        XCTAssertNil(metrics.changes[0].recovery(.app))
    }

    func testRecoveryAfterADipWithinTheWindow() {
        // A handover: wifi goes down, the path is unsatisfied for a moment, then satisfied on cellular.
        let events = [
            F.path(0.5, "satisfied", baseline: true),
            F.conditions(5, "wifi link down", profile: nil, action: "link down wifi"),
            F.path(5.25, "unsatisfied"),
            F.path(6.75, "satisfied", interfaces: "ww0"),
        ]
        let change = TimelineMetrics(report(events, duration: 10)).changes[0]
        XCTAssertEqual(change.reaction(.path)?.state, "unsatisfied")
        XCTAssertEqual(change.reaction(.path)!.delay!, 0.25, accuracy: 1e-9)
        XCTAssertEqual(change.recovery(.path)?.outcome, .recovered)
        XCTAssertEqual(change.recovery(.path)!.delay!, 1.75, accuracy: 1e-9)
        XCTAssertNil(change.profile)
        XCTAssertEqual(change.recovery(.reachability)?.outcome, .noData)
        XCTAssertEqual(change.recovery(.reachability)?.text, "no data")
    }

    func testReactionsDoNotCrossTheNextChange() {
        // Reachability changes only after the second change: that is the second change's reaction, not the first's.
        let events = [
            F.reachability(0.5, "online", previous: "unknown", quality: "good", rttMs: 50, loss: 0),
            F.conditions(2, "lossy", profile: "lossy", action: "apply lossy"),
            F.conditions(4, "100-loss", profile: "100-loss", action: "apply 100-loss"),
            F.reachability(9, "offline", previous: "online", quality: "minimal", rttMs: nil, loss: 1),
            F.app(9.5, "no state here"),
            F.app(9.7, "now offline", state: "offline"),
        ]
        let metrics = TimelineMetrics(report(events, duration: 12))
        XCTAssertFalse(metrics.changes[0].reaction(.reachability)!.reacted)
        XCTAssertEqual(metrics.changes[0].recovery(.reachability)?.outcome, .stayedGood)
        XCTAssertEqual(metrics.changes[1].reaction(.reachability)!.delay!, 5, accuracy: 1e-9)
        // The app's first state has no `previous`: it establishes the lane, it is no change.
        XCTAssertFalse(metrics.changes[1].reaction(.app)!.reacted)
    }

    func testAppStateChangesAreReactions() {
        let events = [
            F.app(0.2, "hello", state: "online"),
            F.conditions(1, "100-loss", profile: "100-loss", action: "apply 100-loss"),
            F.app(2, "timeout"),
            F.app(3.5, "offline now", state: "offline"),
        ]
        let change = TimelineMetrics(report(events, duration: 5)).changes[0]
        XCTAssertEqual(change.reaction(.app)?.state, "offline")
        XCTAssertEqual(change.reaction(.app)!.delay!, 2.5, accuracy: 1e-9)
        XCTAssertEqual(change.reaction(.app)?.before, "online")
    }

    func testFlapsOverTheRunAndPerStep() {
        let steps = [
            StepRecord(name: "a", action: "apply lte", start: 0, end: F.ns(10)),
            StepRecord(name: "b", action: "apply lossy", start: F.ns(10), end: F.ns(20)),
        ]
        let reachabilityStates = ["online", "offline", "online", "online", "limited", "online", "offline", "offline", "online"]
        let times = [1.0, 3, 5, 6, 11, 12, 14, 15, 19]
        var events: [TimelineEvent] = [
            F.conditions(0.1, "lte", profile: "lte", action: "apply"), F.conditions(10, "lossy", profile: "lossy", action: "apply"),
            F.path(0.2, "satisfied", baseline: true), F.path(12.5, "unsatisfied"), F.path(13, "satisfied"),
        ]
        var previous = "unknown"
        for (t, state) in zip(times, reachabilityStates) {
            events.append(F.reachability(t, state, previous: previous, quality: "good", rttMs: 50, loss: 0))
            previous = state
        }
        events.sort { $0.t < $1.t }
        let metrics = TimelineMetrics(report(events, duration: 20, steps: steps))

        // Reachability by hand: online (from unknown: a change), offline, online, online (none), limited, online,
        // offline, offline (none), online — 7 changes, 3 of them before 10 s (step a), 4 after (step b).
        XCTAssertEqual(metrics.flaps(.reachability), 7)
        XCTAssertEqual(metrics.flaps(.path), 2)
        XCTAssertEqual(metrics.flaps(.conditions), 1)  // the first profile establishes the lane
        XCTAssertEqual(metrics.flaps(.app), 0)
        XCTAssertEqual(metrics.steps.map { $0.flaps(.reachability) }, [3, 4])
        XCTAssertEqual(metrics.steps.map { $0.flaps(.path) }, [0, 2])
        XCTAssertEqual(metrics.steps.map { $0.flaps(.conditions) }, [0, 1])
        XCTAssertEqual(metrics.flaps.map(\.lane), [.conditions, .path, .reachability, .app])
    }

    func testRTTAndLossPerStep() {
        let steps = [
            StepRecord(name: "lte", action: "apply lte", start: 0, end: F.ns(10)),
            StepRecord(name: "3g", action: "apply 3g", start: F.ns(10), end: F.ns(20)),
        ]
        let lte: [Double?] = [61, 58.5, nil, 72, 64, 66.25, 90, 59, 63]
        let threeG: [Double?] = [130, nil, nil, 118, 101.5]
        var events: [TimelineEvent] = []
        for (index, rtt) in lte.enumerated() { events.append(F.sample(0.5 + Double(index), rttMs: rtt)) }
        for (index, rtt) in threeG.enumerated() { events.append(F.sample(10.5 + Double(index) * 1.5, rttMs: rtt, probe: "dns")) }
        // A sample without `success` but with an RTT counts as a success; one with neither as a failure.
        events.append(TimelineEvent(t: F.ns(19.5), lane: .reachability, kind: TimelineKind.sample, summary: "", details: ["rttMs": .number(140)]))
        events.append(TimelineEvent(t: F.ns(19.6), lane: .reachability, kind: TimelineKind.sample, summary: "", details: ["rttMs": .null]))
        let metrics = TimelineMetrics(report(events, duration: 20, steps: steps))

        // Worked out by hand. Quantiles interpolate at position q * (n - 1) of the sorted values.
        // lte: 9 samples, 1 failed; sorted 58.5 59 61 63 64 66.25 72 90 — median at 3.5: (63 + 64) / 2 = 63.5,
        //      p95 at 6.65: 72 + 0.65 * (90 - 72) = 83.7.
        // 3g: 7 samples (5 with success, 140 without success, one with neither), 3 failed; sorted 101.5 118 130 140 —
        //      median at 1.5: 124, p95 at 2.85: 130 + 0.85 * 10 = 138.5.
        assertInterval(metrics.steps[0], samples: 9, failures: 1, loss: 1.0 / 9.0, rtt: (8, 58.5, 63.5, 83.7, 90))
        assertInterval(metrics.steps[1], samples: 7, failures: 3, loss: 3.0 / 7.0, rtt: (4, 101.5, 124, 138.5, 140))
        // The whole run: 16 samples, 4 failed; 12 RTTs, median at 5.5: (66.25 + 72) / 2 = 69.125,
        // p95 at 10.45: 130 + 0.45 * 10 = 134.5.
        XCTAssertEqual(metrics.run.samples, 16)
        XCTAssertEqual(metrics.run.failures, 4)
        XCTAssertEqual(metrics.run.rtt!.median, 69.125, accuracy: 1e-9)
        XCTAssertEqual(metrics.run.rtt!.p95, 134.5, accuracy: 1e-9)
    }

    private func assertInterval(
        _ interval: TimelineMetrics.Interval, samples: Int, failures: Int, loss: Double,
        rtt expected: (count: Int, min: Double, median: Double, p95: Double, max: Double), line: UInt = #line
    ) {
        XCTAssertEqual(interval.samples, samples, interval.name, line: line)
        XCTAssertEqual(interval.failures, failures, interval.name, line: line)
        XCTAssertEqual(interval.loss ?? -1, loss, accuracy: 1e-12, interval.name, line: line)
        guard let rtt = interval.rtt else { return XCTFail("no RTT in \(interval.name)", line: line) }
        XCTAssertEqual(rtt.count, expected.count, interval.name, line: line)
        XCTAssertEqual(rtt.min, expected.min, interval.name, line: line)
        XCTAssertEqual(rtt.median, expected.median, accuracy: 1e-9, interval.name, line: line)
        XCTAssertEqual(rtt.p95, expected.p95, accuracy: 1e-9, interval.name, line: line)
        XCTAssertEqual(rtt.max, expected.max, interval.name, line: line)
    }

    func testStepsWithoutSamples() {
        let metrics = TimelineMetrics(report([], duration: 5, steps: [StepRecord(name: "quiet", action: "wait", start: 0, end: F.ns(5))]))
        XCTAssertEqual(metrics.steps.count, 1)
        XCTAssertNil(metrics.steps[0].loss)
        XCTAssertNil(metrics.steps[0].rtt)
        XCTAssertEqual(metrics.steps[0].samples, 0)
        XCTAssertTrue(metrics.changes.isEmpty)
        XCTAssertEqual(metrics.run.end, F.ns(5))
    }

    func testUnorderedEventsAreOrderedByTime() {
        let metrics = TimelineMetrics(report(tunnelEvents.reversed()))
        XCTAssertEqual(metrics, TimelineMetrics(report(tunnelEvents)))
    }

    func testChangeIsAttributedToItsStep() {
        let steps = [
            StepRecord(name: "first", action: "apply lte", start: 0, end: F.ns(10)),
            StepRecord(name: "tunnel", action: "apply 100-loss", start: F.ns(10), end: F.ns(20)),
        ]
        let metrics = TimelineMetrics(report(Array(tunnelEvents.prefix(6)), duration: 20, steps: steps))
        XCTAssertEqual(metrics.changes.map(\.step), ["first", "tunnel"])
    }

    func testCodableRoundTrip() throws {
        let metrics = TimelineMetrics(ReportFixtures.tunnel())
        let data = try JSONEncoder().encode(metrics)
        XCTAssertEqual(try JSONDecoder().decode(TimelineMetrics.self, from: data), metrics)
    }

    func testTunnelFixtureNumbers() {
        let report = ReportFixtures.tunnel()
        let metrics = TimelineMetrics(report)
        XCTAssertEqual(metrics.changes.count, 4)
        XCTAssertEqual(metrics.changes[1].reaction(.reachability)!.delay!, 6.061, accuracy: 1e-9)
        XCTAssertEqual(metrics.changes[1].reaction(.path)?.reacted, false)
        XCTAssertEqual(metrics.changes[1].reaction(.app)?.state, "offline")
        XCTAssertEqual(metrics.changes[2].recovery(.reachability)!.delay!, 3.072, accuracy: 1e-9)
        XCTAssertEqual(metrics.steps.map(\.name), ["lte", "tunnel", "exit-3g", "back-to-lte"])
        XCTAssertEqual(metrics.steps[1].loss, 1)
        XCTAssertEqual(metrics.flaps(.path), 0)
    }
}

import Timeline

/// Judges a scenario's expectations against what the run recorded. A pure function of the events and the
/// steps as they ran: no clock, no I/O.
///
/// **A lane's state at a time** is the `state` of the latest event on that lane with a non-nil state at or
/// before that time (events at the same time count in the order given). Before its first such event a lane
/// has no state. Events are taken in time order whatever order they are passed in.
///
/// **`reaches S within W after P`** passes when the lane is in S at most W after step P started: if the lane
/// is already in S at P's start (entered before, or by an event at that very time), the measured time is 0;
/// otherwise it is the time of the first event after P's start that puts the lane in S (later steps
/// included: the window does not end with P). The state does not have to stay. Fails when S comes later
/// than W (the evidence says when) or never before the run ended.
///
/// **`holds S during P (grace G)`** passes when the lane's state is S at P's start + G and no event from
/// then until P's end (the next step's start; exclusive) puts it in another state. The evidence names the
/// first deviation (at the start of the check when the state carried from before the step is not S) and
/// how long the lane was out of S in total.
///
/// An expectation about a step that has no record (the run stopped before it) fails.
public enum ExpectationEvaluator {
    /// One result per expectation, in the same order.
    public static func evaluate(
        _ expectations: [Expectation], events: [TimelineEvent], steps: [StepRecord]
    ) -> [ExpectationResult] {
        let history = LaneHistory(events)
        var families: [AddressFamilyName: LaneHistory] = [:]
        return expectations.map { expectation in
            guard let family = expectation.family else { return evaluate(expectation, history: history, steps: steps) }
            if families[family] == nil { families[family] = LaneHistory(Self.reachability(of: family, in: events)) }
            return evaluate(expectation, history: families[family]!, steps: steps)
        }
    }

    /// The reachability lane as one family saw it: each prober update's state for `family` (the `ipv4` or
    /// `ipv6` detail) as the event's state; updates that do not report the family set none.
    static func reachability(of family: AddressFamilyName, in events: [TimelineEvent]) -> [TimelineEvent] {
        events.compactMap { event in
            guard event.lane == .reachability else { return event }
            var perFamily = event
            perFamily.state = event.details[family.rawValue]?.string
            return perFamily.state == nil ? nil : perFamily
        }
    }

    /// The result of one expectation.
    public static func evaluate(
        _ expectation: Expectation, events: [TimelineEvent], steps: [StepRecord]
    ) -> ExpectationResult {
        evaluate([expectation], events: events, steps: steps)[0]
    }

    /// The state of `lane` at `time`: the state of the latest event on that lane with a state at or before
    /// `time`; `nil` before the lane's first state.
    public static func state(of lane: TimelineLane, at time: UInt64, in events: [TimelineEvent]) -> String? {
        LaneHistory(events).state(of: lane, at: time)?.state
    }

    static func evaluate(_ expectation: Expectation, history: LaneHistory, steps: [StepRecord]) -> ExpectationResult {
        var result = ExpectationResult(
            name: expectation.name, rule: expectation.ruleDescription, lane: expectation.lane, passed: false,
            evidence: "", step: expectation.rule.step, holds: !expectation.isReaches)
        let stepName = expectation.rule.step
        if case .reaches(_, let within, _) = expectation.rule { result.limit = seconds(within) }
        guard let step = steps.first(where: { $0.name == stepName }) else {
            // Nothing settled it: no mark in the reports.
            result.evidence = "step '\(stepName)' did not run"
            return result
        }
        let runEnd = steps.map(\.end).max() ?? step.end
        switch expectation.rule {
        case .reaches(let state, let within, _):
            reaches(
                state, within: within, lane: expectation.lane, step: step, runEnd: runEnd, history: history,
                into: &result)
        case .holds(let state, _, let grace):
            holds(state, grace: grace, lane: expectation.lane, step: step, history: history, into: &result)
        }
        return result
    }

    private static func reaches(
        _ target: String, within: UInt64, lane: TimelineLane, step: StepRecord, runEnd: UInt64, history: LaneHistory,
        into result: inout ExpectationResult
    ) {
        let limit = "limit \(ScenarioTime.short(within))"
        if let current = history.state(of: lane, at: step.start), current.state == target {
            result.passed = true
            result.measured = 0
            result.at = seconds(step.start)
            result.evidence =
                "already \(target) when '\(step.name)' started at \(ScenarioTime.seconds(step.start)) "
                + "(since \(ScenarioTime.seconds(current.since))); \(limit)"
            return
        }
        guard let reached = history.changes(of: lane).first(where: { $0.t >= step.start && $0.state == target }) else {
            // Judged when the window ran out (or when the run ended, if sooner).
            result.at = seconds(min(step.start &+ within, runEnd))
            var evidence =
                "never \(target) after '\(step.name)' started at \(ScenarioTime.seconds(step.start)) (the run ended at "
                + "\(ScenarioTime.seconds(runEnd))"
            if let last = history.state(of: lane, at: .max) {
                evidence += "; last state \(last.state) from \(ScenarioTime.seconds(last.since))"
            } else {
                evidence += "; the \(lane) lane recorded no state"
            }
            result.evidence = evidence + "); " + limit
            return
        }
        let measured = reached.t - step.start
        result.measured = seconds(measured)
        result.passed = measured <= within
        result.at = seconds(result.passed ? reached.t : step.start &+ within)
        result.evidence =
            "\(target) \(result.passed ? "at" : "only at") \(ScenarioTime.seconds(reached.t)), "
            + "\(ScenarioTime.seconds(measured)) after '\(step.name)' started; \(limit)"
    }

    private static func holds(
        _ target: String, grace: UInt64, lane: TimelineLane, step: StepRecord, history: LaneHistory,
        into result: inout ExpectationResult
    ) {
        let from = step.start &+ grace
        let to = step.end
        let graceText = grace > 0 ? " after the \(ScenarioTime.short(grace)) grace" : ""
        guard from < to else {
            result.at = seconds(to)
            result.evidence =
                "'\(step.name)' lasted \(ScenarioTime.seconds(to &- min(step.start, to))), no longer than its "
                + "\(ScenarioTime.short(grace)) grace: nothing was checked"
            return
        }
        let window = "\(ScenarioTime.decimal(from))–\(ScenarioTime.decimal(to)) s"
        let initial = history.state(of: lane, at: from)
        let inside = history.changes(of: lane).filter { $0.t > from && $0.t < to }

        // Time out of the target state within [from, to).
        var outside: UInt64 = 0
        var cursor = from
        var current = initial?.state
        for change in inside {
            if current != target { outside += change.t - cursor }
            cursor = change.t
            current = change.state
        }
        if current != target { outside += to - cursor }

        if outside == 0 {
            result.at = seconds(to)
            result.passed = true
            result.evidence = "\(target) throughout '\(step.name)'\(graceText) (\(window))"
            return
        }
        var evidence: String
        result.at = seconds(inside.first { initial?.state == target && $0.state != target }?.t ?? from)
        if let initial, initial.state != target {
            evidence =
                "\(initial.state) when the check began at \(ScenarioTime.seconds(from)) (since "
                + "\(ScenarioTime.seconds(initial.since)))"
        } else if initial == nil {
            evidence = "no \(lane) state recorded by \(ScenarioTime.seconds(from)), when the check began"
        } else {
            let deviation = inside.first { $0.state != target }!
            evidence =
                "\(deviation.state) at \(ScenarioTime.seconds(deviation.t)), "
                + "\(ScenarioTime.seconds(deviation.t - step.start)) into '\(step.name)'"
        }
        evidence += "; not \(target) for \(ScenarioTime.seconds(outside)) of \(ScenarioTime.seconds(to - from)) checked"
        evidence += "\(graceText) (\(window))"
        result.evidence = evidence
    }

    private static func seconds(_ nanoseconds: UInt64) -> Double { Double(nanoseconds) / 1e9 }
}

/// The state changes of each lane, in time order.
struct LaneHistory {
    struct Change {
        var t: UInt64
        var state: String
    }

    private var lanes: [TimelineLane: [Change]] = [:]

    init(_ events: [TimelineEvent]) {
        let ordered = events.enumerated().sorted { a, b in
            a.element.t != b.element.t ? a.element.t < b.element.t : a.offset < b.offset
        }
        for (_, event) in ordered {
            guard let state = event.state else { continue }
            lanes[event.lane, default: []].append(Change(t: event.t, state: state))
        }
    }

    /// Every event on `lane` that carries a state, in time order.
    func changes(of lane: TimelineLane) -> [Change] {
        lanes[lane] ?? []
    }

    /// The lane's state at `time`, and since when it has been in it without interruption (the earliest of
    /// the run of events with that state that ends with the latest one at or before `time`).
    func state(of lane: TimelineLane, at time: UInt64) -> (state: String, since: UInt64)? {
        let changes = self.changes(of: lane)
        guard var index = changes.lastIndex(where: { $0.t <= time }) else { return nil }
        let state = changes[index].state
        while index > 0, changes[index - 1].state == state { index -= 1 }
        return (state, changes[index].t)
    }
}

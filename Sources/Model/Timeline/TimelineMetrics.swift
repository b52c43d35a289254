/// Numbers derived from a run's events: how each lane reacted to each change of conditions, how long it
/// took to recover, how often each lane changed state, and the prober's RTT and loss per step.
///
/// A pure function of a `RunReport` (`TimelineMetrics(report)`); every writer shows the same numbers.
///
/// Definitions:
/// - A lane's **state** is the `state` of its latest event that has one (path: `path-update`, reachability:
///   `reachability-update`, app: `app-line` with a state, conditions: `conditions-changed`).
/// - A **state change** is an event whose state differs from the lane's state before it. The first state a
///   lane reports establishes it and is not a change, unless the event names a different `previous` state
///   in its details (the prober's `unknown` → `online`). A path `baseline` never counts as a change.
/// - The **reaction** of a lane to a change of conditions is the first state change on that lane at or
///   after the change and before the next change of conditions (or the end of the run); otherwise the
///   lane "did not react".
/// - **Recovery** applies to lanes with a good state (path `satisfied`, reachability `online`): when the lane
///   is not in it at the change, or leaves it within the window, the delay from the change until the lane is
///   next in its good state within the window.
/// - **Flaps** count state changes per lane, over the run and per step.
/// - **RTT** statistics use the reachability lane's `sample` events with a numeric `rttMs` and no
///   `success: false`; median and p95 interpolate linearly between ranks. **Loss** is failed samples /
///   samples (a sample failed when `success` is false, or when it has no `success` and no `rttMs`).
public struct TimelineMetrics: Sendable, Codable, Equatable {
    /// The lanes whose reactions are measured, in report order.
    public static let reactionLanes: [TimelineLane] = [.path, .reachability, .app]
    /// The lanes whose state changes are counted, in report order.
    public static let flapLanes: [TimelineLane] = [.conditions, .path, .reachability, .app]
    /// The state a lane recovers to; lanes without one have no recovery.
    public static func goodState(of lane: TimelineLane) -> String? {
        switch lane {
        case .path: "satisfied"
        case .reachability: "online"
        default: nil
        }
    }

    /// One per conditions-changed event, in run order.
    public var changes: [ConditionChange]
    /// State changes per lane over the whole run, one per `flapLanes`.
    public var flaps: [LaneCount]
    /// One per step of the metadata, in order.
    public var steps: [Interval]
    /// The whole run.
    public var run: Interval
    /// Periods online over one address family only; nil when no update reported per-family states.
    public var singleFamily: [SingleFamilyPeriod]?

    /// State changes of `lane` over the run.
    public func flaps(_ lane: TimelineLane) -> Int { flaps.first { $0.lane == lane }?.count ?? 0 }

    /// Metrics as given (for decoding and tests).
    public init(changes: [ConditionChange], flaps: [LaneCount], steps: [Interval], run: Interval, singleFamily: [SingleFamilyPeriod]? = nil) {
        self.changes = changes
        self.flaps = flaps
        self.steps = steps
        self.run = run
        self.singleFamily = singleFamily
    }

    /// Computes the metrics of `report`.
    public init(_ report: RunReport) {
        let events = Self.ordered(report.events)
        let end = Swift.max(report.metadata.duration, events.last?.t ?? 0)
        let transitions = Self.transitions(events)

        // Per lane: the state-change history, and every state-bearing event (for "state at time t").
        var history: [TimelineLane: [Transition]] = [:]
        for transition in transitions { history[transition.lane, default: []].append(transition) }

        let conditionEvents = events.filter { $0.lane == .conditions && $0.kind == TimelineKind.conditionsChanged }
        var changes: [ConditionChange] = []
        changes.reserveCapacity(conditionEvents.count)
        var previousWire: String?
        for (offset, event) in conditionEvents.enumerated() {
            let windowEnd = offset + 1 < conditionEvents.count ? conditionEvents[offset + 1].t : end
            var reactions: [Reaction] = []
            var recoveries: [Recovery] = []
            for lane in Self.reactionLanes {
                let laneHistory = history[lane] ?? []
                let before = Self.state(in: laneHistory, before: event.t)
                var reaction = Reaction(lane: lane, before: before)
                // First change at or after the change, before the window ends (the last window includes its end).
                let first = Self.firstIndex(in: laneHistory, atOrAfter: event.t)
                var index = first
                while index < laneHistory.count {
                    let transition = laneHistory[index]
                    if transition.t >= windowEnd && !(offset == conditionEvents.count - 1 && transition.t == windowEnd) { break }
                    if transition.isChange {
                        reaction.state = transition.state
                        reaction.t = transition.t
                        reaction.delay = Double(transition.t - event.t) / 1e9
                        break
                    }
                    index += 1
                }
                reactions.append(reaction)

                guard let good = Self.goodState(of: lane) else { continue }
                var recovery = Recovery(lane: lane, goodState: good, outcome: .noData)
                var leftGood = before != good
                var sawState = before != nil
                index = first
                while index < laneHistory.count {
                    let transition = laneHistory[index]
                    if transition.t >= windowEnd && !(offset == conditionEvents.count - 1 && transition.t == windowEnd) { break }
                    sawState = true
                    if transition.state != good {
                        leftGood = true
                    } else if leftGood {
                        recovery.outcome = .recovered
                        recovery.t = transition.t
                        recovery.delay = Double(transition.t - event.t) / 1e9
                        break
                    }
                    index += 1
                }
                if recovery.outcome != .recovered {
                    if !sawState {
                        recovery.outcome = .noData
                    } else if leftGood {
                        recovery.outcome = .notRecovered
                    } else {
                        recovery.outcome = .stayedGood
                    }
                }
                recoveries.append(recovery)
            }
            let wire = event.state ?? event.details["profile"]?.string ?? event.summary
            let scope = ConditionScope(event)
            changes.append(
                ConditionChange(
                    index: offset + 1, t: event.t, windowEnd: windowEnd,
                    step: Self.step(containing: event.t, in: report.metadata.steps)?.name,
                    from: previousWire, to: wire, profile: event.details["profile"]?.string,
                    action: event.details["action"]?.string, netlinkMs: event.details["netlinkMs"]?.number,
                    reactions: reactions, recoveries: recoveries, links: scope.links, targets: scope.targets, backend: scope.backend,
                    traceUplinkMeanBps: scope.uplinkMeanBps, traceDownlinkMeanBps: scope.downlinkMeanBps))
            previousWire = wire
        }

        let samples = Self.samples(events)
        let steps = report.metadata.steps
        var intervals: [Interval] = []
        for (offset, step) in steps.enumerated() {
            let last = offset == steps.count - 1
            let stepEnd = last ? Swift.max(step.end, step.start) : step.end
            intervals.append(
                Self.interval(
                    name: step.name, start: step.start, end: stepEnd, inclusiveEnd: last, samples: samples,
                    transitions: transitions))
        }
        self.changes = changes
        self.steps = intervals
        self.run = Self.interval(name: "whole run", start: 0, end: end, inclusiveEnd: true, samples: samples, transitions: transitions)
        self.flaps = self.run.flaps
        self.singleFamily = FamilyReachability.isRecorded(in: events) ? FamilyReachability.singleFamilyPeriods(events: events, end: end) : nil
    }

    // MARK: - Building blocks

    /// A state-bearing event of one lane.
    struct Transition {
        var t: UInt64
        var lane: TimelineLane
        var state: String
        /// True when it changed the lane's state (see the type's documentation).
        var isChange: Bool
    }

    /// One probe sample.
    struct Sample {
        var t: UInt64
        var rttMs: Double?
        var failed: Bool
        var probe: String?
    }

    /// Events by run time; events with equal times keep their recorded order.
    static func ordered(_ events: [TimelineEvent]) -> [TimelineEvent] {
        var sorted = true
        for index in events.indices.dropFirst() where events[index].t < events[index - 1].t {
            sorted = false
            break
        }
        if sorted { return events }
        return events.enumerated().sorted { ($0.element.t, $0.offset) < ($1.element.t, $1.offset) }.map(\.element)
    }

    /// Which kinds set a lane's state.
    static func isStateEvent(_ event: TimelineEvent) -> Bool {
        guard event.state != nil else { return false }
        switch event.lane {
        case .conditions: return event.kind == TimelineKind.conditionsChanged
        case .path: return event.kind == TimelineKind.pathUpdate
        case .reachability: return event.kind == TimelineKind.reachabilityUpdate
        case .app: return event.kind == TimelineKind.appLine
        case .scenario: return false
        }
    }

    /// Every state-bearing event of every lane, in order, marked as a change or not.
    static func transitions(_ events: [TimelineEvent]) -> [Transition] {
        var current: [TimelineLane: String] = [:]
        var result: [Transition] = []
        for event in events where isStateEvent(event) {
            guard let state = event.state else { continue }
            let isChange: Bool
            if let previous = current[event.lane] {
                isChange = previous != state
            } else if event.details["baseline"]?.bool == true {
                isChange = false
            } else if let previous = event.details["previous"]?.string {
                isChange = previous != state
            } else {
                isChange = false
            }
            current[event.lane] = state
            result.append(Transition(t: event.t, lane: event.lane, state: state, isChange: isChange))
        }
        return result
    }

    /// The reachability lane's probe samples, in order.
    static func samples(_ events: [TimelineEvent]) -> [Sample] {
        var result: [Sample] = []
        for event in events where event.lane == .reachability && event.kind == TimelineKind.sample {
            let rtt = event.details["rttMs"]?.number
            let success = event.details["success"]?.bool
            let failed = success.map { !$0 } ?? (rtt == nil)
            result.append(Sample(t: event.t, rttMs: failed ? nil : rtt, failed: failed, probe: event.details["probe"]?.string))
        }
        return result
    }

    /// The state of a lane strictly before `t` (nil if none yet).
    static func state(in history: [Transition], before t: UInt64) -> String? {
        let index = firstIndex(in: history, atOrAfter: t)
        return index > 0 ? history[index - 1].state : nil
    }

    /// The first index whose time is >= `t` (binary search; history is ordered).
    static func firstIndex(in history: [Transition], atOrAfter t: UInt64) -> Int {
        var low = 0
        var high = history.count
        while low < high {
            let middle = (low + high) / 2
            if history[middle].t < t { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// The step running at `t`: the last step that started at or before it (the last step includes the end).
    static func step(containing t: UInt64, in steps: [StepRecord]) -> StepRecord? {
        for (offset, step) in steps.enumerated().reversed() where step.start <= t {
            let last = offset == steps.count - 1
            return t < step.end || last ? step : nil
        }
        return nil
    }

    static func interval(
        name: String, start: UInt64, end: UInt64, inclusiveEnd: Bool, samples: [Sample], transitions: [Transition]
    ) -> Interval {
        func contains(_ t: UInt64) -> Bool { t >= start && (t < end || (inclusiveEnd && t == end)) }
        var count = 0
        var failures = 0
        var rtts: [Double] = []
        for sample in samples where contains(sample.t) {
            count += 1
            if sample.failed { failures += 1 } else if let rtt = sample.rttMs { rtts.append(rtt) }
        }
        var perLane: [TimelineLane: Int] = [:]
        for transition in transitions where transition.isChange && contains(transition.t) {
            perLane[transition.lane, default: 0] += 1
        }
        return Interval(
            name: name, start: start, end: end, samples: count, failures: failures,
            loss: count > 0 ? Double(failures) / Double(count) : nil, rtt: RTTStats(rtts),
            flaps: flapLanes.map { LaneCount(lane: $0, count: perLane[$0] ?? 0) })
    }
}

/// One step of a run, as it happened.
public struct StepRecord: Sendable, Codable, Equatable {
    /// The step's name in the scenario, e.g. `tunnel`.
    public var name: String
    /// What the step did, e.g. `apply 100-loss`, `link down (router, wifi)`.
    public var action: String
    /// Run time (ns) when the step started.
    public var start: UInt64
    /// Run time (ns) when the next step started or the run ended.
    public var end: UInt64

    /// A step that ran from `start` to `end` (run time, ns).
    public init(name: String, action: String, start: UInt64, end: UInt64) {
        self.name = name
        self.action = action
        self.start = start
        self.end = end
    }
}

/// The verdict on one expectation of a scenario.
public struct ExpectationResult: Sendable, Codable, Equatable {
    /// The expectation's name (unique in the scenario).
    public var name: String
    /// The rule in words: "reachability reaches offline within 12 s of step 'tunnel'".
    public var rule: String
    /// The lane the rule watches.
    public var lane: TimelineLane
    /// True when the rule held.
    public var passed: Bool
    /// What was seen, in words, with times: "offline at 7.412 s, 6.380 s after 'tunnel' started".
    public var evidence: String
    /// The measured time, for "within" rules (seconds), nil when the state was never reached.
    public var measured: Double?
    /// The allowed time, for "within" rules (seconds).
    public var limit: Double?
    /// When the verdict was settled, in seconds of run time: when the state was reached (or the window
    /// ran out), when a held state was first left, or when the step it was held through ended. Reports mark
    /// the expectation there. Nil when nothing settled it (its step did not run).
    public var at: Double?
    /// The step the rule is about, when it names one.
    public var step: String?
    /// True for a rule that a lane holds a state (nothing may change), false for one that it reaches one.
    public var holds: Bool?

    /// A verdict; `measured` and `limit` only for "within" rules.
    public init(
        name: String, rule: String, lane: TimelineLane, passed: Bool, evidence: String, measured: Double? = nil, limit: Double? = nil,
        at: Double? = nil, step: String? = nil, holds: Bool? = nil
    ) {
        self.name = name
        self.rule = rule
        self.lane = lane
        self.passed = passed
        self.evidence = evidence
        self.measured = measured
        self.limit = limit
        self.at = at
        self.step = step
        self.holds = holds
    }
}

/// Facts about a run that every report shows.
public struct RunMetadata: Sendable, Codable, Equatable {
    /// The scenario's name (or the run's, for library users).
    public var name: String
    /// The scenario's description, empty when it has none.
    public var description: String
    /// The sandbox it ran in.
    public var sandbox: String
    /// Wall-clock start, ISO 8601 (for people; all ordering uses run time).
    public var startedAt: String
    /// Run time (ns) at the end.
    public var duration: UInt64
    /// The steps in the order they ran.
    public var steps: [StepRecord]
    /// The `--observe` command, if any.
    public var observeCommand: String?

    /// The facts of a run.
    public init(name: String, description: String, sandbox: String, startedAt: String, duration: UInt64, steps: [StepRecord], observeCommand: String? = nil) {
        self.name = name
        self.description = description
        self.sandbox = sandbox
        self.startedAt = startedAt
        self.duration = duration
        self.steps = steps
        self.observeCommand = observeCommand
    }
}

/// Something that stopped a run: a step that failed (a qdisc the kernel lacks, a link that is gone).
public struct RunError: Sendable, Codable, Equatable {
    /// The step that failed, nil when the run failed outside a step.
    public var step: String?
    /// What went wrong, in the words of the layer that failed.
    public var message: String
    /// What to do about it, when something can be said (e.g. run `linkcond doctor`).
    public var hint: String?
    /// Run time (ns) of the failure.
    public var t: UInt64

    /// An error of `step` at run time `t`.
    public init(step: String?, message: String, hint: String? = nil, t: UInt64) {
        self.step = step
        self.message = message
        self.hint = hint
        self.t = t
    }
}

/// Everything a report is made from: what happened, what was expected, and the metadata.
public struct RunReport: Sendable, Codable, Equatable {
    /// Facts about the run.
    public var metadata: RunMetadata
    /// Every event recorded, in recorded order (writers sort by time).
    public var events: [TimelineEvent]
    /// One verdict per expectation of the scenario, in scenario order.
    public var expectations: [ExpectationResult]
    /// What stopped the run, if anything did; every report shows it.
    public var errors: [RunError]

    /// A report of a run.
    public init(metadata: RunMetadata, events: [TimelineEvent], expectations: [ExpectationResult], errors: [RunError] = []) {
        self.metadata = metadata
        self.events = events
        self.expectations = expectations
        self.errors = errors
    }

    /// True when every expectation passed and nothing stopped the run.
    public var passed: Bool { expectations.allSatisfy(\.passed) && errors.isEmpty }
}

extension RunReport {
    /// The passed expectation that `lane` holds its state during step `step`, if there is one: then the lane not
    /// reacting to a change of conditions at that step is what was meant (the path monitor cannot see loss),
    /// not a warning.
    public func intendedStillness(of lane: TimelineLane, during step: String?) -> ExpectationResult? {
        guard let step else { return nil }
        return expectations.first { $0.holds == true && $0.passed && $0.lane == lane && $0.step == step }
    }
}

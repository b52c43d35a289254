/// One step of a run, as it happened.
public struct StepRecord: Sendable, Codable, Equatable {
    public var name: String
    /// What the step did, e.g. `apply 100-loss`, `link down (router, wifi)`.
    public var action: String
    /// Run time (ns) when the step started.
    public var start: UInt64
    /// Run time (ns) when the next step started or the run ended.
    public var end: UInt64

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
    public var lane: TimelineLane
    public var passed: Bool
    /// What was seen, in words, with times: "offline at 7.412 s, 6.380 s after 'tunnel' started".
    public var evidence: String
    /// The measured time, for "within" rules (seconds), nil when the state was never reached.
    public var measured: Double?
    /// The allowed time, for "within" rules (seconds).
    public var limit: Double?

    public init(name: String, rule: String, lane: TimelineLane, passed: Bool, evidence: String, measured: Double? = nil, limit: Double? = nil) {
        self.name = name
        self.rule = rule
        self.lane = lane
        self.passed = passed
        self.evidence = evidence
        self.measured = measured
        self.limit = limit
    }
}

/// Facts about a run that every report shows.
public struct RunMetadata: Sendable, Codable, Equatable {
    /// The scenario's name (or the run's, for library users).
    public var name: String
    public var description: String
    /// The sandbox it ran in.
    public var sandbox: String
    /// Wall-clock start, ISO 8601 (for people; all ordering uses run time).
    public var startedAt: String
    /// Run time (ns) at the end.
    public var duration: UInt64
    public var steps: [StepRecord]
    /// The `--observe` command, if any.
    public var observeCommand: String?

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

/// Everything a report is made from: what happened, what was expected, and the metadata.
public struct RunReport: Sendable, Codable, Equatable {
    public var metadata: RunMetadata
    public var events: [TimelineEvent]
    public var expectations: [ExpectationResult]

    public init(metadata: RunMetadata, events: [TimelineEvent], expectations: [ExpectationResult]) {
        self.metadata = metadata
        self.events = events
        self.expectations = expectations
    }

    /// True when every expectation passed.
    public var passed: Bool { expectations.allSatisfy(\.passed) }
}

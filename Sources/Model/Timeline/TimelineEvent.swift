/// The swimlanes of a timeline.
public enum TimelineLane: String, Sendable, Codable, CaseIterable, CustomStringConvertible {
    /// Changes of network conditions: profiles applied or cleared, links taken down, portals switched.
    case conditions
    /// The path monitor's view (satisfied / unsatisfied / requiresConnection).
    case path
    /// The reachability prober's view (online / portal / limited / offline) and its RTT/loss samples.
    case reachability
    /// What the user's own app printed (`--observe`).
    case app
    /// The scenario itself: steps starting and ending, expectations judged.
    case scenario

    /// The raw value, e.g. `reachability`.
    public var description: String { rawValue }
}

/// A value in an event's details: JSON's scalars.
public enum TimelineValue: Sendable, Equatable, Codable, CustomStringConvertible {
    /// A JSON string.
    case string(String)
    /// A JSON number.
    case number(Double)
    /// A JSON boolean.
    case bool(Bool)
    /// JSON null.
    case null

    /// Decodes null, a boolean, a number or a string, in that order.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else {
            self = .string(try container.decode(String.self))
        }
    }

    /// Encodes the bare JSON scalar.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case let .string(value): try container.encode(value)
        case let .number(value): try container.encode(value)
        case let .bool(value): try container.encode(value)
        case .null: try container.encodeNil()
        }
    }

    /// The value as text; whole numbers without a fraction (`3`, not `3.0`).
    public var description: String {
        switch self {
        case let .string(value): value
        case let .number(value): value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
        case let .bool(value): String(value)
        case .null: "null"
        }
    }

    /// The number, when this is one.
    public var number: Double? { if case let .number(value) = self { value } else { nil } }
    /// The string, when this is one.
    public var string: String? { if case let .string(value) = self { value } else { nil } }
    /// The boolean, when this is one.
    public var bool: Bool? { if case let .bool(value) = self { value } else { nil } }
}

/// One thing that happened, on one lane, at one moment of a run.
///
/// `t` is monotonic time in nanoseconds since the run started (CLOCK_MONOTONIC, so wall-clock jumps
/// cannot reorder events). `state` is the lane's state after the event, when the event sets one (the
/// path's status, the prober's state, the profile on the wire, an app's own state), so a lane's states
/// over time are read straight off its events.
public struct TimelineEvent: Sendable, Codable, Equatable {
    /// Nanoseconds since the run started.
    public var t: UInt64
    /// The lane it belongs to.
    public var lane: TimelineLane
    /// What happened, e.g. `profile-applied`, `path-update`, `probe-round`, `step-started`, `expectation`.
    public var kind: String
    /// One human sentence.
    public var summary: String
    /// The lane's state after this event, when the event sets one.
    public var state: String?
    /// Everything else worth keeping (durations, RTTs, reasons, evidence).
    public var details: [String: TimelineValue]

    /// An event at run time `t` (ns).
    public init(t: UInt64, lane: TimelineLane, kind: String, summary: String, state: String? = nil, details: [String: TimelineValue] = [:]) {
        self.t = t
        self.lane = lane
        self.kind = kind
        self.summary = summary
        self.state = state
        self.details = details
    }

    /// Seconds since the run started.
    public var seconds: Double { Double(t) / 1e9 }
}

/// Event kinds linkcond itself records (users' apps may add their own on the app lane).
public enum TimelineKind {
    /// The run began (lane scenario).
    public static let runStarted = "run-started"
    /// The run ended (lane scenario).
    public static let runFinished = "run-finished"
    /// A scenario step began (lane scenario).
    public static let stepStarted = "step-started"
    /// A scenario step ended (lane scenario).
    public static let stepFinished = "step-finished"
    /// Conditions on the wire changed (lane conditions); details may carry `profile`, `action`, `netlinkMs`, `links`, `targets`, `backend` and a trace's `trace…` rates.
    public static let conditionsChanged = "conditions-changed"
    /// The path monitor delivered a path (lane path).
    public static let pathUpdate = "path-update"
    /// The prober changed its conclusion (lane reachability); details may carry `ipv4`, `ipv6` and `singleFamily`.
    public static let reachabilityUpdate = "reachability-update"
    /// One probe's outcome (lane reachability): `probe`, `success`, `rttMs`.
    public static let sample = "sample"
    /// A line the observed app printed (lane app).
    public static let appLine = "app-line"
    /// An expectation was judged (lane scenario).
    public static let expectation = "expectation"
    /// Something that stopped the run (a failed step).
    public static let error = "error"
}

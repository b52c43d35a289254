import PathMonitor
import Timeline

/// A scenario: timed steps that change the sandbox's network conditions, the prober's settings for the
/// run, and what the path monitor, the prober and the user's app are expected to do.
///
/// Scenario files are read by ``ScenarioParser``; the format is described in `scenarios/FORMAT.md`.
public struct Scenario: Sendable, Equatable {
    /// The scenario's name: 1–64 lowercase letters, digits, `-`, `_` or `.`, starting with a letter or digit.
    public var name: String
    /// What the scenario shows.
    public var description: String
    /// Whether the sandbox needs the cellular link (`ww0`) beside wifi (with ``links``: whether they name it).
    public var cellular: Bool
    /// The links the scenario is written for (`"links": ["wifi"]`), exactly: a run refuses a sandbox of
    /// another shape, whose verdicts could differ (a second link keeps the path satisfied). Nil when the
    /// scenario does not say: then it needs wifi, and cellular when ``cellular`` is true, and runs on a
    /// sandbox with more.
    public var links: [LinkName]?
    /// Prober settings for this run, over the defaults; `nil` when the file has no `probe`.
    public var probe: ProbeSettingsOverride?
    /// The steps, in the order they run; never empty in a parsed scenario.
    public var steps: [ScenarioStep]
    /// What must happen, each judged after the run by ``ExpectationEvaluator``.
    public var expectations: [Expectation]
    /// The file (or other origin) the scenario was read from.
    public var source: String?

    public init(
        name: String, description: String = "", cellular: Bool = false, links: [LinkName]? = nil, probe: ProbeSettingsOverride? = nil,
        steps: [ScenarioStep], expectations: [Expectation] = [], source: String? = nil
    ) {
        self.name = name
        self.description = description
        self.cellular = cellular || links?.contains(.cellular) == true
        self.links = links
        self.probe = probe
        self.steps = steps
        self.expectations = expectations
        self.source = source
    }

    /// The links a sandbox needs for this scenario: ``links`` when declared, else wifi (and cellular when
    /// ``cellular``).
    public var neededLinks: [LinkName] {
        links ?? (cellular ? [.wifi, .cellular] : [.wifi])
    }

    /// The planned length of the run: the sum of every step's hold, in nanoseconds.
    public var duration: UInt64 {
        steps.reduce(0) { $0 &+ $1.hold }
    }

    /// The step named `name`.
    public func step(named name: String) -> ScenarioStep? {
        steps.first { $0.name == name }
    }

    /// When the step named `name` is planned to start, in nanoseconds from the run's start (the sum of
    /// the holds before it); `nil` for a name no step has.
    public func plannedStart(ofStep name: String) -> UInt64? {
        var start: UInt64 = 0
        for step in steps {
            if step.name == name { return start }
            start &+= step.hold
        }
        return nil
    }

    /// The prober settings for this run: ``probe`` applied over `base`.
    public func probeSettings(base: ReachabilitySettings = ReachabilitySettings()) -> ReachabilitySettings {
        probe?.applied(to: base) ?? base
    }
}

/// One step: an action, then a pause before the next step.
public struct ScenarioStep: Sendable, Equatable {
    /// Unique within the scenario; expectations name steps by it.
    public var name: String
    /// What the step does when it starts.
    public var action: StepAction
    /// How long the run stays in this step (from its start to the next step's start), in nanoseconds.
    /// 0 runs the action and moves straight on (to chain actions).
    public var hold: UInt64

    public init(name: String, action: StepAction, hold: UInt64) {
        self.name = name
        self.action = action
        self.hold = hold
    }
}

/// Which end of a client link a link change acts on.
public enum LinkSide: String, Sendable, Equatable, Codable, CaseIterable, CustomStringConvertible {
    /// The device's own interface (`wl0`, `ww0`): like switching the radio off.
    case client
    /// The router's end (`c-wl0`, `c-ww0`): the device keeps its interface up but loses carrier, like walking
    /// out of range.
    case router

    public var description: String { rawValue }
}

/// An address family a step or an expectation names.
public enum AddressFamilyName: String, Sendable, Equatable, Codable, CaseIterable, CustomStringConvertible {
    /// IPv4.
    case ipv4
    /// IPv6.
    case ipv6

    public var description: String { rawValue }
}

/// One of the device's links in the sandbox.
public enum LinkName: String, Sendable, Equatable, Codable, CaseIterable, CustomStringConvertible {
    /// `wl0`, always present.
    case wifi
    /// `ww0`, present when the scenario says `"cellular": true`.
    case cellular

    public var description: String { rawValue }
}

/// What a step does.
public enum StepAction: Sendable, Equatable {
    /// Puts a profile on the device's links (replacing whatever was there): a catalog name such as `"lte"`, or
    /// a path to a profile file (resolved against the scenario file's folder when parsed); on `link` only when
    /// given (every link otherwise), so a handover can go from good wifi to 3G cellular.
    case apply(profile: String, link: LinkName? = nil)
    /// Removes the conditions from `link`, or from every link.
    case clear(link: LinkName? = nil)
    /// Takes a link down at one end.
    case linkDown(side: LinkSide, link: LinkName)
    /// Brings a link up at one end (the client side also gets its addresses and default routes back).
    case linkUp(side: LinkSide, link: LinkName)
    /// Removes the device's addresses on a link: one family's, or both (`family` nil).
    case removeAddress(link: LinkName, family: AddressFamilyName? = nil)
    /// Puts the device's addresses (and default routes) on a link back: one family's, or both.
    case restoreAddress(link: LinkName, family: AddressFamilyName? = nil)
    /// Removes the device's default routes through a link: one family's, or both.
    case removeDefaultRoute(link: LinkName, family: AddressFamilyName? = nil)
    /// Puts the default routes through a link back: one family's, or both.
    case restoreDefaultRoute(link: LinkName, family: AddressFamilyName? = nil)
    /// Switches the server's captive portal on (the probe URL answers 200 with a login page instead of 204)
    /// or off.
    case portal(on: Bool)
    /// Hands the device over: to cellular, wifi loses carrier (router side down) while cellular is up; to
    /// wifi, wifi's router side comes back up (cellular stays, behind wifi's lower route metric).
    case handover(to: LinkName)
    /// Changes nothing; the step only holds.
    case wait

    /// The action in a few words, e.g. `apply 100-loss`, `link down (router side, wifi)`.
    public var summary: String {
        switch self {
        case .apply(let profile, let link): "apply \(profile)" + (link.map { " on \($0)" } ?? "")
        case .clear(let link): "clear" + (link.map { " on \($0)" } ?? "")
        case .linkDown(let side, let link): "link down (\(side) side, \(link))"
        case .linkUp(let side, let link): "link up (\(side) side, \(link))"
        case .removeAddress(let link, let family): "remove \(family.map { "\($0) " } ?? "")address (\(link))"
        case .restoreAddress(let link, let family): "restore \(family.map { "\($0) " } ?? "")address (\(link))"
        case .removeDefaultRoute(let link, let family): "remove \(family.map { "\($0) " } ?? "")default route (\(link))"
        case .restoreDefaultRoute(let link, let family): "restore \(family.map { "\($0) " } ?? "")default route (\(link))"
        case .portal(let on): on ? "captive portal on" : "captive portal off"
        case .handover(let link): "hand over to \(link)"
        case .wait: "wait"
        }
    }

    /// The link the action names, if it names one.
    public var link: LinkName? {
        switch self {
        case .linkDown(_, let link), .linkUp(_, let link), .removeAddress(let link, _), .restoreAddress(let link, _),
            .removeDefaultRoute(let link, _), .restoreDefaultRoute(let link, _), .handover(let link):
            link
        case .apply(_, let link), .clear(let link): link
        case .portal, .wait: nil
        }
    }

    /// Whether the action needs the sandbox's cellular link: it acts on cellular, or it is a handover
    /// (either way, a handover involves both links).
    public var needsCellular: Bool {
        if case .handover = self { return true }
        return link == .cellular
    }
}

/// Prober settings a scenario sets for its run; `nil` leaves the default (``ReachabilitySettings``).
/// Times are in nanoseconds.
public struct ProbeSettingsOverride: Sendable, Equatable {
    /// Pause between rounds while not offline (``ReachabilitySettings/interval``).
    public var interval: UInt64?
    /// Time each phase of a round may take (``ReachabilitySettings/timeout``).
    public var timeout: UInt64?
    /// Failed rounds in a row before offline (``ReachabilitySettings/failureThreshold``).
    public var failureThreshold: Int?
    /// Longest pause between rounds while offline (``ReachabilitySettings/offlineBackoffMaximum``).
    public var backoffMax: UInt64?

    public init(interval: UInt64? = nil, timeout: UInt64? = nil, failureThreshold: Int? = nil, backoffMax: UInt64? = nil) {
        self.interval = interval
        self.timeout = timeout
        self.failureThreshold = failureThreshold
        self.backoffMax = backoffMax
    }

    /// True when nothing is overridden.
    public var isEmpty: Bool { self == ProbeSettingsOverride() }

    /// `base` with the values given here.
    public func applied(to base: ReachabilitySettings = ReachabilitySettings()) -> ReachabilitySettings {
        var settings = base
        if let interval { settings.interval = Double(interval) / 1e9 }
        if let timeout { settings.timeout = Double(timeout) / 1e9 }
        if let failureThreshold { settings.failureThreshold = failureThreshold }
        if let backoffMax { settings.offlineBackoffMaximum = Double(backoffMax) / 1e9 }
        return settings
    }
}

/// What one lane of the timeline must do, judged after the run.
public struct Expectation: Sendable, Equatable {
    /// What a lane must do, relative to a step.
    public enum Rule: Sendable, Equatable {
        /// The lane is in `state` at most `within` nanoseconds after the step `afterStep` starts: it enters
        /// the state by then, or is already in it when the step starts (measured 0).
        case reaches(state: String, within: UInt64, afterStep: String)
        /// The lane is in `state` from `grace` nanoseconds after the step `duringStep` starts until the step
        /// ends.
        case holds(state: String, duringStep: String, grace: UInt64 = 0)

        /// The state the rule is about.
        public var state: String {
            switch self {
            case .reaches(let state, _, _), .holds(let state, _, _): state
            }
        }

        /// The step the rule is about.
        public var step: String {
            switch self {
            case .reaches(_, _, let step), .holds(_, let step, _): step
            }
        }
    }

    /// Unique within the scenario; names the JUnit test case.
    public var name: String
    /// ``TimelineLane/path``, ``TimelineLane/reachability`` or ``TimelineLane/app``.
    public var lane: TimelineLane
    /// What the lane must do.
    public var rule: Rule
    /// On the reachability lane: judge one family's reachability (the prober's per-family state) instead of
    /// the overall one; nil for the overall state.
    public var family: AddressFamilyName?

    /// An expectation on `lane` (about `family`'s reachability, when given).
    public init(name: String, lane: TimelineLane, rule: Rule, family: AddressFamilyName? = nil) {
        self.name = name
        self.lane = lane
        self.rule = rule
        self.family = family
    }

    /// The lane as the rule names it: `reachability`, or `reachability (ipv6)` for one family.
    var laneDescription: String { family.map { "\(lane) (\($0))" } ?? "\(lane)" }

    /// The rule in words: `reachability reaches offline within 12 s of step 'tunnel'`,
    /// `path holds satisfied during step 'handover' (after a 1 s grace)`.
    public var ruleDescription: String {
        switch rule {
        case .reaches(let state, let within, let step):
            "\(laneDescription) reaches \(state) within \(ScenarioTime.short(within)) of step '\(step)'"
        case .holds(let state, let step, let grace):
            "\(laneDescription) holds \(state) during step '\(step)'"
                + (grace > 0 ? " (after a \(ScenarioTime.short(grace)) grace)" : "")
        }
    }

    /// The lanes expectations may name.
    public static let lanes: [TimelineLane] = [.path, .reachability, .app]

    /// The states `lane` can be in, as its events' `state` spells them; `nil` for a lane whose states are
    /// free-form (the app's) or that expectations cannot name.
    public static func states(of lane: TimelineLane) -> [String]? {
        switch lane {
        case .path: [NetworkPath.Status.satisfied, .unsatisfied, .requiresConnection].map(\.rawValue)
        case .reachability: ReachabilityState.allCases.map(\.rawValue)
        case .app, .conditions, .scenario: nil
        }
    }
}

/// Times in nanoseconds, written for people.
public enum ScenarioTime {
    /// Seconds with exactly three decimals (rounded to the millisecond): 27 412 000 000 → `27.412 s`.
    public static func seconds(_ nanoseconds: UInt64) -> String {
        decimal(nanoseconds) + " s"
    }

    /// ``seconds(_:)`` without the unit: 27 412 000 000 → `27.412`.
    public static func decimal(_ nanoseconds: UInt64) -> String {
        let milliseconds = nanoseconds / 1_000_000 + (nanoseconds % 1_000_000 >= 500_000 ? 1 : 0)
        let fraction = String(milliseconds % 1000)
        return "\(milliseconds / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)"
    }

    /// Seconds in the shortest exact decimal: 12 000 000 000 → `12 s`, 1 500 000 000 → `1.5 s`,
    /// 250 000 → `0.00025 s`.
    public static func short(_ nanoseconds: UInt64) -> String {
        var fraction = String(nanoseconds % 1_000_000_000)
        fraction = String(repeating: "0", count: 9 - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return "\(nanoseconds / 1_000_000_000)" + (fraction.isEmpty ? "" : "." + fraction) + " s"
    }
}

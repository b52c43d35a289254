import LinkEmulation
import Profiles

/// A client link of the sandbox, as the engine names it.
public enum EngineLink: String, Sendable, Codable, CaseIterable {
    /// `wl0` ↔ `c-wl0`, through `cl-wl0` and `rt-wl0` in the wire namespace.
    case wifi
    /// `ww0` ↔ `c-ww0`, through `cl-ww0` and `rt-ww0`.
    case cellular
}

/// What a sandbox's conditions are, as the engine takes and reports them: one profile's directions in the
/// model's terms (nanoseconds, bits per second, fractions), its DNS delay and its targets.
public struct EngineConditions: Sendable, Codable, Equatable {
    /// The profile's name (for `show`).
    public var profile: String
    /// Frames from the device.
    public var uplink: LinkConditions
    /// Frames towards the device.
    public var downlink: LinkConditions
    /// Extra delay of DNS queries on the uplink, in nanoseconds.
    public var dnsDelay: UInt64
    /// The traffic the conditions apply to; empty for all of it.
    public var targets: [TrafficTarget]

    /// The conditions of `profile`.
    public init(_ profile: Profile) {
        self.profile = profile.name
        uplink = profile.uplink
        downlink = profile.downlink
        dnsDelay = profile.dnsDelay
        targets = profile.targets
    }

    /// No conditions.
    public static let clear = EngineConditions(Profile(name: "none"))

    /// The model's options for `direction` (seed left to the emulator, which keeps its own on a swap).
    public func options(_ direction: LinkDirection) -> DirectionOptions {
        DirectionOptions(
            direction: direction, dnsDelay: direction == .uplink ? dnsDelay : 0, targets: targets,
            trace: direction == .uplink ? uplink.trace : downlink.trace)
    }

    /// The conditions of `direction`.
    public func conditions(_ direction: LinkDirection) -> LinkConditions {
        direction == .uplink ? uplink : downlink
    }
}

/// One request to the engine: a JSON object on one line of its control socket.
public struct EngineRequest: Sendable, Codable, Equatable {
    /// What to do.
    public enum Operation: String, Sendable, Codable {
        /// Put ``EngineRequest/conditions`` in force on ``EngineRequest/links`` (atomically per direction;
        /// frames already held keep their schedule), then report the state.
        case apply
        /// Report the state: the conditions held and the counters.
        case show
    }

    /// What to do.
    public var operation: Operation
    /// The conditions to put in force (``Operation/apply``; ``EngineConditions/clear`` clears).
    public var conditions: EngineConditions?
    /// The links to act on; nil for every link the engine forwards.
    public var links: [EngineLink]?

    /// A request.
    public init(operation: Operation, conditions: EngineConditions? = nil, links: [EngineLink]? = nil) {
        self.operation = operation
        self.conditions = conditions
        self.links = links
    }
}

/// How late held frames left, in nanoseconds after their due time.
public struct EngineLateness: Sendable, Codable, Equatable {
    /// Frames measured.
    public var count: UInt64
    /// The median, the 99th percentile and the largest.
    public var median: UInt64
    public var p99: UInt64
    public var maximum: UInt64

    /// A summary of departure lateness.
    public init(count: UInt64, median: UInt64, p99: UInt64, maximum: UInt64) {
        self.count = count
        self.median = median
        self.p99 = p99
        self.maximum = maximum
    }
}

/// One direction of one link, as the engine holds it.
public struct EngineDirectionState: Sendable, Codable, Equatable {
    /// The conditions in force (read back from the model, not from the request).
    public var conditions: LinkConditions
    /// The DNS delay in force (uplink only), in nanoseconds.
    public var dnsDelay: UInt64
    /// The targets in force.
    public var targets: [TrafficTarget]
    /// The model's counters.
    public var counters: DirectionCounters
    /// Frames the kernel refused to send (the far end down), counted by the I/O.
    public var sendFailures: UInt64
    /// Frames the kernel dropped before the engine read them (its receive ring was full), counted by the
    /// kernel. Not part of the model's counters: the model never saw them.
    public var receiveOverruns: UInt64
    /// Departure lateness of held frames.
    public var lateness: EngineLateness?

    /// A direction's state.
    public init(
        conditions: LinkConditions, dnsDelay: UInt64, targets: [TrafficTarget], counters: DirectionCounters, sendFailures: UInt64,
        receiveOverruns: UInt64 = 0, lateness: EngineLateness?
    ) {
        self.conditions = conditions
        self.dnsDelay = dnsDelay
        self.targets = targets
        self.counters = counters
        self.sendFailures = sendFailures
        self.receiveOverruns = receiveOverruns
        self.lateness = lateness
    }
}

/// One link, as the engine holds it.
public struct EngineLinkState: Sendable, Codable, Equatable {
    /// Which link.
    public var link: EngineLink
    /// The wire end facing the client, and the one facing the router.
    public var clientSide: String
    public var routerSide: String
    /// The profile in force, nil when clear.
    public var profile: String?
    /// Frames from the device.
    public var uplink: EngineDirectionState
    /// Frames towards the device.
    public var downlink: EngineDirectionState

    /// A link's state.
    public init(
        link: EngineLink, clientSide: String, routerSide: String, profile: String?, uplink: EngineDirectionState,
        downlink: EngineDirectionState
    ) {
        self.link = link
        self.clientSide = clientSide
        self.routerSide = routerSide
        self.profile = profile
        self.uplink = uplink
        self.downlink = downlink
    }

    /// The state of `direction`.
    public func state(_ direction: LinkDirection) -> EngineDirectionState {
        direction == .uplink ? uplink : downlink
    }
}

/// The engine's answer: a JSON object on one line.
public struct EngineResponse: Sendable, Codable, Equatable {
    /// Nil when the request was carried out; otherwise what went wrong.
    public var error: String?
    /// Every link's state after the request.
    public var links: [EngineLinkState]
    /// The engine's process id.
    public var pid: Int32

    /// An answer.
    public init(error: String? = nil, links: [EngineLinkState], pid: Int32) {
        self.error = error
        self.links = links
        self.pid = pid
    }
}

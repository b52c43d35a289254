import LinkEmulation
import Profiles

/// A client link of the sandbox, as the engine names it.
public enum EngineLink: String, Sendable, CaseIterable {
    /// `wl0` ↔ `c-wl0`, through `cl-wl0` and `rt-wl0` in the wire namespace.
    case wifi
    /// `ww0` ↔ `c-ww0`, through `cl-ww0` and `rt-ww0`.
    case cellular
}

/// One request to the engine: a JSON object on one line of its control socket (``EngineMessageCodec``).
///
/// The conditions travel as the profile's own document — the format of `profiles/*.json`, read on the
/// engine's side by the same reader and validator as a profile file —, with a delivery trace named by the
/// path it was read from, which the engine reads itself.
public struct EngineRequest: Sendable, Equatable {
    /// What to do.
    public enum Operation: String, Sendable, CaseIterable {
        /// Put ``EngineRequest/profile`` in force on ``EngineRequest/links`` (atomically per direction;
        /// frames already held keep their schedule), then report the state.
        case apply
        /// Remove the conditions from ``EngineRequest/links``, then report the state.
        case clear
        /// Report the state: the conditions held and the counters.
        case show
    }

    /// What to do.
    public var operation: Operation
    /// The profile to put in force (``Operation/apply`` only).
    public var profile: Profile?
    /// The links to act on; nil for every link the engine forwards.
    public var links: [EngineLink]?
    /// The number the client gives this change (apply, clear): the links it acts on report it from then on
    /// (``EngineLinkState/generation``), so a client that lost the answer can tell whether it took effect.
    public var generation: UInt64?
    /// The latest moment (`CLOCK_MONOTONIC`, nanoseconds) the change may be put in force: the engine checks
    /// it on each direction's own thread, right before the swap, and a change that comes too late changes
    /// nothing (a direction swapped already is put back). ``EngineControlSocket/send(_:to:timeout:knownTraces:)``
    /// sets it just before the moment it gives up waiting.
    public var deadline: UInt64?

    /// A request.
    public init(operation: Operation, profile: Profile? = nil, links: [EngineLink]? = nil, generation: UInt64? = nil, deadline: UInt64? = nil) {
        self.operation = operation
        self.profile = profile
        self.links = links
        self.generation = generation
        self.deadline = deadline
    }
}

/// A summary of durations in nanoseconds: how late held frames left after their due time (``EngineDirectionState/lateness``),
/// or how long frames waited in the queue (``EngineDirectionState/sojourn``).
public struct EngineLateness: Sendable, Equatable {
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

/// One direction of one link, as the engine's I/O and model count it. What the direction's conditions are
/// is the link's ``EngineLinkState/profile``.
public struct EngineDirectionState: Sendable, Equatable {
    /// The model's counters since the direction's conditions last changed (an apply or a clear starts them
    /// over, as a new qdisc does).
    public var counters: DirectionCounters
    /// The model's counters since the engine started; nil from an engine that does not report them.
    public var totals: DirectionCounters?
    /// How long frames waited in the queue since the last change (median, 99th percentile, maximum); nil
    /// when no frame has.
    public var sojourn: EngineLateness?
    /// Frames the kernel refused to send (the far end down), counted by the I/O.
    public var sendFailures: UInt64
    /// Frames the kernel dropped before the engine read them (its receive ring was full), counted by the
    /// kernel. Not part of the model's counters: the model never saw them.
    public var receiveOverruns: UInt64
    /// Frames longer than the engine's receive slots that could not be read whole either, dropped before
    /// the model saw them.
    public var truncated: UInt64
    /// Frames too long for the sending end (longer than its MTU lets through), dropped after the model.
    public var oversized: UInt64
    /// Departure lateness of held frames.
    public var lateness: EngineLateness?

    /// A direction's state.
    public init(
        counters: DirectionCounters, sendFailures: UInt64 = 0, receiveOverruns: UInt64 = 0, truncated: UInt64 = 0, oversized: UInt64 = 0,
        lateness: EngineLateness? = nil, totals: DirectionCounters? = nil, sojourn: EngineLateness? = nil
    ) {
        self.counters = counters
        self.totals = totals
        self.sojourn = sojourn
        self.sendFailures = sendFailures
        self.receiveOverruns = receiveOverruns
        self.truncated = truncated
        self.oversized = oversized
        self.lateness = lateness
    }
}

/// One link, as the engine holds it.
public struct EngineLinkState: Sendable, Equatable {
    /// Which link.
    public var link: EngineLink
    /// The wire end facing the client, and the one facing the router.
    public var clientSide: String
    public var routerSide: String
    /// The conditions in force, read back from the two directions' models — each direction's conditions,
    /// the DNS delay and the targets the models hold, under the name of the profile they came from —;
    /// nil when the link is clear.
    public var profile: Profile?
    /// The generation of the last change put in force on the link (``EngineRequest/generation``); 0 when
    /// none has been since the engine started.
    public var generation: UInt64
    /// Frames from the device.
    public var uplink: EngineDirectionState
    /// Frames towards the device.
    public var downlink: EngineDirectionState
    /// False when the answer was read without its directions' states, as a change that checks only what
    /// the link holds reads it (``EngineMessageCodec/response(_:source:knownTraces:directions:)``):
    /// `uplink` and `downlink` are then empty, not counts.
    public var directionsRead = true

    /// A link's state.
    public init(
        link: EngineLink, clientSide: String, routerSide: String, profile: Profile?, generation: UInt64 = 0, uplink: EngineDirectionState,
        downlink: EngineDirectionState
    ) {
        self.link = link
        self.clientSide = clientSide
        self.routerSide = routerSide
        self.profile = profile
        self.generation = generation
        self.uplink = uplink
        self.downlink = downlink
    }

    /// The state of `direction`.
    public func state(_ direction: LinkDirection) -> EngineDirectionState {
        direction == .uplink ? uplink : downlink
    }
}

/// The engine's answer: a JSON object on one line.
public struct EngineResponse: Sendable, Equatable {
    /// Nil when the request was carried out; otherwise what went wrong (nothing changed then).
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

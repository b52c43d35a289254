import CCrashReport
import EngineControl
import JSONDocument
import Foundation
import Glibc
import LinkEmulation
import LinkcondBase
import NetNamespace
import Netlink
import PacketEngine
import Profiles
import RouteNetlink
import Synchronization

/// The userspace engine as a process: `linkcond engine`, started by `up` inside the sandbox's wire
/// namespace. For each client link whose two wire ends exist it prepares the wire (no IPv6, offloads off,
/// ends up) and the peers, forwards frames both ways through a ``DirectionEmulator`` per direction, and
/// relays carrier from one side to the other; then it answers on its control socket until SIGTERM.
///
/// The control socket appears only when everything forwards, so its existence means "ready". If the
/// process dies, frames stop crossing the wire (as on a cut cable) and `linkcond status` says so.
public final class EngineService: @unchecked Sendable {
    /// Where and how the engine runs.
    public struct Configuration: Sendable {
        /// The control socket's path (`STORE/NAME.engine.sock`).
        public var socketPath: String
        /// The client's namespace, whose interfaces face the wire (offloads are switched there).
        public var clientNamespace: String
        /// The router's namespace.
        public var routerNamespace: String
        /// I/O tuning.
        public var options: EngineOptions
        /// For an attachment's engine: its wire's two ends, given (the namespaces above are not used). Their
        /// peers — the stand-in in the target, and the original's peer, which is not linkcond's — are left as
        /// they are, offloads on: both ends are read with `PACKET_VNET_HDR` and super-frames cut in the engine.
        public var attached: WireEnds?

        /// A configuration; the I/O defaults suit a few Gbit/s.
        public init(
            socketPath: String, clientNamespace: String, routerNamespace: String, options: EngineOptions = EngineOptions(), attached: WireEnds? = nil
        ) {
            self.socketPath = socketPath
            self.clientNamespace = clientNamespace
            self.routerNamespace = routerNamespace
            self.options = options
            self.attached = attached
        }
    }

    private struct LinkPlan {
        var link: EngineLink
        var clientPeer: String
        var routerPeer: String
        var wire: WireEnds
    }

    private final class Forwarding: @unchecked Sendable {
        let plan: LinkPlan
        let runtime: EngineRuntime<DirectionEmulator>
        let relay: CarrierRelay
        /// The name of the profile in force (nil when clear) and the generation of the change that put it.
        let held = Mutex<(profile: String?, generation: UInt64)>((nil, 0))

        init(plan: LinkPlan, runtime: EngineRuntime<DirectionEmulator>, relay: CarrierRelay) {
            self.plan = plan
            self.runtime = runtime
            self.relay = relay
        }
    }

    private let configuration: Configuration
    private var links: [Forwarding] = []
    /// What the segmenting readers of an attached engine did.
    private let segmentation = SegmentationCounters()
    /// One change at a time: requests are served concurrently, and reads (`show`) go on beside a change,
    /// but two changes never interleave their swaps.
    private let changes = Mutex<Void>(())

    private init(configuration: Configuration) {
        self.configuration = configuration
    }

    /// Runs the engine until SIGTERM or SIGINT; returns the process's exit code. Errors before it is ready
    /// are thrown (the caller prints them to the engine's log and exits 1).
    public static func run(_ configuration: Configuration, log: (String) -> Void) throws -> Int32 {
        // Termination signals are taken by sigwait in this thread alone; every thread made from here on
        // inherits the mask, so none of them is interrupted.
        var signals = sigset_t()
        sigemptyset(&signals)
        for signal in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&signals, signal) }
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        signal(SIGPIPE, SIG_IGN)
        // A thread that traps (an overflow, a failed check) takes the whole engine down: it says so in the
        // log first, naming the thread, so `status` can tell why it is gone.
        _ = lc_install_crash_report("linkcond engine: ")

        let service = EngineService(configuration: configuration)
        try service.start(log: log)
        defer { service.stop(log: log) }
        let server = try EngineControlServer(
            path: configuration.socketPath, handle: { request in service.handle(request) },
            busy: { EngineResponse(error: "the engine is serving as many connections as it takes at once; try again", links: [], pid: getpid()) })
        defer { server.stop() }
        server.start()
        log("engine ready: \(service.links.map { "\($0.plan.link.rawValue) (\($0.plan.wire.clientSide) ↔ \($0.plan.wire.routerSide))" }.joined(separator: ", ")); control socket \(configuration.socketPath)")
        var received: Int32 = 0
        while sigwait(&signals, &received) != 0 {}
        log("engine stopping on signal \(received)")
        return 0
    }

    private func plans() throws -> [LinkPlan] {
        if let attached = configuration.attached {
            return [LinkPlan(link: .wifi, clientPeer: "the stand-in", routerPeer: "its peer", wire: attached)]
        }
        let present = Set(try RouteNetlinkClient(connection: try NetlinkConnection(), namespace: nil).links().map(\.name))
        typealias T = SandboxPlan
        let candidates = [
            LinkPlan(
                link: .wifi, clientPeer: T.wifiInterface, routerPeer: T.routerWifiInterface,
                wire: WireEnds(namespace: nil, clientSide: T.wireClientWifiInterface, routerSide: T.wireRouterWifiInterface)),
            LinkPlan(
                link: .cellular, clientPeer: T.cellularInterface, routerPeer: T.routerCellularInterface,
                wire: WireEnds(namespace: nil, clientSide: T.wireClientCellularInterface, routerSide: T.wireRouterCellularInterface)),
        ]
        let plans = candidates.filter { present.contains($0.wire.clientSide) && present.contains($0.wire.routerSide) }
        guard !plans.isEmpty else {
            throw EngineControlError(socket: configuration.socketPath, detail: "no wire ends (cl-wl0/rt-wl0) in this namespace: the engine runs in a sandbox's wire namespace")
        }
        return plans
    }

    private func start(log: (String) -> Void) throws {
        let attached = configuration.attached != nil
        let client = attached ? nil : try NamedNamespace(existing: configuration.clientNamespace)
        let router = attached ? nil : try NamedNamespace(existing: configuration.routerNamespace)
        for plan in try plans() {
            try WirePreparation.prepare(plan.wire, offloads: !attached)
            if let client, let router {
                try WirePreparation.preparePeer(plan.clientPeer, in: client)
                try WirePreparation.preparePeer(plan.routerPeer, in: router)
            }
            let uplink = DirectionEmulator(conditions: .unconditioned, options: DirectionOptions(direction: .uplink))
            let downlink = DirectionEmulator(conditions: .unconditioned, options: DirectionOptions(direction: .downlink))
            let runtime = attached
                ? try EngineRuntime(
                    wire: plan.wire, options: configuration.options, uplink: uplink, downlink: downlink,
                    source: SegmentingSource.ring(counters: segmentation))
                : try EngineRuntime(wire: plan.wire, options: configuration.options, uplink: uplink, downlink: downlink)
            try runtime.start()
            let relay = try CarrierRelay(wire: plan.wire)
            try relay.start()
            links.append(Forwarding(plan: plan, runtime: runtime, relay: relay))
            log("forwarding \(plan.link.rawValue): \(plan.clientPeer) ↔ \(plan.wire.clientSide) [engine] \(plan.wire.routerSide) ↔ \(plan.routerPeer)")
        }
    }

    private func stop(log: (String) -> Void) {
        for forwarding in links {
            forwarding.relay.stop()
            forwarding.runtime.stop()
        }
        if configuration.attached != nil { log("segmentation: \(segmentation.description)") }
    }

    /// What a direction holds and has counted, read on its own thread in one visit.
    private struct Reading: Sendable {
        var conditions: LinkConditions
        var options: DirectionOptions
        var counters: DirectionCounters
        var totals: DirectionCounters
        var statistics: DirectionStatistics

        init(_ emulator: DirectionEmulator, _ statistics: DirectionStatistics) {
            conditions = emulator.conditions
            options = emulator.options
            counters = emulator.countersSinceChange
            totals = emulator.counters
            self.statistics = statistics
        }

        var state: EngineDirectionState {
            let lateness = statistics.lateness.count == 0 ? nil : EngineLateness(
                count: statistics.lateness.count, median: statistics.lateness.quantile(0.5) ?? 0,
                p99: statistics.lateness.quantile(0.99) ?? 0, maximum: statistics.lateness.maximum)
            let sojourn = counters.sojourn
            return EngineDirectionState(
                counters: counters, sendFailures: statistics.sendFailures, receiveOverruns: statistics.receiveOverruns, truncated: statistics.truncated,
                oversized: statistics.oversized, lateness: lateness, totals: totals,
                sojourn: sojourn.count == 0 ? nil : EngineLateness(
                    count: sojourn.count, median: sojourn.median ?? 0, p99: sojourn.p99 ?? 0, maximum: sojourn.maximum))
        }
    }

    /// A link's two directions as one visit read them: nil where the visit failed.
    private typealias LinkReading = (uplink: Reading?, downlink: Reading?)

    /// Carries out one request (on its connection's thread; the models change on each direction's own
    /// thread). Each link's two directions are visited at the same time, once per request: an apply swaps
    /// each model and reads it back, with the I/O's counters, in that one visit (each visit wakes a sleeping
    /// thread, and on a loaded machine each wake-up waits for a CPU).
    ///
    /// A change is put in force only while its deadline has not passed, checked on each direction's thread
    /// right before the swap; a change that misses it changes nothing (a direction already swapped is put
    /// back) and is answered with why. A request that cannot be read (the profile reader's refusal) changes
    /// nothing and is answered with why.
    func handle(_ received: Result<EngineRequest, DocumentError>) -> EngineResponse {
        let request: EngineRequest
        switch received {
        case .success(let value): request = value
        case .failure(let error): return EngineResponse(error: "the request was refused: \(error)", links: state(), pid: getpid())
        }
        // A read waits for a change under way (bounded by its deadline), so it never sees half of one.
        guard request.operation != .show else { return changes.withLock { _ in EngineResponse(links: state(), pid: getpid()) } }
        let wanted = request.links.map(Set.init) ?? Set(links.map(\.plan.link))
        let missing = wanted.subtracting(links.map(\.plan.link))
        if !missing.isEmpty {
            return EngineResponse(
                error: "this sandbox has no \(missing.map(\.rawValue).sorted().joined(separator: ", ")) link", links: state(), pid: getpid())
        }
        return changes.withLock { _ in
            var readings: [Int: LinkReading] = [:]
            let error = change(request, on: wanted, readings: &readings)
            return EngineResponse(error: error, links: state(readings), pid: getpid())
        }
    }

    /// Puts an apply or a clear in force on `wanted`, all of it or (past the deadline) none of it; returns
    /// why not, or nil.
    private func change(_ request: EngineRequest, on wanted: Set<EngineLink>, readings: inout [Int: LinkReading]) -> String? {
        let profile = request.profile ?? Profile(name: "none")
        let deadline = request.deadline ?? .max
        // What each swapped direction held before, to put back if another one comes too late.
        var swapped: [(forwarding: Forwarding, direction: Direction, before: Reading)] = []
        var failure: String?
        for (index, forwarding) in links.enumerated() where wanted.contains(forwarding.plan.link) && failure == nil {
            let outcome = forwarding.runtime.performOnBoth { direction, emulator, statistics -> (before: Reading, after: Reading)? in
                guard MonotonicClock.nanoseconds() <= deadline else { return nil }
                let before = Reading(emulator, statistics)
                let side = LinkDirection(direction)
                emulator.replace(conditions: profile.conditions(side), options: DirectionOptions(profile: profile, direction: side, seed: emulator.options.seed))
                return (before, Reading(emulator, statistics))
            }
            for (direction, result) in [(Direction.uplink, outcome.uplink), (.downlink, outcome.downlink)] {
                switch result {
                case .success(let swap?):
                    swapped.append((forwarding, direction, swap.before))
                    if direction == .uplink { readings[index, default: (nil, nil)].uplink = swap.after } else { readings[index, default: (nil, nil)].downlink = swap.after }
                case .success(nil):
                    failure = failure ?? "the change came too late: its deadline passed before the \(forwarding.plan.link.rawValue) \(direction) could take it "
                        + "(the engine was held up); nothing changed"
                case .failure(let error):
                    failure = failure ?? "\(error)"
                }
            }
        }
        if let failure {
            rollBack(swapped)
            readings = [:]
            return failure
        }
        for forwarding in links where wanted.contains(forwarding.plan.link) {
            forwarding.held.withLock { $0 = (request.operation == .apply ? profile.name : nil, request.generation ?? $0.generation) }
        }
        return nil
    }

    /// Puts back what each direction held before a change that could not be completed.
    private func rollBack(_ swapped: [(forwarding: Forwarding, direction: Direction, before: Reading)]) {
        for (forwarding, direction, before) in swapped.reversed() {
            _ = try? forwarding.runtime.perform(on: direction) { emulator in
                emulator.restore(conditions: before.conditions, options: before.options)
            }
        }
    }

    /// Every link's state; `readings` are links already read on this request (by link index), not read again.
    private func state(_ readings: [Int: LinkReading] = [:]) -> [EngineLinkState] {
        links.enumerated().map { index, forwarding in
            var reading = readings[index] ?? (nil, nil)
            if reading.uplink == nil || reading.downlink == nil {
                let visit = forwarding.runtime.performOnBoth { _, emulator, statistics in Reading(emulator, statistics) }
                reading = (try? visit.uplink.get(), try? visit.downlink.get())
            }
            let empty = EngineDirectionState(counters: DirectionCounters())
            let held = forwarding.held.withLock { $0 }
            return EngineLinkState(
                link: forwarding.plan.link, clientSide: forwarding.plan.wire.clientSide, routerSide: forwarding.plan.wire.routerSide,
                profile: held.profile.map { Self.heldProfile(named: $0, uplink: reading.uplink, downlink: reading.downlink) },
                generation: held.generation, uplink: reading.uplink?.state ?? empty, downlink: reading.downlink?.state ?? empty)
        }
    }

    /// The profile the models hold, read back from them (not from the request): each direction's conditions,
    /// the uplink's DNS delay and the targets.
    private static func heldProfile(named name: String, uplink: Reading?, downlink: Reading?) -> Profile {
        var profile = Profile(name: name)
        if let uplink {
            profile.uplink = uplink.conditions
            profile.uplink.trace = uplink.options.trace
            profile.dnsDelay = uplink.options.dnsDelay
            profile.targets = uplink.options.targets
        }
        if let downlink {
            profile.downlink = downlink.conditions
            profile.downlink.trace = downlink.options.trace
        }
        return profile
    }
}

extension Direction {
    /// The engine direction of a profile direction (the same words).
    init(_ direction: LinkDirection) {
        self = direction == .uplink ? .uplink : .downlink
    }
}

extension LinkDirection {
    /// The profile direction of an engine direction (the same words).
    init(_ direction: Direction) {
        self = direction == .uplink ? .uplink : .downlink
    }
}

import EngineControl
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

        /// A configuration; the I/O defaults suit a few Gbit/s.
        public init(socketPath: String, clientNamespace: String, routerNamespace: String, options: EngineOptions = EngineOptions()) {
            self.socketPath = socketPath
            self.clientNamespace = clientNamespace
            self.routerNamespace = routerNamespace
            self.options = options
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
        let profile = Mutex<String?>(nil)

        init(plan: LinkPlan, runtime: EngineRuntime<DirectionEmulator>, relay: CarrierRelay) {
            self.plan = plan
            self.runtime = runtime
            self.relay = relay
        }
    }

    private let configuration: Configuration
    private var links: [Forwarding] = []

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

        let service = EngineService(configuration: configuration)
        try service.start(log: log)
        defer { service.stop() }
        let listener = try EngineControlSocket.listen(at: configuration.socketPath)
        defer {
            close(listener)
            unlink(configuration.socketPath)
        }
        let acceptor = Thread { service.serve(listener) }
        acceptor.name = "linkcond.engine.control"
        acceptor.start()
        log("engine ready: \(service.links.map { "\($0.plan.link.rawValue) (\($0.plan.wire.clientSide) ↔ \($0.plan.wire.routerSide))" }.joined(separator: ", ")); control socket \(configuration.socketPath)")
        var received: Int32 = 0
        while sigwait(&signals, &received) != 0 {}
        log("engine stopping on signal \(received)")
        shutdown(listener, Int32(SHUT_RDWR))
        return 0
    }

    private func plans() throws -> [LinkPlan] {
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
        let client = try NamedNamespace(existing: configuration.clientNamespace)
        let router = try NamedNamespace(existing: configuration.routerNamespace)
        for plan in try plans() {
            try WirePreparation.prepare(plan.wire)
            try WirePreparation.preparePeer(plan.clientPeer, in: client)
            try WirePreparation.preparePeer(plan.routerPeer, in: router)
            let runtime = try EngineRuntime(
                wire: plan.wire, options: configuration.options,
                uplink: DirectionEmulator(conditions: .unconditioned, options: DirectionOptions(direction: .uplink)),
                downlink: DirectionEmulator(conditions: .unconditioned, options: DirectionOptions(direction: .downlink)))
            try runtime.start()
            let relay = try CarrierRelay(wire: plan.wire)
            try relay.start()
            links.append(Forwarding(plan: plan, runtime: runtime, relay: relay))
            log("forwarding \(plan.link.rawValue): \(plan.clientPeer) ↔ \(plan.wire.clientSide) [engine] \(plan.wire.routerSide) ↔ \(plan.routerPeer)")
        }
    }

    private func stop() {
        for forwarding in links {
            forwarding.relay.stop()
            forwarding.runtime.stop()
        }
    }

    private func serve(_ listener: Int32) {
        while true {
            let connection = accept(listener, nil, nil)
            if connection >= 0 { _ = fcntl(connection, F_SETFD, FD_CLOEXEC) }
            if connection < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return  // the listener was shut down
            }
            EngineControlSocket.serve(connection: connection, path: configuration.socketPath) { request in handle(request) }
            close(connection)
        }
    }

    /// What a direction's model holds, read on its own thread.
    private typealias ModelReading = (conditions: LinkConditions, dnsDelay: UInt64, targets: [TrafficTarget], counters: DirectionCounters)

    /// Carries out one request (on the control thread; the model changes on each direction's own thread).
    /// An apply replaces each direction's model and reads it back in the same visit to that direction's
    /// thread, so an apply costs two visits per direction (the model, the I/O statistics), not three: each
    /// visit wakes a sleeping thread, and on a loaded machine each wake-up waits for a CPU.
    func handle(_ request: EngineRequest) -> EngineResponse {
        var error: String?
        var readings: [Int: [LinkDirection: ModelReading]] = [:]
        if request.operation == .apply {
            guard let conditions = request.conditions else {
                return EngineResponse(error: "an apply needs conditions", links: state(), pid: getpid())
            }
            let wanted = request.links.map(Set.init) ?? Set(links.map(\.plan.link))
            let missing = wanted.subtracting(links.map(\.plan.link))
            if !missing.isEmpty {
                return EngineResponse(
                    error: "this sandbox has no \(missing.map(\.rawValue).sorted().joined(separator: ", ")) link", links: state(), pid: getpid())
            }
            do {
                for (index, forwarding) in links.enumerated() where wanted.contains(forwarding.plan.link) {
                    for direction in LinkDirection.allCases {
                        let held = conditions.conditions(direction)
                        let options = conditions.options(direction)
                        readings[index, default: [:]][direction] = try forwarding.runtime.perform(on: Direction(direction)) { emulator in
                            emulator.replace(conditions: held, options: options)
                            return (emulator.conditions, emulator.options.effectiveDNSDelay, emulator.options.targets, emulator.counters)
                        }
                    }
                    forwarding.profile.withLock { $0 = conditions == .clear ? nil : conditions.profile }
                }
            } catch let failure {
                error = "\(failure)"
            }
        }
        return EngineResponse(error: error, links: state(readings), pid: getpid())
    }

    /// Every link's state; `readings` are models already read on this request (by link index), not read again.
    private func state(_ readings: [Int: [LinkDirection: ModelReading]] = [:]) -> [EngineLinkState] {
        links.enumerated().map { index, forwarding in
            func direction(_ direction: LinkDirection) -> EngineDirectionState {
                let model = readings[index]?[direction] ?? (try? forwarding.runtime.perform(on: Direction(direction)) { emulator in
                    (emulator.conditions, emulator.options.effectiveDNSDelay, emulator.options.targets, emulator.counters)
                })
                let statistics = forwarding.runtime.statistics(of: Direction(direction))
                let lateness = statistics.lateness.count == 0 ? nil : EngineLateness(
                    count: statistics.lateness.count, median: statistics.lateness.quantile(0.5) ?? 0,
                    p99: statistics.lateness.quantile(0.99) ?? 0, maximum: statistics.lateness.maximum)
                return EngineDirectionState(
                    conditions: model?.conditions ?? .unconditioned, dnsDelay: model?.dnsDelay ?? 0, targets: model?.targets ?? [],
                    counters: model?.counters ?? DirectionCounters(), sendFailures: statistics.sendFailures,
                    receiveOverruns: statistics.receiveOverruns, lateness: lateness)
            }
            return EngineLinkState(
                link: forwarding.plan.link, clientSide: forwarding.plan.wire.clientSide, routerSide: forwarding.plan.wire.routerSide,
                profile: forwarding.profile.withLock { $0 }, uplink: direction(.uplink), downlink: direction(.downlink))
        }
    }
}

extension Direction {
    /// The engine direction of a profile direction (the same words).
    init(_ direction: LinkDirection) {
        self = direction == .uplink ? .uplink : .downlink
    }
}

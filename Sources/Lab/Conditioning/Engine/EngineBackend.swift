import EngineControl
import LinkEmulation
import LinkcondBase
import Profiles
import RouteNetlink
import Sandboxing

/// Puts profiles on the wire with linkcond's userspace engine, for kernels without `sch_netem`.
///
/// The engine is a process of the sandbox (`linkcond engine`, in the wire namespace) that forwards frames
/// between the client's and the router's veth ends through an impairment model per direction. This backend
/// talks to it over its control socket: an apply hands it the validated profile, which it puts in force
/// atomically (frames already held keep their schedule); the engine then reports the conditions it holds,
/// and a mismatch with what was sent is an error, as with netem's read-back.
public struct EngineBackend: ConditioningBackend {
    /// The sandbox whose engine this talks to.
    public let sandbox: Sandbox

    /// The engine backend of `sandbox`.
    public init(sandbox: Sandbox) {
        self.sandbox = sandbox
    }

    /// ``BackendKind/userspace``.
    public var kind: BackendKind { .userspace }

    private var socketPath: String { sandbox.store.engineSocketPath(for: sandbox.topology.name) }

    private func state() throws(SandboxError) -> SandboxState {
        guard let state = try sandbox.store.load(sandbox.topology.name), state.complete else { throw .notUp(name: sandbox.topology.name) }
        return state
    }

    private func send(_ request: EngineRequest) throws(SandboxError) -> EngineResponse {
        let response: EngineResponse
        do {
            response = try EngineControlSocket.send(request, to: socketPath)
        } catch {
            throw .process(role: "engine", detail: error.description)
        }
        if let error = response.error { throw .process(role: "engine", detail: error) }
        return response
    }

    private static func engineLinks(_ links: Set<Sandbox.ClientLink>?) -> [EngineLink]? {
        links.map { $0.map { $0 == .wifi ? EngineLink.wifi : .cellular }.sorted { $0.rawValue > $1.rawValue } }
    }

    /// The sites of an engine link: the uplink leaves the wire towards the router, the downlink towards
    /// the client.
    private func sites(_ link: EngineLinkState) -> [ConditionSite] {
        let wire = sandbox.topology.wireNamespace
        return [
            ConditionSite(direction: .uplink, link: link.link.rawValue, namespace: wire, interface: link.routerSide),
            ConditionSite(direction: .downlink, link: link.link.rawValue, namespace: wire, interface: link.clientSide),
        ]
    }

    /// Puts `profile` on the links (nil: every link) with one control request, and checks what the engine
    /// reports holding against what was sent. Holds the sandbox's lock.
    @discardableResult
    public func apply(_ profile: Profile, links: Set<Sandbox.ClientLink>? = nil) throws(SandboxError) -> ApplyReport {
        let lock = try sandbox.lock(for: "apply \(profile.name)")
        defer { lock.release() }
        let started = MonotonicClock.seconds()
        var recorded = try state()
        let sent = EngineConditions(profile)
        let response = try send(EngineRequest(operation: .apply, conditions: sent, links: Self.engineLinks(links)))
        let applied = response.links.filter { link in links.map { $0.contains { $0.rawValue == link.link.rawValue } } ?? true }
        for link in applied {
            let differences = Self.differences(sent: sent, held: link)
            if !differences.isEmpty {
                throw .conditionsMismatch(site: "the engine's \(link.link.rawValue) link", differences: differences)
            }
        }
        recorded.conditions = SandboxState.AppliedConditions(
            profile: profile.name, source: profile.source, links: links.map { $0.map(\.rawValue).sorted() },
            targets: profile.targets.isEmpty ? nil : profile.targets.map(\.description))
        try sandbox.store.save(recorded)
        return ApplyReport(
            profile: profile.name, backend: .userspace, sites: applied.flatMap(sites), duration: MonotonicClock.seconds() - started,
            requests: 1, roundTrips: 1)
    }

    /// What differs between the conditions sent and those the engine reports holding on `link`.
    static func differences(sent: EngineConditions, held link: EngineLinkState) -> [String] {
        var differences: [String] = []
        for direction in LinkDirection.allCases {
            let held = link.state(direction)
            if held.conditions != sent.conditions(direction) {
                differences.append("\(direction.rawValue): sent \(sent.conditions(direction)), the engine holds \(held.conditions)")
            }
            let dnsDelay = direction == .uplink ? sent.dnsDelay : 0
            if held.dnsDelay != dnsDelay { differences.append("\(direction.rawValue) DNS delay: sent \(dnsDelay) ns, the engine holds \(held.dnsDelay) ns") }
            if held.targets != sent.targets { differences.append("\(direction.rawValue) targets: sent \(sent.targets), the engine holds \(held.targets)") }
        }
        return differences
    }

    /// Removes the conditions from the links (nil: every link); returns the sites that had any. Holds the
    /// sandbox's lock.
    @discardableResult
    public func clear(links: Set<Sandbox.ClientLink>? = nil) throws(SandboxError) -> [ConditionSite] {
        let lock = try sandbox.lock(for: "clear")
        defer { lock.release() }
        var recorded = try state()
        let before = try send(EngineRequest(operation: .show))
        let wanted = Self.engineLinks(links)
        let after = try send(EngineRequest(operation: .apply, conditions: .clear, links: wanted))
        for link in after.links where wanted?.contains(link.link) ?? true {
            let differences = Self.differences(sent: .clear, held: link)
            if !differences.isEmpty { throw .conditionsMismatch(site: "the engine's \(link.link.rawValue) link", differences: differences) }
        }
        if links == nil || Set(after.links.filter { $0.profile != nil }.map(\.link)).isEmpty { recorded.conditions = nil }
        try sandbox.store.save(recorded)
        return before.links.filter { $0.profile != nil && (wanted?.contains($0.link) ?? true) }.flatMap(sites)
    }

    /// What every direction of every link holds, read back from the engine, with its counters.
    public func installed() throws(SandboxError) -> [InstalledSite] {
        _ = try state()
        let response = try send(EngineRequest(operation: .show))
        return response.links.flatMap { link in
            zip(sites(link), [LinkDirection.uplink, .downlink]).map { site, direction in
                let held = link.state(direction)
                var main = Self.entry(handle: "main", held.conditions, extraDelay: 0, held.counters)
                main.engine?.receiveOverruns = held.receiveOverruns
                main.engine?.sendFailures = held.sendFailures
                var entries = [main]
                if held.dnsDelay > 0 {
                    var dns = Self.entry(handle: "dns", held.conditions, extraDelay: held.dnsDelay, DirectionCounters())
                    dns.sentPackets = held.counters.dnsFrames
                    entries.append(dns)
                }
                return InstalledSite(site: site, qdiscs: entries)
            }
        }
    }

    private static func entry(handle: String, _ conditions: LinkConditions, extraDelay: UInt64, _ counters: DirectionCounters) -> InstalledSite.Entry {
        // The conditions in netem's words, so `show` reads the same with either backend (no distribution
        // table is loaded: it is not shown).
        let parameters = try? NetemMapping.parameters(for: conditions, extraDelay: extraDelay, distributions: { _ in [] })
        return InstalledSite.Entry(
            kind: "engine", handle: handle, parent: "-", conditions: parameters.map(NetemDescription.init),
            sentPackets: counters.passedFrames, sentBytes: counters.passedBytes,
            dropped: counters.lostFrames + counters.queueDroppedFrames + counters.heldLimitDroppedFrames, overlimits: 0,
            backlogBytes: counters.backlogBytes, backlogPackets: counters.backlogFrames,
            engine: InstalledSite.EngineCounters(
                lost: counters.lostFrames, queueDropped: counters.queueDroppedFrames + counters.heldLimitDroppedFrames,
                duplicated: counters.duplicatedFrames, corrupted: counters.corruptedFrames, reordered: counters.reorderedFrames,
                ecnMarked: counters.ecnMarkedFrames))
    }
}

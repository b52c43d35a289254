import EngineControl
import JSONDocument
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

    /// How long a request may take, answer included: a running engine answers in milliseconds, and one that
    /// has not answered in this time is stopped, hung or starved of CPU.
    public static let requestTimeout = 5.0

    private func send(_ request: EngineRequest, timeout: Double = EngineBackend.requestTimeout) throws(SandboxError) -> EngineResponse {
        let response: EngineResponse
        do {
            response = try EngineControlSocket.send(request, to: socketPath, timeout: timeout, knownTraces: Self.traces(of: request.profile))
        } catch {
            throw .process(role: "engine", detail: error.description)
        }
        if let error = response.error { throw .process(role: "engine", detail: error) }
        return response
    }

    /// Why the engine does not answer a `show` within `timeout` seconds (stopped, hung, starved of CPU, or
    /// gone); nil when it does.
    public func unresponsiveness(timeout: Double = 1) -> String? {
        do {
            _ = try send(EngineRequest(operation: .show), timeout: timeout)
            return nil
        } catch {
            return "the engine does not answer: \(error)"
        }
    }

    /// Sends a change journalled as pending in `transaction`: a change the engine refused, or never got,
    /// leaves the journal clean (nothing changed); one that may have arrived without an answer stays
    /// pending, for the next command to find out what the engine holds.
    private func change(_ request: EngineRequest, in transaction: SandboxTransaction) throws(SandboxError) -> EngineResponse {
        let response: EngineResponse
        do {
            // Only what each link holds is checked: its counters are not read (show reads them).
            response = try EngineControlSocket.send(
                request, to: socketPath, timeout: Self.requestTimeout, knownTraces: Self.traces(of: request.profile), directions: false)
        } catch {
            guard error.requestMayHaveArrived else {
                try transaction.abandonChange()
                throw .process(role: "engine", detail: error.description)
            }
            throw .process(role: "engine", detail: error.description + "; the change is recorded as pending: 'linkcond show' tells what the engine holds")
        }
        if let message = response.error {
            // The engine changes all of a request or nothing of it.
            try transaction.abandonChange()
            throw .process(role: "engine", detail: message)
        }
        return response
    }

    /// The delivery traces `profile` carries, by the path they were read from: the engine names them so in
    /// its answer, and they need not be read again to compare.
    private static func traces(of profile: Profile?) -> [String: DeliveryTrace] {
        var traces: [String: DeliveryTrace] = [:]
        for direction in LinkDirection.allCases {
            if let trace = profile?.conditions(direction).trace, let path = trace.path { traces[path] = trace }
        }
        return traces
    }

    private static func engineLinks(_ links: Set<Sandbox.ClientLink>?) -> [EngineLink]? {
        links.map { $0.map { $0 == .wifi ? EngineLink.wifi : .cellular }.sorted { $0.rawValue > $1.rawValue } }
    }

    /// The sites of an engine link: the uplink leaves the wire towards the router, the downlink towards
    /// the client.
    private func sites(_ link: EngineLinkState, _ state: SandboxState) -> [ConditionSite] {
        let wire = state.attachment?.wireNamespace ?? sandbox.topology.wireNamespace
        return [
            ConditionSite(direction: .uplink, link: link.link.rawValue, namespace: wire, interface: link.routerSide),
            ConditionSite(direction: .downlink, link: link.link.rawValue, namespace: wire, interface: link.clientSide),
        ]
    }

    /// Puts `profile` on the links (nil: every link) with one control request, and checks what the engine
    /// reports holding against what was sent.
    @discardableResult
    public func apply(_ profile: Profile, links: Set<Sandbox.ClientLink>?, in transaction: SandboxTransaction) throws(SandboxError) -> ApplyReport {
        let started = MonotonicClock.seconds()
        for direction in LinkDirection.allCases where profile.conditions(direction).trace.map({ $0.path == nil }) ?? false {
            throw .unsupported(detail: "the \(direction.rawValue) of profile '\(profile.name)' has a delivery trace made in code; the engine reads traces from files: write it to a file and name it in the profile")
        }
        let generation = try transaction.beginChange("apply", profile: profile, links: links)
        let response = try change(EngineRequest(operation: .apply, profile: profile, links: Self.engineLinks(links), generation: generation), in: transaction)
        let applied = response.links.filter { link in links.map { $0.contains { $0.rawValue == link.link.rawValue } } ?? true }
        for link in applied {
            let differences = Self.differences(sent: profile, held: link)
            if !differences.isEmpty {
                throw .conditionsMismatch(site: "the engine's \(link.link.rawValue) link", differences: differences)
            }
        }
        try transaction.confirmChange()
        let state = try transaction.upState()
        return ApplyReport(
            profile: profile.name, backend: .userspace, sites: applied.flatMap { sites($0, state) }, duration: MonotonicClock.seconds() - started,
            requests: 1, roundTrips: 1)
    }

    /// What differs between the profile sent (nil: cleared) and what the engine reports holding on `link`,
    /// in the profile format's words.
    static func differences(sent: Profile?, held link: EngineLinkState) -> [String] {
        let held = link.profile ?? Profile(name: "none")
        let sent = sent ?? Profile(name: "none")
        var differences: [String] = []
        if (link.profile == nil) != (sent.isNeutral && sent.targets.isEmpty && sent.name == "none") || held.name != sent.name {
            differences.append("profile: sent '\(sent.name)', the engine holds '\(link.profile?.name ?? "none")'")
        }
        for direction in LinkDirection.allCases where held.conditions(direction) != sent.conditions(direction) {
            let text = { (conditions: LinkConditions) in JSONWriter.text(of: ProfileParser.json(of: conditions), indent: nil) }
            differences.append("\(direction.rawValue): sent \(text(sent.conditions(direction))), the engine holds \(text(held.conditions(direction)))")
        }
        if held.dnsDelay != sent.dnsDelay {
            differences.append("DNS delay: sent \(Quantity.formatTime(sent.dnsDelay)), the engine holds \(Quantity.formatTime(held.dnsDelay))")
        }
        if held.targets != sent.targets {
            differences.append("targets: sent \(sent.targets.map(\.description)), the engine holds \(held.targets.map(\.description))")
        }
        return differences
    }

    /// Removes the conditions from the links (nil: every link); returns the sites that had any.
    @discardableResult
    public func clear(links: Set<Sandbox.ClientLink>?, in transaction: SandboxTransaction) throws(SandboxError) -> [ConditionSite] {
        let before = try send(EngineRequest(operation: .show))
        let wanted = Self.engineLinks(links)
        let generation = try transaction.beginChange("clear", profile: nil, links: links)
        let after = try change(EngineRequest(operation: .clear, links: wanted, generation: generation), in: transaction)
        for link in after.links where wanted?.contains(link.link) ?? true {
            let differences = Self.differences(sent: nil, held: link)
            if !differences.isEmpty { throw .conditionsMismatch(site: "the engine's \(link.link.rawValue) link", differences: differences) }
        }
        try transaction.confirmChange()
        let state = try transaction.upState()
        return before.links.filter { $0.profile != nil && (wanted?.contains($0.link) ?? true) }.flatMap { sites($0, state) }
    }

    /// What every direction of every link holds, read back from the engine (the profile its models hold),
    /// with its counters; each stage says whether it agrees with the profile the state records for its link.
    public func installed(in transaction: SandboxTransaction) throws(SandboxError) -> [InstalledSite] {
        let state = try transaction.upState()
        let response = try send(EngineRequest(operation: .show))
        return response.links.flatMap { link in
            let record = state.conditions[link.link.rawValue]
            let agrees: Bool?
            switch (record, link.profile) {
            case (nil, nil): agrees = nil
            case (nil, _?): agrees = false
            case (let record?, let held):
                let recorded = try? record.recordedProfile()
                agrees = recorded.map { Self.differences(sent: $0, held: link).isEmpty } ?? (held?.name == record.profile)
            }
            return zip(sites(link, state), [LinkDirection.uplink, .downlink]).map { site, direction in
                let held = link.state(direction)
                let conditions = link.profile?.conditions(direction) ?? .unconditioned
                let dnsDelay = direction == .uplink ? link.profile?.dnsDelay ?? 0 : 0
                var main = Self.stage(handle: "main", conditions, extraDelay: 0, held.counters, agrees: agrees)
                main.engine?.receiveOverruns = held.receiveOverruns
                main.engine?.sendFailures = held.sendFailures
                main.engine?.truncated = held.truncated
                main.engine?.oversized = held.oversized
                main.engine?.sojourn = held.sojourn
                main.engine?.totals = held.totals.map {
                    .init(offered: $0.offeredFrames, sent: $0.passedFrames, lost: $0.lostFrames, queueDropped: $0.queueDroppedFrames)
                }
                var stages = [main]
                if dnsDelay > 0 {
                    var dns = Self.stage(handle: "dns", conditions, extraDelay: dnsDelay, DirectionCounters(), agrees: agrees)
                    dns.sentPackets = held.counters.dnsFrames
                    stages.append(dns)
                }
                return InstalledSite(site: site, stages: stages)
            }
        }
    }

    /// The engine numbers each change it puts in force: a link whose generation is the pending change's
    /// holds it; otherwise the link is compared with what the state recorded before.
    public func outcome(of pending: SandboxState.PendingChange, in transaction: SandboxTransaction) throws(SandboxError) -> [String: Bool?] {
        let state = try transaction.upState()
        let response = try send(EngineRequest(operation: .show))
        var outcome: [String: Bool?] = [:]
        for name in pending.links {
            guard let link = response.links.first(where: { $0.link.rawValue == name }) else {
                outcome[name] = .some(nil)
                continue
            }
            if link.generation == pending.generation {
                outcome[name] = true
            } else {
                let before = try? state.conditions[name]?.recordedProfile()
                let heldBefore = state.conditions[name] == nil ? link.profile == nil : before.map { Self.differences(sent: $0, held: link).isEmpty } ?? false
                outcome[name] = heldBefore ? false : .some(nil)
            }
        }
        return outcome
    }

    static func stage(
        handle: String, _ conditions: LinkConditions, extraDelay: UInt64, _ counters: DirectionCounters, agrees: Bool?
    ) -> InstalledSite.Stage {
        var held = conditions
        held.delay += extraDelay
        // The held-bytes drops are part of the queue drops (counted as tail drops here).
        var engine = InstalledSite.EngineCounters(
            lost: counters.lostFrames, queueDropped: counters.queueDroppedFrames, duplicated: counters.duplicatedFrames,
            corrupted: counters.corruptedFrames, reordered: counters.reorderedFrames, ecnMarked: counters.ecnMarkedFrames)
        engine.tailDropped = counters.tailDroppedFrames + counters.heldLimitDroppedFrames
        engine.headDropped = counters.headDroppedFrames
        engine.codelDropped = counters.codelDroppedFrames
        engine.pieDropped = counters.pieDroppedFrames
        engine.redDropped = counters.redDroppedFrames
        engine.orderHolds = counters.orderHolds
        engine.jitterReordered = counters.jitterReorderedFrames
        return InstalledSite.Stage(
            kind: "engine", handle: handle, parent: "-", conditions: held, limit: conditions.effectiveQueueLimit(extraDelay: extraDelay),
            agreesWithRecord: agrees, sentPackets: counters.passedFrames, sentBytes: counters.passedBytes,
            dropped: counters.lostFrames + counters.queueDroppedFrames, overlimits: 0,
            backlogBytes: counters.backlogBytes, backlogPackets: counters.backlogFrames, engine: engine)
    }
}

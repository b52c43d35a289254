import Glibc
import LinkcondBase
import Netlink
import Profiles
import RouteNetlink
import Sandboxing

/// Puts profiles on the sandbox's wire with netem qdiscs, through netlink.
///
/// Per site (see ``ConditionSite``):
/// - downlink: a netem qdisc at the root (`tc qdisc replace dev c-wl0 root handle 1: netem …`);
/// - uplink: a two-band `prio` root whose band 1:1 holds the profile's netem and band 1:2 the same netem
///   with the DNS delay added; u32 filters send UDP and TCP to port 53 (IPv4 and IPv6) to 1:2. The shape
///   is the same with or without a DNS delay, so switching profiles never rebuilds the tree.
///
/// A switch grafts a *new* netem qdisc (alternating handles 1:/2:, 10:/11:, 20:/21:) in place of the old
/// one. The graft is atomic, so there is never a moment without conditions, and the new qdisc starts from
/// exactly the profile's parameters (changing a netem qdisc in place would keep attributes the request
/// leaves out, such as an earlier rate). Packets queued in the old qdisc are dropped, as on a real
/// network change.
///
/// Each namespace gets one batch — its grafts, and a qdisc dump appended to read everything back — in
/// one datagram, on a socket kept open across applies (``NamespaceConnectionPool``), addressed by the
/// sandbox's fixed interface indexes. What the kernel reports is compared with what was sent; a mismatch
/// is an error. A backend remembers the trees it installed; copies share that memory, so keep one backend
/// per sandbox for fast switches (a new backend reads the trees first: one more round trip).
public struct NetemBackend: ConditioningBackend {
    /// The sandbox whose sites are conditioned.
    public let sandbox: Sandbox
    /// The packet-scheduler clock times are converted with.
    public let clock: PacketSchedulerClock
    /// Where connections to the sandbox's namespaces come from.
    public let connections: any NetlinkConnectionFactory
    private let memory = NetemMemory()

    /// A backend for `sandbox` on connections kept open in a ``NamespaceConnectionPool`` of its own.
    public init(sandbox: Sandbox, clock: PacketSchedulerClock = .current()) {
        self.init(sandbox: sandbox, clock: clock, connections: NamespaceConnectionPool())
    }

    /// A backend for `sandbox` on the connections `connections` yields (tests hand it fake ones).
    public init(sandbox: Sandbox, clock: PacketSchedulerClock = .current(), connections: any NetlinkConnectionFactory) {
        self.sandbox = sandbox
        self.clock = clock
        self.connections = connections
    }

    /// What ``apply(_:links:)`` did.
    public typealias ApplyReport = Conditioning.ApplyReport
    /// What one site holds.
    public typealias InstalledSite = Conditioning.InstalledSite

    /// ``BackendKind/netem``.
    public var kind: BackendKind { .netem }

    private func state() throws(SandboxError) -> SandboxState {
        guard let state = try sandbox.store.load(sandbox.topology.name), state.complete else {
            throw .notUp(name: sandbox.topology.name)
        }
        return state
    }

    /// The sites of this sandbox's `links` (nil: every client link).
    public func sites(links: Set<Sandbox.ClientLink>? = nil) throws(SandboxError) -> [ConditionSite] {
        Self.sites(of: sandbox.topology, cellular: try state().cellular, links: links)
    }

    private static func sites(of topology: SandboxTopology, cellular: Bool, links: Set<Sandbox.ClientLink>?) -> [ConditionSite] {
        ConditionSite.sites(of: topology, cellular: cellular).filter { site in
            links.map { $0.contains { $0.rawValue == site.link } } ?? true
        }
    }

    /// The sites grouped by namespace, in order of first appearance, each with its client.
    private func clients(for sites: [ConditionSite]) throws(SandboxError) -> [(RouteNetlinkClient, [ConditionSite])] {
        var groups: [(RouteNetlinkClient, [ConditionSite])] = []
        for site in sites {
            if let position = groups.firstIndex(where: { $0.0.namespace == site.namespace }) {
                groups[position].1.append(site)
                continue
            }
            let connection: NetlinkConnection
            do {
                connection = try connections.connection(namespace: site.namespace)
            } catch where error.kind == .system && error.errno == ENOENT {
                throw .notUp(name: sandbox.topology.name)
            } catch {
                throw .netlink(.netlink(error))
            }
            let client = RouteNetlinkClient(connection: connection, namespace: site.namespace, interfaceIndexes: SandboxPlan.interfaceIndexes)
            groups.append((client, [site]))
        }
        return groups
    }

    private static func wrap<T>(_ body: () throws(RouteNetlinkError) -> T) throws(SandboxError) -> T {
        do {
            return try body()
        } catch {
            throw .netlink(error)
        }
    }

    /// Puts `profile` on the sites of `links` (nil: every client link). Equivalent to a series of
    /// `tc qdisc replace` and `tc filter add` commands in the sandbox's namespaces, then `tc -s qdisc show`
    /// in each. The profile must have been validated (parsing does that). Holds the sandbox's lock.
    @discardableResult
    public func apply(_ profile: Profile, links: Set<Sandbox.ClientLink>? = nil) throws(SandboxError) -> ApplyReport {
        // Everything that can fail without the kernel (what netem cannot do, distribution tables) is done first.
        try Self.checkSupported(profile)
        let lock = try sandbox.lock(for: "apply \(profile.name)")
        defer { lock.release() }
        let memory = self.memory
        let tables = { (name: String) throws(RouteNetlinkError) -> [Int16] in try memory.distribution(name) }
        let plan = try Self.wrap { () throws(RouteNetlinkError) in
            NetemPlan(
                uplink: try NetemMapping.parameters(for: profile.uplink, distributions: tables),
                uplinkDNS: try NetemMapping.parameters(for: profile.uplink, extraDelay: profile.dnsDelay, distributions: tables),
                downlink: try NetemMapping.parameters(for: profile.downlink, distributions: tables))
        }
        var recorded = try state()
        let sites = Self.sites(of: sandbox.topology, cellular: recorded.cellular, links: links)
        var sent = NetlinkStatistics()
        let started = MonotonicClock.seconds()
        for (client, group) in try clients(for: sites) {
            let before = client.connection.statistics
            defer { sent = sent.adding(client.connection.statistics.since(before)) }
            try NetemInstaller(client: client, sites: group, plan: plan, clock: clock, memory: memory).install()
        }
        let duration = MonotonicClock.seconds() - started
        recorded.conditions = SandboxState.AppliedConditions(
            profile: profile.name, source: profile.source, appliedAt: Self.now(), links: links.map { $0.map(\.rawValue).sorted() })
        try sandbox.store.save(recorded)
        return ApplyReport(
            profile: profile.name, backend: .netem, sites: sites, duration: duration, requests: sent.requests, roundTrips: sent.datagrams)
    }

    /// The current time in ISO 8601 (UTC, whole seconds), as the state file records it.
    static func now() -> String {
        var seconds = time(nil)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        var text = [CChar](repeating: 0, count: 32)
        let length = strftime(&text, text.count, "%Y-%m-%dT%H:%M:%SZ", &parts)
        return String(decoding: text.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Removes the conditions from the sites of `links` (nil: every site; the kernel puts its default qdisc
    /// back). Equivalent to `tc qdisc del dev IF root` on each site. Sites without conditions are skipped.
    /// Holds the sandbox's lock.
    @discardableResult
    public func clear(links: Set<Sandbox.ClientLink>? = nil) throws(SandboxError) -> [ConditionSite] {
        let lock = try sandbox.lock(for: "clear")
        defer { lock.release() }
        var cleared: [ConditionSite] = []
        var recorded = try state()
        for (client, group) in try clients(for: Self.sites(of: sandbox.topology, cellular: recorded.cellular, links: links)) {
            let qdiscs = try Self.wrap { () throws(RouteNetlinkError) in try client.qdiscs() }
            for site in group {
                memory.remember(nil, for: site)
                let index = try Self.wrap { () throws(RouteNetlinkError) in try client.index(of: site.interface) }
                guard let root = qdiscs.first(where: { $0.interfaceIndex == index && $0.parent == .root }),
                    root.kind == "netem" || root.kind == "prio"
                else { continue }
                try Self.wrap { () throws(RouteNetlinkError) in try client.deleteRootQdisc(on: site.interface) }
                cleared.append(site)
            }
        }
        if links == nil { recorded.conditions = nil }
        try sandbox.store.save(recorded)
        return cleared
    }

    /// Every site's qdisc tree, decoded into profile terms, with the kernel's counters.
    /// Equivalent to `tc -s qdisc show dev IF` on each site (one dump per namespace).
    public func installed() throws(SandboxError) -> [InstalledSite] {
        var result: [InstalledSite] = []
        for (client, group) in try clients(for: try sites()) {
            let qdiscs = try Self.wrap { () throws(RouteNetlinkError) in try client.qdiscs() }
            for site in group {
                let index = try Self.wrap { () throws(RouteNetlinkError) in try client.index(of: site.interface) }
                var entries: [InstalledSite.Entry] = []
                for qdisc in qdiscs where qdisc.interfaceIndex == index {
                    var description: NetemDescription?
                    if qdisc.kind == "netem" {
                        let parameters = try Self.wrap { () throws(RouteNetlinkError) in try NetemParameters.decode(options: qdisc.options, clock: clock) }
                        description = NetemDescription(parameters)
                    }
                    entries.append(InstalledSite.Entry(
                        kind: qdisc.kind, handle: qdisc.handle.description, parent: qdisc.parent.description, conditions: description,
                        sentPackets: UInt64(qdisc.statistics.packets), sentBytes: qdisc.statistics.bytes,
                        dropped: UInt64(qdisc.statistics.drops), overlimits: UInt64(qdisc.statistics.overlimits),
                        backlogBytes: UInt64(qdisc.statistics.backlogBytes), backlogPackets: UInt64(qdisc.statistics.queueLength)))
                }
                result.append(InstalledSite(site: site, qdiscs: entries))
            }
        }
        return result
    }
}

extension NetlinkStatistics {
    /// These counts plus `other`'s.
    func adding(_ other: NetlinkStatistics) -> NetlinkStatistics {
        var sum = self
        sum.requests += other.requests
        sum.datagrams += other.datagrams
        return sum
    }
}

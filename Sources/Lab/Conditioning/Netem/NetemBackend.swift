import Glibc
import LinkcondBase
import Netlink
import Profiles
import RouteNetlink
import Sandboxing

/// Puts profiles on the sandbox's wire with netem qdiscs, through netlink.
///
/// Per site (see ``ConditionSite``; `wl0` is the client's end, `c-wl0` the router's), for a profile
/// without targets:
///
/// ```
/// # downlink: a netem at the root
/// tc qdisc replace dev c-wl0 root handle 1: netem …                  (2: at the next switch, and so on)
/// # uplink: DNS queries to band 1:2, everything else to 1:1
/// tc qdisc replace dev wl0 root handle 1: prio bands 2 priomap 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
/// tc qdisc replace dev wl0 parent 1:1 handle 10: netem …            (the profile's uplink; 11: next)
/// tc qdisc replace dev wl0 parent 1:2 handle 20: netem …            (the same plus the DNS delay; 21: next)
/// tc filter add dev wl0 parent 1: protocol ip prio 1 u32 match ip protocol 17 0xff match ip dport 53 0xffff flowid 1:2
/// tc filter add dev wl0 parent 1: protocol ip prio 2 u32 match ip protocol 6 0xff match ip dport 53 0xffff flowid 1:2
/// tc filter add dev wl0 parent 1: protocol ipv6 prio 3 u32 match ip6 protocol 17 0xff match ip6 dport 53 0xffff flowid 1:2
/// tc filter add dev wl0 parent 1: protocol ipv6 prio 4 u32 match ip6 protocol 6 0xff match ip6 dport 53 0xffff flowid 1:2
/// ```
///
/// and with targets (``Profile/targets``; here one, `198.19.0.0/24`, the server's subnet), where only
/// matching traffic, either way, gets the conditions and the rest passes untouched:
///
/// ```
/// # downlink: targeted traffic (by its source) to the netem at 3:1, the rest to an untouched pfifo
/// tc qdisc replace dev c-wl0 root handle 3: prio bands 2 priomap 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1
/// tc qdisc replace dev c-wl0 parent 3:1 handle 10: netem …
/// tc qdisc replace dev c-wl0 parent 3:2 handle 40: pfifo
/// tc filter add dev c-wl0 parent 3: protocol ip prio 1 u32 match ip src 198.19.0.0/24 flowid 3:1
/// # uplink: DNS to a target gets the conditions and the DNS delay (1:2), other DNS the DNS delay alone
/// # (1:3), targeted traffic (by its destination) the conditions (1:1), the rest nothing (1:4)
/// tc qdisc replace dev wl0 root handle 1: prio bands 4 priomap 3 3 3 3 3 3 3 3 3 3 3 3 3 3 3 3
/// tc qdisc replace dev wl0 parent 1:1 handle 10: netem …
/// tc qdisc replace dev wl0 parent 1:2 handle 20: netem …            (the uplink plus the DNS delay)
/// tc qdisc replace dev wl0 parent 1:3 handle 30: netem delay DNSDELAY limit …
/// tc qdisc replace dev wl0 parent 1:4 handle 40: pfifo
/// tc filter add dev wl0 parent 1: protocol ip prio 1 u32 match ip dst 198.19.0.0/24 match ip protocol 17 0xff match ip dport 53 0xffff flowid 1:2
/// tc filter add dev wl0 parent 1: protocol ip prio 2 u32 match ip dst 198.19.0.0/24 match ip protocol 6 0xff match ip dport 53 0xffff flowid 1:2
/// tc filter add dev wl0 parent 1: protocol ip prio 3 u32 match ip protocol 17 0xff match ip dport 53 0xffff flowid 1:3
/// …                                                                  (prio 4 to 6: TCP, IPv6 UDP and TCP to port 53)
/// tc filter add dev wl0 parent 1: protocol ip prio 7 u32 match ip dst 198.19.0.0/24 flowid 1:1
/// ```
///
/// (``NetemClassification`` writes the filters of any target: IPv4 or IPv6 prefixes, TCP, UDP or ICMP —
/// ICMPv6 on IPv6 —, ports; a port without a protocol means TCP and UDP.)
///
/// A direction whose queue is more than netem's `limit` (a DropTail in bytes or time, DropHead, CoDel, PIE;
/// see ``NetemStack``) gets, under each of its netems (which then has no rate), a tbf with the rate and the
/// queue's qdisc under it, in the same datagram as the netem:
///
/// ```
/// tc qdisc replace dev c-wl0 root handle 1: netem delay 50ms limit …
/// tc qdisc replace dev c-wl0 parent 1:1 handle 101: tbf rate 2mbit burst 1514 limit …
/// tc qdisc replace dev c-wl0 parent 101:1 handle 201: codel limit 1000 target 5ms interval 100ms
/// ```
///
/// A switch grafts a *new* netem qdisc (alternating handles) in place of each old one. The graft is
/// atomic, so there is never a moment without conditions, and the new qdisc starts from exactly the
/// profile's parameters (changing a netem qdisc in place would keep attributes the request leaves out,
/// such as an earlier rate). Packets queued in the old qdisc are dropped, as on a real network change.
/// The filters are replaced too, every time: the new ones are added in the other of two priority ranges
/// (1…1000, 1001…2000), then the old ones deleted, so none is ever stale and each new one is read back.
///
/// The tree's shape follows the targets, and a switch between a profile with targets and one without
/// rebuilds it in place, in an order that gives every packet either its old treatment or its new one
/// (``NetemInstaller``): the uplink's prio grows to four bands with its old priomap, gets its new leaves
/// and filters, then changes its priomap, loses the old filters, and shrinks — the prio itself is never
/// replaced. The downlink going back to a netem at the root is one graft at the root. The one exception
/// is the downlink going *to* targets: a new prio replaces the root netem, and until the netem grafted
/// under 3:1 by the next request of the same datagram is in place (microseconds, the kernel handles the two
/// back to back) its traffic passes the prio's default band unconditioned. Keeping a netem at the root for
/// profiles without targets is worth that: it is the tree every catalog profile has, and a switch between
/// them stays one graft. (One shape for all — a prio on the downlink too — would avoid the moment at the
/// cost of a prio and a pfifo on every downlink.)
///
/// Each namespace gets one batch — its grafts and filters, and a qdisc dump appended to read everything
/// back — in one datagram, on a socket kept open across applies (``NamespaceConnectionPool``), addressed by
/// the sandbox's fixed interface indexes. What the kernel reports is compared with what was sent: every
/// netem, prio and pfifo with the dump, every filter with the copy the kernel echoes (`NLM_F_ECHO`; a
/// second dump cannot share the datagram); a difference or a missing one is an error. A backend remembers
/// the trees it installed; copies share that memory, so keep one backend per sandbox for fast switches (a
/// new backend reads the trees first: one more round trip, and one per filter list).
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

    /// The sites of this sandbox's `links` (nil: every client link).
    public func sites(links: Set<Sandbox.ClientLink>? = nil, in transaction: SandboxTransaction? = nil) throws(SandboxError) -> [ConditionSite] {
        Self.sites(of: sandbox.topology, state: try (transaction ?? sandbox.look()).upState(), links: links)
    }

    private static func sites(of topology: SandboxTopology, state: SandboxState, links: Set<Sandbox.ClientLink>?) -> [ConditionSite] {
        ConditionSite.sites(of: topology, state: state).filter { site in
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
            // The sandbox's fixed indexes hold in its own namespaces only (an attachment's wire has the target's).
            let indexes = SandboxTopology.owner(ofNamespace: site.namespace) == nil ? [:] : SandboxPlan.interfaceIndexes
            let client = RouteNetlinkClient(connection: connection, namespace: site.namespace, interfaceIndexes: indexes)
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
    /// `tc qdisc replace`, `tc filter add` and `tc filter del` commands in the sandbox's namespaces (see
    /// above), then `tc -s qdisc show` in each. The profile must have been validated (parsing does that).
    @discardableResult
    public func apply(_ profile: Profile, links: Set<Sandbox.ClientLink>?, in transaction: SandboxTransaction) throws(SandboxError) -> ApplyReport {
        // Everything that can fail without the kernel (what netem cannot do, distribution tables) is done first.
        try Self.checkSupported(profile, clock: clock)
        let memory = self.memory
        let tables = { (name: String) throws(RouteNetlinkError) -> [Int16] in try memory.distribution(name) }
        let plan = try Self.wrap { () throws(RouteNetlinkError) in
            NetemPlan(
                uplink: try NetemMapping.stack(for: profile.uplink, distributions: tables, clock: clock),
                uplinkDNS: try NetemMapping.stack(for: profile.uplink, extraDelay: profile.dnsDelay, distributions: tables, clock: clock),
                uplinkDNSOnly: try NetemMapping.stack(for: .unconditioned, extraDelay: profile.dnsDelay, distributions: tables, clock: clock),
                downlink: try NetemMapping.stack(for: profile.downlink, distributions: tables, clock: clock),
                targets: profile.targets)
        }
        let sites = Self.sites(of: sandbox.topology, state: try transaction.upState(), links: links)
        let groups = try clients(for: sites)
        var sent = NetlinkStatistics()
        let started = MonotonicClock.seconds()
        // Journalled before the first request: a batch the kernel took part of, or a command killed between
        // two namespaces' batches, leaves the change pending for the next command to reconcile.
        _ = try transaction.beginChange("apply", profile: profile, links: links)
        for (client, group) in groups {
            let before = client.connection.statistics
            defer { sent = sent.adding(client.connection.statistics.since(before)) }
            try NetemInstaller(client: client, sites: group, plan: plan, clock: clock, memory: memory).install()
        }
        let duration = MonotonicClock.seconds() - started
        try transaction.confirmChange()
        return ApplyReport(
            profile: profile.name, backend: .netem, sites: sites, duration: duration, requests: sent.requests, roundTrips: sent.datagrams)
    }

    /// Removes the conditions from the sites of `links` (nil: every site; the kernel puts its default qdisc
    /// back). Equivalent to `tc qdisc del dev IF root` on each site. Sites without conditions are skipped.
    @discardableResult
    public func clear(links: Set<Sandbox.ClientLink>?, in transaction: SandboxTransaction) throws(SandboxError) -> [ConditionSite] {
        var cleared: [ConditionSite] = []
        let groups = try clients(for: Self.sites(of: sandbox.topology, state: try transaction.upState(), links: links))
        _ = try transaction.beginChange("clear", profile: nil, links: links)
        for (client, group) in groups {
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
        try transaction.confirmChange()
        return cleared
    }

    /// Every site's qdisc tree, decoded into profile terms, with the kernel's counters. Equivalent to
    /// `tc -s qdisc show dev IF` on each site (one dump per namespace). A netem stage that holds exactly what
    /// the profile the state records for its link maps to is shown in that profile's terms (its distribution,
    /// which the kernel does not report, and its loss as written) and marked as agreeing; one that holds
    /// anything else is shown as the kernel reports it and marked as not agreeing.
    public func installed(in transaction: SandboxTransaction) throws(SandboxError) -> [InstalledSite] {
        let state = try transaction.upState()
        var result: [InstalledSite] = []
        for (client, group) in try clients(for: try sites(in: transaction)) {
            let qdiscs = try Self.wrap { () throws(RouteNetlinkError) in try client.qdiscs() }
            for site in group {
                let index = try Self.wrap { () throws(RouteNetlinkError) in try client.index(of: site.interface) }
                let record = state.conditions[site.link]
                let recorded = try? record?.recordedProfile()
                var stages: [InstalledSite.Stage] = []
                for qdisc in qdiscs where qdisc.interfaceIndex == index {
                    var conditions: LinkConditions?
                    var limit: UInt32?
                    var agrees: Bool?
                    var notes: [String] = []
                    if qdisc.kind == "netem" {
                        let own = qdiscs.filter { $0.interfaceIndex == index }
                        let read = try Self.wrap { () throws(RouteNetlinkError) in try NetemStackReading(netem: qdisc, among: own, clock: clock) }
                        conditions = read.conditions
                        limit = read.netem.limit
                        if let expected = recorded.flatMap({ Self.expectedConditions(of: $0, site: site, parent: qdisc.parent) }) {
                            let sent = try? NetemMapping.stack(for: expected.conditions, extraDelay: expected.extraDelay, distributions: { _ in [] }, clock: clock)
                            agrees = sent.map { read.differences(sent: $0, frame: nil, clock: clock).isEmpty } ?? false
                            if agrees == true {
                                var shown = expected.conditions
                                shown.delay += expected.extraDelay
                                if shown.jitter > 0, shown.effectiveJitterModel == .ordered {
                                    // netem has one jitter model: what the kernel holds is netem's.
                                    shown.jitterModel = .netem
                                    notes.append(
                                        "the profile asks for the ordered jitter model, which netem does not have: netem draws each "
                                            + "packet's delay on its own and lets packets overtake; use the userspace engine for ordered jitter")
                                }
                                conditions = shown
                            }
                        } else if record != nil {
                            agrees = recorded == nil ? nil : false
                        }
                    }
                    stages.append(InstalledSite.Stage(
                        kind: qdisc.kind, handle: qdisc.handle.description, parent: qdisc.parent.description, conditions: conditions,
                        limit: limit, agreesWithRecord: agrees, sentPackets: UInt64(qdisc.statistics.packets), sentBytes: qdisc.statistics.bytes,
                        dropped: UInt64(qdisc.statistics.drops), overlimits: UInt64(qdisc.statistics.overlimits),
                        backlogBytes: UInt64(qdisc.statistics.backlogBytes), backlogPackets: UInt64(qdisc.statistics.queueLength)))
                    stages[stages.count - 1].notes = notes
                    stages[stages.count - 1].queueDrops = qdisc.dropReasons.map {
                        InstalledSite.QueueDrops(discipline: qdisc.kind, tail: $0.limit, early: $0.early, ecnMarked: $0.ecnMarked)
                    }
                }
                result.append(InstalledSite(site: site, stages: stages))
            }
        }
        return result
    }

    /// Compares the kernel's trees with the pending change and with what the state recorded before: a link
    /// holds the change when every netem on its sites is exactly what the change's profile maps to (or, for
    /// a clear, when no tree of linkcond's is left), and still holds the record when every one is what the
    /// recorded profile maps to.
    public func outcome(of pending: SandboxState.PendingChange, in transaction: SandboxTransaction) throws(SandboxError) -> [String: Bool?] {
        let state = try transaction.upState()
        var outcome: [String: Bool?] = [:]
        let sites = try sites(in: transaction).filter { pending.links.contains($0.link) }
        var held: [String: [(ConditionSite, [Qdisc])]] = [:]
        for (client, group) in try clients(for: sites) {
            let qdiscs = try Self.wrap { () throws(RouteNetlinkError) in try client.qdiscs() }
            for site in group {
                let index = try Self.wrap { () throws(RouteNetlinkError) in try client.index(of: site.interface) }
                held[site.link, default: []].append((site, qdiscs.filter { $0.interfaceIndex == index }))
            }
        }
        for name in pending.links {
            let trees = held[name] ?? []
            if holds(Expected(pending.conditions), trees) {
                outcome[name] = true
            } else if holds(Expected(state.conditions[name]), trees) {
                outcome[name] = false
            } else {
                outcome[name] = .some(nil)
            }
        }
        return outcome
    }

    /// What a record says a link holds.
    private enum Expected {
        case clear
        case profile(Profile)
        /// A record of an earlier version, or one whose profile cannot be read back: it cannot be compared.
        case unknown

        init(_ record: SandboxState.AppliedConditions?) {
            guard let record else {
                self = .clear
                return
            }
            if let profile = try? record.recordedProfile() { self = .profile(profile) } else { self = .unknown }
        }
    }

    /// Whether the qdiscs of a link's sites are what `expected` puts there.
    private func holds(_ expected: Expected, _ trees: [(ConditionSite, [Qdisc])]) -> Bool {
        for (site, qdiscs) in trees {
            let netems = qdiscs.filter { $0.kind == "netem" }
            let profile: Profile
            switch expected {
            case .unknown: return false
            case .clear:
                if qdiscs.contains(where: { $0.parent == .root && ($0.kind == "netem" || $0.kind == "prio") }) { return false }
                continue
            case .profile(let value): profile = value
            }
            guard !netems.isEmpty else { return false }
            for qdisc in netems {
                guard let place = Self.expectedConditions(of: profile, site: site, parent: qdisc.parent),
                    let read = try? NetemStackReading(netem: qdisc, among: qdiscs, clock: clock),
                    let sent = try? NetemMapping.stack(for: place.conditions, extraDelay: place.extraDelay, distributions: { _ in [] }, clock: clock),
                    read.differences(sent: sent, frame: nil, clock: clock).isEmpty
                else { return false }
            }
        }
        return true
    }

    /// What the netem under `parent` on `site` holds when `profile` is applied: the downlink's conditions at
    /// the root (or under 3:1), the uplink's under 1:1, with the DNS delay under 1:2, the DNS delay alone
    /// under 1:3; nil for a place the profile puts no netem.
    static func expectedConditions(
        of profile: Profile, site: ConditionSite, parent: TrafficControlHandle
    ) -> (conditions: LinkConditions, extraDelay: UInt64)? {
        switch (site.direction, parent) {
        case (.downlink, .root), (.downlink, NetemShape.downlinkMain): return (profile.downlink, 0)
        case (.uplink, NetemShape.uplinkMain): return (profile.uplink, 0)
        case (.uplink, NetemShape.uplinkDNS): return (profile.uplink, profile.dnsDelay)
        case (.uplink, NetemShape.uplinkDNSOnly): return (.unconditioned, profile.dnsDelay)
        default: return nil
        }
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

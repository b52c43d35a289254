import Profiles
import Foundation
import Glibc
import LinkcondBase
import NetNamespace
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
/// network change. After installing, everything is read back and compared with what was sent.
public struct NetemBackend: ConditioningBackend {
    public let sandbox: Sandbox
    public let clock: PacketSchedulerClock

    public init(sandbox: Sandbox, clock: PacketSchedulerClock = .current()) {
        self.sandbox = sandbox
        self.clock = clock
    }

    static let prioHandle = TrafficControlHandle(major: 1, minor: 0)
    static let mainClass = TrafficControlHandle(major: 1, minor: 1)
    static let dnsClass = TrafficControlHandle(major: 1, minor: 2)
    static let rootHandles: [UInt16] = [1, 2]
    static let mainLeafHandles: [UInt16] = [0x10, 0x11]
    static let dnsLeafHandles: [UInt16] = [0x20, 0x21]

    /// The u32 filters that steer DNS (port 53, UDP and TCP, IPv4 and IPv6) to the DNS band.
    static var dnsFilters: [U32Filter] {
        [
            U32Filter(protocolNumber: .ipv4, priority: 1, keys: [.ipProtocol(17), .ipDestinationPort(53)], classID: dnsClass),
            U32Filter(protocolNumber: .ipv4, priority: 2, keys: [.ipProtocol(6), .ipDestinationPort(53)], classID: dnsClass),
            U32Filter(protocolNumber: .ipv6, priority: 3, keys: [.ip6Protocol(17), .ip6DestinationPort(53)], classID: dnsClass),
            U32Filter(protocolNumber: .ipv6, priority: 4, keys: [.ip6Protocol(6), .ip6DestinationPort(53)], classID: dnsClass),
        ]
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
        ConditionSite.sites(of: sandbox.topology, cellular: try state().cellular).filter { site in
            links.map { $0.contains { $0.rawValue == site.link } } ?? true
        }
    }

    private func client(for site: ConditionSite) throws(SandboxError) -> RouteNetlinkClient {
        let namespace: NamedNamespace
        do {
            namespace = try NamedNamespace(existing: site.namespace)
        } catch {
            throw .notUp(name: sandbox.topology.name)
        }
        return try sandbox.netlink(namespace)
    }

    private static func wrap<T>(_ body: () throws(RouteNetlinkError) -> T) throws(SandboxError) -> T {
        do {
            return try body()
        } catch {
            throw .netlink(error)
        }
    }

    /// Puts `profile` on the sites of `links` (nil: every client link). Equivalent to a series of
    /// `tc qdisc replace` and `tc filter add` commands in the sandbox's namespaces. The profile must have been
    /// validated (parsing does that). Holds the sandbox's lock.
    @discardableResult
    public func apply(_ profile: Profile, links: Set<Sandbox.ClientLink>? = nil) throws(SandboxError) -> ApplyReport {
        let lock = try sandbox.lock(for: "apply \(profile.name)")
        defer { lock.release() }
        let started = MonotonicClock.seconds()
        // Everything that can fail without the kernel (what netem cannot do, distribution tables) is done first.
        try Self.checkSupported(profile)
        let uplink = try Self.wrap { () throws(RouteNetlinkError) in try NetemMapping.parameters(for: profile.uplink) }
        let uplinkDNS = try Self.wrap { () throws(RouteNetlinkError) in
            try NetemMapping.parameters(for: profile.uplink, extraDelay: profile.dnsDelay)
        }
        let downlink = try Self.wrap { () throws(RouteNetlinkError) in try NetemMapping.parameters(for: profile.downlink) }
        let sites = try sites(links: links)
        var requests = 0
        for site in sites {
            let netlink = try client(for: site)
            switch site.direction {
            case .downlink:
                requests += try installRoot(downlink, on: site, netlink)
            case .uplink:
                requests += try installUplink(main: uplink, dns: uplinkDNS, on: site, netlink)
            }
        }
        var recorded = try state()
        recorded.conditions = SandboxState.AppliedConditions(profile: profile.name, source: profile.source, links: links.map { $0.map(\.rawValue).sorted() })
        try sandbox.store.save(recorded)
        return ApplyReport(profile: profile.name, backend: .netem, sites: sites, duration: MonotonicClock.seconds() - started, requests: requests)
    }

    private func qdiscs(on site: ConditionSite, _ netlink: RouteNetlinkClient) throws(SandboxError) -> (Int32, [Qdisc]) {
        try Self.wrap { () throws(RouteNetlinkError) in
            let index = try netlink.index(of: site.interface)
            return (index, try netlink.qdiscs().filter { $0.interfaceIndex == index })
        }
    }

    private static func next(_ handles: [UInt16], after current: TrafficControlHandle?) -> TrafficControlHandle {
        let major = current.map(\.major) == handles[0] ? handles[1] : handles[0]
        return TrafficControlHandle(major: major, minor: 0)
    }

    private func installRoot(_ parameters: NetemParameters, on site: ConditionSite, _ netlink: RouteNetlinkClient) throws(SandboxError) -> Int {
        let (_, before) = try qdiscs(on: site, netlink)
        let root = before.first { $0.parent == .root }
        let handle = Self.next(Self.rootHandles, after: root?.kind == "netem" ? root?.handle : nil)
        try install(parameters, on: site, handle: handle, parent: .root, netlink)
        try verify(parameters, on: site, handle: handle, netlink)
        return 3
    }

    private func installUplink(main: NetemParameters, dns: NetemParameters, on site: ConditionSite, _ netlink: RouteNetlinkClient) throws(SandboxError) -> Int {
        var requests = 1
        let (_, before) = try qdiscs(on: site, netlink)
        let root = before.first { $0.parent == .root }
        let hadTree = root?.kind == "prio" && root?.handle == Self.prioHandle
        do {
            if !hadTree {
                try Self.wrap { () throws(RouteNetlinkError) in
                    try netlink.replaceQdisc(on: site.interface, handle: Self.prioHandle, kind: "prio", optionsText: "bands 2 priomap 0 … 0") {
                        PrioOptions(bands: 2).encode(into: $0)
                    }
                }
                requests += 1
            }
            let mainLeaf = Self.next(Self.mainLeafHandles, after: hadTree ? before.first { $0.parent == Self.mainClass }?.handle : nil)
            let dnsLeaf = Self.next(Self.dnsLeafHandles, after: hadTree ? before.first { $0.parent == Self.dnsClass }?.handle : nil)
            try install(main, on: site, handle: mainLeaf, parent: Self.mainClass, netlink)
            try install(dns, on: site, handle: dnsLeaf, parent: Self.dnsClass, netlink)
            requests += 2
            let filters = try Self.wrap { () throws(RouteNetlinkError) in try netlink.filters(on: site.interface, parent: Self.prioHandle) }
            requests += 1
            let present = Set(filters.filter { $0.kind == "u32" && $0.classID == Self.dnsClass }.map(\.priority))
            for filter in Self.dnsFilters where !present.contains(filter.priority) {
                try Self.wrap { () throws(RouteNetlinkError) in try netlink.addFilter(filter, on: site.interface, parent: Self.prioHandle) }
                requests += 1
            }
            try verify(main, on: site, handle: mainLeaf, netlink)
            try verify(dns, on: site, handle: dnsLeaf, netlink)
            requests += 2
        } catch {
            // A site that had no linkcond tree is left as it was found.
            if !hadTree { try? netlink.deleteRootQdisc(on: site.interface) }
            throw error
        }
        return requests
    }

    private func install(_ parameters: NetemParameters, on site: ConditionSite, handle: TrafficControlHandle, parent: TrafficControlHandle, _ netlink: RouteNetlinkClient) throws(SandboxError) {
        let clock = self.clock
        try Self.wrap { () throws(RouteNetlinkError) in
            try netlink.replaceQdisc(on: site.interface, handle: handle, parent: parent, kind: "netem", optionsText: NetemDescription.text(of: parameters, clock: clock)) {
                parameters.encode(into: $0, clock: clock)
            }
        }
    }

    /// Reads the qdisc back and compares it with what was sent; a mismatch is an error.
    private func verify(_ sent: NetemParameters, on site: ConditionSite, handle: TrafficControlHandle, _ netlink: RouteNetlinkClient) throws(SandboxError) {
        let (_, after) = try qdiscs(on: site, netlink)
        guard let qdisc = after.first(where: { $0.handle == handle }), qdisc.kind == "netem" else {
            throw .conditionsMismatch(site: site.description, differences: ["no netem qdisc \(handle) after installing it"])
        }
        let read = try Self.wrap { () throws(RouteNetlinkError) in try NetemParameters.decode(options: qdisc.options, clock: clock) }
        let differences = NetemDescription.differences(sent: sent, read: read, clock: clock)
        if !differences.isEmpty {
            throw .conditionsMismatch(site: site.description, differences: differences)
        }
    }

    /// Removes the conditions from the sites of `links` (nil: every site; the kernel puts its default qdisc
    /// back). Equivalent to `tc qdisc del dev IF root` on each site. Sites without conditions are skipped.
    /// Holds the sandbox's lock.
    @discardableResult
    public func clear(links: Set<Sandbox.ClientLink>? = nil) throws(SandboxError) -> [ConditionSite] {
        let lock = try sandbox.lock(for: "clear")
        defer { lock.release() }
        var cleared: [ConditionSite] = []
        for site in try sites(links: links) {
            let netlink = try client(for: site)
            let (_, qdiscs) = try qdiscs(on: site, netlink)
            guard let root = qdiscs.first(where: { $0.parent == .root }), root.kind == "netem" || root.kind == "prio" else { continue }
            try Self.wrap { () throws(RouteNetlinkError) in try netlink.deleteRootQdisc(on: site.interface) }
            cleared.append(site)
        }
        var recorded = try state()
        recorded.conditions = nil
        try sandbox.store.save(recorded)
        return cleared
    }

    /// Every site's qdisc tree, decoded into profile terms, with the kernel's counters.
    /// Equivalent to `tc -s qdisc show dev IF` on each site.
    public func installed() throws(SandboxError) -> [InstalledSite] {
        var result: [InstalledSite] = []
        for site in try sites() {
            let netlink = try client(for: site)
            let (_, qdiscs) = try qdiscs(on: site, netlink)
            var entries: [InstalledSite.Entry] = []
            for qdisc in qdiscs {
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
        return result
    }
}

import Glibc
import RouteNetlink
import Sandboxing
import Synchronization

/// What the backend last installed on a site, so a switch can graft at once without reading the tree
/// first. A wrong memory costs a round trip, never a wrong tree: grafts carry `NLM_F_EXCL`, so a guessed
/// handle that is the current one is refused (`EEXIST`) and changes nothing, and a missing parent is
/// refused too; both make the installer read the tree and try once more.
struct NetemSiteTree: Sendable, Equatable {
    /// The root qdisc's handle (downlink: the netem; uplink: the prio).
    var root: TrafficControlHandle?
    /// Uplink: the netem under 1:1 and under 1:2.
    var main: TrafficControlHandle?
    var dns: TrafficControlHandle?
    /// Uplink: the prio root and every DNS filter are in place.
    var hasUplinkTree = false
    /// Uplink: the priorities of the DNS filters attached (when read from the kernel).
    var filterPriorities: Set<UInt16> = []
}

/// The backend's memory, shared by copies of one ``NetemBackend``: the trees it installed and the
/// distribution tables it read.
final class NetemMemory: Sendable {
    private let trees = Mutex<[String: NetemSiteTree]>([:])
    private let tables = Mutex<[String: [Int16]]>([:])

    func tree(_ site: ConditionSite) -> NetemSiteTree? { trees.withLock { $0[Self.key(site)] } }
    func remember(_ tree: NetemSiteTree?, for site: ConditionSite) { trees.withLock { $0[Self.key(site)] = tree } }
    func forget(namespace: String) { trees.withLock { $0 = $0.filter { !$0.key.hasPrefix(namespace + "/") } } }

    /// tc's `NAME.dist` table, read once.
    func distribution(_ name: String) throws(RouteNetlinkError) -> [Int16] {
        if let table = tables.withLock({ $0[name] }) { return table }
        let table = try NetemDistribution.load(name)
        tables.withLock { $0[name] = table }
        return table
    }

    private static func key(_ site: ConditionSite) -> String { "\(site.namespace)/\(site.interface)" }
}

/// The netem parameters one apply puts on the wire.
struct NetemPlan: Sendable {
    var uplink: NetemParameters
    var uplinkDNS: NetemParameters
    var downlink: NetemParameters
}

/// Installs a plan on the sites of one namespace with one batch (grafts, read-back dump), verifies what
/// the kernel reports, and recovers once from a stale memory.
struct NetemInstaller {
    let client: RouteNetlinkClient
    let sites: [ConditionSite]
    let plan: NetemPlan
    let clock: PacketSchedulerClock
    let memory: NetemMemory

    static let prioHandle = TrafficControlHandle(major: 1, minor: 0)
    static let mainClass = TrafficControlHandle(major: 1, minor: 1)
    static let dnsClass = TrafficControlHandle(major: 1, minor: 2)
    static let rootHandles: [UInt16] = [1, 2]
    static let mainLeafHandles: [UInt16] = [0x10, 0x11]
    static let dnsLeafHandles: [UInt16] = [0x20, 0x21]

    /// The u32 filters that steer DNS (port 53, UDP and TCP, IPv4 and IPv6) to the DNS band.
    static let dnsFilters: [U32Filter] = [
        U32Filter(protocolNumber: .ipv4, priority: 1, keys: [.ipProtocol(17), .ipDestinationPort(53)], classID: dnsClass),
        U32Filter(protocolNumber: .ipv4, priority: 2, keys: [.ipProtocol(6), .ipDestinationPort(53)], classID: dnsClass),
        U32Filter(protocolNumber: .ipv6, priority: 3, keys: [.ip6Protocol(17), .ip6DestinationPort(53)], classID: dnsClass),
        U32Filter(protocolNumber: .ipv6, priority: 4, keys: [.ip6Protocol(6), .ip6DestinationPort(53)], classID: dnsClass),
    ]

    static func next(_ handles: [UInt16], after current: TrafficControlHandle?) -> TrafficControlHandle {
        TrafficControlHandle(major: current?.major == handles[0] ? handles[1] : handles[0], minor: 0)
    }

    private static func wrap<T>(_ body: () throws(RouteNetlinkError) -> T) throws(SandboxError) -> T {
        do {
            return try body()
        } catch {
            throw .netlink(error)
        }
    }

    /// Installs the plan: from memory when every site is remembered, else from a fresh read; a refusal
    /// that means the memory was wrong (`EEXIST`, a missing parent) leads to one fresh read and retry.
    func install() throws(SandboxError) {
        var trees = sites.map { memory.tree($0) }
        var fresh = false
        if trees.contains(where: { $0 == nil }) {
            trees = try read(after: nil)
            fresh = true
        }
        while true {
            let (changes, expected) = try Self.wrap { () throws(RouteNetlinkError) in try plan(trees) }
            let reply = try Self.wrap { () throws(RouteNetlinkError) in try client.send(changes, readingBack: true) }
            if let error = reply.firstError {
                let stale = error.errno == EEXIST || error.errno == ENOENT || error.errno == EINVAL
                if !fresh && stale {
                    trees = try read(after: reply.qdiscs)
                    fresh = true
                    continue
                }
                undo(trees)
                throw .netlink(error)
            }
            for (position, site) in sites.enumerated() {
                try verify(site, expected: expected[position], qdiscs: reply.qdiscs)
                memory.remember(expected[position], for: site)
            }
            return
        }
    }

    /// Builds the batch for `trees` and the tree each site will have after it.
    private func plan(_ trees: [NetemSiteTree?]) throws(RouteNetlinkError) -> ([TrafficControlChange], [NetemSiteTree]) {
        var changes: [TrafficControlChange] = []
        var expected: [NetemSiteTree] = []
        for (site, known) in zip(sites, trees) {
            let tree = known ?? NetemSiteTree()
            switch site.direction {
            case .downlink:
                let handle = Self.next(Self.rootHandles, after: tree.root)
                changes.append(.replaceQdisc(
                    interface: site.interface, handle: handle, parent: .root, options: .netem(plan.downlink, clock: clock), graft: true))
                expected.append(NetemSiteTree(root: handle))
            case .uplink:
                var after = NetemSiteTree(root: Self.prioHandle, hasUplinkTree: true, filterPriorities: Set(Self.dnsFilters.map(\.priority)))
                if !tree.hasUplinkTree {
                    changes.append(.replaceQdisc(
                        interface: site.interface, handle: Self.prioHandle, parent: .root, options: .prio(PrioOptions(bands: 2)), graft: false))
                }
                after.main = Self.next(Self.mainLeafHandles, after: tree.hasUplinkTree ? tree.main : nil)
                after.dns = Self.next(Self.dnsLeafHandles, after: tree.hasUplinkTree ? tree.dns : nil)
                changes.append(.replaceQdisc(
                    interface: site.interface, handle: after.main!, parent: Self.mainClass, options: .netem(plan.uplink, clock: clock), graft: true))
                changes.append(.replaceQdisc(
                    interface: site.interface, handle: after.dns!, parent: Self.dnsClass, options: .netem(plan.uplinkDNS, clock: clock), graft: true))
                let present = tree.hasUplinkTree ? tree.filterPriorities : []
                for filter in Self.dnsFilters where !present.contains(filter.priority) {
                    changes.append(.addFilter(filter, interface: site.interface, parent: Self.prioHandle))
                }
                expected.append(after)
            }
        }
        return (changes, expected)
    }

    /// What each site holds, from `qdiscs` (a read-back already made) or a new dump, and for uplinks
    /// with a prio root the filters attached to it.
    private func read(after qdiscs: [Qdisc]?) throws(SandboxError) -> [NetemSiteTree?] {
        let all: [Qdisc]
        if let qdiscs {
            all = qdiscs
        } else {
            all = try Self.wrap { () throws(RouteNetlinkError) in try client.qdiscs() }
        }
        var trees: [NetemSiteTree?] = []
        for site in sites {
            let index = try Self.wrap { () throws(RouteNetlinkError) in try client.index(of: site.interface) }
            let own = all.filter { $0.interfaceIndex == index }
            let root = own.first { $0.parent == .root }
            var tree = NetemSiteTree()
            switch site.direction {
            case .downlink:
                tree.root = root?.kind == "netem" ? root?.handle : nil
            case .uplink:
                guard root?.kind == "prio", root?.handle == Self.prioHandle else { break }
                tree.root = Self.prioHandle
                tree.main = own.first { $0.parent == Self.mainClass }?.handle
                tree.dns = own.first { $0.parent == Self.dnsClass }?.handle
                let filters = try Self.wrap { () throws(RouteNetlinkError) in try client.filters(on: site.interface, parent: Self.prioHandle) }
                tree.filterPriorities = Set(filters.filter { $0.kind == "u32" && $0.classID == Self.dnsClass }.map(\.priority))
                tree.hasUplinkTree = true
            }
            trees.append(tree)
        }
        return trees
    }

    /// After a refusal: uplink sites that had no linkcond tree are left as they were found.
    private func undo(_ trees: [NetemSiteTree?]) {
        for (site, tree) in zip(sites, trees) where site.direction == .uplink && tree?.hasUplinkTree != true {
            try? client.deleteRootQdisc(on: site.interface)
        }
        for site in sites { memory.remember(nil, for: site) }
    }

    /// Compares what the kernel reported after the batch with what was sent; a difference is an error.
    private func verify(_ site: ConditionSite, expected: NetemSiteTree, qdiscs: [Qdisc]) throws(SandboxError) {
        let index = try Self.wrap { () throws(RouteNetlinkError) in try client.index(of: site.interface) }
        let own = qdiscs.filter { $0.interfaceIndex == index }
        var checks: [(TrafficControlHandle, TrafficControlHandle, NetemParameters)] = []
        switch site.direction {
        case .downlink:
            checks = [(expected.root!, .root, plan.downlink)]
        case .uplink:
            guard let root = own.first(where: { $0.parent == .root }), root.kind == "prio", root.handle == Self.prioHandle else {
                throw .conditionsMismatch(site: site.description, differences: ["no prio qdisc 1: at the root after installing it"])
            }
            checks = [(expected.main!, Self.mainClass, plan.uplink), (expected.dns!, Self.dnsClass, plan.uplinkDNS)]
        }
        for (handle, parent, sent) in checks {
            guard let qdisc = own.first(where: { $0.handle == handle }), qdisc.kind == "netem", qdisc.parent == parent else {
                throw .conditionsMismatch(site: site.description, differences: ["no netem qdisc \(handle) under \(parent) after installing it"])
            }
            let read = try Self.wrap { () throws(RouteNetlinkError) in try NetemParameters.decode(options: qdisc.options, clock: clock) }
            let differences = NetemDescription.differences(sent: sent, read: read, clock: clock)
            if !differences.isEmpty {
                throw .conditionsMismatch(site: site.description, differences: differences)
            }
        }
    }
}

import Glibc
import Profiles
import RouteNetlink
import Sandboxing
import Synchronization

/// What the backend last installed on a site, so a switch can graft at once without reading the tree
/// first. A wrong memory costs a round trip, never a wrong tree: grafts carry `NLM_F_EXCL`, so a guessed
/// handle that is the current one is refused (`EEXIST`) and changes nothing; a missing parent or filter
/// priority is refused too (`ENOENT`, `EINVAL`); a priority beyond the remembered filters that still holds
/// one is found by the sentinel delete (see ``NetemInstaller``); each of these makes the installer read
/// the tree and try once more.
struct NetemSiteTree: Sendable, Equatable {
    /// The root qdisc's handle: the netem of a downlink without targets, else linkcond's prio.
    var root: TrafficControlHandle?
    /// linkcond's prio at the root (uplink `1:`, downlink with targets `3:`) and its bands and priomap.
    var prio: PrioOptions?
    /// The netem under the main class (`1:1` or `3:1`).
    var main: TrafficControlHandle?
    /// Uplink: the netem under `1:2` (the conditions and the DNS delay).
    var dns: TrafficControlHandle?
    /// Uplink with targets: the netem under `1:3` (the DNS delay alone).
    var dnsOnly: TrafficControlHandle?
    /// With targets: the pfifo `40:` in the untouched band (`1:4` or `3:2`) is in place.
    var untouched = false
    /// The priorities of the u32 filters attached to the prio, in evaluation order.
    var filters: [UInt16] = []
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

/// The netem leaves (each with its tbf and queue, if any) and the targets one apply puts on the wire.
struct NetemPlan: Sendable {
    var uplink: NetemStack
    var uplinkDNS: NetemStack
    /// The DNS delay alone: DNS queries outside the targets.
    var uplinkDNSOnly: NetemStack
    var downlink: NetemStack
    var targets: [TrafficTarget]

    /// Whether `direction`'s leaves have a tbf and a queue under their netem (the installer then reads the
    /// site's MTU). The uplink's DNS leaf has one exactly when its main leaf has; the DNS delay alone never.
    func hasQueue(_ direction: LinkMeasurement.Direction) -> Bool { (direction == .uplink ? uplink : downlink).queue != nil }
}

/// Installs a plan on the sites of one namespace with one batch (grafts, filters, read-back dump), verifies
/// what the kernel reports, and recovers once from a stale memory.
///
/// The batch of a site, in this order, so that every packet meets either its old treatment or its new one
/// at every moment in between (the kernel handles a batch's requests one after the other, and packets
/// flow between them):
/// 1. the prio grows (or is made) with the priomap it had (0 when new);
/// 2. new netem leaves are grafted in place of the old ones (each followed by its tbf and queue, when the
///    direction has a queue beyond netem's `limit`: see ``NetemStack``), and the pfifo is put in the
///    untouched band;
/// 3. the new filters are added, first to last, in the filter priority range the old ones are not in,
///    each with `NLM_F_ECHO` so the kernel reports it back in the same datagram;
/// 4. the priomap changes when the default band does (targets or none);
/// 5. the old filters are deleted, last to first, and — when the plan came from memory — the priority
///    after the last one remembered is deleted too, which the kernel must refuse (`ENOENT`): a sentinel
///    that finds filters another process left there;
/// 6. the prio shrinks when bands are no longer used;
/// then one dump reads every qdisc back. Every netem (with its tbf and queue), prio and pfifo is compared
/// with the dump, every filter with what the kernel echoed. A site with a queue under its netem has its MTU
/// read first (`ip link show dev IF`, one request), so the tbf's bucket holds a whole frame.
struct NetemInstaller {
    let client: RouteNetlinkClient
    let sites: [ConditionSite]
    let plan: NetemPlan
    let clock: PacketSchedulerClock
    let memory: NetemMemory

    typealias Shape = NetemShape

    /// What a change of the batch must do: succeed, or (the sentinel) be refused with `ENOENT`.
    enum Role {
        case required
        case sentinel
    }

    /// A site's part of the batch and the tree it will have after it.
    struct SitePlan {
        var changes: [TrafficControlChange] = []
        var roles: [Role] = []
        var after = NetemSiteTree()
        /// The largest frame of the site's interface, for the tbf's bucket.
        var frame = NetemMapping.ethernetFrame
        /// The filters added, with their priorities.
        var filters: [U32Filter] = []

        mutating func add(_ change: TrafficControlChange, _ role: Role = .required) {
            changes.append(change)
            roles.append(role)
        }

        /// Grafts a new netem `handle` under `parent`, then its tbf and queue (see ``NetemStack``).
        mutating func graft(_ stack: NetemStack, handle: TrafficControlHandle, parent: TrafficControlHandle, interface: String, clock: PacketSchedulerClock) {
            add(.replaceQdisc(interface: interface, handle: handle, parent: parent, options: .netem(stack.netem, clock: clock), graft: true))
            guard let queue = stack.queue, let bucket = stack.bucket(frame: frame) else { return }
            let handles = NetemStack.handles(under: handle)
            add(.replaceQdisc(interface: interface, handle: handles.bucket, parent: NetemStack.childClass(of: handle), options: .tbf(bucket), graft: true))
            add(.replaceQdisc(interface: interface, handle: handles.queue, parent: NetemStack.childClass(of: handles.bucket), options: queue.options, graft: true))
        }
    }

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

    /// A memory that turned out wrong: read the trees and try again.
    private struct Stale: Error {}

    /// Installs the plan: from memory when every site is remembered, else from a fresh read; a refusal
    /// that means the memory was wrong (`EEXIST`, `ENOENT`, `EINVAL`, a sentinel that was not refused, a
    /// filter priority that held another filter) leads to one fresh read and retry.
    func install() throws(SandboxError) {
        var trees = sites.map { memory.tree($0) ?? NetemSiteTree() }
        var fresh = false
        if sites.contains(where: { memory.tree($0) == nil }) {
            trees = try read(after: nil)
            fresh = true
        }
        let frames = try sites.map { site throws(SandboxError) in
            guard plan.hasQueue(site.direction) else { return NetemMapping.ethernetFrame }
            let mtu = try Self.wrap { () throws(RouteNetlinkError) in try client.link(named: site.interface).mtu }
            return mtu == 0 ? NetemMapping.ethernetFrame : max(NetemMapping.ethernetFrame, mtu + 14)
        }
        while true {
            let plans = try Self.wrap { () throws(RouteNetlinkError) in
                try zip(zip(sites, trees), frames).map { pair, frame throws(RouteNetlinkError) in try planSite(pair.0, pair.1, frame: frame, fresh: fresh) }
            }
            let reply = try Self.wrap { () throws(RouteNetlinkError) in try client.send(plans.flatMap(\.changes), readingBack: true) }
            var stale = false
            var refusal: RouteNetlinkError?
            for (outcome, role) in zip(reply.outcomes, plans.flatMap(\.roles)) {
                switch (role, outcome) {
                case (.sentinel, .success): stale = true
                case let (.sentinel, .failure(error)) where error.errno == ENOENT: break
                case let (_, .failure(error)): refusal = refusal ?? error
                case (.required, .success): break
                }
            }
            if stale || refusal != nil {
                let memoryWasWrong = stale || [EEXIST, ENOENT, EINVAL].contains(refusal?.errno ?? 0)
                if !fresh && memoryWasWrong {
                    trees = try read(after: reply.qdiscs)
                    fresh = true
                    continue
                }
                undo(trees)
                throw .netlink(refusal ?? .invalidArgument("the filter priorities after the old ones were not free"))
            }
            do {
                for (site, sitePlan) in zip(sites, plans) {
                    try verify(site, sitePlan, reply: reply, fresh: fresh)
                }
            } catch is Stale {
                trees = try read(after: reply.qdiscs)
                fresh = true
                continue
            } catch let error as SandboxError {
                for site in sites { memory.remember(nil, for: site) }
                throw error
            } catch {
                throw .netlink(.invalidArgument("\(error)"))
            }
            for (site, sitePlan) in zip(sites, plans) { memory.remember(sitePlan.after, for: site) }
            return
        }
    }

    // MARK: Planning

    /// The batch for one site, from what it holds (`tree`) to the plan.
    private func planSite(_ site: ConditionSite, _ tree: NetemSiteTree, frame: UInt32, fresh: Bool) throws(RouteNetlinkError) -> SitePlan {
        var result = SitePlan()
        result.frame = frame
        let direction = site.direction
        let interface = site.interface
        let targeted = !plan.targets.isEmpty
        if direction == .downlink && !targeted {
            // Grafted at the root: whatever was there (an older netem, the prio tree with its filters) goes
            // in one step, and the new netem conditions everything from that moment.
            let handle = Self.next(Shape.rootHandles, after: tree.prio == nil ? tree.root : nil)
            result.graft(plan.downlink, handle: handle, parent: .root, interface: interface, clock: clock)
            result.after = NetemSiteTree(root: handle)
            return result
        }

        let prioHandle = Shape.prio(direction)
        let wantedBands: Int32 = direction == .uplink && targeted ? 4 : 2
        let defaultBand: UInt8 = targeted ? UInt8(wantedBands - 1) : 0
        let ours = tree.root == prioHandle && tree.prio != nil
        var bands: Int32
        var map: [UInt8]
        // 1. The prio: made with everything mapped to the first band, or grown keeping its priomap.
        if !ours {
            bands = wantedBands
            map = [UInt8](repeating: 0, count: 16)
            result.add(.replaceQdisc(
                interface: interface, handle: prioHandle, parent: .root, options: .prio(PrioOptions(bands: bands, priorityMap: map)), graft: false))
        } else {
            bands = tree.prio!.bands
            map = tree.prio!.priorityMap
            if bands < wantedBands {
                bands = wantedBands
                result.add(.replaceQdisc(
                    interface: interface, handle: prioHandle, parent: .root, options: .prio(PrioOptions(bands: bands, priorityMap: map)), graft: false))
            }
        }
        let known = ours ? tree : NetemSiteTree()

        // 2. The leaves.
        var after = NetemSiteTree(root: prioHandle, prio: Shape.prioOptions(bands: wantedBands, band: defaultBand))
        after.main = Self.next(Shape.mainLeafHandles, after: known.main)
        result.graft(direction == .uplink ? plan.uplink : plan.downlink, handle: after.main!, parent: Shape.main(direction), interface: interface, clock: clock)
        if direction == .uplink {
            after.dns = Self.next(Shape.dnsLeafHandles, after: known.dns)
            result.graft(plan.uplinkDNS, handle: after.dns!, parent: Shape.uplinkDNS, interface: interface, clock: clock)
            if targeted {
                after.dnsOnly = Self.next(Shape.dnsOnlyLeafHandles, after: known.dnsOnly)
                result.graft(plan.uplinkDNSOnly, handle: after.dnsOnly!, parent: Shape.uplinkDNSOnly, interface: interface, clock: clock)
            }
        }
        if targeted {
            if !known.untouched {
                result.add(.replaceQdisc(interface: interface, handle: Shape.untouched, parent: Shape.untouchedClass(direction), options: .pfifo(), graft: true))
            }
            after.untouched = true
        }

        // 3. The new filters, in the range the old ones are not in. After a fresh read that found filters in
        // both ranges (or elsewhere), those in the new range go first.
        let old = known.filters
        let inRange = [0, 1].map { range in old.filter { Shape.range(of: $0) == range }.count }
        let newRange = old.isEmpty ? 0 : (inRange[0] == 0 ? 0 : (inRange[1] == 0 ? 1 : (inRange[0] <= inRange[1] ? 0 : 1)))
        let deleteFirst = old.filter { Shape.range(of: $0) == newRange }
        for priority in deleteFirst.reversed() {
            result.add(.deleteFilters(interface: interface, parent: prioHandle, priority: priority))
        }
        let rules = Shape.rules(direction, targets: plan.targets)
        guard rules.count <= Shape.filtersPerRange else {
            throw .invalidArgument("\(rules.count) filters on \(interface) are more than the \(Shape.filtersPerRange) a priority range holds")
        }
        for (index, rule) in rules.enumerated() {
            let filter = rule.filter(priority: Shape.filterRanges[newRange] + UInt16(index))
            result.filters.append(filter)
            result.add(.addFilterReadingBack(filter, interface: interface, parent: prioHandle))
        }
        after.filters = result.filters.map(\.priority)

        // 4. The default band.
        let wantedMap = [UInt8](repeating: defaultBand, count: 16)
        if map != wantedMap {
            map = wantedMap
            result.add(.replaceQdisc(
                interface: interface, handle: prioHandle, parent: .root, options: .prio(PrioOptions(bands: bands, priorityMap: map)), graft: false))
        }

        // 5. The old filters, last to first, and the sentinel after the last one remembered.
        for priority in old.filter({ Shape.range(of: $0) != newRange }).reversed() {
            result.add(.deleteFilters(interface: interface, parent: prioHandle, priority: priority))
        }
        if ours && !fresh {
            let oldRange = 1 - newRange
            let remembered = old.filter { Shape.range(of: $0) == oldRange }.count
            result.add(.deleteFilters(interface: interface, parent: prioHandle, priority: Shape.filterRanges[oldRange] + UInt16(remembered)), .sentinel)
        }

        // 6. Bands no longer used.
        if bands > wantedBands {
            result.add(.replaceQdisc(
                interface: interface, handle: prioHandle, parent: .root, options: .prio(PrioOptions(bands: wantedBands, priorityMap: map)),
                graft: false))
        }
        result.after = after
        return result
    }

    // MARK: Reading

    /// What each site holds, from `qdiscs` (a read-back already made) or a new dump, and for a site with
    /// linkcond's prio the priorities of the filters attached to it (one dump each).
    private func read(after qdiscs: [Qdisc]?) throws(SandboxError) -> [NetemSiteTree] {
        let all: [Qdisc]
        if let qdiscs {
            all = qdiscs
        } else {
            all = try Self.wrap { () throws(RouteNetlinkError) in try client.qdiscs() }
        }
        var trees: [NetemSiteTree] = []
        for site in sites {
            let index = try Self.wrap { () throws(RouteNetlinkError) in try client.index(of: site.interface) }
            let own = all.filter { $0.interfaceIndex == index }
            let root = own.first { $0.parent == .root }
            let prioHandle = Shape.prio(site.direction)
            func netem(under parent: TrafficControlHandle) -> TrafficControlHandle? {
                own.first { $0.parent == parent && $0.kind == "netem" }?.handle
            }
            var tree = NetemSiteTree()
            if site.direction == .downlink, let root, root.kind == "netem" {
                tree.root = root.handle
            } else if let root, root.kind == "prio", root.handle == prioHandle, let options = try? PrioOptions.decode(options: root.options) {
                tree.root = prioHandle
                tree.prio = options
                tree.main = netem(under: Shape.main(site.direction))
                if site.direction == .uplink {
                    tree.dns = netem(under: Shape.uplinkDNS)
                    tree.dnsOnly = netem(under: Shape.uplinkDNSOnly)
                }
                let untouchedClass = Shape.untouchedClass(site.direction)
                tree.untouched = own.contains { $0.parent == untouchedClass && $0.handle == Shape.untouched && $0.kind == "pfifo" }
                let filters = try Self.wrap { () throws(RouteNetlinkError) in try client.filters(on: site.interface, parent: prioHandle) }
                tree.filters = Set(filters.map(\.priority)).sorted()
            }
            trees.append(tree)
        }
        return trees
    }

    /// After a refusal: sites that held no qdisc of linkcond's before are left as they were found (the
    /// kernel's default root); the memory of every site is dropped.
    private func undo(_ trees: [NetemSiteTree]) {
        for (site, tree) in zip(sites, trees) where tree.root == nil {
            try? client.deleteRootQdisc(on: site.interface)
        }
        for site in sites { memory.remember(nil, for: site) }
    }

    // MARK: Verifying

    /// Compares what the kernel reported after the batch — the qdisc dump and the echoed filters — with
    /// what was sent; a difference is an error. Throws ``Stale`` when a filter landed in a priority that
    /// already held one (from memory only: a fresh read would have found it).
    private func verify(_ site: ConditionSite, _ sitePlan: SitePlan, reply: TrafficControlReply, fresh: Bool) throws -> Void {
        let index = try Self.wrap { () throws(RouteNetlinkError) in try client.index(of: site.interface) }
        let own = reply.qdiscs.filter { $0.interfaceIndex == index }
        let expected = sitePlan.after
        func mismatch(_ difference: String) -> SandboxError { .conditionsMismatch(site: site.description, differences: [difference]) }
        var checks: [(TrafficControlHandle, TrafficControlHandle, NetemStack)] = []
        if let prio = expected.prio {
            let handle = Shape.prio(site.direction)
            guard let root = own.first(where: { $0.parent == .root }), root.kind == "prio", root.handle == handle else {
                throw mismatch("no prio qdisc \(handle) at the root after installing it")
            }
            let held = try Self.wrap { () throws(RouteNetlinkError) in try PrioOptions.decode(options: root.options) }
            if held != prio {
                throw mismatch(
                    "prio \(handle): sent bands \(prio.bands) priomap \(prio.priorityMap.map(String.init).joined(separator: " ")), "
                        + "kernel has bands \(held.bands) priomap \(held.priorityMap.map(String.init).joined(separator: " "))")
            }
            checks.append((expected.main!, Shape.main(site.direction), site.direction == .uplink ? plan.uplink : plan.downlink))
            if let dns = expected.dns { checks.append((dns, Shape.uplinkDNS, plan.uplinkDNS)) }
            if let dnsOnly = expected.dnsOnly { checks.append((dnsOnly, Shape.uplinkDNSOnly, plan.uplinkDNSOnly)) }
            if expected.untouched {
                let parent = Shape.untouchedClass(site.direction)
                guard own.contains(where: { $0.handle == Shape.untouched && $0.parent == parent && $0.kind == "pfifo" }) else {
                    throw mismatch("no pfifo qdisc \(Shape.untouched) under \(parent) after installing it")
                }
            }
        } else {
            checks.append((expected.root!, .root, plan.downlink))
        }
        for (handle, parent, sent) in checks {
            guard let qdisc = own.first(where: { $0.handle == handle }), qdisc.kind == "netem", qdisc.parent == parent else {
                throw mismatch("no netem qdisc \(handle) under \(parent) after installing it")
            }
            let read = try Self.wrap { () throws(RouteNetlinkError) in try NetemStackReading(netem: qdisc, among: own, clock: clock) }
            let differences = read.differences(sent: sent, frame: sitePlan.frame, clock: clock)
            if !differences.isEmpty {
                throw SandboxError.conditionsMismatch(site: site.description, differences: differences)
            }
        }
        let parent = Shape.prio(site.direction)
        for filter in sitePlan.filters {
            let echoes = reply.filters.filter { $0.interfaceIndex == index && $0.parent == parent && $0.priority == filter.priority }
            guard let echo = echoes.first else {
                throw mismatch("no u32 filter at prio \(filter.priority) (\(filter)) after installing it")
            }
            let held = U32Filter(
                protocolNumber: EtherType(rawValue: echo.protocolNumber), priority: echo.priority, keys: echo.keys,
                classID: echo.classID ?? .unspecified)
            if echo.kind != "u32" || !echo.isTerminal || held != filter {
                throw mismatch("u32 filter at prio \(filter.priority): sent \(filter), the kernel has \(echo.kind) \(held)\(echo.isTerminal ? "" : " (not terminal)")")
            }
            if echo.u32Node != 0x800 {
                if !fresh { throw Stale() }
                throw mismatch("u32 filter at prio \(filter.priority) shares its priority with another filter (handle node \(String(echo.u32Node, radix: 16)))")
            }
        }
    }
}

import CMnl
import Glibc
import Netlink
import NetlinkTesting
import RouteNetlink
import Synchronization

/// A namespace's traffic-control tables as the kernel keeps them, enough of `sch_api.c` to answer what
/// the netem backend sends: qdisc replace (with `NLM_F_EXCL` refusing a change in place), graft under a
/// prio class, delete, filter add, qdisc and filter dumps, and link look-ups by name. Dumps report a
/// qdisc's `TCA_OPTIONS` as they were sent, which netem's decoder reads as it reads the kernel's.
final class FakeTrafficControlKernel: @unchecked Sendable {
    struct Entry: Equatable {
        var index: Int32
        var handle: TrafficControlHandle
        var parent: TrafficControlHandle
        var kind: String
        var options: [UInt8]
    }

    struct Filter: Equatable {
        var index: Int32
        var parent: TrafficControlHandle
        var info: UInt32
        var classID: UInt32
        /// `HTID:HASH:NODE`: the priority's own hash table (800:, 801:, … in the order priorities were made)
        /// and the node (800, 801, … within the priority), as `cls_u32` numbers them.
        var handle: UInt32 = 0
        /// The `TCA_U32_SEL` payload as sent.
        var selector: [UInt8] = []

        var priority: UInt16 { UInt16(info >> 16) }
    }

    let port: UInt32
    private let lock = Mutex(())
    /// Interface name → index.
    var links: [String: Int32]
    var qdiscs: [Entry] = []
    var filters: [Filter] = []
    /// Qdisc kinds the "kernel" has (`sch_netem` missing is the host's case).
    var kinds: Set<String> = ["netem", "prio", "pfifo", "noqueue", "tbf", "bfifo", "pfifo_head_drop", "codel", "pie", "red"]
    /// Changes a stored qdisc's options, as a kernel that does not hold what it was sent.
    var tamper: ((inout Entry) -> Void)?
    /// Changes a filter as it is stored (and so as it is echoed and dumped).
    var tamperFilter: ((inout Filter) -> Void)?
    /// Acks a filter add without making the filter (no echo either): a filter that goes missing.
    var losesFilter: ((Filter) -> Bool)?
    /// The MTU every link reports.
    var mtu: UInt32 = 1500
    /// Hash table ids handed out per interface, as `cls_u32`'s per-qdisc counter does.
    private var nextTable: [Int32: UInt32] = [:]

    init(links: [String: Int32], port: UInt32 = 0x2000) {
        self.links = links
        self.port = port
    }

    /// A connection over a fake transport answered by this kernel.
    func connection(firstSequence: UInt32 = 1000) -> (NetlinkConnection, FakeTransport) {
        let transport = FakeTransport(portID: port, answeringEachMessage: { [self] message in lock.withLock { _ in answer(message) } })
        return (NetlinkConnection(transport: transport, firstSequence: firstSequence), transport)
    }

    private func refuse(_ message: SentMessage, _ code: Int32, _ text: String) -> [[UInt8]] {
        [errorReply(to: message.bytes, portID: port, errno: code, text: text)]
    }

    private func acked(_ message: SentMessage) -> [[UInt8]] {
        message.flags & UInt16(NLM_F_ACK) != 0 ? [ack(to: message.bytes, portID: port)] : []
    }

    private func answer(_ message: SentMessage) -> [[UInt8]] {
        let payload = message.payload
        switch Int32(message.type) {
        case Int32(RTM_GETLINK):
            var name = ""
            var attributes = AttributeDecoder(payload.dropFirst(MemoryLayout<ifinfomsg>.size), operation: "fake")
            while attributes.next() {
                if Int(attributes.type) == IFLA_IFNAME { name = attributes.string() }
            }
            guard let index = links[name] else { return refuse(message, ENODEV, "") }
            var info = ifinfomsg()
            info.ifi_index = index
            let reply = NetlinkTesting.message(
                type: UInt16(RTM_NEWLINK), sequence: message.sequence, portID: port,
                payload: rawBytes(of: info) + stringAttribute(UInt16(IFLA_IFNAME), name) + attribute(UInt16(IFLA_MTU), hostBytes(mtu)))
            return [reply] + acked(message)
        case Int32(RTM_GETQDISC):
            var dump: [UInt8] = []
            for (_, index) in links.sorted(by: { $0.value < $1.value }) {
                let own = qdiscs.filter { $0.index == index }
                let shown = own.isEmpty ? [Entry(index: index, handle: .unspecified, parent: .root, kind: "noqueue", options: [])] : own
                for entry in shown { dump += qdiscMessage(entry, sequence: message.sequence) }
            }
            return [dump + done(sequence: message.sequence, portID: port)]
        case Int32(RTM_GETTFILTER):
            let header = payload.load(tcmsg.self, at: 0)!
            var dump: [UInt8] = []
            for filter in filters where filter.index == header.tcm_ifindex && filter.parent.rawValue == header.tcm_parent {
                dump += filterMessage(filter, flags: flagMulti, sequence: message.sequence)
            }
            return [dump + done(sequence: message.sequence, portID: port)]
        case Int32(RTM_DELTFILTER):
            let header = payload.load(tcmsg.self, at: 0)!
            let priority = UInt16(header.tcm_info >> 16)
            let matching: (Filter) -> Bool = {
                $0.index == header.tcm_ifindex && $0.parent.rawValue == header.tcm_parent && $0.priority == priority
            }
            guard filters.contains(where: matching) else { return refuse(message, ENOENT, "Filter with specified priority/protocol not found") }
            filters.removeAll(where: matching)
            return acked(message)
        case Int32(RTM_NEWQDISC):
            return newQdisc(message)
        case Int32(RTM_DELQDISC):
            let header = payload.load(tcmsg.self, at: 0)!
            guard qdiscs.contains(where: { $0.index == header.tcm_ifindex }) else { return refuse(message, ENOENT, "Cannot find specified qdisc on specified device") }
            qdiscs.removeAll { $0.index == header.tcm_ifindex }
            filters.removeAll { $0.index == header.tcm_ifindex }
            return acked(message)
        case Int32(RTM_NEWTFILTER):
            let header = payload.load(tcmsg.self, at: 0)!
            guard links.values.contains(header.tcm_ifindex) else { return refuse(message, ENODEV, "") }
            guard qdiscs.contains(where: { $0.index == header.tcm_ifindex && $0.handle.rawValue == header.tcm_parent }) else {
                return refuse(message, EINVAL, "Parent Qdisc doesn't exists")
            }
            var classID: UInt32 = 0
            var selector: [UInt8] = []
            var attributes = AttributeDecoder(payload.dropFirst(MemoryLayout<tcmsg>.size), operation: "fake")
            while attributes.next() {
                guard Int(attributes.type) == TCA_OPTIONS else { continue }
                var options = attributes.nested()
                while options.next() {
                    if Int(options.type) == TCA_U32_CLASSID { classID = options.uint32() }
                    if Int(options.type) == TCA_U32_SEL { selector = Array(options.payload) }
                }
            }
            let parent = TrafficControlHandle(rawValue: header.tcm_parent)
            let priority = UInt16(header.tcm_info >> 16)
            let sameTree = filters.filter { $0.index == header.tcm_ifindex && $0.parent == parent && $0.priority == priority }
            if let first = sameTree.first, first.info & 0xffff != header.tcm_info & 0xffff {
                return refuse(message, EINVAL, "Filter with specified priority/protocol not found")
            }
            let table: UInt32
            if let first = sameTree.first {
                table = first.handle >> 20
            } else {
                table = nextTable[header.tcm_ifindex, default: 0x800]
                nextTable[header.tcm_ifindex] = table + 1
            }
            var filter = Filter(
                index: header.tcm_ifindex, parent: parent, info: header.tcm_info, classID: classID,
                handle: table << 20 | (0x800 + UInt32(sameTree.count)), selector: selector)
            if losesFilter?(filter) == true { return acked(message) }
            tamperFilter?(&filter)
            filters.append(filter)
            let echo = message.flags & UInt16(NLM_F_ECHO) != 0 ? [filterMessage(filter, flags: 0, sequence: message.sequence)] : []
            return echo + acked(message)
        default:
            return refuse(message, EOPNOTSUPP, "")
        }
    }

    private func newQdisc(_ message: SentMessage) -> [[UInt8]] {
        let header = message.payload.load(tcmsg.self, at: 0)!
        guard links.values.contains(header.tcm_ifindex) else { return refuse(message, ENODEV, "") }
        var kind = ""
        var options: [UInt8] = []
        var attributes = AttributeDecoder(message.payload.dropFirst(MemoryLayout<tcmsg>.size), operation: "fake")
        while attributes.next() {
            switch Int(attributes.type) {
            case TCA_KIND: kind = attributes.string()
            case TCA_OPTIONS: options = Array(attributes.payload)
            default: break
            }
        }
        guard kinds.contains(kind) else { return refuse(message, ENOENT, "Specified qdisc kind is unknown") }
        let index = header.tcm_ifindex
        let handle = TrafficControlHandle(rawValue: header.tcm_handle)
        let parent = TrafficControlHandle(rawValue: header.tcm_parent)
        let exclusive = message.flags & UInt16(NLM_F_EXCL) != 0
        if parent != .root {
            guard let owner = qdiscs.first(where: { $0.index == index && $0.handle.major == parent.major && ["prio", "netem", "tbf"].contains($0.kind) })
            else {
                return refuse(message, ENOENT, "Failed to find specified qdisc")
            }
            // netem and tbf have one class (the kernel's netem_find and tbf_find answer any minor; linkcond sends :1).
            let bands = owner.kind == "prio" ? (try? PrioOptions.decode(options: owner.options).bands) : 1
            guard let bands, Int32(parent.minor) <= bands, parent.minor > 0 else {
                return refuse(message, ENOENT, "Specified class not found")
            }
        }
        if let current = qdiscs.firstIndex(where: { $0.index == index && $0.parent == parent }), qdiscs[current].handle == handle {
            if exclusive { return refuse(message, EEXIST, "Exclusivity flag on, cannot modify") }
            if qdiscs[current].kind != kind { return refuse(message, EINVAL, "Invalid qdisc name: must match existing qdisc") }
            qdiscs[current].options = options  // a change in place
            if kind == "prio", let bands = try? PrioOptions.decode(options: options).bands {
                // Bands beyond the new count go, with their leaves (prio_tune).
                removeSubtrees(index) { $0.parent.major == handle.major && Int32($0.parent.minor) > bands }
            }
        } else {
            if parent == .root {
                qdiscs.removeAll { $0.index == index }
                filters.removeAll { $0.index == index }
            } else {
                removeSubtrees(index) { $0.parent == parent }
            }
            var entry = Entry(index: index, handle: handle, parent: parent, kind: kind, options: options)
            tamper?(&entry)
            qdiscs.append(entry)
        }
        return acked(message)
    }

    /// Removes the qdiscs of interface `index` that `matching` picks, with every qdisc below them (a grafted
    /// qdisc's old tree goes with it, as `qdisc_put` destroys it).
    private func removeSubtrees(_ index: Int32, _ matching: (Entry) -> Bool) {
        var gone = Set(qdiscs.filter { $0.index == index && matching($0) }.map(\.handle.major))
        while true {
            let below = Set(qdiscs.filter { $0.index == index && gone.contains($0.parent.major) && $0.parent != .root }.map(\.handle.major))
            if below.isSubset(of: gone) { break }
            gone.formUnion(below)
        }
        qdiscs.removeAll { $0.index == index && gone.contains($0.handle.major) }
    }

    /// `RTM_NEWTFILTER` for `filter`, as `tcf_fill_node` writes a u32 knode: the handle, priority and
    /// protocol in the header, `TCA_KIND` "u32", and `TCA_OPTIONS` with the selector and the class.
    private func filterMessage(_ filter: Filter, flags: UInt16, sequence: UInt32) -> [UInt8] {
        var out = tcmsg()
        out.tcm_ifindex = filter.index
        out.tcm_parent = filter.parent.rawValue
        out.tcm_handle = filter.handle
        out.tcm_info = filter.info
        var inner: [UInt8] = []
        if !filter.selector.isEmpty { inner += attribute(UInt16(TCA_U32_SEL), filter.selector) }
        inner += attribute(UInt16(TCA_U32_CLASSID), hostBytes(filter.classID))
        return NetlinkTesting.message(
            type: UInt16(RTM_NEWTFILTER), flags: flags, sequence: sequence, portID: port,
            payload: rawBytes(of: out) + stringAttribute(UInt16(TCA_KIND), "u32") + attribute(UInt16(TCA_OPTIONS), inner))
    }

    /// The filters of interface `index` as a dump would report them, in priority order.
    func reported(_ index: Int32) throws -> [TrafficFilter] {
        try filters.filter { $0.index == index }.sorted { $0.priority < $1.priority }.map { filter in
            try TrafficFilter.decode(try NetlinkMessage.parse(datagram: filterMessage(filter, flags: 0, sequence: 1))[0])
        }
    }

    /// The filters of interface `index`, one entry per priority, in priority order.
    func priorities(_ index: Int32) -> [UInt16] { Set(filters.filter { $0.index == index }.map(\.priority)).sorted() }

    private func qdiscMessage(_ entry: Entry, sequence: UInt32) -> [UInt8] {
        var header = tcmsg()
        header.tcm_ifindex = entry.index
        header.tcm_handle = entry.handle.rawValue
        header.tcm_parent = entry.parent.rawValue
        var payload = rawBytes(of: header) + stringAttribute(UInt16(TCA_KIND), entry.kind)
        if !entry.options.isEmpty { payload += attribute(UInt16(TCA_OPTIONS), entry.options) }
        return NetlinkTesting.message(type: UInt16(RTM_NEWQDISC), flags: flagMulti, sequence: sequence, portID: port, payload: payload)
    }
}

import CMnl
import Glibc
import Netlink

/// One traffic-control change of a batch (``RouteNetlinkClient/send(_:readingBack:)``).
public enum TrafficControlChange: Sendable {
    /// `tc qdisc replace dev INTERFACE {root | parent PARENT} handle HANDLE KIND …`; with `graft: true`, a
    /// new qdisc only (`NLM_F_EXCL`, see ``QdiscRequest/replace(interfaceIndex:handle:parent:options:graft:)``).
    case replaceQdisc(interface: String, handle: TrafficControlHandle, parent: TrafficControlHandle, options: QdiscOptions, graft: Bool)
    /// `tc qdisc del dev INTERFACE root`.
    case deleteRootQdisc(interface: String)
    /// `tc filter add dev INTERFACE parent PARENT protocol P prio N u32 match … flowid CLASS`.
    case addFilter(U32Filter, interface: String, parent: TrafficControlHandle)
    /// The same request with `NLM_F_ECHO` (``FilterRequest/add(_:interfaceIndex:parent:echo:)``): the
    /// filter the kernel made comes back in ``TrafficControlReply/filters``.
    case addFilterReadingBack(U32Filter, interface: String, parent: TrafficControlHandle)
    /// `tc filter del dev INTERFACE parent PARENT prio N`: every filter of that priority.
    case deleteFilters(interface: String, parent: TrafficControlHandle, priority: UInt16)

    /// The interface the change is made on.
    public var interface: String {
        switch self {
        case let .replaceQdisc(interface, _, _, _, _), let .deleteRootQdisc(interface), let .addFilter(_, interface, _),
            let .addFilterReadingBack(_, interface, _), let .deleteFilters(interface, _, _):
            interface
        }
    }
}

/// The kernel's answers to a batch of traffic-control changes.
public struct TrafficControlReply: Sendable {
    /// Each change's outcome, in the order sent: the kernel handles every change of a batch, refused or not.
    public var outcomes: [Result<Void, RouteNetlinkError>]
    /// Every qdisc of the namespace as the kernel reported it right after the changes (`tc -s qdisc show`),
    /// empty when the batch did not read back.
    public var qdiscs: [Qdisc]
    /// The filters the kernel reported back for ``TrafficControlChange/addFilterReadingBack(_:interface:parent:)``
    /// changes, as it made them, in the order it sent them.
    public var filters: [TrafficFilter] = []

    /// The first refusal, if any.
    public var firstError: RouteNetlinkError? {
        for outcome in outcomes {
            if case let .failure(error) = outcome { return error }
        }
        return nil
    }
}

extension RouteNetlinkClient {
    // MARK: Qdiscs

    /// Installs or replaces a qdisc. Equivalent to
    /// `tc qdisc replace dev NAME {root | parent PARENT} handle HANDLE KIND [options]`; the operation's name
    /// is written from `options`, the values that are encoded.
    public func replaceQdisc(
        on name: String, handle: TrafficControlHandle, parent: TrafficControlHandle = .root, options: QdiscOptions
    ) throws(RouteNetlinkError) {
        let change = TrafficControlChange.replaceQdisc(interface: name, handle: handle, parent: parent, options: options, graft: false)
        try send(on: name, operation(change)) { message(change, index: $0) }
    }

    /// Installs or replaces a qdisc that takes no options. Equivalent to
    /// `tc qdisc replace dev NAME {root | parent PARENT} handle HANDLE KIND`.
    public func replaceQdisc(on name: String, handle: TrafficControlHandle, parent: TrafficControlHandle = .root, kind: String) throws(RouteNetlinkError) {
        try replaceQdisc(on: name, handle: handle, parent: parent, options: .bare(kind))
    }

    /// Removes the root qdisc of a link (the kernel puts its default back). Equivalent to
    /// `tc qdisc del dev NAME root`.
    public func deleteRootQdisc(on name: String) throws(RouteNetlinkError) {
        let change = TrafficControlChange.deleteRootQdisc(interface: name)
        try send(on: name, operation(change)) { message(change, index: $0) }
    }

    /// Every qdisc with its counters. Equivalent to `tc -s qdisc show`.
    public func qdiscs() throws(RouteNetlinkError) -> [Qdisc] {
        try Self.decodeQdiscs(try dump(QdiscRequest.dump(), qdiscDumpOperation))
    }

    var qdiscDumpOperation: String { "\(tcPrefix) -s qdisc show" }

    static func decodeQdiscs(_ messages: [NetlinkMessage]) throws(RouteNetlinkError) -> [Qdisc] {
        var qdiscs: [Qdisc] = []
        for message in messages where message.type == UInt16(RTM_NEWQDISC) {
            qdiscs.append(try Qdisc.decode(message))
        }
        return qdiscs
    }

    // MARK: Filters

    /// Attaches a u32 filter. Equivalent to
    /// `tc filter add dev NAME parent PARENT protocol P prio N u32 match … flowid CLASS`.
    public func addFilter(_ filter: U32Filter, on name: String, parent: TrafficControlHandle) throws(RouteNetlinkError) {
        let change = TrafficControlChange.addFilter(filter, interface: name, parent: parent)
        try send(on: name, operation(change)) { message(change, index: $0) }
    }

    /// Removes every filter of priority `priority` attached to `parent` on a link. Equivalent to
    /// `tc filter del dev NAME parent PARENT prio N`.
    public func deleteFilters(on name: String, parent: TrafficControlHandle, priority: UInt16) throws(RouteNetlinkError) {
        let change = TrafficControlChange.deleteFilters(interface: name, parent: parent, priority: priority)
        try send(on: name, operation(change)) { message(change, index: $0) }
    }

    /// The filters attached to `parent` on a link. Equivalent to `tc filter show dev NAME parent PARENT`.
    public func filters(on name: String, parent: TrafficControlHandle) throws(RouteNetlinkError) -> [TrafficFilter] {
        let index = try index(of: name)
        var filters: [TrafficFilter] = []
        for message in try dump(FilterRequest.dump(interfaceIndex: index, parent: parent), "\(tcPrefix) filter show dev \(name) parent \(parent)")
        where message.type == UInt16(RTM_NEWTFILTER) {
            filters.append(try TrafficFilter.decode(message))
        }
        return filters
    }

    // MARK: Batches

    /// Sends `changes` in one datagram, each with its own ack, and with `readingBack` a qdisc dump after
    /// them in the same datagram, so the whole batch costs one round trip to the kernel. Equivalent to the
    /// `tc` commands of the changes run one after the other, then `tc -s qdisc show`
    /// (`tc -batch` sends them one by one).
    ///
    /// The kernel handles every change even after a refusal; each change's outcome is returned. A change on
    /// a vouched-for index the kernel does not know (`ENODEV`) is sent once more with the index looked up.
    /// Throws only what concerns the whole batch (an interface that does not exist, a failed read-back).
    public func send(_ changes: [TrafficControlChange], readingBack: Bool) throws(RouteNetlinkError) -> TrafficControlReply {
        // Each change's index, each interface resolved once (a batch names one or two interfaces: a linear
        // search beats building a dictionary).
        var names: [String] = []
        var resolved: [(index: Int32, vouched: Bool)] = []
        var indexes: [Int32] = []
        indexes.reserveCapacity(changes.count)
        for change in changes {
            let name = change.interface
            if let known = names.firstIndex(of: name) {
                indexes.append(resolved[known].index)
            } else {
                let (index, vouched) = try resolve(name)
                names.append(name)
                resolved.append((index, vouched))
                indexes.append(index)
            }
        }
        var reply = try exchange(changes, indexes: indexes, readingBack: readingBack)
        var stale: [Int] = []
        for (position, outcome) in reply.outcomes.enumerated() {
            guard case let .failure(error) = outcome, error.errno == ENODEV,
                let known = names.firstIndex(of: changes[position].interface), resolved[known].vouched
            else { continue }
            stale.append(position)
        }
        guard !stale.isEmpty else { return reply }
        for name in Set(stale.map { changes[$0].interface }) {
            forget(name)
            let index = try index(of: name)
            for position in changes.indices where changes[position].interface == name { indexes[position] = index }
        }
        let again = try exchange(stale.map { changes[$0] }, indexes: stale.map { indexes[$0] }, readingBack: readingBack)
        for (position, outcome) in zip(stale, again.outcomes) { reply.outcomes[position] = outcome }
        reply.filters += again.filters
        if readingBack { reply.qdiscs = again.qdiscs }
        return reply
    }

    /// The datagram ``send(_:readingBack:)`` would send for `changes` (flags added, sequence numbers zero),
    /// for benchmarks that replay the same requests from elsewhere (linkcond-bench's libmnl floor).
    public func datagram(for changes: [TrafficControlChange], readingBack: Bool) throws(RouteNetlinkError) -> [UInt8] {
        var bytes: [UInt8] = []
        for change in changes {
            let message = message(change, index: try resolve(change.interface).0)
            message.flags |= UInt16(NLM_F_REQUEST | NLM_F_ACK)
            bytes += try Self.finish(message)
        }
        if readingBack {
            let dump = QdiscRequest.dump()
            dump.flags |= UInt16(NLM_F_REQUEST | NLM_F_DUMP)
            bytes += try Self.finish(dump)
        }
        return bytes
    }

    private static func finish(_ message: NetlinkMessageBuilder) throws(RouteNetlinkError) -> [UInt8] {
        do {
            return try message.finish()
        } catch {
            throw .netlink(error)
        }
    }

    /// Sends `changes`, each on the interface index at the same position of `indexes`.
    private func exchange(_ changes: [TrafficControlChange], indexes: [Int32], readingBack: Bool) throws(RouteNetlinkError) -> TrafficControlReply {
        var requests: [NetlinkRequest] = []
        requests.reserveCapacity(changes.count + 1)
        for (change, index) in zip(changes, indexes) {
            requests.append(NetlinkRequest(message(change, index: index), operation: self.operation(change)))
        }
        if readingBack { requests.append(NetlinkRequest(QdiscRequest.dump(), operation: self.qdiscDumpOperation, answer: .dump)) }
        let results: [Result<[NetlinkMessage], NetlinkError>]
        do {
            results = try connection.send(requests)
        } catch {
            throw .netlink(error)
        }
        var reply = TrafficControlReply(outcomes: [], qdiscs: [])
        reply.outcomes.reserveCapacity(changes.count)
        for result in results.prefix(changes.count) {
            switch result {
            case let .success(messages):
                reply.outcomes.append(.success(()))
                for message in messages where message.type == UInt16(RTM_NEWTFILTER) {
                    reply.filters.append(try TrafficFilter.decode(message))
                }
            case let .failure(error): reply.outcomes.append(.failure(.netlink(error)))
            }
        }
        if readingBack, let dumped = results.last {
            switch dumped {
            case let .success(messages): reply.qdiscs = try Self.decodeQdiscs(messages)
            case let .failure(error): throw .netlink(error)
            }
        }
        return reply
    }

    private func message(_ change: TrafficControlChange, index: Int32) -> NetlinkMessageBuilder {
        switch change {
        case let .replaceQdisc(_, handle, parent, options, graft):
            QdiscRequest.replace(interfaceIndex: index, handle: handle, parent: parent, options: options, graft: graft)
        case .deleteRootQdisc:
            QdiscRequest.delete(interfaceIndex: index)
        case let .addFilter(filter, _, parent):
            FilterRequest.add(filter, interfaceIndex: index, parent: parent)
        case let .addFilterReadingBack(filter, _, parent):
            FilterRequest.add(filter, interfaceIndex: index, parent: parent, echo: true)
        case let .deleteFilters(_, parent, priority):
            FilterRequest.delete(interfaceIndex: index, parent: parent, priority: priority)
        }
    }

    /// The change as the `tc` command that sends the same request (a graft, which tc cannot spell, says so).
    func operation(_ change: TrafficControlChange) -> String {
        switch change {
        case let .replaceQdisc(name, handle, parent, options, graft):
            let parentText = parent == .root ? "root" : "parent \(parent)"
            return "\(tcPrefix) qdisc replace dev \(name) \(parentText) handle \(handle) \(options.text)" + (graft ? " (as a new qdisc)" : "")
        case let .deleteRootQdisc(name):
            return "\(tcPrefix) qdisc del dev \(name) root"
        case let .addFilter(filter, name, parent):
            return "\(tcPrefix) filter add dev \(name) parent \(parent) \(filter)"
        case let .addFilterReadingBack(filter, name, parent):
            return "\(tcPrefix) filter add dev \(name) parent \(parent) \(filter) (echoed back)"
        case let .deleteFilters(name, parent, priority):
            return "\(tcPrefix) filter del dev \(name) parent \(parent) prio \(priority)"
        }
    }
}

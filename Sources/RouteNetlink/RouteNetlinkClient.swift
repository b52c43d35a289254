import CMnl
import Glibc
import LinkcondBase
import Netlink

/// A network namespace as the target of a request: an open descriptor of `/run/netns/NAME` and the name,
/// for messages. The descriptor is borrowed, not owned.
public struct NamespaceDescriptor: Sendable {
    public var fileDescriptor: Int32
    public var name: String

    public init(fileDescriptor: Int32, name: String) {
        self.fileDescriptor = fileDescriptor
        self.name = name
    }
}

/// Typed rtnetlink for one network namespace: links, addresses, routes and qdiscs.
///
/// The namespace is the one the connection's socket was opened in. Every operation is one netlink request
/// with an ack; a refusal comes back as ``RouteNetlinkError/netlink(_:)`` carrying the kernel's own words
/// and an operation named like the equivalent `ip`/`tc` command (`ip -n lc-client link set dev wl0 up`).
public final class RouteNetlinkClient: Sendable {
    /// The connection requests go through.
    public let connection: NetlinkConnection
    /// The namespace's name (`lc-client`), or nil for the host's own namespace.
    public let namespace: String?

    public init(connection: NetlinkConnection, namespace: String?) {
        self.connection = connection
        self.namespace = namespace
    }

    private var ipPrefix: String { namespace.map { "ip -n \($0)" } ?? "ip" }
    private var tcPrefix: String { namespace.map { "tc -n \($0)" } ?? "tc" }
    private var namespaceText: String { namespace ?? "the host namespace" }

    private func send(_ message: NetlinkMessageBuilder, _ operation: String) throws(RouteNetlinkError) {
        do {
            try connection.request(message, operation: operation)
        } catch {
            throw .netlink(error)
        }
    }

    private func dump(_ message: NetlinkMessageBuilder, _ operation: String) throws(RouteNetlinkError) -> [NetlinkMessage] {
        do {
            return try connection.dump(message, operation: operation)
        } catch {
            throw .netlink(error)
        }
    }

    private static func checkName(_ name: String) throws(RouteNetlinkError) {
        // IFNAMSIZ is 16 including the NUL; the kernel also refuses '/', ':' and white space.
        guard !name.isEmpty, name.utf8.count < 16, !name.contains(where: { $0 == "/" || $0 == ":" || $0.isWhitespace }) else {
            throw .invalidArgument("'\(name)' is not a valid interface name (1 to 15 bytes, no '/', ':' or spaces)")
        }
    }

    // MARK: Links

    /// Every link in the namespace. Equivalent to `ip link show`.
    public func links() throws(RouteNetlinkError) -> [Link] {
        var links: [Link] = []
        for message in try dump(LinkRequest.dump(), "\(ipPrefix) link show") where message.type == UInt16(RTM_NEWLINK) {
            links.append(try Link.decode(message))
        }
        return links
    }

    /// The link called `name`. Equivalent to `ip link show dev NAME`.
    public func link(named name: String) throws(RouteNetlinkError) -> Link {
        try Self.checkName(name)
        let replies: [NetlinkMessage]
        do {
            replies = try connection.request(LinkRequest.get(name: name), operation: "\(ipPrefix) link show dev \(name)")
        } catch where error.kind == .kernel && error.errno == ENODEV {
            throw .noSuchInterface(name: name, namespace: namespaceText)
        } catch {
            throw .netlink(error)
        }
        guard let reply = replies.first(where: { $0.type == UInt16(RTM_NEWLINK) }) else {
            throw .noSuchInterface(name: name, namespace: namespaceText)
        }
        return try Link.decode(reply)
    }

    /// The index of the link called `name`.
    public func index(of name: String) throws(RouteNetlinkError) -> Int32 {
        try link(named: name).index
    }

    /// Creates a veth pair. Equivalent to
    /// `ip link add NAME [netns NS] type veth peer name PEER [netns PEERNS]`.
    ///
    /// Each end can be created directly in another namespace, so neither end ever appears in the
    /// namespace the request is sent from.
    ///
    /// `index` and `peerIndex` request interface indexes (0: the kernel picks). Giving the two ends
    /// different indexes matters when they live in different namespaces: the kernel treats a veth's
    /// carrier change as urgent only when its index differs from its peer's (`linkwatch_urgent_event`),
    /// and otherwise batches the notification for up to a second.
    public func createVeth(
        name: String, index: Int32 = 0, in target: NamespaceDescriptor? = nil, peerName: String, peerIndex: Int32 = 0,
        peerIn peerTarget: NamespaceDescriptor? = nil
    ) throws(RouteNetlinkError) {
        try Self.checkName(name)
        try Self.checkName(peerName)
        var operation = "\(ipPrefix) link add \(name)"
        if index != 0 { operation += " index \(index)" }
        if let target { operation += " netns \(target.name)" }
        operation += " type veth peer name \(peerName)"
        if peerIndex != 0 { operation += " index \(peerIndex)" }
        if let peerTarget { operation += " netns \(peerTarget.name)" }
        let message = LinkRequest.createVeth(
            name: name, index: index, namespaceFD: target?.fileDescriptor, peerName: peerName, peerIndex: peerIndex,
            peerNamespaceFD: peerTarget?.fileDescriptor)
        try send(message, operation)
    }

    /// Creates a link of a kind that needs no further data. Equivalent to `ip link add NAME type KIND`
    /// (e.g. `ifb`, `dummy`).
    public func createLink(name: String, kind: String) throws(RouteNetlinkError) {
        try Self.checkName(name)
        try send(LinkRequest.create(name: name, kind: kind), "\(ipPrefix) link add \(name) type \(kind)")
    }

    /// Sets a link up or down. Equivalent to `ip link set dev NAME up|down`.
    public func setLink(_ name: String, up: Bool) throws(RouteNetlinkError) {
        let index = try index(of: name)
        try send(LinkRequest.setUp(index: index, up), "\(ipPrefix) link set dev \(name) \(up ? "up" : "down")")
    }

    /// Renames a link. Equivalent to `ip link set dev NAME name NEWNAME` (older kernels want the link down first).
    public func renameLink(_ name: String, to newName: String) throws(RouteNetlinkError) {
        try Self.checkName(newName)
        let index = try index(of: name)
        try send(LinkRequest.rename(index: index, to: newName), "\(ipPrefix) link set dev \(name) name \(newName)")
    }

    /// Moves a link to another namespace. Equivalent to `ip link set dev NAME netns NS`.
    public func moveLink(_ name: String, to target: NamespaceDescriptor) throws(RouteNetlinkError) {
        let index = try index(of: name)
        try send(
            LinkRequest.move(index: index, toNamespaceFD: target.fileDescriptor),
            "\(ipPrefix) link set dev \(name) netns \(target.name)")
    }

    /// Deletes a link (both ends, for a veth). Equivalent to `ip link del dev NAME`.
    public func deleteLink(_ name: String) throws(RouteNetlinkError) {
        let index = try index(of: name)
        try send(LinkRequest.delete(index: index), "\(ipPrefix) link del dev \(name)")
    }

    // MARK: Addresses

    /// Adds an address. Equivalent to `ip addr add PREFIX dev NAME [nodad]`.
    public func addAddress(_ prefix: IPPrefix, to name: String, noDAD: Bool = false) throws(RouteNetlinkError) {
        let index = try index(of: name)
        try send(
            AddressRequest.add(prefix, interfaceIndex: index, noDAD: noDAD),
            "\(ipPrefix) addr add \(prefix) dev \(name)\(noDAD ? " nodad" : "")")
    }

    /// Removes an address. Equivalent to `ip addr del PREFIX dev NAME`.
    public func deleteAddress(_ prefix: IPPrefix, from name: String) throws(RouteNetlinkError) {
        let index = try index(of: name)
        try send(AddressRequest.delete(prefix, interfaceIndex: index), "\(ipPrefix) addr del \(prefix) dev \(name)")
    }

    /// Every address in the namespace. Equivalent to `ip addr show`.
    public func addresses() throws(RouteNetlinkError) -> [InterfaceAddress] {
        var addresses: [InterfaceAddress] = []
        for message in try dump(AddressRequest.dump(), "\(ipPrefix) addr show") where message.type == UInt16(RTM_NEWADDR) {
            addresses.append(try InterfaceAddress.decode(message))
        }
        return addresses
    }

    // MARK: Routes

    private func routeText(_ verb: String, _ destination: IPPrefix?, _ gateway: IPAddress?, _ name: String, _ metric: UInt32?, _ family: AddressFamily) -> String {
        var text = ipPrefix + (family == .inet6 ? " -6" : "") + " route \(verb) \(destination.map(\.description) ?? "default")"
        if let gateway { text += " via \(gateway)" }
        text += " dev \(name)"
        if let metric { text += " metric \(metric)" }
        return text
    }

    private static func family(_ destination: IPPrefix?, _ gateway: IPAddress?) throws(RouteNetlinkError) -> AddressFamily {
        switch (destination?.address.family, gateway?.family) {
        case let (d?, g?) where d != g: throw .invalidArgument("destination \(destination!) and gateway \(gateway!) are of different families")
        case let (d?, _): return d
        case let (nil, g?): return g
        case (nil, nil): throw .invalidArgument("a route needs a destination or a gateway to know its family")
        }
    }

    /// Adds a route in table main. Equivalent to
    /// `ip route add {default | PREFIX} [via GATEWAY] dev NAME [metric METRIC]`.
    /// A default route is given as `destination: nil` and takes its family from the gateway.
    public func addRoute(destination: IPPrefix?, gateway: IPAddress?, interface name: String, metric: UInt32? = nil) throws(RouteNetlinkError) {
        let family = try Self.family(destination, gateway)
        let index = try index(of: name)
        try send(
            RouteRequest.add(destination: destination, gateway: gateway, interfaceIndex: index, metric: metric, family: family),
            routeText("add", destination, gateway, name, metric, family))
    }

    /// Deletes a route from table main. Equivalent to
    /// `ip route del {default | PREFIX} [via GATEWAY] dev NAME [metric METRIC]`.
    public func deleteRoute(destination: IPPrefix?, gateway: IPAddress?, interface name: String, metric: UInt32? = nil) throws(RouteNetlinkError) {
        let family = try Self.family(destination, gateway)
        let index = try index(of: name)
        try send(
            RouteRequest.delete(destination: destination, gateway: gateway, interfaceIndex: index, metric: metric, family: family),
            routeText("del", destination, gateway, name, metric, family))
    }

    /// Every route of `family` in every table. Equivalent to `ip route show table all`.
    public func routes(family: AddressFamily? = nil) throws(RouteNetlinkError) -> [Route] {
        var routes: [Route] = []
        for message in try dump(RouteRequest.dump(family: family), "\(ipPrefix) route show table all") where message.type == UInt16(RTM_NEWROUTE) {
            routes.append(try Route.decode(message))
        }
        return routes
    }

    // MARK: Qdiscs

    /// Installs or replaces a qdisc. Equivalent to
    /// `tc qdisc replace dev NAME {root | parent PARENT} handle HANDLE KIND [options]`.
    public func replaceQdisc(
        on name: String, handle: TrafficControlHandle, parent: TrafficControlHandle = .root, kind: String,
        optionsText: String = "", options: ((NetlinkMessageBuilder) -> Void)? = nil
    ) throws(RouteNetlinkError) {
        let index = try index(of: name)
        let parentText = parent == .root ? "root" : "parent \(parent)"
        try send(
            QdiscRequest.replace(interfaceIndex: index, handle: handle, parent: parent, kind: kind, options: options),
            "\(tcPrefix) qdisc replace dev \(name) \(parentText) handle \(handle) \(kind)\(optionsText.isEmpty ? "" : " " + optionsText)")
    }

    /// Removes the root qdisc of a link (the kernel puts its default back). Equivalent to
    /// `tc qdisc del dev NAME root`.
    public func deleteRootQdisc(on name: String) throws(RouteNetlinkError) {
        let index = try index(of: name)
        try send(QdiscRequest.delete(interfaceIndex: index), "\(tcPrefix) qdisc del dev \(name) root")
    }

    /// Every qdisc with its counters. Equivalent to `tc -s qdisc show`.
    public func qdiscs() throws(RouteNetlinkError) -> [Qdisc] {
        var qdiscs: [Qdisc] = []
        for message in try dump(QdiscRequest.dump(), "\(tcPrefix) -s qdisc show") where message.type == UInt16(RTM_NEWQDISC) {
            qdiscs.append(try Qdisc.decode(message))
        }
        return qdiscs
    }

    // MARK: Filters

    /// Attaches a u32 filter. Equivalent to
    /// `tc filter add dev NAME parent PARENT protocol P prio N u32 match … flowid CLASS`.
    public func addFilter(_ filter: U32Filter, on name: String, parent: TrafficControlHandle) throws(RouteNetlinkError) {
        let index = try index(of: name)
        let protocolName = filter.protocolNumber == .ipv6 ? "ipv6" : (filter.protocolNumber == .ipv4 ? "ip" : String(filter.protocolNumber.rawValue, radix: 16))
        try send(
            FilterRequest.add(filter, interfaceIndex: index, parent: parent),
            "\(tcPrefix) filter add dev \(name) parent \(parent) protocol \(protocolName) prio \(filter.priority) u32 flowid \(filter.classID)")
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
}

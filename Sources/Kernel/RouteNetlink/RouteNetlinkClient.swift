import CMnl
import Glibc
import LinkcondBase
import LinkcondSystem
import Netlink
import Synchronization

/// A network namespace as the target of a request: an open descriptor of `/run/netns/NAME` and the name,
/// for messages. The descriptor is borrowed, not owned.
public struct NamespaceDescriptor: Sendable {
    /// An open descriptor of `/run/netns/NAME` (`IFLA_NET_NS_FD`), borrowed.
    public var fileDescriptor: Int32
    /// The namespace's name, for operation names (`netns NAME`).
    public var name: String

    /// The namespace open as `fileDescriptor`, called `name`.
    public init(fileDescriptor: Int32, name: String) {
        self.fileDescriptor = fileDescriptor
        self.name = name
    }
}

/// Typed rtnetlink for one network namespace: links, addresses, routes, qdiscs and filters.
///
/// The namespace is the one the connection's socket was opened in. Every operation is one netlink request
/// with an ack (or a batch of them, ``send(_:readingBack:)``); a refusal comes back as
/// ``RouteNetlinkError/netlink(_:)`` carrying the kernel's own words and an operation named like the
/// equivalent `ip`/`tc` command (`ip -n lc-client link set dev wl0 up`).
///
/// Operations name interfaces; the kernel wants indexes. An index the caller vouches for
/// (`interfaceIndexes`, e.g. the sandbox's fixed ones) is used as it is; any other name is looked up with
/// one `RTM_GETLINK` first. When the kernel answers `ENODEV` for a vouched-for index, the name is looked
/// up and the request sent once more, so a stale index costs a round trip, never a wrong answer.
public final class RouteNetlinkClient: Sendable {
    /// The connection requests go through.
    public let connection: NetlinkConnection
    /// The namespace's name (`lc-client`), or nil for the host's own namespace.
    public let namespace: String?
    private let knownIndexes: Mutex<[String: Int32]>

    /// A client sending on `connection`, whose socket lives in `namespace` (nil: the host's own).
    /// `interfaceIndexes` are indexes the caller knows (name → index); they spare a look-up each.
    public init(connection: NetlinkConnection, namespace: String?, interfaceIndexes: [String: Int32] = [:]) {
        self.connection = connection
        self.namespace = namespace
        knownIndexes = Mutex(interfaceIndexes)
    }

    /// A client for `namespace` on the connection `connections` yields for it.
    public convenience init(
        namespace: String?, connections: any NetlinkConnectionFactory, interfaceIndexes: [String: Int32] = [:]
    ) throws(RouteNetlinkError) {
        let connection: NetlinkConnection
        do {
            connection = try connections.connection(namespace: namespace)
        } catch {
            throw .netlink(error)
        }
        self.init(connection: connection, namespace: namespace, interfaceIndexes: interfaceIndexes)
    }

    /// A client over `socket`, a `NETLINK_ROUTE` socket opened in `namespace` (nil: the host's own) by
    /// `NetNamespace`'s socket factory.
    public convenience init(adopting socket: consuming OwnedSocket, namespace: String?, interfaceIndexes: [String: Int32] = [:]) throws(RouteNetlinkError) {
        let connection: NetlinkConnection
        do {
            connection = try NetlinkConnection(adopting: socket)
        } catch {
            throw .netlink(error)
        }
        self.init(connection: connection, namespace: namespace, interfaceIndexes: interfaceIndexes)
    }

    var ipPrefix: String { namespace.map { "ip -n \($0)" } ?? "ip" }
    var tcPrefix: String { namespace.map { "tc -n \($0)" } ?? "tc" }
    var namespaceText: String { namespace ?? "the host namespace" }

    func send(_ message: NetlinkMessageBuilder, _ operation: String) throws(RouteNetlinkError) {
        do {
            try connection.request(message, operation: operation)
        } catch {
            throw .netlink(error)
        }
    }

    func dump(_ message: NetlinkMessageBuilder, _ operation: String) throws(RouteNetlinkError) -> [NetlinkMessage] {
        do {
            return try connection.dump(message, operation: operation)
        } catch {
            throw .netlink(error)
        }
    }

    /// Sends the request `build` makes for the index of `name`. A vouched-for index the kernel does not
    /// know (`ENODEV`) is forgotten, the name looked up, and the request sent once more.
    func send(on name: String, _ operation: String, _ build: (Int32) -> NetlinkMessageBuilder) throws(RouteNetlinkError) {
        let (index, vouched) = try resolve(name)
        do {
            try connection.request(build(index), operation: operation)
        } catch where vouched && error.kind == .kernel && error.errno == ENODEV {
            forget(name)
            try send(build(try self.index(of: name)), operation)
        } catch {
            throw .netlink(error)
        }
    }

    /// The index of `name` and whether it came from the vouched-for table rather than the kernel.
    func resolve(_ name: String) throws(RouteNetlinkError) -> (Int32, Bool) {
        if let known = knownIndexes.withLock({ $0[name] }) { return (known, true) }
        return (try link(named: name).index, false)
    }

    func forget(_ name: String) {
        _ = knownIndexes.withLock { $0.removeValue(forKey: name) }
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

    /// The link called `name`, asked for as iproute2 asks (one `RTM_GETLINK` by name, no ack).
    /// Equivalent to `ip link show dev NAME`.
    public func link(named name: String) throws(RouteNetlinkError) -> Link {
        try Self.checkName(name)
        let replies: [NetlinkMessage]
        do {
            replies = try connection.get(LinkRequest.get(name: name), operation: "\(ipPrefix) link show dev \(name)")
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

    /// The index of the link called `name`: the vouched-for one, or the kernel's answer to
    /// `ip link show dev NAME`.
    public func index(of name: String) throws(RouteNetlinkError) -> Int32 {
        try resolve(name).0
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
    ///
    /// `peer` gives the peer its hardware address, MTU and queue length from the start
    /// (`peer name PEER address MAC mtu MTU txqueuelen LEN`).
    public func createVeth(
        name: String, index: Int32 = 0, in target: NamespaceDescriptor? = nil, peerName: String, peerIndex: Int32 = 0,
        peerIn peerTarget: NamespaceDescriptor? = nil, peer: VethPeerSettings = VethPeerSettings()
    ) throws(RouteNetlinkError) {
        try Self.checkName(name)
        try Self.checkName(peerName)
        if let address = peer.hardwareAddress, address.count != 6 {
            throw .invalidArgument("a veth's hardware address has 6 bytes, not \(address.count)")
        }
        var operation = "\(ipPrefix) link add \(name)"
        if index != 0 { operation += " index \(index)" }
        if let target { operation += " netns \(target.name)" }
        operation += " type veth peer name \(peerName)"
        if peerIndex != 0 { operation += " index \(peerIndex)" }
        if let address = peer.hardwareAddress { operation += " address \(Link(index: 0, name: "", hardwareAddress: address).hardwareAddressText)" }
        if let mtu = peer.mtu { operation += " mtu \(mtu)" }
        if let length = peer.transmitQueueLength { operation += " txqueuelen \(length)" }
        if let peerTarget { operation += " netns \(peerTarget.name)" }
        let message = LinkRequest.createVeth(
            name: name, index: index, namespaceFD: target?.fileDescriptor, peerName: peerName, peerIndex: peerIndex,
            peerNamespaceFD: peerTarget?.fileDescriptor, peer: peer)
        try send(message, operation)
        // The indexes asked for are the kernel's now: ends that stay here need no look-up later.
        knownIndexes.withLock { table in
            if target == nil && index != 0 { table[name] = index }
            if peerTarget == nil && peerIndex != 0 { table[peerName] = peerIndex }
        }
    }

    /// Creates a link of a kind that needs no further data. Equivalent to `ip link add NAME type KIND`
    /// (e.g. `ifb`, `dummy`).
    public func createLink(name: String, kind: String) throws(RouteNetlinkError) {
        try Self.checkName(name)
        try send(LinkRequest.create(name: name, kind: kind), "\(ipPrefix) link add \(name) type \(kind)")
    }

    /// Sets a link up or down. Equivalent to `ip link set dev NAME up|down`.
    public func setLink(_ name: String, up: Bool) throws(RouteNetlinkError) {
        try send(on: name, "\(ipPrefix) link set dev \(name) \(up ? "up" : "down")") { LinkRequest.setUp(index: $0, up) }
    }

    /// Sets a link's alias (at most 255 bytes). Equivalent to `ip link set dev NAME alias ALIAS`.
    public func setAlias(_ alias: String, on name: String) throws(RouteNetlinkError) {
        try send(on: name, "\(ipPrefix) link set dev \(name) alias \(alias)") { LinkRequest.setAlias(index: $0, alias) }
    }

    /// Renames a link. Equivalent to `ip link set dev NAME name NEWNAME` (older kernels want the link down first).
    public func renameLink(_ name: String, to newName: String) throws(RouteNetlinkError) {
        try Self.checkName(newName)
        try send(on: name, "\(ipPrefix) link set dev \(name) name \(newName)") { LinkRequest.rename(index: $0, to: newName) }
        knownIndexes.withLock { table in
            if let index = table.removeValue(forKey: name) { table[newName] = index }
        }
    }

    /// Moves a link to another namespace. Equivalent to `ip link set dev NAME netns NS`.
    public func moveLink(_ name: String, to target: NamespaceDescriptor) throws(RouteNetlinkError) {
        try send(on: name, "\(ipPrefix) link set dev \(name) netns \(target.name)") {
            LinkRequest.move(index: $0, toNamespaceFD: target.fileDescriptor)
        }
        forget(name)
    }

    /// Deletes a link (both ends, for a veth). Equivalent to `ip link del dev NAME`.
    public func deleteLink(_ name: String) throws(RouteNetlinkError) {
        try send(on: name, "\(ipPrefix) link del dev \(name)") { LinkRequest.delete(index: $0) }
        forget(name)
    }

    // MARK: Addresses

    /// Adds an address. Equivalent to `ip addr add PREFIX dev NAME [nodad]`.
    public func addAddress(_ prefix: IPPrefix, to name: String, noDAD: Bool = false) throws(RouteNetlinkError) {
        try send(on: name, "\(ipPrefix) addr add \(prefix) dev \(name)\(noDAD ? " nodad" : "")") {
            AddressRequest.add(prefix, interfaceIndex: $0, noDAD: noDAD)
        }
    }

    /// Adds the address `address` describes (as ``addresses()`` read it, from any interface) to `name`, with
    /// its scope, label, broadcast, peer, metric, lifetimes and settable flags, plus `extraFlags`. Equivalent
    /// to `ip addr add LOCAL/LEN … dev NAME` with those options.
    public func addAddress(_ address: InterfaceAddress, to name: String, extraFlags: AddressFlags = []) throws(RouteNetlinkError) {
        var text = "\(ipPrefix) addr add \(address.prefix)"
        if let peer = address.peer { text += " peer \(peer)" }
        if let broadcast = address.broadcast { text += " broadcast \(broadcast)" }
        text += " dev \(name)"
        if let label = address.label { text += " label \(label)" }
        if let metric = address.metric { text += " metric \(metric)" }
        if address.validLifetime != InterfaceAddress.forever || address.preferredLifetime != InterfaceAddress.forever {
            text += " valid_lft \(address.validLifetime) preferred_lft \(address.preferredLifetime)"
        }
        let flags = address.flags.intersection(.settable).union(extraFlags)
        for (flag, word) in [(AddressFlags.noDAD, "nodad"), (.noPrefixRoute, "noprefixroute"), (.manageTemporaryAddresses, "mngtmpaddr"),
                             (.multicastAutoJoin, "autojoin"), (.homeAddress, "home")] where flags.contains(flag) {
            text += " \(word)"
        }
        try send(on: name, text) { AddressRequest.add(address, interfaceIndex: $0, extraFlags: extraFlags) }
    }

    /// Removes an address. Equivalent to `ip addr del PREFIX dev NAME`.
    public func deleteAddress(_ prefix: IPPrefix, from name: String) throws(RouteNetlinkError) {
        try send(on: name, "\(ipPrefix) addr del \(prefix) dev \(name)") { AddressRequest.delete(prefix, interfaceIndex: $0) }
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
        try send(on: name, routeText("add", destination, gateway, name, metric, family)) {
            RouteRequest.add(destination: destination, gateway: gateway, interfaceIndex: $0, metric: metric, family: family)
        }
    }

    /// Deletes a route from table main. Equivalent to
    /// `ip route del {default | PREFIX} [via GATEWAY] dev NAME [metric METRIC]`.
    public func deleteRoute(destination: IPPrefix?, gateway: IPAddress?, interface name: String, metric: UInt32? = nil) throws(RouteNetlinkError) {
        let family = try Self.family(destination, gateway)
        try send(on: name, routeText("del", destination, gateway, name, metric, family)) {
            RouteRequest.delete(destination: destination, gateway: gateway, interfaceIndex: $0, metric: metric, family: family)
        }
    }

    /// Adds the route `route` describes (as ``routes(family:)`` read it, through any interface) through `name`,
    /// with its table, protocol, scope, type, metric, preferred source, preference, `onlink`, remaining
    /// lifetime and metrics. Equivalent to `ip route add …` with those options. A route through several next
    /// hops (``Route/compound``) is refused.
    public func addRoute(_ route: Route, interface name: String) throws(RouteNetlinkError) {
        guard route.compound.isEmpty else {
            throw .invalidArgument("the route to \(route.destination.map(\.description) ?? "default") has \(route.compound.joined(separator: ", ")): it is not one interface's to make again")
        }
        try send(on: name, Self.routeText(route, name, ipPrefix)) { RouteRequest.add(route, interfaceIndex: $0) }
    }

    /// `ip [-6] route add …` for `route` through `name`, in the order ``RouteRequest/add(_:interfaceIndex:)`` lays it out.
    static func routeText(_ route: Route, _ name: String, _ ipPrefix: String) -> String {
        var text = ipPrefix + (route.family == .inet6 ? " -6" : "") + " route add "
        text += route.destination.map { $0.length == 0 ? "default" : $0.description } ?? "default"
        if let source = route.source { text += " from \(source)" }
        if let gateway = route.gateway { text += " via \(gateway)" }
        text += " dev \(name) table \(route.table.rawValue) proto \(route.routingProtocol.rawValue) scope \(route.scope.rawValue) type \(route.type.rawValue)"
        if let metric = route.metric { text += " metric \(metric)" }
        if let source = route.preferredSource { text += " src \(source)" }
        if let preference = route.preference { text += " pref \(preference)" }
        if let expires = route.expires { text += " expires \(expires)" }
        if route.isOnLink { text += " onlink" }
        return text
    }

    /// Every route of `family` in every table. Equivalent to `ip route show table all`.
    public func routes(family: AddressFamily? = nil) throws(RouteNetlinkError) -> [Route] {
        var routes: [Route] = []
        for message in try dump(RouteRequest.dump(family: family), "\(ipPrefix) route show table all") where message.type == UInt16(RTM_NEWROUTE) {
            routes.append(try Route.decode(message))
        }
        return routes
    }

}

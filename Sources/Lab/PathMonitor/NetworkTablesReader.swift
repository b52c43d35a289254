import Glibc
import LinkcondBase
import NetNamespace
import Netlink
import RouteNetlink

/// Reads one namespace's tables in full: `ip link`, `ip addr`, `ip route show table all`, and the
/// nameservers of its resolv.conf (`/etc/netns/NAME/resolv.conf` for a named namespace, `/etc/resolv.conf`
/// for the host). Read-only: it never changes anything.
struct NetworkTablesReader: Sendable {
    let client: RouteNetlinkClient
    let resolvConfPath: String

    init(client: RouteNetlinkClient, namespace: NamedNamespace?) {
        self.client = client
        resolvConfPath = ResolverConfiguration.path(for: namespace)
    }

    func read() throws(RouteNetlinkError) -> NetworkTables {
        NetworkTables(links: try client.links(), addresses: try client.addresses(), routes: try routes(), dnsServers: nameservers())
    }

    /// The routes the evaluator looks at: default routes. (A namespace with thousands of prefix routes
    /// would otherwise cost time on every event for nothing.)
    func routes() throws(RouteNetlinkError) -> [Route] {
        try client.routes().filter(NetworkTables.isRelevant)
    }

    /// The `nameserver` lines of the resolv.conf (as the prober reads them).
    func nameservers() -> [IPAddress] {
        ResolverConfiguration.load(path: resolvConfPath).nameservers
    }
}

/// Applies rtnetlink notifications to tables, keyed so they never grow with repeated events.
extension NetworkTables {
    /// What a notification changed, for deciding whether routes must be read again.
    enum Change {
        case none
        case link(interfaceStateChanged: Bool)
        case address(removed: Bool)
        case route
    }

    /// Only default routes can make a path; the rest are not kept.
    static func isRelevant(_ route: Route) -> Bool {
        route.isDefault
    }

    mutating func apply(_ message: NetlinkMessage) -> Change {
        // A notification that does not decode is skipped, as `ip monitor` skips what it cannot print.
        guard let notification = try? RouteNotification.decode(message) else { return .none }
        switch notification {
        case let .newLink(link):
            let old = links[link.index]
            links[link.index] = link
            let changed = old == nil || old?.flags != link.flags || old?.carrier != link.carrier
            return .link(interfaceStateChanged: changed)
        case let .deletedLink(link):
            links[link.index] = nil
            addresses.removeAll { $0.interfaceIndex == link.index }
            routes.removeAll { $0.outputInterface == link.index }
            return .link(interfaceStateChanged: true)
        case let .newAddress(address):
            if let position = addresses.firstIndex(where: { $0.interfaceIndex == address.interfaceIndex && $0.prefix == address.prefix }) {
                addresses[position] = address
            } else {
                addresses.append(address)
            }
            return .address(removed: false)
        case let .deletedAddress(address):
            addresses.removeAll { $0.interfaceIndex == address.interfaceIndex && $0.prefix == address.prefix }
            return .address(removed: true)
        case let .newRoute(route):
            guard Self.isRelevant(route) else { return .none }
            if let position = routes.firstIndex(where: { Self.sameRoute($0, route) }) {
                routes[position] = route
            } else {
                routes.append(route)
            }
            return .route
        case let .deletedRoute(route):
            guard Self.isRelevant(route) else { return .none }
            routes.removeAll { Self.sameRoute($0, route) }
            return .route
        }
    }

    /// The kernel's identity of a route: family, table, destination, metric, and (for IPv6, where routes
    /// through several next hops coexist) the output interface and gateway.
    static func sameRoute(_ a: Route, _ b: Route) -> Bool {
        a.family == b.family && a.table == b.table && a.destination == b.destination && (a.metric ?? 0) == (b.metric ?? 0)
            && a.type == b.type && a.outputInterface == b.outputInterface && a.gateway == b.gateway
    }
}

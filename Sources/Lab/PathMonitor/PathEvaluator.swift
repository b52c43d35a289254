import Glibc
import LinkcondBase
import RouteNetlink

/// Settings that shape how tables become a path.
public struct PathEvaluationOptions: Sendable, Equatable {
    /// Only interfaces of this type may be used (`NWPathMonitor(requiredInterfaceType:)`).
    public var requiredInterfaceType: InterfaceType?
    /// Interfaces of these types are never used (`NWPathMonitor(prohibitedInterfaceTypes:)`).
    public var prohibitedInterfaceTypes: Set<InterfaceType>
    /// Interfaces (by name) to treat as expensive although they are not cellular (a tethered hotspot).
    public var expensiveInterfaces: Set<String>
    /// Interfaces (by name) to treat as constrained (a low-data mode).
    public var constrainedInterfaces: Set<String>
    /// How interfaces are classified.
    public var classifier: InterfaceClassifier

    public init(
        requiredInterfaceType: InterfaceType? = nil, prohibitedInterfaceTypes: Set<InterfaceType> = [],
        expensiveInterfaces: Set<String> = [], constrainedInterfaces: Set<String> = [],
        classifier: InterfaceClassifier = InterfaceClassifier()
    ) {
        self.requiredInterfaceType = requiredInterfaceType
        self.prohibitedInterfaceTypes = prohibitedInterfaceTypes
        self.expensiveInterfaces = expensiveInterfaces
        self.constrainedInterfaces = constrainedInterfaces
        self.classifier = classifier
    }
}

/// The tables a path is computed from: one namespace's links, addresses, routes and DNS servers.
public struct NetworkTables: Sendable, Equatable {
    public var links: [Int32: Link]
    public var addresses: [InterfaceAddress]
    public var routes: [Route]
    public var dnsServers: [IPAddress]

    public init(links: [Link] = [], addresses: [InterfaceAddress] = [], routes: [Route] = [], dnsServers: [IPAddress] = []) {
        self.links = Dictionary(links.map { ($0.index, $0) }, uniquingKeysWith: { _, last in last })
        self.addresses = addresses
        self.routes = routes
        self.dnsServers = dnsServers
    }
}

/// Computes a ``NetworkPath`` from a namespace's tables. A pure function: same tables, same path.
///
/// An interface is usable for a family when it is up with carrier, has a global address of that family
/// that is not tentative, and a default route of that family (table main, unicast) goes out through it.
/// The path is satisfied when some interface allowed by the filters is usable for some family. When it
/// is not, the reason is the furthest step any allowed interface reached: none up (`notAvailable`), up
/// without carrier (`noCarrier`), carrier without address (`noAddress`), address without default route
/// (`noRoute`).
public enum PathEvaluator {

    public static func evaluate(_ tables: NetworkTables, options: PathEvaluationOptions = PathEvaluationOptions()) -> NetworkPath {
        let links = tables.links.values.sorted { $0.index < $1.index }
        let typed = links.map { (link: $0, type: options.classifier.classify($0)) }
        let nonLoopback = typed.filter { $0.type != .loopback }

        func allowed(_ type: InterfaceType) -> Bool {
            if let required = options.requiredInterfaceType, type != required { return false }
            return !options.prohibitedInterfaceTypes.contains(type)
        }

        struct Usable {
            var link: Link
            var type: InterfaceType
            var metric: UInt32
            var gateways: [(metric: UInt32, family: AddressFamily, address: String)]
            var ipv4 = false
            var ipv6 = false
        }

        var usable: [Int32: Usable] = [:]
        var furthest = 0  // 0 nothing up, 1 up, 2 carrier, 3 address
        var dormant = false
        var filteredOut = false
        for (link, type) in nonLoopback {
            guard link.isUp else { continue }
            var stage = 1
            if link.operationalState == .dormant && allowed(type) { dormant = true }
            let carrier = link.carrier && (link.operationalState == .up || link.operationalState == .unknown)
            if carrier {
                stage = 2
                let addresses = tables.addresses.filter {
                    $0.interfaceIndex == link.index && $0.scope == .universe && !$0.prefix.address.isLinkLocal
                        && (!$0.isTentative || $0.flags.contains(.optimistic)) && !$0.flags.contains(.dadFailed)
                }
                if !addresses.isEmpty { stage = 3 }
                for route in tables.routes
                where route.isDefault && route.table == .main && route.type == .unicast && route.outputInterface == link.index {
                    guard addresses.contains(where: { $0.prefix.address.family == route.family }) else { continue }
                    guard allowed(type) else {
                        filteredOut = true
                        continue
                    }
                    let metric = route.metric ?? 0
                    var entry = usable[link.index] ?? Usable(link: link, type: type, metric: metric, gateways: [])
                    entry.metric = min(entry.metric, metric)
                    if route.family == .inet { entry.ipv4 = true } else { entry.ipv6 = true }
                    if let gateway = route.gateway { entry.gateways.append((metric, route.family, gateway.description)) }
                    usable[link.index] = entry
                }
            }
            if allowed(type) { furthest = max(furthest, stage) }
        }

        guard !usable.isEmpty else {
            if dormant && furthest < 3 {
                return NetworkPath(status: .requiresConnection, unsatisfiedReason: .noCarrier)
            }
            let reason: NetworkPath.UnsatisfiedReason
            if filteredOut {
                reason = .interfaceFiltered
            } else {
                switch furthest {
                case 0: reason = .notAvailable
                case 1: reason = .noCarrier
                case 2: reason = .noAddress
                default: reason = .noRoute
                }
            }
            return NetworkPath(status: .unsatisfied, unsatisfiedReason: reason)
        }

        let ordered = usable.values.sorted { ($0.metric, $0.link.index) < ($1.metric, $1.link.index) }
        let primary = ordered[0]
        let supportsIPv4 = ordered.contains { $0.ipv4 }
        let supportsIPv6 = ordered.contains { $0.ipv6 }
        let supportsDNS = tables.dnsServers.contains { server in
            if (server.isIPv4 && server.bytes[0] == 127) || server.description == "::1" { return true }
            return server.isIPv4 ? supportsIPv4 : supportsIPv6
        }
        let gateways = ordered.enumerated()
            .flatMap { rank, entry in entry.gateways.map { (metric: $0.metric, rank: rank, family: $0.family, address: $0.address) } }
            .sorted { ($0.metric, $0.rank, $0.family, $0.address) < ($1.metric, $1.rank, $1.family, $1.address) }
            .map(\.address)
        var seen = Set<String>()
        return NetworkPath(
            status: .satisfied,
            availableInterfaces: ordered.map { PathInterface(name: $0.link.name, index: $0.link.index, type: $0.type) },
            isExpensive: primary.type == .cellular || options.expensiveInterfaces.contains(primary.link.name),
            isConstrained: options.constrainedInterfaces.contains(primary.link.name),
            supportsIPv4: supportsIPv4, supportsIPv6: supportsIPv6, supportsDNS: supportsDNS,
            gateways: gateways.filter { seen.insert($0).inserted })
    }
}

import NetNamespace
import RouteNetlink

/// What `linkcond status` reports about one sandbox, read back from the kernel (not from memory).
public struct SandboxStatus: Codable, Sendable, Equatable {
    /// One interface in one of the sandbox's namespaces.
    public struct Interface: Codable, Sendable, Equatable {
        public var name: String
        public var kind: String?
        public var up: Bool
        public var operationalState: String
        public var carrier: Bool
        public var mtu: UInt32
        public var hardwareAddress: String
        /// Global addresses with prefix length (link-local ones are left out).
        public var addresses: [String]
    }

    /// One of the sandbox's namespaces.
    public struct Namespace: Codable, Sendable, Equatable {
        public var name: String
        /// Its role: client, router or server.
        public var role: String
        public var exists: Bool
        public var interfaces: [Interface]
        /// Default routes, as `via GATEWAY dev NAME metric N`.
        public var defaultRoutes: [String]
    }

    public var name: String
    public var healthy: Bool
    public var complete: Bool
    public var cellular: Bool
    public var createdAt: String
    public var namespaces: [Namespace]
    public var serverPID: Int32?
    public var serverRunning: Bool
}

extension Sandbox {
    /// The sandbox's status, or nil when no state file records it.
    public func status() throws(SandboxError) -> SandboxStatus? {
        guard let state = try store.load(topology.name) else { return nil }
        let roles = ["client", "router", "server"]
        var namespaces: [SandboxStatus.Namespace] = []
        for (index, name) in topology.namespaces.enumerated() {
            var entry = SandboxStatus.Namespace(name: name, role: roles[index], exists: NamedNamespace.exists(name), interfaces: [], defaultRoutes: [])
            if entry.exists, let namespace = try? NamedNamespace(existing: name) {
                let client = try netlink(namespace)
                do {
                    let links = try client.links()
                    let addresses = try client.addresses()
                    let names = Dictionary(links.map { ($0.index, $0.name) }, uniquingKeysWith: { first, _ in first })
                    entry.interfaces = links.map { link in
                        SandboxStatus.Interface(
                            name: link.name, kind: link.kind, up: link.isUp, operationalState: link.operationalState.description,
                            carrier: link.carrier, mtu: link.mtu, hardwareAddress: link.hardwareAddressText,
                            addresses: addresses.filter { $0.interfaceIndex == link.index && !$0.prefix.address.isLinkLocal }
                                .map(\.prefix.description))
                    }
                    entry.defaultRoutes = try client.routes().filter { $0.isDefault && $0.table == .main && $0.type == .unicast }.map { route in
                        var text = "default"
                        if let gateway = route.gateway { text += " via \(gateway)" }
                        if let index = route.outputInterface { text += " dev \(names[index] ?? "#\(index)")" }
                        if let metric = route.metric { text += " metric \(metric)" }
                        return text
                    }
                } catch {
                    throw .netlink(error)
                }
            }
            namespaces.append(entry)
        }
        return SandboxStatus(
            name: state.name, healthy: isHealthy(state), complete: state.complete, cellular: state.cellular,
            createdAt: state.createdAt, namespaces: namespaces, serverPID: state.server?.pid,
            serverRunning: state.server?.isRunning ?? false)
    }
}

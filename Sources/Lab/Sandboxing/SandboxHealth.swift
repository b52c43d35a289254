import JSONDocument
import LinkcondBase
import NetNamespace
import RouteNetlink

extension Sandbox {
    /// What `up` made that is missing or not running now, each as one sentence naming the namespace, the
    /// interface, the address or route, or the process; empty when the sandbox is whole.
    ///
    /// Read back from the kernel and `/proc`, never from memory: a link deleted from outside, an address the
    /// kernel flushed, a dead server or engine all show. (A link that is only down, as a scenario step leaves
    /// it, is not missing; the addresses and routes the kernel flushed with it are.)
    public func problems(_ state: SandboxState) -> [String] {
        structuralProblems(state) + processProblems(state)
    }

    /// What is missing of the namespaces, links, addresses and default routes `up` made (and whether `up`
    /// finished), leaving the processes out.
    public func structuralProblems(_ state: SandboxState) -> [String] {
        var problems: [String] = []
        if !state.complete { problems.append("'up' did not finish") }
        let expected = SandboxHealthPlan(cellular: state.cellular, wire: state.wire)
        // Every namespace's socket is opened from one thread (not one thread per namespace), and a table is
        // dumped only where the plan expects something in it (the wire has links only).
        var present: [(name: String, interfaces: [SandboxHealthPlan.Interface], namespace: NamedNamespace)] = []
        for (role, interfaces) in expected.namespaces {
            let name = topology.namespace(role)
            guard let namespace = try? NamedNamespace(existing: name) else {
                problems.append("namespace \(name) is missing")
                continue
            }
            present.append((name, interfaces, namespace))
        }
        let connections = NamedNamespace.openNetlinkConnections(present.map(\.namespace))
        for ((name, interfaces, _), connection) in zip(present, connections) {
            let links = connection.map { RouteNetlinkClient(connection: $0, namespace: name) }
            let wantsAddresses = interfaces.contains { !$0.addresses.isEmpty }
            let wantsRoutes = interfaces.contains { !$0.defaultGateways.isEmpty }
            guard let links, let present = try? links.links(),
                let addresses = wantsAddresses ? try? links.addresses() : [],
                let routes = wantsRoutes ? try? links.routes() : []
            else {
                problems.append("namespace \(name) cannot be read")
                continue
            }
            let byName = Dictionary(present.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
            for interface in interfaces {
                guard let link = byName[interface.name] else {
                    problems.append("\(interface.name) is missing in \(name)")
                    continue
                }
                let held = Set(addresses.filter { $0.interfaceIndex == link.index }.map(\.prefix))
                for prefix in interface.addresses where !held.contains(prefix) {
                    problems.append("\(interface.name) in \(name) lacks its address \(prefix)")
                }
                let defaults = routes.filter { (route: Route) -> Bool in route.isDefault && route.table == .main && route.outputInterface == link.index }
                for gateway in interface.defaultGateways {
                    let found = defaults.contains { (route: Route) -> Bool in route.gateway == gateway }
                    if !found { problems.append("\(name) lacks its default route via \(gateway) dev \(interface.name)") }
                }
            }
        }
        return problems
    }

    /// The namespaces of the state's shape that do not exist (a look at `/run/netns` only, no netlink).
    public func missingNamespaces(_ state: SandboxState) -> [String] {
        SandboxHealthPlan(cellular: state.cellular, wire: state.wire).namespaces.map { topology.namespace($0.0) }
            .filter { !NamedNamespace.exists($0) }.map { "namespace \($0) is missing" }
    }

    /// What is wrong with the processes `up` started: not running, or stopped.
    public func processProblems(_ state: SandboxState) -> [String] {
        var problems: [String] = []
        for process in state.processes {
            if !process.isRunning {
                let log = store.log(for: topology.name, role: process.role)
                let last = (try? String(contentsOfFile: log, encoding: .utf8))?.split(separator: "\n").last.map { "; its last words: \(JSONWriter.excerpt(String($0), limit: 160))" } ?? ""
                problems.append("the \(process.role.rawValue) (pid \(process.pid)) is not running; its log: \(log)\(last)")
            } else if process.isStopped {
                problems.append("the \(process.role.rawValue) (pid \(process.pid)) is stopped (SIGSTOP or a debugger): it does nothing until 'kill -CONT \(process.pid)'")
            }
        }
        return problems
    }
}

/// The interfaces, addresses and default routes `up` makes, per namespace.
struct SandboxHealthPlan {
    struct Interface {
        var name: String
        var addresses: [IPPrefix] = []
        var defaultGateways: [IPAddress] = []
    }

    var namespaces: [(SandboxTopology.Role, [Interface])]

    init(cellular: Bool, wire: Bool) {
        typealias T = SandboxPlan
        var client = [Interface(
            name: T.wifiInterface, addresses: [T.wifiSubnet.peerIPv4, T.wifiSubnet.peerIPv6],
            defaultGateways: [T.wifiSubnet.routerIPv4.address, T.wifiSubnet.routerIPv6.address])]
        var router = [
            Interface(name: T.routerWifiInterface, addresses: [T.wifiSubnet.routerIPv4, T.wifiSubnet.routerIPv6]),
            Interface(name: T.routerServerInterface, addresses: [T.serverSubnet.routerIPv4, T.serverSubnet.routerIPv6]),
        ]
        var wireEnds = [Interface(name: T.wireClientWifiInterface), Interface(name: T.wireRouterWifiInterface)]
        if cellular {
            client.append(Interface(
                name: T.cellularInterface, addresses: [T.cellularSubnet.peerIPv4, T.cellularSubnet.peerIPv6],
                defaultGateways: [T.cellularSubnet.routerIPv4.address, T.cellularSubnet.routerIPv6.address]))
            router.append(Interface(name: T.routerCellularInterface, addresses: [T.cellularSubnet.routerIPv4, T.cellularSubnet.routerIPv6]))
            wireEnds += [Interface(name: T.wireClientCellularInterface), Interface(name: T.wireRouterCellularInterface)]
        }
        let server = [Interface(
            name: T.serverInterface, addresses: [T.serverSubnet.peerIPv4, T.serverSubnet.peerIPv6],
            defaultGateways: [T.serverSubnet.routerIPv4.address, T.serverSubnet.routerIPv6.address])]
        namespaces = [(.client, client), (.router, router), (.server, server)]
        if wire { namespaces.append((.wire, wireEnds)) }
    }
}

import Foundation
import Glibc
import LinkcondBase
import LinkcondSystem
import NetNamespace
import RouteNetlink

/// The steps of `up`, each recorded in the state file before it acts.
struct SandboxBuilder {
    let sandbox: Sandbox
    let isCancelled: () -> Bool
    let progress: (String) -> Void

    /// Seconds `up` waits for a process it started (the engine, the server) to be ready while it keeps
    /// running; one that exits fails `up` at once. They are ready within milliseconds on hardware; 30 s
    /// leaves room for emulated machines, where a debug build once took over 10 s to answer.
    static let readyTimeout: Double = 30

    typealias T = SandboxPlan
    private var topology: SandboxTopology { sandbox.topology }
    private var store: SandboxStore { sandbox.store }

    private func check() throws(SandboxError) {
        if isCancelled() { throw .interrupted }
    }

    /// One client link: the client's and router's ends, the wire's two ends, its subnet and metric.
    struct ClientLinkPlan {
        var client: String
        var router: String
        var wireClient: String
        var wireRouter: String
        var subnet: SandboxPlan.Subnet
        var metric: UInt32
    }

    func clientLinks(_ configuration: Sandbox.Configuration) -> [ClientLinkPlan] {
        var links = [ClientLinkPlan(
            client: T.wifiInterface, router: T.routerWifiInterface, wireClient: T.wireClientWifiInterface,
            wireRouter: T.wireRouterWifiInterface, subnet: T.wifiSubnet, metric: T.wifiMetric)]
        if configuration.cellular {
            links.append(ClientLinkPlan(
                client: T.cellularInterface, router: T.routerCellularInterface, wireClient: T.wireClientCellularInterface,
                wireRouter: T.wireRouterCellularInterface, subnet: T.cellularSubnet, metric: T.cellularMetric))
        }
        return links
    }

    func build(_ state: inout SandboxState, _ configuration: Sandbox.Configuration) throws(SandboxError) {
        var roles: [SandboxTopology.Role] = [.client, .router, .server]
        if configuration.wire { roles.append(.wire) }
        var namespaces: [SandboxTopology.Role: NamedNamespace] = [:]
        for role in roles {
            try check()
            let name = topology.namespace(role)
            progress("creating namespace \(name)")
            state.namespaces.append(name)
            try store.save(state)
            let namespace = try sandbox.fail { try NamespaceMark.create(name, marker: sandbox.marker) }
            namespaces[role] = namespace
            // No duplicate address detection on the sandbox's links: nothing else is on them, and DAD
            // would keep IPv6 (link-local addresses included) unusable for a second or two after `up`.
            try sandbox.fail { try namespace.setSysctl("net.ipv6.conf.default.accept_dad", "0") }
            if role == .wire {
                // The wire is a cable: its veth ends carry frames for the engine and have no addresses.
                for scope in ["all", "default"] {
                    try sandbox.fail { try namespace.setSysctl("net.ipv6.conf.\(scope).disable_ipv6", "1") }
                }
            }
        }
        let client = namespaces[.client]!, router = namespaces[.router]!, server = namespaces[.server]!
        let clientLinks = try sandbox.netlink(client)
        let routerLinks = try sandbox.netlink(router)
        let serverLinks = try sandbox.netlink(server)
        let links = self.clientLinks(configuration)

        try check()
        progress("linking client, router and server")
        try withDescriptors(namespaces) { descriptors throws(SandboxError) in
            let wireLinks = try namespaces[.wire].map { namespace throws(SandboxError) in try sandbox.netlink(namespace) }
            for link in links { try makeVeths(link, wire: wireLinks, router: routerLinks, descriptors: descriptors) }
            try sandbox.fail {
                if let wireLinks { try wireLinks.setLink("lo", up: true) }
                try Self.veth(routerLinks, T.serverInterface, in: descriptors[.server]!, peer: T.routerServerInterface)
            }
        }

        try check()
        progress("addressing and routing")
        try sandbox.fail {
            for namespaceLinks in [clientLinks, routerLinks, serverLinks] {
                try namespaceLinks.setLink("lo", up: true)
            }
            // The router keeps its IPv6 addresses while one of its links is down (the kernel's default drops
            // them), so a router-side link flap does not leave IPv6 dead afterwards.
            for scope in ["all", "default"] {
                try router.setSysctl("net.ipv6.conf.\(scope).keep_addr_on_down", "1")
            }
        }
        for link in links { try address(link, client: clientLinks, router: routerLinks) }
        try sandbox.fail {
            let serverSubnet = T.serverSubnet
            try routerLinks.addAddress(serverSubnet.routerIPv4, to: T.routerServerInterface)
            try routerLinks.addAddress(serverSubnet.routerIPv6, to: T.routerServerInterface, noDAD: true)
            try serverLinks.addAddress(serverSubnet.peerIPv4, to: T.serverInterface)
            try serverLinks.addAddress(serverSubnet.peerIPv6, to: T.serverInterface, noDAD: true)
            try routerLinks.setLink(T.routerServerInterface, up: true)
            try serverLinks.setLink(T.serverInterface, up: true)

            // A link without carrier must not keep attracting traffic through its default route (the
            // kernel's default is to keep using it); otherwise a handover to cellular would leave traffic
            // going nowhere while the path says cellular.
            for family in ["ipv4", "ipv6"] {
                for scope in ["all", "default"] {
                    try client.setSysctl("net.\(family).conf.\(scope).ignore_routes_with_linkdown", "1")
                }
            }
            try router.setSysctl("net.ipv4.ip_forward", "1")
            try router.setSysctl("net.ipv6.conf.all.forwarding", "1")

            for link in links { try route(link, client: clientLinks) }
            try serverLinks.addRoute(destination: nil, gateway: serverSubnet.routerIPv4.address, interface: T.serverInterface)
            try serverLinks.addRoute(destination: nil, gateway: serverSubnet.routerIPv6.address, interface: T.serverInterface)

            try client.writeEtcFile("resolv.conf", contents: T.clientResolvConf)
        }

        if configuration.wire, let engine = configuration.engine {
            try startEngine(engine, in: namespaces[.wire]!, state: &state)
        }
        guard case let .process(executable, arguments) = configuration.server else { return }
        try startServer(Sandbox.ProcessLaunch(executable: executable, arguments: arguments), in: server, state: &state)
    }

    static func veth(_ creator: RouteNetlinkClient, _ name: String, in target: NamespaceDescriptor, peer: String) throws {
        try creator.createVeth(name: name, index: T.interfaceIndexes[name]!, in: target, peerName: peer, peerIndex: T.interfaceIndexes[peer]!)
    }

    /// Makes a client link's veth pairs: with a wire, the client's end paired with the wire's client side and
    /// the router's end with the wire's router side (both wire ends up); without, the client's end paired with
    /// the router's. Equivalent to `ip -n WIRE link add cl-wl0 type veth peer wl0 netns CLIENT` and friends.
    func makeVeths(
        _ link: ClientLinkPlan, wire: RouteNetlinkClient?, router: RouteNetlinkClient, descriptors: [SandboxTopology.Role: NamespaceDescriptor]
    ) throws(SandboxError) {
        try sandbox.fail {
            guard let wire else {
                try Self.veth(router, link.client, in: descriptors[.client]!, peer: link.router)
                return
            }
            try Self.veth(wire, link.client, in: descriptors[.client]!, peer: link.wireClient)
            try Self.veth(wire, link.router, in: descriptors[.router]!, peer: link.wireRouter)
            try wire.setLink(link.wireClient, up: true)
            try wire.setLink(link.wireRouter, up: true)
        }
    }

    /// Addresses both ends of a client link (IPv4 and IPv6, no DAD) and brings them up.
    func address(_ link: ClientLinkPlan, client: RouteNetlinkClient, router: RouteNetlinkClient) throws(SandboxError) {
        try sandbox.fail {
            try client.addAddress(link.subnet.peerIPv4, to: link.client)
            try client.addAddress(link.subnet.peerIPv6, to: link.client, noDAD: true)
            try router.addAddress(link.subnet.routerIPv4, to: link.router)
            try router.addAddress(link.subnet.routerIPv6, to: link.router, noDAD: true)
            try client.setLink(link.client, up: true)
            try router.setLink(link.router, up: true)
        }
    }

    /// The client's default routes (IPv4, IPv6) through a link, at its metric.
    func route(_ link: ClientLinkPlan, client: RouteNetlinkClient) throws(SandboxError) {
        try sandbox.fail {
            try client.addRoute(destination: nil, gateway: link.subnet.routerIPv4.address, interface: link.client, metric: link.metric)
            try client.addRoute(destination: nil, gateway: link.subnet.routerIPv6.address, interface: link.client, metric: link.metric)
        }
    }

    /// Starts the engine in the wire namespace and waits until it listens on its control socket.
    func startEngine(_ engine: Sandbox.ProcessLaunch, in wire: NamedNamespace, state: inout SandboxState) throws(SandboxError) {
        try check()
        progress("starting the engine in \(wire.name)")
        // A socket file an engine that died left would read as "ready" before the new one listens.
        unlink(store.engineSocketPath(for: topology.name))
        try start(.engine, engine, in: wire, state: &state)
        try waitForFile(store.engineSocketPath(for: topology.name), of: state.engine!, timeout: Self.readyTimeout)
    }

    /// Starts the server in the server namespace and waits until it answers from the client.
    func startServer(_ launch: Sandbox.ProcessLaunch, in server: NamedNamespace, state: inout SandboxState) throws(SandboxError) {
        try check()
        progress("starting the server in \(server.name)")
        try start(.server, launch, in: server, state: &state)
        let recorded = state.server!
        try sandbox.waitForServer(timeout: Self.readyTimeout, isCancelled: isCancelled) { () throws(SandboxError) in
            guard recorded.isRunning else {
                throw .serverNotReady(detail: "it exited: \(Self.tail(of: store.log(for: topology.name, role: .server)))")
            }
        }
    }

    /// Starts a process of the sandbox in `namespace`, in a session of its own, marked, with its output in
    /// its log, and records it.
    private func start(
        _ role: RecordedProcess.Role, _ launch: Sandbox.ProcessLaunch, in namespace: NamedNamespace, state: inout SandboxState
    ) throws(SandboxError) {
        let logPath = store.log(for: topology.name, role: role)
        let log: FileDescriptor
        do throws(SystemError) {
            log = try FileDescriptor.open(logPath, .writeOnly, options: [.create, .truncate])
        } catch {
            throw .state(path: logPath, detail: "cannot be created (\(error.errno))")
        }
        let null = try? FileDescriptor.open("/dev/null", .readOnly)
        defer {
            try? log.close()
            try? null?.close()
        }
        let logFD = log.rawValue
        let nullFD = null?.rawValue ?? -1
        var environment = ProcessInfo.processInfo.environment
        for (key, value) in RecordedProcess.environment(marker: sandbox.marker, role: role) { environment[key] = value }
        let process = try sandbox.fail {
            try namespace.spawn(
                launch.executable, arguments: launch.arguments, environment: environment, standardInput: nullFD,
                standardOutput: logFD, standardError: logFD, grouping: .newSession)
        }
        guard let startTime = ProcessInspector.startTime(process.pid), let executable = ProcessInspector.executable(process.pid) else {
            process.terminate(grace: 0)
            throw .process(role: role.rawValue, detail: "exited at once: \(Self.tail(of: logPath))")
        }
        state.processes.append(RecordedProcess(
            role: role, pid: process.pid, startTime: startTime, executable: executable, marker: sandbox.marker))
        try store.save(state)
    }

    /// Waits until `path` exists (the engine creates its control socket when it is ready), or the process ends.
    private func waitForFile(_ path: String, of process: RecordedProcess, timeout: Double) throws(SandboxError) {
        let deadline = MonotonicClock.seconds() + timeout
        while access(path, F_OK) != 0 {
            try check()
            guard process.isRunning else {
                throw .process(role: process.role.rawValue, detail: "exited: \(Self.tail(of: store.log(for: topology.name, role: process.role)))")
            }
            guard MonotonicClock.seconds() < deadline else {
                throw .process(role: process.role.rawValue, detail: "not ready within \(Int(timeout)) s (no \(path))")
            }
            usleep(10_000)
        }
    }

    /// The last lines of a log, for error messages.
    static func tail(of path: String) -> String {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        let lines = text.split(separator: "\n").suffix(5).joined(separator: " | ")
        return lines.isEmpty ? "(no output)" : lines
    }

    func withDescriptors<R>(
        _ namespaces: [SandboxTopology.Role: NamedNamespace], _ body: ([SandboxTopology.Role: NamespaceDescriptor]) throws(SandboxError) -> R
    ) throws(SandboxError) -> R {
        var descriptors: [SandboxTopology.Role: NamespaceDescriptor] = [:]
        defer { for descriptor in descriptors.values { try? FileDescriptor(rawValue: descriptor.fileDescriptor).close() } }
        for (role, namespace) in namespaces {
            do throws(SystemError) {
                let file = try FileDescriptor.open(namespace.path, .readOnly)
                descriptors[role] = NamespaceDescriptor(fileDescriptor: file.rawValue, name: namespace.name)
            } catch {
                throw .namespace(.system(operation: error.operation, errno: error.errno.rawValue))
            }
        }
        return try body(descriptors)
    }
}

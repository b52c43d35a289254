import Foundation
import Glibc
import LinkcondBase
import NetNamespace
import Netlink
import RouteNetlink

/// One sandbox: a client ("the device"), a router and a server namespace joined by veth pairs.
///
/// `up` builds it from nothing, `down` removes exactly what `up` recorded, `exec` runs a program as the
/// device. Nothing is ever created in, or changed in, the host's own network namespace: every request
/// is sent on a netlink socket opened inside one of the sandbox's namespaces, and veth ends are created
/// directly in their target namespaces.
public struct Sandbox: Sendable {
    public let topology: SandboxTopology
    public let store: SandboxStore

    public init(topology: SandboxTopology, store: SandboxStore = .standard) {
        self.topology = topology
        self.store = store
    }

    /// How the sandbox's server (HTTP probe endpoint, echo, DNS) is run.
    public enum ServerLaunch: Sendable {
        /// No server (tests that bring their own).
        case none
        /// A process started in the server namespace and left running after `up` returns, e.g.
        /// `linkcond serve --name NAME`.
        case process(executable: String, arguments: [String])
    }

    /// What ``up(cellular:server:isCancelled:progress:)`` did.
    public enum UpOutcome: Sendable, Equatable {
        /// The sandbox was built.
        case created
        /// The sandbox was up and healthy already; nothing changed.
        case alreadyUp
        /// A half-made or broken sandbox was found, removed and built again.
        case rebuilt
    }

    private func fail<T>(_ body: () throws -> T) throws(SandboxError) -> T {
        do {
            return try body()
        } catch let error as SandboxError {
            throw error
        } catch let error as NamespaceError {
            throw .namespace(error)
        } catch let error as RouteNetlinkError {
            throw .netlink(error)
        } catch let error as NetlinkError {
            throw .netlink(.netlink(error))
        } catch {
            throw .state(path: store.path(for: topology.name), detail: "\(error)")
        }
    }

    /// True when a state file says the sandbox is complete, its namespaces exist and its server runs.
    public func isHealthy(_ state: SandboxState) -> Bool {
        state.complete && state.namespaces.allSatisfy(NamedNamespace.exists)
            && state.namespaces.count == topology.namespaces.count
            && (state.server.map(\.isRunning) ?? true)
    }

    /// Builds the sandbox. Equivalent to a series of `ip netns add`, `ip link add ... type veth`,
    /// `ip addr add`, `ip route add` and `sysctl` commands, all inside the sandbox's namespaces.
    ///
    /// Idempotent: a healthy sandbox is left alone (``UpOutcome/alreadyUp``). Every object is recorded in
    /// the state file as it is made; when a step fails, or `isCancelled` turns true between steps (Ctrl-C),
    /// everything made so far is removed and the error (or ``SandboxError/interrupted``) is thrown.
    @discardableResult
    public func up(
        cellular: Bool = false, server: ServerLaunch = .none, isCancelled: @Sendable () -> Bool = { false },
        progress: (String) -> Void = { _ in }
    ) throws(SandboxError) -> UpOutcome {
        var outcome = UpOutcome.created
        if let existing = try store.load(topology.name) {
            if isHealthy(existing) && existing.cellular == cellular { return .alreadyUp }
            progress("removing the earlier, incomplete or different sandbox '\(topology.name)'")
            try down()
            outcome = .rebuilt
        }
        var state = SandboxState(name: topology.name, cellular: cellular)
        try store.save(state)
        do {
            try build(&state, cellular: cellular, server: server, isCancelled: isCancelled, progress: progress)
            state.complete = true
            try store.save(state)
        } catch {
            progress("removing what was made")
            teardown(state)
            throw error
        }
        return outcome
    }

    private func check(_ isCancelled: () -> Bool) throws(SandboxError) {
        if isCancelled() { throw .interrupted }
    }

    private func build(
        _ state: inout SandboxState, cellular: Bool, server: ServerLaunch, isCancelled: () -> Bool,
        progress: (String) -> Void
    ) throws(SandboxError) {
        typealias T = SandboxPlan
        var namespaces: [String: NamedNamespace] = [:]
        for name in topology.namespaces {
            try check(isCancelled)
            progress("creating namespace \(name)")
            let namespace = try fail { try NamedNamespace.create(name) }
            state.namespaces.append(name)
            try store.save(state)
            namespaces[name] = namespace
            // No duplicate address detection on the sandbox's links: nothing else is on them, and DAD
            // would keep IPv6 (link-local addresses included) unusable for a second or two after `up`.
            try fail { try namespace.setSysctl("net.ipv6.conf.default.accept_dad", "0") }
        }
        let client = namespaces[topology.clientNamespace]!
        let router = namespaces[topology.routerNamespace]!
        let serverNS = namespaces[topology.serverNamespace]!
        let clientLinks = try netlink(client)
        let routerLinks = try netlink(router)
        let serverLinks = try netlink(serverNS)

        try check(isCancelled)
        progress("linking client, router and server")
        try withDescriptors([client, serverNS]) { descriptors throws(SandboxError) in
            let (clientFD, serverFD) = (descriptors[0], descriptors[1])
            try fail {
                func veth(_ name: String, in target: NamespaceDescriptor, peer: String) throws {
                    try routerLinks.createVeth(
                        name: name, index: T.interfaceIndexes[name]!, in: target, peerName: peer,
                        peerIndex: T.interfaceIndexes[peer]!)
                }
                try veth(T.wifiInterface, in: clientFD, peer: T.routerWifiInterface)
                if cellular { try veth(T.cellularInterface, in: clientFD, peer: T.routerCellularInterface) }
                try veth(T.serverInterface, in: serverFD, peer: T.routerServerInterface)
            }
        }

        try check(isCancelled)
        progress("addressing and routing")
        var clientLinksToConfigure = [(T.wifiInterface, T.routerWifiInterface, T.wifiSubnet, T.wifiMetric)]
        if cellular {
            clientLinksToConfigure.append((T.cellularInterface, T.routerCellularInterface, T.cellularSubnet, T.cellularMetric))
        }
        try fail {
            for namespaceLinks in [clientLinks, routerLinks, serverLinks] {
                try namespaceLinks.setLink("lo", up: true)
            }
            for (clientEnd, routerEnd, subnet, _) in clientLinksToConfigure {
                try clientLinks.addAddress(subnet.peerIPv4, to: clientEnd)
                try clientLinks.addAddress(subnet.peerIPv6, to: clientEnd, noDAD: true)
                try routerLinks.addAddress(subnet.routerIPv4, to: routerEnd)
                try routerLinks.addAddress(subnet.routerIPv6, to: routerEnd, noDAD: true)
                try clientLinks.setLink(clientEnd, up: true)
                try routerLinks.setLink(routerEnd, up: true)
            }
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

            for (clientEnd, _, subnet, metric) in clientLinksToConfigure {
                try clientLinks.addRoute(destination: nil, gateway: subnet.routerIPv4.address, interface: clientEnd, metric: metric)
                try clientLinks.addRoute(destination: nil, gateway: subnet.routerIPv6.address, interface: clientEnd, metric: metric)
            }
            try serverLinks.addRoute(destination: nil, gateway: serverSubnet.routerIPv4.address, interface: T.serverInterface)
            try serverLinks.addRoute(destination: nil, gateway: serverSubnet.routerIPv6.address, interface: T.serverInterface)

            try client.writeEtcFile("resolv.conf", contents: T.clientResolvConf)
        }

        guard case let .process(executable, arguments) = server else { return }
        try check(isCancelled)
        progress("starting the server in \(serverNS.name)")
        let logPath = store.logPath(for: topology.name)
        let logFD = open(logPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        let nullFD = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer {
            if logFD >= 0 { close(logFD) }
            if nullFD >= 0 { close(nullFD) }
        }
        let process = try fail {
            try serverNS.spawn(
                executable, arguments: arguments, standardInput: nullFD, standardOutput: logFD, standardError: logFD,
                newSession: true)
        }
        state.server = SandboxState.RecordedProcess(
            pid: process.pid, startTime: SandboxState.processStartTime(process.pid) ?? 0, logPath: logPath)
        try store.save(state)
        try waitForServer(client: client, process: state.server!, isCancelled: isCancelled)
    }

    private func waitForServer(client: NamedNamespace, process: SandboxState.RecordedProcess, isCancelled: () -> Bool) throws(SandboxError) {
        try waitForServer(timeout: 10, isCancelled: isCancelled) { () throws(SandboxError) in
            guard process.isRunning else {
                let log = (try? String(contentsOfFile: process.logPath, encoding: .utf8)) ?? ""
                throw .serverNotReady(detail: "it exited: \(log.trimmingCharacters(in: .whitespacesAndNewlines))")
            }
        }
    }

    /// Waits until the server answers TCP on port 80 from the client namespace, over IPv4 and IPv6 (IPv6
    /// neighbour discovery can lag behind IPv4 ARP). `check` runs before every attempt and may throw to
    /// give up early (e.g. when the server process died).
    public func waitForServer(
        timeout: Double, isCancelled: () -> Bool = { false }, check: () throws(SandboxError) -> Void = {}
    ) throws(SandboxError) {
        let client = try clientNamespace()
        let deadline = Date().addingTimeInterval(timeout)
        var lastError: Int32 = 0
        while Date() < deadline {
            try self.check(isCancelled)
            try check()
            let result = try fail {
                try client.run { () -> Int32? in
                    for address in [SandboxPlan.serverIPv4, SandboxPlan.serverIPv6] {
                        if let failure = tcpConnect(to: address, port: SandboxPlan.httpPort, timeout: 0.5) { return failure }
                    }
                    return nil
                }
            }
            guard let code = result else { return }
            lastError = code
            usleep(50_000)
        }
        throw .serverNotReady(detail: "no answer on \(SandboxPlan.serverIPv4) and [\(SandboxPlan.serverIPv6)] port \(SandboxPlan.httpPort) within \(Int(timeout)) s (\(String(cString: strerror(lastError))))")
    }

    private func withDescriptors<R>(_ namespaces: [NamedNamespace], _ body: ([NamespaceDescriptor]) throws(SandboxError) -> R) throws(SandboxError) -> R {
        var descriptors: [NamespaceDescriptor] = []
        defer { for descriptor in descriptors { close(descriptor.fileDescriptor) } }
        for namespace in namespaces {
            let fd = open(namespace.path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw .namespace(.system(operation: "open \(namespace.path)", errno: errno)) }
            descriptors.append(NamespaceDescriptor(fileDescriptor: fd, name: namespace.name))
        }
        return try body(descriptors)
    }

    /// A typed rtnetlink client bound to `namespace`.
    public func netlink(_ namespace: NamedNamespace) throws(SandboxError) -> RouteNetlinkClient {
        let connection = try fail { try namespace.openNetlinkConnection() }
        return RouteNetlinkClient(connection: connection, namespace: namespace.name)
    }

    /// The namespace of the emulated device; throws ``SandboxError/notUp(name:)`` when it does not exist.
    public func clientNamespace() throws(SandboxError) -> NamedNamespace {
        do {
            return try NamedNamespace(existing: topology.clientNamespace)
        } catch {
            throw .notUp(name: topology.name)
        }
    }

    /// Removes the sandbox: stops its server, deletes its namespaces (and with them every interface,
    /// address, route and qdisc in them) and its `/etc/netns` files, then the state file.
    /// Returns false when there was nothing to remove.
    @discardableResult
    public func down() throws(SandboxError) -> Bool {
        guard let state = try store.load(topology.name) else { return false }
        teardown(state)
        return true
    }

    private func teardown(_ state: SandboxState) {
        if let server = state.server {
            if server.isRunning {
                kill(server.pid, SIGTERM)
                var waited = 0
                while server.isRunning && waited < 40 {
                    var status: Int32 = 0
                    waitpid(server.pid, &status, WNOHANG)
                    usleep(50_000)
                    waited += 1
                }
                if server.isRunning { kill(server.pid, SIGKILL) }
            }
            // Reap it when it is our child (a library user's sandbox, the tests), whether it ended just now or
            // before (a crashed server); `linkcond down` in another process leaves that to the server's parent.
            // This waits: the server is multithreaded, and its /proc state reads "Z" (not running) as soon as
            // its main thread has exited, while waitpid cannot collect it (WNOHANG returns 0) until its other
            // threads have exited too; a non-blocking wait here left a zombie whenever they were slower.
            if server.isUnreapedChild {
                var status: Int32 = 0
                while waitpid(server.pid, &status, 0) < 0 && errno == EINTR {}
            }
        }
        for name in state.namespaces.reversed() where NamedNamespace.exists(name) {
            if let namespace = try? NamedNamespace(existing: name) {
                try? namespace.delete()
            }
        }
        store.remove(state.name)
        unlink(portalFlagPath)
    }

    /// Runs a program as the emulated device: in the client namespace, with the sandbox's resolver.
    /// Equivalent to `ip netns exec lc-client PROGRAM ARGS...`. Returns the program's exit code.
    public func exec(_ program: String, arguments: [String]) throws(SandboxError) -> Int32 {
        let client = try clientNamespace()
        let process = try fail { try client.spawn(program, arguments: arguments) }
        return try fail { try process.wait() }
    }
}

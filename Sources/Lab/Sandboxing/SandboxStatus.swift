import LinkcondBase
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
        /// Its role: client, router, server or wire.
        public var role: String
        public var exists: Bool
        public var interfaces: [Interface]
        /// Default routes, as `via GATEWAY dev NAME metric N`.
        public var defaultRoutes: [String]
    }

    /// A process of the sandbox.
    public struct Process: Codable, Sendable, Equatable {
        /// `server` or `engine`.
        public var role: String
        public var pid: Int32
        /// True when it runs and is provably the one started (start time, executable, marker).
        public var running: Bool
        /// Where its output goes.
        public var log: String
    }

    /// What one client link holds, as the state records it.
    public struct LinkProfile: Codable, Sendable, Equatable {
        /// `wifi` or `cellular`.
        public var link: String
        /// The profile's name; nil when the link has no conditions.
        public var profile: String?
        /// When it was applied (ISO 8601).
        public var appliedAt: String?
        /// The profile file it was read from.
        public var source: String?
        /// For conditions put on for a while: when they end (ISO 8601).
        public var until: String?
        /// What comes back then: a profile's name, nil for none.
        public var then: String?
    }

    public var name: String
    /// True when everything `up` made is there and running (``problems`` is empty).
    public var healthy: Bool
    /// True once `up` finished.
    public var complete: Bool
    public var cellular: Bool
    /// True when a wire namespace sits in each client link (userspace backend).
    public var wire: Bool
    /// The backend the sandbox was built for, when recorded.
    public var backend: String?
    public var createdAt: String
    public var namespaces: [Namespace]
    public var processes: [Process]
    /// What is missing or not running, one sentence each.
    public var problems: [String]
    /// The command that holds the sandbox's lock right now (a change in progress), if any.
    public var busy: String?
    /// The server's pid (also in ``processes``).
    public var serverPID: Int32?
    /// Whether the server runs.
    public var serverRunning: Bool
    /// What each client link holds (wifi first), as recorded by the last change of it.
    public var conditions: [LinkProfile]
}

/// A sandbox `status` found, or why it could not read one. Encoded as `status --json` (and the API) print it:
/// the status, or `{"name", "healthy": false, "damaged", "leftovers", "busy"}`.
public enum SandboxListing: Sendable, Equatable, Encodable {
    /// A sandbox with a readable state file.
    case status(SandboxStatus)
    /// A sandbox whose state file cannot be trusted, or that exists only as leftovers by name (a crash
    /// before its state was written): what was found, and what to do.
    case damaged(name: String, detail: String, leftovers: [String], busy: String?)

    public func encode(to encoder: Encoder) throws {
        switch self {
        case let .status(status): try status.encode(to: encoder)
        case let .damaged(name, detail, leftovers, busy):
            struct Damaged: Encodable { let name: String; let healthy = false; let damaged: String; let leftovers: [String]; let busy: String? }
            try Damaged(name: name, damaged: detail, leftovers: leftovers, busy: busy).encode(to: encoder)
        }
    }

    /// The sandbox's name.
    public var name: String {
        switch self {
        case let .status(status): status.name
        case let .damaged(name, _, _, _): name
        }
    }

    /// True for a sandbox that is up, whole and healthy.
    public var isHealthy: Bool {
        if case let .status(status) = self { return status.healthy }
        return false
    }
}

extension Sandbox {
    /// The sandbox's status, or nil when no state file records it. Throws when the state file cannot be
    /// trusted (``listing()`` reports that instead).
    public func status() throws(SandboxError) -> SandboxStatus? {
        guard let state = try store.load(topology.name) else { return nil }
        return status(of: state)
    }

    /// The sandbox's status whatever shape it is in; nil when nothing of it exists.
    public func listing() -> SandboxListing? {
        let busy = SandboxLock.holder(of: topology.name, store: store).map { "\($0)" }
        switch store.record(topology.name) {
        case let .state(state):
            var status = status(of: state)
            status.busy = busy
            return .status(status)
        case let .unreadable(detail):
            return .damaged(name: topology.name, detail: "the state file \(detail)", leftovers: leftovers(), busy: busy)
        case .missing:
            let found = leftovers()
            if found.isEmpty && busy == nil { return nil }
            return .damaged(name: topology.name, detail: busy == nil ? "no state file, but leftovers" : "being created", leftovers: found, busy: busy)
        }
    }

    private func status(of state: SandboxState) -> SandboxStatus {
        var roles: [SandboxTopology.Role] = [.client, .router, .server]
        if state.wire { roles.append(.wire) }
        let namespaces = roles.map { role in namespaceStatus(role) }
        return SandboxStatus(
            name: state.name, healthy: isHealthy(state), complete: state.complete, cellular: state.cellular, wire: state.wire,
            backend: state.backend, createdAt: state.createdAt, namespaces: namespaces,
            processes: state.processes.map {
                SandboxStatus.Process(role: $0.role.rawValue, pid: $0.pid, running: $0.isRunning, log: store.log(for: topology.name, role: $0.role))
            },
            problems: problems(state), busy: nil, serverPID: state.server?.pid, serverRunning: state.server?.isRunning ?? false,
            conditions: (state.cellular ? ["wifi", "cellular"] : ["wifi"]).map { link in
                let record = state.conditions[link]
                let timed = state.timedChanges.first { $0.links.contains(link) }
                return SandboxStatus.LinkProfile(
                    link: link, profile: record?.profile, appliedAt: record?.appliedAt, source: record?.source, until: timed?.endsAt,
                    then: timed?.restore[link]?.profile)
            })
    }

    private func namespaceStatus(_ role: SandboxTopology.Role) -> SandboxStatus.Namespace {
        let name = topology.namespace(role)
        var entry = SandboxStatus.Namespace(name: name, role: role.rawValue, exists: NamedNamespace.exists(name), interfaces: [], defaultRoutes: [])
        guard entry.exists, let namespace = try? NamedNamespace(existing: name), let client = try? netlink(namespace),
            let links = try? client.links(), let addresses = try? client.addresses(), let routes = try? client.routes()
        else { return entry }
        let names = Dictionary(links.map { ($0.index, $0.name) }, uniquingKeysWith: { first, _ in first })
        entry.interfaces = links.map { link in
            SandboxStatus.Interface(
                name: link.name, kind: link.kind, up: link.isUp, operationalState: link.operationalState.description,
                carrier: link.carrier, mtu: link.mtu, hardwareAddress: link.hardwareAddressText,
                addresses: addresses.filter { $0.interfaceIndex == link.index && !$0.prefix.address.isLinkLocal }.map(\.prefix.description))
        }
        entry.defaultRoutes = routes.filter { $0.isDefault && $0.table == .main && $0.type == .unicast }.map { route in
            var text = "default"
            if let gateway = route.gateway { text += " via \(gateway)" }
            if let index = route.outputInterface { text += " dev \(names[index] ?? "#\(index)")" }
            if let metric = route.metric { text += " metric \(metric)" }
            return text
        }
        return entry
    }

    /// Every sandbox in `store` and every one that exists only as leftovers in `/run/netns` (named
    /// `lc-…`), each as ``listing()`` reports it; one broken sandbox never hides the others.
    public static func listAll(store: SandboxStore = .standard) -> [SandboxListing] {
        var names = Set(store.names())
        for namespace in NamedNamespace.list() {
            if let owner = SandboxTopology.owner(ofNamespace: namespace) { names.insert(owner.sandbox) }
        }
        return names.sorted().compactMap { name in
            (try? SandboxTopology(name: name)).flatMap { Sandbox(topology: $0, store: store).listing() }
        }
    }
}

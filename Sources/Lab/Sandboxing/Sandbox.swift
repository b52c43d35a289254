import Foundation
import Glibc
import LinkcondBase
import LinkcondSystem
import NetNamespace
import Netlink
import RouteNetlink

/// One sandbox: a client ("the device"), a router and a server namespace joined by veth pairs, and with the
/// userspace backend a wire namespace in each client link.
///
/// `up` builds it from nothing, `down` removes it, `exec` runs a program as the device. Nothing is ever
/// created in, or changed in, the host's own network namespace: every request is sent on a netlink socket
/// opened inside one of the sandbox's namespaces, and veth ends are created directly in their namespaces.
///
/// `up` and `down` hold the sandbox's lock (``SandboxLock``), record intent in the state file before each
/// step, and find what is theirs by name and by proof (``RecordedProcess``), so a crash at any instant leaves
/// nothing `down` cannot remove, and a state file never makes them touch anything else.
public struct Sandbox: Sendable {
    /// The sandbox's names.
    public let topology: SandboxTopology
    /// Where its state file, lock and logs live.
    public let store: SandboxStore

    /// A handle on sandbox `topology` recorded in `store` (nothing is created until ``up(_:isCancelled:progress:)``).
    public init(topology: SandboxTopology, store: SandboxStore = .standard) {
        self.topology = topology
        self.store = store
    }

    /// A program started for the sandbox and left running after `up` returns.
    public struct ProcessLaunch: Sendable, Equatable {
        /// The executable's path.
        public var executable: String
        /// Its arguments.
        public var arguments: [String]

        /// `executable arguments…`.
        public init(executable: String, arguments: [String]) {
            self.executable = executable
            self.arguments = arguments
        }
    }

    /// How the sandbox's server (HTTP probe endpoint, echo, DNS) is run.
    public enum ServerLaunch: Sendable, Equatable {
        /// No server (tests and ``LinkLab`` bring their own).
        case none
        /// A process started in the server namespace, e.g. `linkcond serve --name NAME`.
        case process(executable: String, arguments: [String])
    }

    /// What to build.
    public struct Configuration: Sendable, Equatable {
        /// Give the client a cellular link (`ww0`) besides wifi.
        public var cellular: Bool
        /// Put a wire namespace in each client link (for the userspace engine).
        public var wire: Bool
        /// The conditioning backend the sandbox is for, recorded for the layer above.
        public var backend: String?
        /// The server.
        public var server: ServerLaunch
        /// The engine, started in the wire namespace before the server (only with `wire`).
        public var engine: ProcessLaunch?

        /// A configuration; the defaults make the plain sandbox with wifi only and no server.
        public init(cellular: Bool = false, wire: Bool = false, backend: String? = nil, server: ServerLaunch = .none, engine: ProcessLaunch? = nil) {
            self.cellular = cellular
            self.wire = wire
            self.backend = backend
            self.server = server
            self.engine = engine
        }

        /// True when a recorded sandbox was built with this shape (cellular, wire, backend).
        func matches(_ state: SandboxState) -> Bool {
            state.cellular == cellular && state.wire == wire && (backend == nil || state.backend == backend)
        }
    }

    /// What ``up(_:isCancelled:progress:)`` did.
    public enum UpOutcome: Sendable, Equatable {
        /// The sandbox was built.
        case created
        /// The sandbox was up and healthy already; nothing changed.
        case alreadyUp
        /// A half-made, broken or different sandbox was found, removed and built again.
        case rebuilt
        /// The sandbox was whole but a process of it had died: only that process was started again (and the
        /// conditions it held were put back); nothing else changed.
        case repaired
        /// The sandbox was up without the cellular link asked for: the link was added (and a userspace engine
        /// started again to forward it, with the conditions put back); nothing else changed.
        case extended
    }

    func fail<T>(_ body: () throws -> T) throws(SandboxError) -> T {
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

    /// Takes the sandbox's lock for `command`, telling `progress` when another command holds it.
    public func lock(for command: String, progress: (String) -> Void = { _ in }) throws(SandboxError) -> SandboxLock {
        try SandboxLock.acquire(topology.name, store: store, command: command) { holder in
            progress("waiting for \(holder.map { "\($0)" } ?? "another linkcond command") to finish with sandbox '\(topology.name)'")
        }
    }

    /// True when the state says the sandbox is complete and everything `up` made is there and running.
    public func isHealthy(_ state: SandboxState) -> Bool {
        problems(state).isEmpty
    }

    /// Builds the sandbox. Equivalent to a series of `ip netns add`, `ip link add ... type veth`,
    /// `ip addr add`, `ip route add` and `sysctl` commands, all inside the sandbox's namespaces.
    ///
    /// Idempotent: a healthy sandbox of the same shape is left alone (``UpOutcome/alreadyUp``). A broken,
    /// half-made or different one — or what a crash left of one, found by name and mark — is removed first
    /// (``UpOutcome/rebuilt``); a namespace of its names that is not its own (another store's sandbox of the
    /// same name, one made by hand) is refused before anything changes. Every step is recorded in the state file before it acts; when a step fails,
    /// or `isCancelled` turns true between steps (Ctrl-C), everything made so far is removed and the error
    /// (or ``SandboxError/interrupted``) is thrown. Takes the sandbox's lock for the while.
    @discardableResult
    public func up(
        _ configuration: Configuration, isCancelled: @Sendable () -> Bool = { false }, progress: (String) -> Void = { _ in }
    ) throws(SandboxError) -> UpOutcome {
        let transaction = try transaction(for: "up", progress: progress)
        defer { transaction.end() }
        return try up(configuration, in: transaction, isCancelled: isCancelled, progress: progress)
    }

    /// ``up(_:isCancelled:progress:)`` within `transaction`, which holds the lock; its state is the new
    /// sandbox's afterwards.
    @discardableResult
    public func up(
        _ configuration: Configuration, in transaction: SandboxTransaction, isCancelled: @Sendable () -> Bool = { false },
        progress: (String) -> Void = { _ in }
    ) throws(SandboxError) -> UpOutcome {
        var outcome = UpOutcome.created
        let record = transaction.record
        if case let .state(existing) = record, existing.attachment != nil {
            throw .unsupported(detail: "'\(topology.name)' is an attachment, not a sandbox: 'linkcond detach --name \(topology.name)' removes it")
        }
        if case let .state(existing) = record, configuration.matches(existing), isHealthy(existing) { return .alreadyUp }
        let foreign = foreignNamespaces()
        if !foreign.isEmpty {
            // Nothing of this sandbox is here, not even its lock file.
            if record == .missing { transaction.endRemovingLockFile() }
            throw .unsupported(
                detail: "cannot make sandbox '\(topology.name)' in the store \(store.directory): namespaces by its names are not its own — "
                    + "\(NamespaceMark.describe(foreign)). Choose another --name (or work in that store). Nothing was changed")
        }
        if record != .missing || !leftovers().isEmpty {
            progress("removing the earlier, incomplete or different sandbox '\(topology.name)'")
            teardown(record)
            outcome = .rebuilt
        }
        var state = SandboxState(name: topology.name, cellular: configuration.cellular, wire: configuration.wire, backend: configuration.backend)
        try transaction.save(state)
        do throws(SandboxError) {
            try withoutActuallyEscaping(isCancelled) { (isCancelled) throws(SandboxError) in
                try withoutActuallyEscaping(progress) { (progress) throws(SandboxError) in
                    try SandboxBuilder(sandbox: self, isCancelled: isCancelled, progress: progress).build(&state, configuration)
                }
            }
            state.complete = true
            try transaction.save(state)
        } catch {
            progress("removing what was made")
            teardown(.state(state))
            transaction.reload()
            throw error
        }
        return outcome
    }

    /// Builds the sandbox with wifi (and `cellular`), a server and no wire. See ``up(_:isCancelled:progress:)``.
    @discardableResult
    public func up(
        cellular: Bool = false, server: ServerLaunch = .none, isCancelled: @Sendable () -> Bool = { false },
        progress: (String) -> Void = { _ in }
    ) throws(SandboxError) -> UpOutcome {
        try up(Configuration(cellular: cellular, server: server), isCancelled: isCancelled, progress: progress)
    }

    /// Removes the sandbox: stops its processes, deletes its namespaces (and with them every interface,
    /// address, route and qdisc in them), their `/etc/netns` files, and the sandbox's files in the store.
    /// Works from the sandbox's names and marks when the state file is missing or unreadable; a namespace of
    /// its names that is not its own (``NamespaceMark``) is left, and said in the report's notes.
    /// Returns false when there was nothing to remove.
    @discardableResult
    public func down() throws(SandboxError) -> Bool {
        !(try remove()).isEmpty
    }

    /// Like ``down()``, and says what it removed (and what it found odd, such as an unreadable state file).
    public func remove(progress: (String) -> Void = { _ in }) throws(SandboxError) -> TeardownReport {
        remove(in: try transaction(for: "down", progress: progress))
    }

    /// ``remove(progress:)`` within `transaction`, which holds the lock and is ended by it (the lock file
    /// goes too).
    public func remove(in transaction: SandboxTransaction) -> TeardownReport {
        if case let .state(existing) = transaction.record, existing.attachment != nil {
            // An attachment's wire holds the user's own interface: only its detach may undo it.
            var report = TeardownReport()
            report.notes.append("'\(topology.name)' is an attachment, not a sandbox: left alone ('linkcond detach --name \(topology.name)' removes it)")
            return report
        }
        let report = teardown(transaction.record)
        transaction.reload()
        transaction.endRemovingLockFile()
        return report
    }

    /// Names of things of this sandbox that exist without being recorded: namespaces, `/etc/netns`
    /// directories and marked processes (what a crash before the state file was written leaves).
    public func leftovers() -> [String] {
        var found = topology.allNamespaces.filter { NamedNamespace.exists($0) || access("\(NamedNamespace.etcDirectory)/\($0)", F_OK) == 0 }
        found += RecordedProcess.discover(marker: marker).map { "\($0.role.rawValue) pid \($0.pid)" }
        return found
    }

    /// The namespaces by this sandbox's names that are not its own (another store's sandbox of the same
    /// name, or a namespace made by hand), with their owners (``NamespaceMark``).
    public func foreignNamespaces() -> [(name: String, owner: NamespaceMark.Owner)] {
        let names = topology.allNamespaces
        return zip(names, NamespaceMark.owners(of: names, marker: marker)).compactMap { name, owner in owner.isRemovable ? nil : (name, owner) }
    }

    /// The marker in the environment of this sandbox's processes.
    public var marker: String { RecordedProcess.marker(store: store, sandbox: topology.name) }

    /// Waits until the server answers TCP on port 80 from the client namespace, over IPv4 and IPv6 (IPv6
    /// neighbour discovery can lag behind IPv4 ARP). `check` runs before every attempt and may throw to
    /// give up early (e.g. when the server process died).
    public func waitForServer(
        timeout: Double, isCancelled: () -> Bool = { false }, check: () throws(SandboxError) -> Void = {}
    ) throws(SandboxError) {
        let client = try clientNamespace()
        let deadline = MonotonicClock.seconds() + timeout
        var lastError: Int32 = 0
        while MonotonicClock.seconds() < deadline {
            if isCancelled() { throw .interrupted }
            try check()
            guard let code = Self.connectToServer(from: client, timeout: 0.5) else { return }
            lastError = code
            usleep(50_000)
        }
        throw .serverNotReady(detail: "no answer on \(SandboxPlan.serverIPv4) and [\(SandboxPlan.serverIPv6)] port \(SandboxPlan.httpPort) within \(Int(timeout)) s (\(String(cString: strerror(lastError))))")
    }

    /// Opens a TCP connection to the server's port 80 over IPv4, then IPv6, from `client` and closes it
    /// again; nil when both connected, else the errno of the first failure. Each waits at most `timeout` s.
    static func connectToServer(from client: NamedNamespace, timeout: Double) -> Int32? {
        let addresses = [SandboxPlan.serverIPv4, SandboxPlan.serverIPv6]
        do {
            var sockets = try NamedNamespace.openSockets(addresses.map { .tcp($0.family.domain) }, in: client, nonBlocking: true)
            for (index, address) in addresses.enumerated() {
                guard let owned = sockets.take(index) else { return EBADF }
                try owned.socket.connect(to: SocketAddress(address, port: SandboxPlan.httpPort), timeout: timeout)
            }
            return nil
        } catch let error as SystemError {
            return error.errno.rawValue
        } catch let NamespaceError.system(_, code) {
            return code
        } catch {
            return EIO
        }
    }

    /// A typed rtnetlink client bound to `namespace`.
    public func netlink(_ namespace: NamedNamespace) throws(SandboxError) -> RouteNetlinkClient {
        let connection = try fail { try namespace.openNetlinkConnection() }
        return RouteNetlinkClient(connection: connection, namespace: namespace.name)
    }

    /// The namespace of `role`; throws ``SandboxError/notUp(name:)`` when it does not exist.
    public func namespace(_ role: SandboxTopology.Role) throws(SandboxError) -> NamedNamespace {
        do {
            return try NamedNamespace(existing: topology.namespace(role))
        } catch {
            throw .notUp(name: topology.name)
        }
    }

    /// The namespace of the emulated device; throws ``SandboxError/notUp(name:)`` when it does not exist.
    public func clientNamespace() throws(SandboxError) -> NamedNamespace {
        try namespace(.client)
    }

    /// Runs a program as the emulated device: in the client namespace, with the sandbox's resolver.
    /// Equivalent to `ip netns exec lc-client PROGRAM ARGS...`. Returns the program's exit code.
    public func exec(_ program: String, arguments: [String]) throws(SandboxError) -> Int32 {
        guard store.record(topology.name) != .missing else { throw .notUp(name: topology.name) }
        let client = try clientNamespace()
        let process = try fail { try client.spawn(program, arguments: arguments) }
        return try fail { try process.wait() }
    }
}

extension Sandbox {
    /// Starts again a process of the sandbox that is no longer running (the engine or the server), in its
    /// namespace, as `up` started it, within `transaction` (which holds the lock), without touching anything
    /// else of the sandbox; the record of the dead process is replaced. Refuses a process that still runs,
    /// stopped or not.
    public func restart(
        _ role: RecordedProcess.Role, _ launch: ProcessLaunch, in transaction: SandboxTransaction, progress: (String) -> Void = { _ in }
    ) throws(SandboxError) {
        var state = try transaction.upState()
        if let recorded = state.processes.first(where: { $0.role == role }), recorded.isRunning {
            throw .process(role: role.rawValue, detail: "pid \(recorded.pid) still runs\(recorded.isStopped ? " (stopped)" : ""); it is not restarted")
        }
        state.processes.removeAll { $0.role == role }
        try transaction.save(state)
        let namespace = try self.namespace(role == .engine ? .wire : .server)
        try withoutActuallyEscaping(progress) { (progress) throws(SandboxError) in
            let builder = SandboxBuilder(sandbox: self, isCancelled: { false }, progress: progress)
            switch role {
            case .engine: try builder.startEngine(launch, in: namespace, state: &state)
            case .server: try builder.startServer(launch, in: namespace, state: &state)
            }
        }
        try transaction.save(state)
    }
}

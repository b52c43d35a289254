import Glibc
import NetNamespace
import Netlink
import Profiles
import RouteNetlink
import Sandboxing

/// Conditions on a sandbox, whichever backend holds them: choosing the backend, bringing the sandbox up
/// in the shape that backend needs, and opening the backend of a sandbox that is up. What `linkcond apply`,
/// `clear`, `show`, `run` and ``LinkLab`` build on.
public struct SandboxConditioning: Sendable {
    /// The sandbox.
    public let sandbox: Sandbox
    /// How to start the userspace engine, when the sandbox needs one (`linkcond engine --name NAME`).
    public let engineLaunch: Sandbox.ProcessLaunch?

    /// Conditioning for `sandbox`; `engineExecutable` is the `linkcond` executable that runs the engine
    /// (nil: look for it with ``EngineExecutable/locate()`` when the engine is needed).
    public init(sandbox: Sandbox, engineExecutable: String? = nil) {
        self.sandbox = sandbox
        let executable = engineExecutable ?? EngineExecutable.locate()
        engineLaunch = executable.map { Self.engineLaunch(executable: $0, sandbox: sandbox) }
    }

    /// `linkcond engine --name NAME --store DIR`, started in the wire namespace.
    public static func engineLaunch(executable: String, sandbox: Sandbox) -> Sandbox.ProcessLaunch {
        Sandbox.ProcessLaunch(
            executable: executable, arguments: ["engine", "--name", sandbox.topology.name, "--store", sandbox.store.directory])
    }

    /// The backend `choice` means on this kernel: netem when asked, or for `auto` when the kernel has it;
    /// the userspace engine otherwise. Throws when netem is asked for and missing.
    public static func resolve(_ choice: BackendChoice) throws(SandboxError) -> BackendKind {
        switch choice {
        case .userspace: return .userspace
        case .netem:
            guard KernelDoctor.hasNetem() else {
                throw .unsupported(detail: "this kernel has no netem (sch_netem), which '--backend netem' needs: use '--backend userspace' or 'auto', or see 'linkcond doctor'")
            }
            return .netem
        case .auto: return KernelDoctor.hasNetem() ? .netem : .userspace
        }
    }

    /// The backend the sandbox was built for, from its state (read now, or the transaction's).
    public func recordedBackend(in transaction: SandboxTransaction? = nil) throws(SandboxError) -> BackendKind {
        Self.kind(of: try (transaction ?? sandbox.look()).upState())
    }

    static func kind(of state: SandboxState) -> BackendKind {
        state.backend.flatMap(BackendKind.init(rawValue:)) ?? (state.wire ? .userspace : .netem)
    }

    /// The backend that holds the sandbox's conditions (from its state: read now, or the transaction's).
    public func backend(in transaction: SandboxTransaction? = nil) throws(SandboxError) -> any ConditioningBackend {
        try backend(try recordedBackend(in: transaction))
    }

    private func backend(_ kind: BackendKind) throws(SandboxError) -> any ConditioningBackend {
        switch kind {
        case .netem: return NetemBackend(sandbox: sandbox)
        case .userspace: return EngineBackend(sandbox: sandbox)
        }
    }

    /// How closely ``prepare(_:cellular:server:in:verify:isCancelled:progress:)`` looks at a sandbox that is up.
    public enum Verification: Sendable {
        /// Every link, address and default route read back from the kernel, and the processes (`up`).
        case full
        /// The namespaces and the processes only (`apply`, a run): a link deleted from outside shows in
        /// `status` and is put right by `up`, and a change of conditions fails on it with the kernel's word.
        case quick
    }

    /// Brings the sandbox up for `choice` unless it is up and healthy with a backend that fits the choice.
    /// Returns the backend and what `up` did (nil when the sandbox was up already and left alone). Takes the
    /// sandbox's lock for the while.
    ///
    /// A sandbox that is up with the other backend than an explicit choice is refused, not rebuilt: it may
    /// be in use (`linkcond down` it first).
    public func prepare(
        _ choice: BackendChoice, cellular: Bool = false, server: Sandbox.ServerLaunch, addingCellular: Bool = false,
        isCancelled: @Sendable () -> Bool = { false }, progress: (String) -> Void = { _ in }
    ) throws(SandboxError) -> (backend: any ConditioningBackend, outcome: Sandbox.UpOutcome?) {
        let transaction = try sandbox.transaction(for: "up", progress: progress)
        defer { transaction.end() }
        return try prepare(
            choice, cellular: cellular, server: server, in: transaction, addingCellular: addingCellular, isCancelled: isCancelled,
            progress: progress)
    }

    /// ``prepare(_:cellular:server:isCancelled:progress:)`` within `transaction`, which holds the lock, looking
    /// at a sandbox that is up as closely as `verify` says.
    ///
    /// A sandbox whose namespaces and links are whole but one of whose processes died gets that process
    /// started again, alone (``Sandbox/UpOutcome/repaired``): the namespaces, and the user's processes in
    /// them, stay. A stopped process is refused with what to do. Anything else broken is rebuilt. A healthy
    /// sandbox without the cellular link asked for gets it added when `addingCellular` (`up --cellular`,
    /// ``Sandbox/UpOutcome/extended``) and is refused otherwise.
    public func prepare(
        _ choice: BackendChoice, cellular: Bool = false, server: Sandbox.ServerLaunch, in transaction: SandboxTransaction,
        verify: Verification = .full, addingCellular: Bool = false, isCancelled: @Sendable () -> Bool = { false },
        progress: (String) -> Void = { _ in }
    ) throws(SandboxError) -> (backend: any ConditioningBackend, outcome: Sandbox.UpOutcome?) {
        if case let .state(state) = transaction.record, state.complete {
            let structural = verify == .full ? sandbox.structuralProblems(state) : sandbox.missingNamespaces(state)
            let processes = sandbox.processProblems(state)
            let kind = Self.kind(of: state)
            if structural.isEmpty && processes.isEmpty {
                if choice != .auto && choice.rawValue != kind.rawValue {
                    throw .unsupported(detail: "sandbox '\(sandbox.topology.name)' is up with the \(kind.rawValue) backend, not \(choice.rawValue); remove it with 'linkcond down\(SandboxError.nameOption(sandbox.topology.name))' first")
                }
                if cellular && !state.cellular {
                    guard addingCellular else {
                        throw .unsupported(detail: "sandbox '\(sandbox.topology.name)' has no cellular link (ww0); add it with 'linkcond up --cellular\(SandboxError.nameOption(sandbox.topology.name))'")
                    }
                    try addCellular(state, in: transaction, progress: progress)
                    return (try backend(kind), .extended)
                }
                return (try backend(kind), nil)
            }
            if structural.isEmpty && (choice == .auto || choice.rawValue == kind.rawValue) && (!cellular || state.cellular) {
                // Whole but for a process: restart that one, never the namespaces (the user's processes live in them).
                if let stopped = state.processes.first(where: \.isStopped) {
                    throw .process(
                        role: stopped.role.rawValue,
                        detail: "pid \(stopped.pid) is stopped (SIGSTOP or a debugger): 'kill -CONT \(stopped.pid)' resumes it, 'linkcond down\(SandboxError.nameOption(sandbox.topology.name))' removes the sandbox")
                }
                try repair(state, server: server, in: transaction, progress: progress)
                return (try backend(kind), .repaired)
            }
        }
        let kind = try Self.resolve(choice)
        var engine: Sandbox.ProcessLaunch?
        if kind == .userspace {
            guard let launch = engineLaunch else {
                throw .unsupported(detail: "the userspace backend runs its engine as a linkcond process, and \(EngineExecutable.search().explanation)")
            }
            engine = launch
        }
        let outcome = try sandbox.up(
            Sandbox.Configuration(cellular: cellular, wire: kind == .userspace, backend: kind.rawValue, server: server, engine: engine),
            in: transaction, isCancelled: isCancelled, progress: progress)
        return (try backend(kind), outcome)
    }
}

extension SandboxConditioning {
    /// Adds the cellular link to a sandbox that is up with wifi alone (``Sandbox/addCellularLink(in:progress:)``);
    /// a userspace engine is started again to forward it, and gets each link's recorded conditions back.
    func addCellular(_ state: SandboxState, in transaction: SandboxTransaction, progress: (String) -> Void) throws(SandboxError) {
        var launch: Sandbox.ProcessLaunch?
        if state.wire {
            guard let engineLaunch else {
                throw .unsupported(detail: "adding a link restarts the engine of sandbox '\(sandbox.topology.name)', and the linkcond executable that runs it is not found: \(EngineExecutable.search().explanation)")
            }
            launch = engineLaunch
        }
        try sandbox.addCellularLink(in: transaction, progress: progress)
        guard let launch, let engine = state.engine else { return }
        progress("starting the engine of sandbox '\(sandbox.topology.name)' again, to forward the new link")
        _ = engine.terminate()
        try sandbox.restart(.engine, launch, in: transaction, progress: progress)
        try EngineBackend(sandbox: sandbox).restore(try transaction.upState().conditions, in: transaction)
    }

    /// Starts again the processes of a whole sandbox that died (the engine, the server), and puts back on
    /// a restarted engine the conditions the state records for each link.
    func repair(
        _ state: SandboxState, server: Sandbox.ServerLaunch, in transaction: SandboxTransaction, progress: (String) -> Void
    ) throws(SandboxError) {
        for process in state.processes where !process.isRunning {
            let launch: Sandbox.ProcessLaunch
            switch process.role {
            case .engine:
                guard let engineLaunch else {
                    throw .unsupported(detail: "the engine of sandbox '\(sandbox.topology.name)' died, and to start it again \(EngineExecutable.search().explanation)")
                }
                launch = engineLaunch
            case .server:
                guard case let .process(executable, arguments) = server else { continue }
                launch = Sandbox.ProcessLaunch(executable: executable, arguments: arguments)
            }
            progress("the \(process.role.rawValue) (pid \(process.pid)) of sandbox '\(sandbox.topology.name)' is not running: starting it again")
            try sandbox.restart(process.role, launch, in: transaction, progress: progress)
            if process.role == .engine {
                let engine = EngineBackend(sandbox: sandbox)
                try engine.restore(try transaction.upState().conditions, in: transaction)
            }
        }
    }
}

/// Where the `linkcond` executable is, for processes a library user's sandbox needs (the engine).
public enum EngineExecutable {
    /// What a search found, and where it looked.
    public struct Search: Sendable, Equatable {
        /// The executable, nil when none was found.
        public var found: String?
        /// Every place looked at, in order, with what was there: `LINKCOND_EXECUTABLE (not set)`,
        /// `/x/.build/debug/linkcond (beside this program: missing)`.
        public var tried: [String]

        /// A search's result.
        public init(found: String?, tried: [String]) {
            self.found = found
            self.tried = tried
        }

        /// Why none was found and what to do, one sentence (empty when one was found).
        public var explanation: String {
            guard found == nil else { return "" }
            return "no linkcond executable found (looked at \(tried.joined(separator: ", "))): add "
                + "`.product(name: \"linkcond\", package: \"linkcond\")` to your test target's dependencies so SwiftPM builds it "
                + "beside your tests, install linkcond on PATH, or set LINKCOND_EXECUTABLE to its path"
        }
    }

    /// `LINKCOND_EXECUTABLE`, this process when it is `linkcond`, a `linkcond` next to this process's
    /// executable (a test binary in the build folder, which a test target depending on the `linkcond`
    /// product gets), or the first `linkcond` in `PATH`.
    public static func locate() -> String? {
        search().found
    }

    /// ``locate()``, saying where it looked.
    public static func search() -> Search {
        var tried: [String] = []
        func take(_ path: String, _ what: String) -> String? {
            let usable = access(path, X_OK) == 0
            tried.append("\(path) (\(what)\(usable ? "" : ": missing"))")
            return usable ? path : nil
        }
        if let explicit = getenv("LINKCOND_EXECUTABLE") {
            if let found = take(String(cString: explicit), "LINKCOND_EXECUTABLE") { return Search(found: found, tried: tried) }
        } else {
            tried.append("LINKCOND_EXECUTABLE (not set)")
        }
        if let own = ProcessInspector.executable(getpid()) {
            if own.hasSuffix("/linkcond") { return Search(found: own, tried: tried + [own]) }
            let directory = own.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
            if let found = take("\(directory)/linkcond", "beside this program") { return Search(found: found, tried: tried) }
        }
        let path = getenv("PATH").map { String(cString: $0) } ?? "/usr/local/bin:/usr/bin:/bin"
        for folder in path.split(separator: ":") where !folder.isEmpty {
            if let found = take("\(folder)/linkcond", "on PATH") { return Search(found: found, tried: tried) }
        }
        return Search(found: nil, tried: tried)
    }
}

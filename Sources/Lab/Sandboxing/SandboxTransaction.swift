/// One command's hold on a sandbox: its lock, taken once, and its state file, read once.
///
/// A command that changes a sandbox (`up`, `apply`, `clear`, `down`, a scenario run, a ``LinkLab``) opens a
/// transaction with ``Sandbox/transaction(for:progress:)`` and hands it to every operation it calls — the
/// sandbox's own (``Sandbox/up(_:in:isCancelled:progress:)``), the conditioning backends' —, which neither
/// take the lock nor read the state file again: they read ``state`` and write with ``save(_:)``. A command
/// that only looks (`show`, `status`) opens one without the lock with ``Sandbox/look()``, so it is never held
/// up behind a long run.
///
/// A transaction belongs to the thread that opened it while it holds the lock (``SandboxLock`` is owned per
/// thread); it may be handed to other threads that work for that command, one at a time.
public final class SandboxTransaction: @unchecked Sendable {
    /// The sandbox.
    public let sandbox: Sandbox
    /// What the command is (`apply edge`, `run tunnel`), as the lock file tells waiters.
    public let command: String
    private var lock: SandboxLock?
    /// The state file as this transaction read it, or as it last wrote it.
    public private(set) var record: SandboxStore.Record

    init(sandbox: Sandbox, command: String, lock: SandboxLock?) {
        self.sandbox = sandbox
        self.command = command
        self.lock = lock
        record = sandbox.store.record(sandbox.topology.name)
    }

    deinit { end() }

    /// True while the transaction holds the sandbox's lock (it may write).
    public var holdsLock: Bool { lock != nil }

    /// The recorded state; nil when there is no state file or it cannot be trusted.
    public var state: SandboxState? {
        if case let .state(state) = record { return state }
        return nil
    }

    /// The state of a sandbox that is up (its `up` finished); ``SandboxError/notUp(name:)`` otherwise, and
    /// a state error naming the file when it cannot be trusted.
    public func upState() throws(SandboxError) -> SandboxState {
        switch record {
        case let .state(state) where state.complete: return state
        case .state, .missing: throw .notUp(name: sandbox.topology.name)
        case let .unreadable(detail):
            throw .state(
                path: sandbox.store.path(for: sandbox.topology.name),
                detail: "\(detail); 'linkcond down\(SandboxError.nameOption(sandbox.topology.name))' cleans up from the sandbox's names alone")
        }
    }

    /// Writes `state` to the state file (atomically) and keeps it as this transaction's. Only a transaction
    /// that holds the lock writes.
    public func save(_ state: SandboxState) throws(SandboxError) {
        guard lock != nil else {
            throw .state(path: sandbox.store.path(for: sandbox.topology.name), detail: "'\(command)' only looks at the sandbox and cannot change its state")
        }
        try sandbox.store.save(state)
        record = .state(state)
    }

    /// Changes the recorded state with `change` and writes it.
    public func update(_ change: (inout SandboxState) throws(SandboxError) -> Void) throws(SandboxError) {
        var state = try upState()
        try change(&state)
        try save(state)
    }

    /// Reads the state file again, after an operation that wrote it step by step itself (`up`, `down`).
    func reload() {
        record = sandbox.store.record(sandbox.topology.name)
    }

    /// Releases the lock (if held); the transaction may still be read. Safe to call twice.
    public func end() {
        lock?.release()
        lock = nil
    }

    /// Removes the lock file while holding the lock, then releases it (`down`: nothing of the sandbox stays).
    func endRemovingLockFile() {
        lock?.removeFileAndRelease()
        lock = nil
    }
}

extension Sandbox {
    /// Takes the sandbox's lock for `command` (waiting for another holder, telling `progress` who it is) and
    /// reads its state: the transaction every change of this command goes through. End it with
    /// ``SandboxTransaction/end()`` (or let it go).
    public func transaction(for command: String, progress: (String) -> Void = { _ in }) throws(SandboxError) -> SandboxTransaction {
        SandboxTransaction(sandbox: self, command: command, lock: try lock(for: command, progress: progress))
    }

    /// Reads the sandbox's state without taking its lock, for a command that only looks (`show`, `status`).
    public func look(for command: String = "show") -> SandboxTransaction {
        SandboxTransaction(sandbox: self, command: command, lock: nil)
    }
}

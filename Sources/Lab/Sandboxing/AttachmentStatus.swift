import NetNamespace
import RouteNetlink

/// What `linkcond status` reports about one attachment, read back from the kernel and `/proc`.
public struct AttachmentStatus: Codable, Sendable, Equatable {
    /// A process of the attachment (its engine).
    public struct Process: Codable, Sendable, Equatable {
        public var role: String
        public var pid: Int32
        public var running: Bool
        public var log: String
    }

    public var name: String
    /// Always `attachment` (sandboxes have none), so `status --json` tells them apart.
    public var kind = "attachment"
    /// What was attached to, in words (`container 'web' (podman, 3f2a…): pid 4242, network namespace …`).
    public var target: String
    /// The option that named it (`--container web`).
    public var request: String
    /// The interface spliced.
    public var interface: String
    /// The backend, when recorded.
    public var backend: String?
    /// The wire namespace and the target's name while attached.
    public var wireNamespace: String
    public var targetNamespace: String
    /// The step the journal last recorded (`attached`, or where an attach or detach stopped).
    public var step: String
    /// True once the attach finished.
    public var complete: Bool
    /// True when nothing is wrong (``problems`` is empty) and the attach finished.
    public var healthy: Bool
    public var createdAt: String
    public var processes: [Process]
    /// What is wrong, one sentence each.
    public var problems: [String]
    /// The command that holds the attachment's lock right now, if any.
    public var busy: String?
    /// True while the target's cable is pulled (``AttachmentRecord/linkDown``): its interface has no carrier.
    public var cablePulled = false
}

extension Attachment {
    /// The attachment's status; nil when nothing of it exists. A state that cannot be read, or leftovers
    /// without one, are reported as problems with what to do.
    public func status() -> AttachmentStatus? {
        let busy = SandboxLock.holder(of: name, store: store).map { "\($0)" }
        let look = sandbox.look(for: "status")
        guard case let .state(state) = look.record, let record = state.attachment else {
            let found = leftovers()
            guard look.record != .missing || !found.isEmpty || busy != nil else { return nil }
            var problem = "no readable state"
            if case let .unreadable(detail) = look.record { problem = "the state file \(detail)" }
            if !found.isEmpty { problem += "; found \(found.joined(separator: ", "))" }
            return AttachmentStatus(
                name: name, target: "?", request: "?", interface: "?", backend: nil, wireNamespace: wireNamespace, targetNamespace: targetNamespace,
                step: "?", complete: false, healthy: false, createdAt: "?", processes: [],
                problems: [busy == nil ? "\(problem): 'linkcond detach --name \(name)' removes what is linkcond's" : "being attached"], busy: busy)
        }
        return AttachmentStatus(
            name: name, target: record.target.description, request: record.target.request, interface: record.interface, backend: state.backend,
            wireNamespace: record.wireNamespace, targetNamespace: record.targetNamespace, step: record.step, complete: state.complete,
            healthy: state.complete && problems(state).isEmpty, createdAt: state.createdAt,
            processes: state.processes.map {
                AttachmentStatus.Process(role: $0.role.rawValue, pid: $0.pid, running: $0.isRunning, log: store.log(for: name, role: $0.role))
            },
            problems: problems(state), busy: busy, cablePulled: record.linkDown)
    }

    /// What is wrong with an attachment, one sentence each: an attach or detach that did not finish, a
    /// namespace or interface that is not where it should be, an engine that is not running, a target
    /// whose process has exited.
    public func problems(_ state: SandboxState) -> [String] {
        guard let record = state.attachment else { return ["the state has no attachment record"] }
        if record.detaching {
            return ["a detach did not finish (it stopped at: \(record.step)): 'linkcond detach --name \(name)' finishes it"]
        }
        if !state.complete {
            return ["the attach did not finish (it stopped at: \(record.step)): 'linkcond detach --name \(name)' puts everything back"]
        }
        var problems: [String] = []
        guard let target = try? NamedNamespace(existing: record.targetNamespace), let targetLinks = try? sandbox.netlink(target) else {
            return ["\(record.targetNamespace) (the target's name) is gone: 'linkcond detach --name \(name)' reaches it again through \(record.target.path) if it still exists"]
        }
        guard let wire = try? NamedNamespace(existing: record.wireNamespace), let wireLinks = try? sandbox.netlink(wire) else {
            return ["the wire namespace \(record.wireNamespace) is gone, and the original \(record.interface) with it"]
        }
        let wireSide = (try? wireLinks.links()) ?? []
        if let snapshot = record.snapshot, !wireSide.contains(where: { $0.index == snapshot.link.index }) {
            problems.append("the original \(record.interface) is no longer in \(record.wireNamespace) (its peer was deleted?)")
        }
        if !isStandIn(record, in: targetLinks, wire: wireLinks) {
            problems.append("\(record.interface) in the target is not linkcond's stand-in any more")
        }
        if let pid = record.target.pid, ProcessInspector.startTime(pid) != record.target.pidStartTime {
            problems.append("the target's process (pid \(pid)) has exited; its namespace lives on only through linkcond: 'linkcond detach --name \(name)'")
        }
        return problems + sandbox.processProblems(state)
    }
}

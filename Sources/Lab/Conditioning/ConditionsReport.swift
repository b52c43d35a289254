import JSONDocument
import Sandboxing

/// What `linkcond show` reports of a sandbox's conditions: each link's profile as the state records it (and
/// for timed conditions when they end and what comes back), what the backend holds, read back with its
/// counters, and notes on changes that never finished. ``json`` is `show --json`'s document (and the API's).
public struct ConditionsReport: Sendable {
    /// The sandbox's name.
    public var sandbox: String
    /// The backend that holds the conditions.
    public var backend: BackendKind
    /// The state, as read for this report.
    public var state: SandboxState
    /// What the backend holds, per site.
    public var installed: [InstalledSite]
    /// Changes that never finished, timed conditions whose process is gone: one sentence each.
    public var notes: [String]

    /// The timed change `link` is under, if any.
    public func timedChange(of link: Sandbox.ClientLink) -> SandboxState.TimedChange? {
        state.timedChanges.first { $0.links.contains(link.rawValue) }
    }

    /// `{"sandbox", "backend", "links": {"wifi": {"profile", "appliedAt", "source"?, "targets"?, "until"?, "then"?} | null},
    /// "notes", "sites"}`.
    public var json: JSONValue {
        let links: [(key: String, value: JSONValue)] = state.clientLinks.map { link in
            guard let record = state.conditions[link.rawValue] else { return (link.rawValue, .null) }
            var members: [(key: String, value: JSONValue)] = [("profile", .string(record.profile)), ("appliedAt", .string(record.appliedAt))]
            if let source = record.source { members.append(("source", .string(source))) }
            if let targets = record.targets { members.append(("targets", .array(targets.map(JSONValue.string)))) }
            if let timed = timedChange(of: link) {
                members.append(("until", .string(timed.endsAt)))
                members.append(("then", timed.restore[link.rawValue].map { .string($0.profile) } ?? .null))
            }
            return (link.rawValue, .object(members))
        }
        return .object([
            ("sandbox", .string(sandbox)), ("backend", .string(backend.rawValue)), ("links", .object(links)),
            ("notes", .array(notes.map(JSONValue.string))), ("sites", .array(installed.map(\.json))),
        ])
    }
}

extension SandboxConditioning {
    /// The sandbox's conditions, from one look: the state read once, without the lock (a report never waits
    /// for a run), and the backend asked what it holds.
    public func report() throws(SandboxError) -> ConditionsReport {
        let look = sandbox.look()
        let backend = try backend(in: look)
        let installed = try backend.installed(in: look)
        let state = try look.upState()
        let notes = try backend.reconcile(in: look)
        return ConditionsReport(sandbox: sandbox.topology.name, backend: backend.kind, state: state, installed: installed, notes: notes)
    }
}

import JSONDocument
import Profiles
import Sandboxing

/// What `linkcond apply`, `clear` and `show` do when `--name` names an attachment, for any caller (the CLI,
/// the control API): the same verbs on the spliced link — one link, the target's interface.
extension AttachmentConditioning {
    /// The attachment's state and record as `transaction` holds them; refuses one that is not attached (an
    /// attach or detach that did not finish, or no state at all), saying what puts it right.
    public func attached(in transaction: SandboxTransaction) throws(SandboxError) -> (state: SandboxState, record: AttachmentRecord) {
        let name = attachment.name
        guard case let .state(state) = transaction.record, let record = state.attachment else {
            throw .unsupported(detail: "attachment '\(name)' has no readable state: 'linkcond detach --name \(name)' removes what is linkcond's")
        }
        guard state.complete, !record.detaching else {
            throw .unsupported(detail: "attachment '\(name)' is not attached (stopped at: \(record.step)): 'linkcond detach --name \(name)' puts everything back")
        }
        return (state, record)
    }

    /// `linkcond apply PROFILE --name ATTACHMENT [--for DURATION]`: reconciles a change that did not finish,
    /// then puts `profile` on the spliced link and reads it back — for `seconds` when given, with the timed
    /// change recorded for ``ConditioningBackend/endTimedChange(_:in:catalogDirectory:)`` (as on a sandbox:
    /// whoever waits puts back what was there; when that process is gone, the next change after the time
    /// does). A `choice` other than `auto` must be the backend the attachment was attached with (it cannot
    /// change without attaching again).
    public func apply(
        _ profile: Profile, backend choice: BackendChoice = .auto, for seconds: Double? = nil, in transaction: SandboxTransaction
    ) throws(SandboxError) -> AttachmentAppliedChange {
        let (state, record) = try attached(in: transaction)
        if choice != .auto, choice.rawValue != state.backend {
            throw .unsupported(
                detail: "attachment '\(attachment.name)' is attached with the \(state.backend ?? "?") backend, not \(choice.rawValue): detach it and attach again with --backend \(choice.rawValue)")
        }
        let backend = try backend(in: transaction)
        let notes = try backend.reconcile(in: transaction)
        guard let seconds else {
            return AttachmentAppliedChange(report: try backend.apply(profile, links: nil, in: transaction), backend: backend, notes: notes, record: record)
        }
        let (report, generation) = try backend.apply(profile, links: nil, for: seconds, in: transaction)
        let timed = try transaction.upState().timedChanges.first { $0.generation == generation }
        return AttachmentAppliedChange(report: report, backend: backend, notes: notes, record: record, timed: timed)
    }

    /// `linkcond clear --name ATTACHMENT`: the sites cleared (none when it had no conditions), and notes.
    public func clear(in transaction: SandboxTransaction) throws(SandboxError) -> (cleared: [ConditionSite], notes: [String]) {
        _ = try attached(in: transaction)
        let backend = try backend(in: transaction)
        let notes = try backend.reconcile(in: transaction)
        return (try backend.clear(links: nil, in: transaction), notes)
    }

    /// `linkcond show --name ATTACHMENT`: the conditions held, read back from the kernel or the engine (no lock).
    public func report() throws(SandboxError) -> AttachmentConditionsReport {
        let look = attachment.sandbox.look()
        let (state, record) = try attached(in: look)
        let backend = try backend(in: look)
        let installed = try backend.installed(in: look)
        let notes = try backend.reconcile(in: look)
        return AttachmentConditionsReport(
            name: attachment.name, record: record, backend: backend.kind, applied: state.conditions[Sandbox.ClientLink.wifi.rawValue], notes: notes,
            installed: installed)
    }
}

/// What `linkcond apply … --name ATTACHMENT` did: the report, the backend holding the conditions, notes on
/// what earlier commands left unsettled, the attachment's record, and the timed change when the conditions
/// hold for a while.
public struct AttachmentAppliedChange: Sendable {
    /// What the backend did.
    public var report: ApplyReport
    /// The backend that holds the conditions (the one to end a timed change with).
    public var backend: any ConditioningBackend
    /// Unconfirmed changes and timed conditions an earlier command left, settled first: one sentence each.
    public var notes: [String]
    /// What the attachment is attached to.
    public var record: AttachmentRecord
    /// For conditions put on for a while: when they end and what comes back.
    public var timed: SandboxState.TimedChange?
}

/// An attachment's conditions as `show --name ATTACHMENT` reads them back.
public struct AttachmentConditionsReport: Sendable {
    /// The attachment's name.
    public var name: String
    /// What it is attached to.
    public var record: AttachmentRecord
    /// The backend holding its conditions.
    public var backend: BackendKind
    /// The profile applied last, as its state records it; nil when none is.
    public var applied: SandboxState.AppliedConditions?
    /// What reconciling found worth saying.
    public var notes: [String]
    /// The sites as installed: uplink out of the original interface, downlink out of the wire's end facing
    /// the target.
    public var installed: [InstalledSite]

    /// `show --name ATTACHMENT --json`: `{"attachment", "target", "interface", "backend", "link": {"profile",
    /// "appliedAt"}, "notes", "sites"}`.
    public var json: JSONValue {
        var members: [(key: String, value: JSONValue)] = [("profile", applied.map { .string($0.profile) } ?? .null)]
        if let applied { members.append(("appliedAt", .string(applied.appliedAt))) }
        return .object([
            ("attachment", .string(name)), ("target", .string(record.target.description)), ("interface", .string(record.interface)),
            ("backend", .string(backend.rawValue)), ("link", .object(members)), ("notes", .array(notes.map(JSONValue.string))),
            ("sites", .array(installed.map(\.json))),
        ])
    }
}

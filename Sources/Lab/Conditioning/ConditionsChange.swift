import Profiles
import Sandboxing

/// What `linkcond apply` (and the API's apply) did: the report, the backend, what bringing the sandbox up
/// did, notes on what earlier commands left unsettled, and the timed change when the conditions hold for a
/// while.
public struct AppliedChange: Sendable {
    /// What the backend did.
    public var report: ApplyReport
    /// The backend that holds the conditions.
    public var backend: any ConditioningBackend
    /// What ``SandboxConditioning/prepare(_:cellular:server:in:verify:addingCellular:isCancelled:progress:)``
    /// did (nil: the sandbox was up and left alone).
    public var outcome: Sandbox.UpOutcome?
    /// Unconfirmed changes and timed conditions an earlier command left, settled first: one sentence each.
    public var notes: [String]
    /// For conditions put on for a while: when they end and what comes back.
    public var timed: SandboxState.TimedChange?
}

extension SandboxConditioning {
    /// `linkcond apply` within `transaction` (which holds the lock): brings the sandbox up for `choice` when it
    /// is not (or starts a process of it that died), settles what earlier commands left unconfirmed, and puts
    /// `profile` on `links` (nil: every link) — for `seconds` when given, with the timed change recorded for
    /// ``ConditioningBackend/endTimedChange(_:in:catalogDirectory:)``. A sandbox this apply created is removed
    /// again when the apply fails; a kernel that lacks a qdisc gets a sentence saying what to do.
    public func apply(
        _ profile: Profile, links: Set<Sandbox.ClientLink>?, for seconds: Double? = nil, choice: BackendChoice, server: Sandbox.ServerLaunch,
        in transaction: SandboxTransaction, isCancelled: @Sendable () -> Bool = { false }, progress: (String) -> Void = { _ in }
    ) throws(SandboxError) -> AppliedChange {
        let (backend, outcome) = try prepare(
            choice, cellular: links?.contains(.cellular) ?? false, server: server, in: transaction, verify: .quick, isCancelled: isCancelled,
            progress: progress)
        let notes = try backend.reconcile(in: transaction)
        do throws(SandboxError) {
            guard let seconds else {
                return AppliedChange(report: try backend.apply(profile, links: links, in: transaction), backend: backend, outcome: outcome, notes: notes)
            }
            let (report, generation) = try backend.apply(profile, links: links, for: seconds, in: transaction)
            let timed = try transaction.upState().timedChanges.first { $0.generation == generation }
            return AppliedChange(report: report, backend: backend, outcome: outcome, notes: notes, timed: timed)
        } catch {
            if outcome == .created || outcome == .rebuilt { _ = sandbox.remove(in: transaction) }
            throw Self.explained(error)
        }
    }

    /// A refusal of the kernel that means a qdisc is missing, with what to do about it.
    static func explained(_ error: SandboxError) -> SandboxError {
        guard case let .netlink(inner) = error, inner.errno == 2, inner.description.contains("qdisc kind is unknown") else { return error }
        return .unsupported(detail: error.description + "; this kernel lacks a qdisc linkcond needs: run 'linkcond doctor' to see which, or use "
            + "the userspace backend ('--backend userspace', after 'linkcond down')")
    }
}

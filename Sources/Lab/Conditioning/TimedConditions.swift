import Profiles
import Sandboxing

/// Conditions for a while (`linkcond apply … --for 30s`, the API's `"for"`): applied, recorded in the
/// state with what to put back and when, then put back by whoever waits — or, when that process is gone,
/// by the next command after the deadline (``ConditioningBackend/settleTimedChanges(in:)``).
extension ConditioningBackend {
    /// Puts `profile` on `links` (nil: every link) for `seconds`, within `transaction` (which holds the lock),
    /// and records a ``SandboxState/TimedChange`` held by this process. What comes back afterwards is what the
    /// links held before — for a link that was itself under a timed change, what that one would have put back.
    /// Returns the report and the change's generation, for ``endTimedChange(_:in:)``.
    public func apply(
        _ profile: Profile, links: Set<Sandbox.ClientLink>?, for seconds: Double, in transaction: SandboxTransaction
    ) throws(SandboxError) -> (report: ApplyReport, generation: UInt64) {
        let before = try transaction.upState()
        let names = before.clientLinks.filter { links?.contains($0) ?? true }.map(\.rawValue)
        var restore: [String: SandboxState.AppliedConditions] = [:]
        for link in names {
            if let earlier = before.timedChanges.first(where: { $0.links.contains(link) }) {
                restore[link] = earlier.restore[link]
            } else {
                restore[link] = before.conditions[link]
            }
        }
        let report = try apply(profile, links: links, in: transaction)
        var generation: UInt64 = 0
        try transaction.update { (state: inout SandboxState) throws(SandboxError) in
            generation = state.generation
            state.timedChanges.append(SandboxState.TimedChange(links: names, restore: restore, generation: generation, seconds: seconds))
        }
        return (report, generation)
    }

    /// Ends the timed change `generation` now (its time is up, or its waiter was interrupted), within
    /// `transaction` (which holds the lock): puts back what its links held before, on the links no later
    /// change took over. Returns what was done, one sentence per group of links; nothing when a later change
    /// took over every link (or the change is gone).
    @discardableResult
    public func endTimedChange(_ generation: UInt64, in transaction: SandboxTransaction, catalogDirectory: String? = nil) throws(SandboxError) -> [String] {
        let state = try transaction.upState()
        guard let change = state.timedChanges.first(where: { $0.generation == generation }) else { return [] }
        var records = state.conditions
        for link in change.links { records[link] = change.restore[link] }
        try transaction.update { (state: inout SandboxState) throws(SandboxError) in
            state.timedChanges.removeAll { $0.generation == generation }
        }
        // Only the timed links change; the others are given what they hold (restore applies per group).
        try restore(records, in: transaction, catalogDirectory: catalogDirectory, only: Set(change.links))
        return change.links.sorted().map { link in "\(link): back to \(change.restore[link].map { "'\($0.profile)'" } ?? "no conditions")" }
    }

    /// Ends the timed changes whose time is up and whose process is gone (killed before it could put the
    /// conditions back): what the next command that changes the sandbox does first. A look (no lock)
    /// changes nothing and only says so. One sentence each.
    public func settleTimedChanges(in transaction: SandboxTransaction) throws(SandboxError) -> [String] {
        var notes: [String] = []
        for change in try transaction.upState().timedChanges where !change.holderIsRunning {
            let links = change.links.sorted().joined(separator: ", ")
            guard change.isDue else {
                notes.append("conditions on \(links) were put on until \(change.endsAt) by pid \(change.holder), which is gone: the first change of the sandbox after then puts back what was there")
                continue
            }
            guard transaction.holdsLock else {
                notes.append("conditions on \(links) were to end at \(change.endsAt), and pid \(change.holder), which was to put back what was there, is gone: the next apply, clear or run does")
                continue
            }
            let done = try endTimedChange(change.generation, in: transaction)
            notes.append("conditions on \(links) were to end at \(change.endsAt) (pid \(change.holder) is gone): put back " + done.joined(separator: "; "))
        }
        return notes
    }
}

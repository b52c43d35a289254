import Profiles
import Sandboxing

extension ConditioningBackend {
    /// Settles a change the state journalled and never confirmed (a command killed half-way, or left
    /// without an answer): asks the backend what the change's links hold and says so, one sentence per
    /// link. When `transaction` holds the lock, the state is brought in line — links that took the change
    /// record it, and the journal is cleared once every link is accounted for; a link that holds neither
    /// the change nor what was recorded before keeps the change pending (apply a profile again to settle
    /// it). Then timed conditions whose time is up and whose process is gone are ended
    /// (``settleTimedChanges(in:)``). Returns nothing when nothing was pending or due.
    public func reconcile(in transaction: SandboxTransaction) throws(SandboxError) -> [String] {
        let notes = try reconcilePending(in: transaction)
        return notes + (try settleTimedChanges(in: transaction))
    }

    /// The first half of ``reconcile(in:)``: the journalled change alone.
    func reconcilePending(in transaction: SandboxTransaction) throws(SandboxError) -> [String] {
        guard let pending = try transaction.upState().pending else { return [] }
        let outcome = try outcome(of: pending, in: transaction)
        let what = pending.conditions.map { "an apply of '\($0.profile)'" } ?? "a clear"
        var notes: [String] = []
        for link in pending.links {
            switch outcome[link] ?? nil {
            case true?: notes.append("\(what) (change \(pending.generation), \(pending.startedAt)) was not confirmed, but \(link) holds it")
            case false?:
                let before = try transaction.upState().conditions[link].map { "'\($0.profile)'" } ?? "no conditions"
                notes.append("\(what) (change \(pending.generation), \(pending.startedAt)) did not take effect: \(link) still holds \(before)")
            case nil:
                notes.append("\(what) (change \(pending.generation), \(pending.startedAt)) did not finish: \(link) holds neither it nor what was recorded before; apply a profile (or clear) to settle it")
            }
        }
        guard transaction.holdsLock else { return notes }
        try transaction.update { (state: inout SandboxState) throws(SandboxError) in
            for link in pending.links where (outcome[link] ?? nil) == true { state.conditions[link] = pending.conditions }
            state.endTimedChange(of: pending.links.filter { (outcome[$0] ?? nil) == true })
            let unsettled = pending.links.filter { (outcome[$0] ?? nil) == nil }
            if unsettled.isEmpty {
                state.pending = nil
            } else {
                state.pending?.links = unsettled
            }
        }
        return notes
    }
}

extension ConditioningBackend {
    /// Puts on each link the conditions `records` give it (a link without a record is cleared), as the state
    /// recorded them: what a run puts back when it ends, and what a restarted engine gets. Links that share
    /// a record get it in one apply (every link: the common case). With `only`, only the links it names
    /// change.
    public func restore(
        _ records: [String: SandboxState.AppliedConditions], in transaction: SandboxTransaction, catalogDirectory: String? = nil,
        only: Set<String>? = nil
    ) throws(SandboxError) {
        let links = try transaction.upState().clientLinks
        var groups: [(record: SandboxState.AppliedConditions?, links: Set<Sandbox.ClientLink>)] = []
        for link in links where only?.contains(link.rawValue) ?? true {
            let record = records[link.rawValue]
            if let index = groups.firstIndex(where: { $0.record == record }) { groups[index].links.insert(link) } else { groups.append((record, [link])) }
        }
        for (record, group) in groups {
            let scope = group.count == links.count ? nil : group
            guard let record else {
                _ = try clear(links: scope, in: transaction)
                continue
            }
            let profile: Profile
            do {
                profile = try record.recordedProfile() ?? ProfileCatalog.find(record.source ?? record.profile, directory: catalogDirectory)
            } catch {
                throw .unsupported(detail: "the conditions recorded for \(group.map(\.rawValue).sorted().joined(separator: ", ")) cannot be put back: \(error)")
            }
            _ = try apply(profile, links: scope, in: transaction)
        }
    }
}

extension SandboxConditioning {
    /// What only the conditioning layer can see wrong with a sandbox that is up, one sentence each: an
    /// engine that runs but does not answer its control socket, and a change of conditions that never
    /// finished (``ConditioningBackend/reconcile(in:)`` on a look, which writes nothing).
    public func problems(in transaction: SandboxTransaction) -> [String] {
        guard let state = try? transaction.upState(), let backend = try? backend(in: transaction) else { return [] }
        var problems: [String] = []
        if let engine = backend as? EngineBackend, let process = state.engine, process.isRunning, !process.isStopped,
            let silence = engine.unresponsiveness()
        {
            problems.append(silence)
            return problems  // the rest would ask the engine again
        }
        // Timed conditions whose process is gone are no problem of the sandbox: `status` shows when they end
        // and what comes back, and the next change puts it back.
        if state.pending != nil {
            do {
                problems += try backend.reconcilePending(in: transaction)
            } catch {
                problems.append("a change of conditions was not confirmed, and what the links hold cannot be read: \(error)")
            }
        }
        return problems
    }
}

extension SandboxConditioning {
    /// What `linkcond status` lists: every sandbox in `store` (or the one named, nil when nothing of it
    /// exists), each with what the conditioning layer sees wrong added to its problems (an engine that does
    /// not answer, a change that never finished). Reads only; takes no lock.
    public static func listings(store: SandboxStore = .standard, named name: String? = nil) -> [SandboxListing] {
        var listings: [SandboxListing]
        if let name {
            guard let topology = try? SandboxTopology(name: name) else { return [] }
            listings = Sandbox(topology: topology, store: store).listing().map { [$0] } ?? []
        } else {
            listings = Sandbox.listAll(store: store)
        }
        return listings.map { listing in
            guard case var .status(status) = listing, let topology = try? SandboxTopology(name: status.name) else { return listing }
            let sandbox = Sandbox(topology: topology, store: store)
            status.problems += SandboxConditioning(sandbox: sandbox, engineExecutable: nil).problems(in: sandbox.look(for: "status"))
            status.healthy = status.problems.isEmpty && status.complete
            return .status(status)
        }
    }
}

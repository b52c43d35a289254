import JSONDocument
import Profiles
import Sandboxing

extension SandboxState {
    /// The client links the sandbox has.
    public var clientLinks: [Sandbox.ClientLink] { cellular ? [.wifi, .cellular] : [.wifi] }

    /// Records `profile` as what `links` (nil: every client link) now hold, with its document.
    public mutating func record(_ profile: Profile, on links: Set<Sandbox.ClientLink>?) {
        let applied = Self.applied(profile)
        for link in clientLinks where links?.contains(link) ?? true { conditions[link.rawValue] = applied }
    }

    /// Records `links` (nil: every link) as clear.
    public mutating func recordClear(_ links: Set<Sandbox.ClientLink>?) {
        for link in clientLinks where links?.contains(link) ?? true { conditions[link.rawValue] = nil }
    }
}

extension SandboxState.AppliedConditions {
    /// The profile this record was made from, read back from its document (and its delivery traces from
    /// their files); nil for a record of an earlier version, which kept the profile's name alone.
    public func recordedProfile() throws(ProfileError) -> Profile? {
        guard let document else { return nil }
        var profile = try ProfileParser.parse(text: JSONWriter.text(of: document), source: "the state's record of '\(self.profile)'")
        profile.source = source
        return profile
    }
}

/// The journal of changes of conditions: a change is written down as pending before it is sent and
/// confirmed once the backend's answer says it is in force, so a command killed (or left without an
/// answer) at any instant leaves a state that says so, and the next command finds out from the backend
/// what really holds (``SandboxConditioning/reconcile(in:)``).
extension SandboxTransaction {
    /// Writes `operation` (`apply` with `profile`, or `clear`) on `links` (nil: every link) as pending, with
    /// the next generation; returns that generation.
    func beginChange(_ operation: String, profile: Profile?, links: Set<Sandbox.ClientLink>?) throws(SandboxError) -> UInt64 {
        var generation: UInt64 = 0
        try update { (state: inout SandboxState) throws(SandboxError) in
            state.generation += 1
            generation = state.generation
            let names = state.clientLinks.filter { links?.contains($0) ?? true }.map(\.rawValue)
            state.pending = SandboxState.PendingChange(
                operation: operation, links: names, generation: generation, conditions: profile.map(SandboxState.applied))
        }
        return generation
    }

    /// Records the pending change as what its links hold now, and clears the journal. A timed change of
    /// those links ends: the newer change wins.
    func confirmChange() throws(SandboxError) {
        try update { (state: inout SandboxState) throws(SandboxError) in
            guard let pending = state.pending else { return }
            for link in pending.links { state.conditions[link] = pending.conditions }
            state.endTimedChange(of: pending.links)
            state.pending = nil
        }
    }

    /// Clears the journal of a change the backend refused before acting on it (nothing changed).
    func abandonChange() throws(SandboxError) {
        try update { (state: inout SandboxState) throws(SandboxError) in state.pending = nil }
    }
}

extension SandboxState {
    /// Takes `links` out of the timed changes (another change of them wins over those); a timed change ends
    /// when none of its links is left.
    mutating func endTimedChange(of links: [String]) {
        timedChanges = timedChanges.compactMap { change in
            var change = change
            change.links.removeAll(where: links.contains)
            for link in links { change.restore[link] = nil }
            return change.links.isEmpty ? nil : change
        }
    }

    /// The record of `profile` applied now.
    static func applied(_ profile: Profile) -> AppliedConditions {
        AppliedConditions(
            profile: profile.name, source: profile.source, targets: profile.targets.isEmpty ? nil : profile.targets.map(\.description),
            document: ProfileParser.json(of: profile, tracesByPath: true))
    }
}

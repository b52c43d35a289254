import JSONDocument
import Profiles
import Sandboxing

extension SandboxState {
    /// The client links the sandbox has.
    public var clientLinks: [Sandbox.ClientLink] { cellular ? [.wifi, .cellular] : [.wifi] }

    /// Records `profile` as what `links` (nil: every client link) now hold, with its document.
    public mutating func record(_ profile: Profile, on links: Set<Sandbox.ClientLink>?) {
        let applied = AppliedConditions(
            profile: profile.name, source: profile.source, targets: profile.targets.isEmpty ? nil : profile.targets.map(\.description),
            document: ProfileParser.json(of: profile, tracesByPath: true))
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

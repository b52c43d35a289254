import Profiles
import Sandboxing

extension NetemBackend {
    /// Refuses what netem cannot do, before anything touches the kernel: a trace-driven direction
    /// (netem has no trace; the userspace engine replays it).
    static func checkSupported(_ profile: Profile) throws(SandboxError) {
        for (name, conditions) in [("uplink", profile.uplink), ("downlink", profile.downlink)] where conditions.trace != nil {
            throw .unsupported(detail: "profile '\(profile.name)': the \(name) follows a delivery trace, which netem cannot replay; use the userspace engine ('--backend userspace', after 'linkcond down' of a netem sandbox)")
        }
    }
}

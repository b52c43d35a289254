import Profiles
import RouteNetlink
import Sandboxing

extension NetemBackend {
    /// Refuses what netem cannot do, before anything touches the kernel: a trace-driven direction (a delivery,
    /// delay or loss trace: netem has none; the userspace engine replays them), a queue the kernel's qdiscs
    /// cannot hold (``NetemMapping/queueQdisc(for:clock:)``, with `clock` the kernel's packet-scheduler clock: a DropHead, CoDel or PIE limit in bytes, a RED one not in bytes, odd units,
    /// a queue beyond netem's `limit` without a rate), and more targets than one filter priority range holds.
    ///
    /// Targets are netem's too: u32 filters in front of the netem bands match the far end's prefix, protocol
    /// and port (``NetemClassification``), with the userspace engine's semantics, except that the port
    /// filters read a fixed offset: an IPv4 packet with options or an IPv6 packet with extension headers
    /// does not match a target that names a port (nor a DNS filter), as with iproute2's `match ip dport`.
    static func checkSupported(_ profile: Profile, clock: PacketSchedulerClock) throws(SandboxError) {
        let engine = "use the userspace engine ('--backend userspace', after 'linkcond down' of a netem sandbox)"
        for (name, conditions) in [("uplink", profile.uplink), ("downlink", profile.downlink)] {
            for (trace, what) in [(conditions.trace != nil, "a delivery trace"), (conditions.delayTrace != nil, "a delay trace"), (conditions.lossTrace != nil, "a loss trace")]
            where trace {
                throw .unsupported(detail: "profile '\(profile.name)': the \(name) follows \(what), which netem cannot replay; \(engine)")
            }
            do {
                _ = try NetemMapping.queueQdisc(for: conditions, clock: clock)
            } catch {
                throw .unsupported(detail: "profile '\(profile.name)': the \(name) asks for \(error.what), which the netem backend cannot install: \(error.why); or \(engine)")
            }
        }
        let filters = NetemShape.rules(.uplink, targets: profile.targets).count
        if filters > NetemShape.filtersPerRange {
            throw .unsupported(detail: "profile '\(profile.name)': its \(profile.targets.count) targets need \(filters) u32 filters on the uplink, more than the \(NetemShape.filtersPerRange) the netem backend gives a site; merge targets into wider prefixes, or use the userspace engine")
        }
    }
}

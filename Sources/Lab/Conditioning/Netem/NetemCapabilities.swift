import Profiles
import Sandboxing

extension NetemBackend {
    /// Refuses what netem cannot do, before anything touches the kernel: a trace-driven direction (a delivery,
    /// delay or loss trace: netem has none; the userspace engine replays them), a queue other than a DropTail
    /// in packets (netem's `limit`), and more targets than one filter priority range holds.
    ///
    /// Targets are netem's too: u32 filters in front of the netem bands match the far end's prefix, protocol
    /// and port (``NetemClassification``), with the userspace engine's semantics, except that the port
    /// filters read a fixed offset: an IPv4 packet with options or an IPv6 packet with extension headers
    /// does not match a target that names a port (nor a DNS filter), as with iproute2's `match ip dport`.
    static func checkSupported(_ profile: Profile) throws(SandboxError) {
        let engine = "use the userspace engine ('--backend userspace', after 'linkcond down' of a netem sandbox)"
        for (name, conditions) in [("uplink", profile.uplink), ("downlink", profile.downlink)] {
            for (trace, what) in [(conditions.trace != nil, "a delivery trace"), (conditions.delayTrace != nil, "a delay trace"), (conditions.lossTrace != nil, "a loss trace")]
            where trace {
                throw .unsupported(detail: "profile '\(profile.name)': the \(name) follows \(what), which netem cannot replay; \(engine)")
            }
            if let queue = conditions.queue, !(queue.discipline == .dropTail && queue.limit.isPackets) {
                let what = queue.discipline == .dropTail ? "a DropTail queue of \(queue.limit)" : "a \(queue.discipline.name) queue"
                throw .unsupported(detail: "profile '\(profile.name)': the \(name) asks for \(what); netem's own queue is a DropTail in packets (its 'limit'), and linkcond does not yet graft other queues under netem; \(engine)")
            }
        }
        let filters = NetemShape.rules(.uplink, targets: profile.targets).count
        if filters > NetemShape.filtersPerRange {
            throw .unsupported(detail: "profile '\(profile.name)': its \(profile.targets.count) targets need \(filters) u32 filters on the uplink, more than the \(NetemShape.filtersPerRange) the netem backend gives a site; merge targets into wider prefixes, or use the userspace engine")
        }
    }
}

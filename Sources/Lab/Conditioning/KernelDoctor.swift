import Glibc
import NetNamespace
import Netlink
import RouteNetlink
import Sandboxing

/// What `linkcond doctor` finds: which kernel features linkcond can use, tried for real.
public struct KernelFeature: Codable, Sendable, Equatable {
    /// Short name: `netem`, `tbf`, `htb`, `ingress`, `veth`, `ifb`, `namespaces`.
    public var name: String
    /// What linkcond uses it for.
    public var purpose: String
    public var present: Bool
    /// The kernel's own words when it refused, or how presence was shown.
    public var detail: String
    /// How to get it when it is missing.
    public var remedy: String?
}

/// Probes kernel features in a throwaway namespace (`lc-doctor-PID`), removed again before returning.
/// Nothing outside that namespace is touched.
public enum KernelDoctor {
    /// Runs every probe. Throws only when the throwaway namespace itself cannot be made.
    public static func check() throws(SandboxError) -> [KernelFeature] {
        let name = "lc-doctor-\(getpid())"
        let namespace: NamedNamespace
        do {
            namespace = try NamedNamespace.create(name)
        } catch {
            throw .namespace(error)
        }
        defer { try? namespace.delete() }
        var features = [
            KernelFeature(name: "namespaces", purpose: "isolated client, router and server", present: true,
                          detail: "created \(name)", remedy: nil)
        ]
        let client: RouteNetlinkClient
        do {
            client = RouteNetlinkClient(connection: try namespace.openNetlinkConnection(), namespace: name)
        } catch {
            throw .namespace(error)
        }
        let vethResult = Result { () throws(RouteNetlinkError) in try client.createVeth(name: "probe0", peerName: "probe1") }
        features.append(feature("veth", "the links between client, router and server", vethResult,
                                remedy: "enable CONFIG_VETH (modprobe veth)"))
        // Creating an ifb link would make the kernel load the module, which adds ifb0/ifb1 to the *host*
        // namespace; so it is only tried when the module is there already.
        if access("/sys/module/ifb", F_OK) == 0 || hostHasLink(ofKind: "ifb") {
            features.append(feature("ifb", "conditions on ingress (userspace backend, later features)",
                                    Result { () throws(RouteNetlinkError) in try client.createLink(name: "probeifb0", kind: "ifb") },
                                    remedy: "enable CONFIG_IFB (modprobe ifb numifbs=0)"))
        } else {
            features.append(KernelFeature(name: "ifb", purpose: "conditions on ingress (userspace backend, later features)", present: false,
                                          detail: "the ifb module is not loaded (not tried: loading it would add ifb0/ifb1 to the host)",
                                          remedy: "modprobe ifb numifbs=0"))
        }
        let qdiscs: [(String, String, String)] = [
            ("netem", "delay, jitter, loss, duplication, corruption, reordering and rate",
             "this kernel lacks CONFIG_NET_SCH_NETEM: load sch_netem (modprobe sch_netem), boot a distribution kernel (Debian: linux-image-amd64), or use the VM tier (scripts/vm-test)"),
            ("tbf", "rate limiting", "enable CONFIG_NET_SCH_TBF (modprobe sch_tbf)"),
            ("prio", "a separate DNS branch on the uplink (slow DNS profiles), and the untouched bands of profiles with targets", "enable CONFIG_NET_SCH_PRIO (modprobe sch_prio)"),
            ("htb", "class-based shaping", "enable CONFIG_NET_SCH_HTB (modprobe sch_htb)"),
        ]
        for (kind, purpose, remedy) in qdiscs {
            guard case .success = vethResult else {
                features.append(KernelFeature(name: kind, purpose: purpose, present: false,
                                              detail: "not tried: no veth to try it on", remedy: remedy))
                continue
            }
            // No options on purpose: a kernel that has the qdisc refuses the empty request for another
            // reason (missing parameters); only a missing one answers "Specified qdisc kind is unknown".
            let result = Result { () throws(RouteNetlinkError) in
                try client.replaceQdisc(on: "probe0", handle: TrafficControlHandle(major: 1, minor: 0), kind: kind)
            }
            features.append(qdiscFeature(kind, purpose, result, remedy: remedy))
        }
        features.append(u32Feature(client, vethPresent: (try? vethResult.get()) != nil))
        return features
    }

    /// True when the host namespace has a link of `kind` (read-only: one `RTM_GETLINK` dump).
    private static func hostHasLink(ofKind kind: String) -> Bool {
        guard let connection = try? NetlinkConnection(),
            let links = try? RouteNetlinkClient(connection: connection, namespace: nil).links()
        else { return false }
        return links.contains { $0.kind == kind }
    }

    /// u32 is tried on an ingress qdisc, which needs no options (`tc qdisc add dev probe0 ingress;
    /// tc filter add dev probe0 parent ffff: protocol ip prio 1 u32 match ip protocol 17 0xff flowid 1:1`).
    private static func u32Feature(_ client: RouteNetlinkClient, vethPresent: Bool) -> KernelFeature {
        let purpose = "steering DNS to its own branch (slow DNS profiles) and targeted traffic to the conditions (profiles with targets)"
        let remedy = "enable CONFIG_NET_CLS_U32 (modprobe cls_u32)"
        guard vethPresent else {
            return KernelFeature(name: "u32", purpose: purpose, present: false, detail: "not tried: no veth to try it on", remedy: remedy)
        }
        let ingress = TrafficControlHandle(major: 0xffff, minor: 0)
        do {
            try client.replaceQdisc(on: "probe0", handle: ingress, parent: TrafficControlHandle(rawValue: 0xffff_fff1), kind: "ingress")
        } catch {
            return KernelFeature(name: "u32", purpose: purpose, present: false,
                                 detail: "not tried: the ingress qdisc it attaches to was refused: \(error)", remedy: "enable CONFIG_NET_SCH_INGRESS")
        }
        let filter = U32Filter(protocolNumber: .ipv4, priority: 1, keys: [.ipProtocol(17)], classID: TrafficControlHandle(major: 1, minor: 1))
        do {
            try client.addFilter(filter, on: "probe0", parent: ingress)
            return KernelFeature(name: "u32", purpose: purpose, present: true, detail: "attached one", remedy: nil)
        } catch {
            return KernelFeature(name: "u32", purpose: purpose, present: false, detail: error.description, remedy: remedy)
        }
    }

    private static func feature(_ name: String, _ purpose: String, _ result: Result<Void, RouteNetlinkError>, remedy: String) -> KernelFeature {
        switch result {
        case .success:
            KernelFeature(name: name, purpose: purpose, present: true, detail: "created one", remedy: nil)
        case let .failure(error):
            KernelFeature(name: name, purpose: purpose, present: false, detail: error.description, remedy: remedy)
        }
    }

    private static func qdiscFeature(_ kind: String, _ purpose: String, _ result: Result<Void, RouteNetlinkError>, remedy: String) -> KernelFeature {
        switch result {
        case .success:
            return KernelFeature(name: kind, purpose: purpose, present: true, detail: "installed one", remedy: nil)
        case let .failure(error):
            if error.errno == ENOENT {
                return KernelFeature(name: kind, purpose: purpose, present: false, detail: error.description, remedy: remedy)
            }
            // Any other refusal comes from the qdisc's own code, so it is there.
            let words: String
            if case let .netlink(inner) = error { words = inner.kernelMessage ?? inner.systemMessage ?? "refused" } else { words = error.description }
            return KernelFeature(name: kind, purpose: purpose, present: true,
                                 detail: "present (an empty request was refused by the qdisc itself: \(words))", remedy: nil)
        }
    }
}

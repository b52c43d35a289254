import NetNamespace
import RouteNetlink

/// What `attach` checks before it changes anything: that the target is not the host's namespace nor one
/// of linkcond's own, and which interface it splices — and that that interface can be spliced.
extension Attachment {
    /// Refuses the host's own namespace (the one pid 1 runs in, or this process's) and linkcond's own
    /// namespaces (a sandbox's, an attachment's wire or target), each with a sentence saying what it is.
    static func refuseForbidden(_ target: FoundTarget) throws(SandboxError) {
        let identity = target.record.identity
        if identity == NamespaceIdentity.initial || identity == NamespaceIdentity.current {
            throw .unsupported(
                detail: "\(target.record.description) is the host's own network namespace (\(identity), the one pid 1 and linkcond run in): "
                    + "linkcond never changes the host's interfaces; attach to a container's namespace or one of its own. Nothing was changed")
        }
        for name in NamedNamespace.list() where name.hasPrefix("lc-") || name.hasPrefix("lca-") {
            guard NamespaceIdentity(path: "\(NamedNamespace.runDirectory)/\(name)") == identity else { continue }
            if let owner = SandboxTopology.owner(ofNamespace: name) {
                throw .unsupported(
                    detail: "\(target.record.description) is \(name), the \(owner.role.rawValue) namespace of linkcond's sandbox '\(owner.sandbox)': "
                        + "condition a sandbox with 'linkcond apply PROFILE\(SandboxError.nameOption(owner.sandbox))'. Nothing was changed")
            }
            if let owner = Attachment.owner(ofNamespace: name) {
                let what = name.hasSuffix("-wire") ? "the wire namespace of" : "already attached, as"
                throw .unsupported(detail: "\(target.record.description) is \(what) linkcond's attachment '\(owner)' (\(name)): 'linkcond detach --name \(owner)' first. Nothing was changed")
            }
        }
    }

    /// Kinds of device the kernel keeps in their namespace (`netns_local`): they cannot be spliced.
    static let namespaceLocalKinds: Set<String> = ["bridge", "openvswitch", "vrf", "ppp"]
    /// The fallback devices tunnel modules make in every namespace; they cannot change namespace either.
    static let namespaceLocalNames: Set<String> = ["tunl0", "gre0", "gretap0", "erspan0", "sit0", "ip6tnl0", "ip6gre0", "ip_vti0", "ip6_vti0"]

    /// The interface to splice: `requested`, or the interface of the target's default route. Refuses a
    /// namespace with no interface but `lo`, a name it does not have, and an ambiguous default (several
    /// interfaces with default routes, or none and several interfaces), listing the candidates.
    static func chooseInterface(_ requested: String?, links: [Link], routes: [Route], target: String) throws(SandboxError) -> Link {
        let candidates = links.filter { !$0.isLoopback }
        guard !candidates.isEmpty else {
            throw .unsupported(detail: "\(target) has no interface but lo: there is no link to condition. Nothing was changed")
        }
        let names = candidates.map(\.name).joined(separator: ", ")
        if let requested {
            guard let link = links.first(where: { $0.name == requested }) else {
                throw .unsupported(detail: "\(target) has no interface '\(requested)' (it has \(names)). Nothing was changed")
            }
            return link
        }
        let defaults = routes.filter { $0.isDefault && $0.table == .main && $0.type == .unicast }
        let used = candidates.filter { link in defaults.contains { $0.uses(interface: link.index) } }
        switch (used.count, candidates.count) {
        case (1, _): return used[0]
        case (0, 1): return candidates[0]
        case (0, _):
            throw .unsupported(detail: "\(target) has no default route, and several interfaces (\(names)): name one with --dev. Nothing was changed")
        default:
            throw .unsupported(
                detail: "\(target) has default routes through several interfaces (\(used.map(\.name).joined(separator: ", "))): name one with --dev. Nothing was changed")
        }
    }

    /// Refuses an interface that cannot be spliced exactly: the loopback, a device that cannot change
    /// namespace, one carrying tc qdiscs of the user's own (a move drops them), and one used by a route
    /// through several next hops (a move takes the whole route away, with its other interfaces' part).
    static func checkSpliceable(_ link: Link, qdiscs: [Qdisc], routes: [Route], target: String) throws(SandboxError) {
        if link.isLoopback {
            throw .unsupported(detail: "\(link.name) in \(target) is the loopback device: it cannot change namespace, and carries no link to condition. Nothing was changed")
        }
        if let kind = link.kind, namespaceLocalKinds.contains(kind) {
            throw .unsupported(detail: "\(link.name) in \(target) is a \(kind) device, which cannot change namespace: splice one of its ports, or a veth. Nothing was changed")
        }
        if namespaceLocalNames.contains(link.name) {
            throw .unsupported(detail: "\(link.name) in \(target) is a tunnel module's fallback device, which cannot change namespace. Nothing was changed")
        }
        let own = qdiscs.filter { $0.interfaceIndex == link.index && $0.handle.major != 0 }
        if !own.isEmpty {
            throw .unsupported(
                detail: "\(link.name) in \(target) carries tc qdiscs (\(own.map { "\($0.kind) \($0.handle)" }.joined(separator: ", "))), which moving it would drop: "
                    + "remove them first (tc qdisc del dev \(link.name) root / ingress). Nothing was changed")
        }
        let compound = routes.filter { $0.uses(interface: link.index) && !$0.compound.isEmpty }
        if !compound.isEmpty {
            let listed = compound.map { "\(InterfaceConfiguration.describe($0)) (\($0.compound.joined(separator: ", ")))" }.joined(separator: "; ")
            throw .unsupported(
                detail: "\(link.name) in \(target) is used by routes through several next hops or with encapsulation (\(listed)), which a move would take away "
                    + "with the other interfaces' part: linkcond cannot put them back exactly. Nothing was changed")
        }
    }
}

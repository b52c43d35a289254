import NetNamespace
import RouteNetlink

extension Sandbox {
    /// Adds the cellular link to a sandbox that is up without it, within `transaction` (which holds the
    /// lock), leaving everything else as it is: `ww0` in the client (198.18.2.2/24, 2001:2:0:2::2/64, default
    /// routes at metric 200, behind wifi's) and `c-ww0` in the router, through the wire namespace's `cl-ww0`
    /// and `rt-ww0` when the sandbox has one. Equivalent to the `ip link add … type veth`, `ip addr add` and
    /// `ip route add` commands `up --cellular` runs for that link. The state records the link before it is
    /// made; when a step fails, what was made is deleted and the state says wifi alone again.
    ///
    /// A userspace engine forwards only the links it found when it started: the conditioning layer starts it
    /// again afterwards (``SandboxConditioning`` does, with the conditions put back).
    public func addCellularLink(in transaction: SandboxTransaction, progress: (String) -> Void = { _ in }) throws(SandboxError) {
        var state = try transaction.upState()
        guard !state.cellular else { return }
        state.cellular = true
        try transaction.save(state)
        try withoutActuallyEscaping(progress) { (progress) throws(SandboxError) in
            try addLink(SandboxBuilder(sandbox: self, isCancelled: { false }, progress: progress), state: &state, in: transaction)
        }
    }

    private func addLink(_ builder: SandboxBuilder, state: inout SandboxState, in transaction: SandboxTransaction) throws(SandboxError) {
        let link = builder.clientLinks(Sandbox.Configuration(cellular: true))[1]
        let progress = builder.progress
        do throws(SandboxError) {
            progress("adding the cellular link \(link.client) to sandbox '\(topology.name)'")
            var namespaces: [SandboxTopology.Role: NamedNamespace] = [.client: try namespace(.client), .router: try namespace(.router)]
            if state.wire { namespaces[.wire] = try namespace(.wire) }
            let client = try netlink(namespaces[.client]!)
            let router = try netlink(namespaces[.router]!)
            let wire = try namespaces[.wire].map { (namespace) throws(SandboxError) in try netlink(namespace) }
            try builder.withDescriptors(namespaces) { (descriptors) throws(SandboxError) in
                try builder.makeVeths(link, wire: wire, router: router, descriptors: descriptors)
            }
            try builder.address(link, client: client, router: router)
            try builder.route(link, client: client)
        } catch {
            // Deleting one end of a veth pair deletes the other.
            if let client = try? netlink(try namespace(.client)) { try? client.deleteLink(link.client) }
            if let router = try? netlink(try namespace(.router)) { try? router.deleteLink(link.router) }
            state.cellular = false
            try? transaction.save(state)
            throw error
        }
    }
}

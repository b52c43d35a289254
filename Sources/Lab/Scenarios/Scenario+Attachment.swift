import Timeline

extension Scenario {
    /// What this scenario needs of a sandbox that an attachment does not have — its links, addresses,
    /// routes and portal (any step but apply, clear, wait, and the wifi link's router side going down or up,
    /// which on an attachment pulls and plugs back the target's cable), a cellular link, or its server (an
    /// expectation on the reachability lane: the prober asks the sandbox's server) — one sentence each;
    /// empty when it can run on an attachment (`linkcond run SCENARIO --name ATTACHMENT`).
    public var needsOfASandbox: [String] {
        var needs: [String] = []
        for step in steps {
            switch step.action {
            case .apply(_, nil), .clear(nil), .wait, .linkDown(.router, .wifi), .linkUp(.router, .wifi): continue
            case .linkDown(.client, .wifi), .linkUp(.client, .wifi):
                needs.append("step '\(step.name)' (\(step.action.summary)) takes the target's own interface down or up; on an attachment a link step pulls the cable (\"side\": \"router\")")
            case .apply, .clear: needs.append("step '\(step.name)' names a link of the sandbox (an attachment has one, its spliced interface)")
            default: needs.append("step '\(step.name)' (\(step.action.summary)) changes the sandbox's own links, addresses, routes or portal")
            }
        }
        if cellular { needs.append("it asks for a cellular link") }
        for expectation in expectations where expectation.lane == .reachability {
            needs.append("expectation '\(expectation.name)' watches the prober, which asks the sandbox's server")
        }
        return needs
    }
}

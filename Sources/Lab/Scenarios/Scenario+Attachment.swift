import Timeline

extension Scenario {
    /// What this scenario needs of a sandbox that an attachment does not have — its links and portal (any
    /// step but apply, clear and wait), a cellular link, or its server (an expectation on the reachability
    /// lane: the prober asks the sandbox's server) — one sentence each; empty when it can run on an
    /// attachment (`linkcond run SCENARIO --name ATTACHMENT`).
    public var needsOfASandbox: [String] {
        var needs: [String] = []
        for step in steps {
            switch step.action {
            case .apply(_, nil), .clear(nil), .wait: continue
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

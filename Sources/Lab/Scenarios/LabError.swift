/// Errors of labs and scenario runs.
public enum LabError: Error, Sendable, CustomStringConvertible {
    case timedOut(what: String, seconds: Double, last: String)
    case needsCellular(sandbox: String)
    /// What a lab on an attachment cannot do: the sandbox's links, addresses, routes and portal are not there.
    case notOnAttachment(what: String, attachment: String)
    /// A scenario that needs what an attachment does not have (``Scenario/needsOfASandbox``).
    case scenarioNeedsSandbox(scenario: String, need: String, attachment: String)

    public var description: String {
        switch self {
        case let .timedOut(what, seconds, last): "\(what) was not reached within \(seconds) s (last seen: \(last))"
        case let .needsCellular(sandbox):
            "sandbox '\(sandbox)' has no cellular link; recreate it with 'linkcond up --name \(sandbox) --cellular' or let the run make its own"
        case let .notOnAttachment(what, attachment):
            "\(what) acts on a sandbox's own links, server or portal, which attachment '\(attachment)' does not have: use a sandbox for it"
        case let .scenarioNeedsSandbox(scenario, need, attachment):
            "scenario '\(scenario)' cannot run on attachment '\(attachment)': \(need); run it in a sandbox"
        }
    }
}

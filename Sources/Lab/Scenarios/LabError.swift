import Sandboxing

/// Errors of labs and scenario runs.
public enum LabError: Error, Sendable, CustomStringConvertible {
    /// A wait of the lab (``LinkLab/waitForPath(_:within:)``) ran out; `reports` is where the lab's reports
    /// go (kept, since the lab failed), nil when unknown.
    case timedOut(what: String, seconds: Double, last: String, reports: String? = nil)
    /// An existing sandbox lacks the cellular link the lab needs.
    case needsCellular(sandbox: String)
    /// An existing sandbox has other links than the scenario is written for (its verdicts could differ).
    case wrongShape(sandbox: String, has: [String], needs: [String], scenario: String?)
    /// A name given for the lab's new sandbox is taken by a sandbox that exists.
    case sandboxExists(sandbox: String)
    /// The report folder cannot be made.
    case reportDirectory(path: String, detail: String)
    /// Both an existing sandbox and a name for a new one were given.
    case conflictingSandboxes(existing: String, new: String)
    /// What a lab on an attachment cannot do: the sandbox's links, addresses, routes and portal are not there.
    case notOnAttachment(what: String, attachment: String)
    /// A scenario that needs what an attachment does not have (``Scenario/needsOfASandbox``).
    case scenarioNeedsSandbox(scenario: String, need: String, attachment: String)

    public var description: String {
        switch self {
        case let .timedOut(what, seconds, last, reports):
            "\(what) was not reached within \(seconds) s (last seen: \(last))" + (reports.map { "; the lab's reports: \($0)/timeline.html" } ?? "")
        case let .needsCellular(sandbox):
            "sandbox '\(sandbox)' has no cellular link; add it with 'linkcond up --cellular\(SandboxError.nameOption(sandbox))' or let the run make its own sandbox"
        case let .wrongShape(sandbox, has, needs, scenario):
            "\(scenario.map { "scenario '\($0)' is" } ?? "the lab is") written for \(Self.words(needs)) (\"links\": [\(needs.map { "\"\($0)\"" }.joined(separator: ", "))]), "
                + "and sandbox '\(sandbox)' has \(Self.words(has)), which can give other verdicts: run it without --name (in a sandbox of its own), "
                + "or in a sandbox with \(Self.words(needs))"
        case let .sandboxExists(sandbox):
            "sandbox '\(sandbox)' exists already, and a lab removes the sandbox it makes: name another, or use it as the lab's existing sandbox (sandboxName)"
        case let .reportDirectory(path, detail):
            "cannot create the report directory \(path): \(detail)"
        case let .conflictingSandboxes(existing, new):
            "the lab was given an existing sandbox ('\(existing)') and a name for a new one ('\(new)'): give one of them"
        case let .notOnAttachment(what, attachment):
            "\(what) acts on a sandbox's own links, server or portal, which attachment '\(attachment)' does not have: use a sandbox for it"
        case let .scenarioNeedsSandbox(scenario, need, attachment):
            "scenario '\(scenario)' cannot run on attachment '\(attachment)': \(need); run it in a sandbox"
        }
    }

    /// `wifi alone`, `wifi and cellular`.
    private static func words(_ links: [String]) -> String {
        links.count == 1 ? "\(links[0]) alone" : links.joined(separator: " and ")
    }
}

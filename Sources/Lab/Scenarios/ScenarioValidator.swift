import JSONDocument
import Profiles
import Timeline

/// Checks a ``Scenario`` against every rule of the format (`scenarios/FORMAT.md`) that is not about the
/// document's shape: names, ranges (times, probe settings, `within`, `grace`), references (expectations to
/// steps, steps to profiles) and combinations (the cellular link, a `wait` of 0). The one place each of
/// these rules lives, for a scenario read from a file or made in code.
struct ScenarioValidator {
    /// Places errors in the document the scenario was read from (if any).
    let locator: DocumentLocator
    /// Whether a step's profile reference (a catalog name or a resolved path) can be applied.
    let lookup: (String) -> ScenarioParser.ProfileLookup

    static let failureThresholdExpectation = "a whole number of failed rounds from 1 to 100, such as 2"
    static let profileReferenceHint = "or a path to a profile file (with a '/' or ending in .json)"
    static let cellularExpectation =
        "\"links\": [\"wifi\", \"cellular\"] at the top of the scenario, so the sandbox gets its cellular link (ww0)"

    static let linksExpectation = "the links the scenario is written for: [\"wifi\"] or [\"wifi\", \"cellular\"]"

    func check(_ scenario: Scenario) throws(DocumentError) {
        try locator.checkName(scenario.name, of: "scenario")
        if let links = scenario.links {
            try check(links, at: JSONPath.root.appending("links"))
            if scenario.cellular != links.contains(.cellular) {
                throw locator.error(
                    .conflict, at: JSONPath.root.appending("cellular"),
                    problem: "\"cellular\": \(scenario.cellular) disagrees with \"links\"",
                    expected: "only \"links\" (\"cellular\": true is the older spelling of \"links\": [\"wifi\", \"cellular\"])")
            }
        }
        if let probe = scenario.probe { try check(probe, at: JSONPath.root.appending("probe")) }
        try checkSteps(of: scenario)
        try checkExpectations(of: scenario)
    }

    /// Refuses the `index`th step or expectation (`thing`, listed at `list`) when an earlier one has its
    /// `name`; `names` maps the names so far to their indices.
    func checkUnique(
        _ name: String, _ thing: String, index: Int, list: JSONPath, names: inout [String: Int]
    ) throws(DocumentError) {
        guard let first = names[name] else {
            names[name] = index
            return
        }
        let earlier =
            locator.position(of: list.appending(index: first).appending("name")).map { "at \($0)" }
            ?? "\(thing) \(first + 1)"
        throw locator.error(
            .duplicateName, at: list.appending(index: index).appending("name"),
            problem: "\(thing == "step" ? "a" : "an") \(thing) named \(JSONWriter.quoted(name)) already exists (\(earlier))",
            expected: "a name no other \(thing) has")
    }

    /// A step or expectation name: not empty, no control characters, no spaces at either end.
    func checkName(_ text: String, of thing: String, at path: JSONPath) throws(DocumentError) {
        let expected = "a name for the \(thing): text without control characters or spaces at either end"
        let problem: String
        if text.isEmpty {
            problem = "the \(thing) name is empty"
        } else if text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            problem = "the \(thing) name \(JSONWriter.quoted(text)) has a control character"
        } else if text.first!.isWhitespace || text.last!.isWhitespace {
            problem = "the \(thing) name \(JSONWriter.quoted(text)) has spaces at an end"
        } else {
            return
        }
        throw locator.error(.invalidValue, at: path, problem: problem, expected: expected)
    }

    /// `links`: wifi (every sandbox has it), and cellular or not, each once.
    func check(_ links: [LinkName], at path: JSONPath) throws(DocumentError) {
        for (index, link) in links.enumerated() where links[..<index].contains(link) {
            throw locator.error(
                .duplicateName, at: path.appending(index: index), problem: "\(JSONWriter.quoted(link.rawValue)) is listed twice",
                expected: Self.linksExpectation)
        }
        guard links.contains(.wifi) else {
            throw locator.error(
                .outOfRange, at: path, problem: links.isEmpty ? "the list of links is empty" : "every sandbox has wifi, and the list leaves it out",
                expected: Self.linksExpectation)
        }
    }

    func check(_ probe: ProbeSettingsOverride, at path: JSONPath) throws(DocumentError) {
        if let interval = probe.interval { try locator.checkTime(interval, at: path.appending("interval")) }
        if let timeout = probe.timeout {
            try locator.checkTime(timeout, at: path.appending("timeout"))
            guard timeout > 0 else {
                throw locator.error(
                    .outOfRange, at: path.appending("timeout"), problem: "a timeout of 0 fails every round",
                    expected: "a probe timeout above 0, such as \"5s\"")
            }
        }
        if let threshold = probe.failureThreshold, !(1...100).contains(threshold) {
            throw locator.error(
                .outOfRange, at: path.appending("failureThreshold"), problem: "\(threshold) is out of range",
                expected: Self.failureThresholdExpectation)
        }
        if let backoffMax = probe.backoffMax { try locator.checkTime(backoffMax, at: path.appending("backoffMax")) }
    }

    // MARK: Steps

    func checkSteps(of scenario: Scenario) throws(DocumentError) {
        let steps = JSONPath.root.appending("steps")
        guard !scenario.steps.isEmpty else {
            throw locator.error(.outOfRange, at: steps, problem: "the list of steps is empty", expected: "at least one step")
        }
        var names: [String: Int] = [:]
        for (index, step) in scenario.steps.enumerated() {
            let path = steps.appending(index: index)
            try checkName(step.name, of: "step", at: path.appending("name"))
            if case .apply(let reference, _) = step.action { try checkProfile(reference, at: path.appending("apply")) }
            if step.action.needsCellular, !scenario.cellular {
                let isHandover = if case .handover = step.action { true } else { false }
                throw locator.error(
                    .needsCellular, at: path.appending(isHandover ? "handover" : "interface"),
                    problem: isHandover
                        ? "a handover needs the cellular link, and the scenario does not ask for it"
                        : "the step acts on the cellular link, and the scenario does not ask for it",
                    expected: Self.cellularExpectation)
            }
            try locator.checkTime(step.hold, at: path.appending("hold"))
            if step.action == .wait, step.hold == 0 {
                throw locator.error(
                    .outOfRange, at: path.appending("hold"), problem: "a \"wait\" step of 0 does nothing",
                    expected: "a hold above 0, such as \"5s\"")
            }
            try checkUnique(step.name, "step", index: index, list: steps, names: &names)
        }
    }

    /// The profile a step applies exists and is valid.
    func checkProfile(_ reference: String, at path: JSONPath) throws(DocumentError) {
        let text = locator.value(at: path)?.stringValue ?? reference
        let nameExpectation = "a profile name such as \"lte\", " + Self.profileReferenceHint
        guard !text.isEmpty else {
            throw locator.error(.invalidValue, at: path, problem: "the profile name is empty", expected: nameExpectation)
        }
        let isPath = ProfileCatalog.isPath(reference)
        switch lookup(reference) {
        case .found:
            return
        case .missing(let candidates):
            if isPath {
                throw locator.error(
                    .unknownProfile, at: path, problem: "no profile file at \(JSONWriter.quoted(reference))",
                    expected: "a path to a profile file, relative to the scenario's folder, or a catalog profile name")
            }
            throw locator.error(
                .unknownProfile, at: path,
                problem: "no profile named \(JSONWriter.quoted(text)) in the catalog"
                    + Suggestions.didYouMean(text, in: candidates),
                expected: (candidates.isEmpty ? "a profile in the catalog" : "one of " + candidates.joined(separator: ", "))
                    + ", " + Self.profileReferenceHint)
        case .unreadable(let problem):
            throw locator.error(
                .unknownProfile, at: path, problem: "profile \(JSONWriter.quoted(text)): \(problem)",
                expected: isPath ? "a readable profile file" : "a readable profile catalog")
        case .invalid(let profileError):
            throw locator.error(
                .invalidProfile, at: path, problem: "profile \(JSONWriter.quoted(text)) is refused: \(profileError)",
                expected: "a valid profile (see profiles/FORMAT.md)")
        }
    }

    // MARK: Expectations

    func checkExpectations(of scenario: Scenario) throws(DocumentError) {
        let steps = scenario.steps
        var stepIndex: [String: Int] = [:]
        for (index, step) in steps.enumerated() where stepIndex[step.name] == nil { stepIndex[step.name] = index }
        // remaining[i]: how long the run lasts from the start of step i.
        var remaining = [UInt64](repeating: 0, count: steps.count + 1)
        for index in steps.indices.reversed() { remaining[index] = remaining[index + 1] &+ steps[index].hold }

        let expectations = JSONPath.root.appending("expectations")
        var names: [String: Int] = [:]
        for (number, expectation) in scenario.expectations.enumerated() {
            let path = expectations.appending(index: number)
            try checkName(expectation.name, of: "expectation", at: path.appending("name"))
            let stepPath = path.appending(expectation.isReaches ? "after" : "during")
            guard let index = stepIndex[expectation.rule.step] else {
                let names = steps.map(\.name)
                throw locator.error(
                    .unknownStep, at: stepPath,
                    problem: "no step named \(JSONWriter.quoted(expectation.rule.step))"
                        + Suggestions.didYouMean(expectation.rule.step, in: names),
                    expected: "the name of a step: " + Suggestions.alternatives(names))
            }
            let step = steps[index]
            switch expectation.rule {
            case .reaches(_, let within, _):
                try checkWithin(within, at: path.appending("within"), step: step, remaining: remaining[index])
            case .holds(_, _, let grace):
                try checkGrace(grace, at: path.appending("grace"), step: step, stepPath: stepPath)
            }
            try checkUnique(expectation.name, "expectation", index: number, list: expectations, names: &names)
        }
    }

    /// A `within` above 0 that ends before the run does.
    func checkWithin(_ limit: UInt64, at path: JSONPath, step: ScenarioStep, remaining: UInt64) throws(DocumentError) {
        try locator.checkTime(limit, at: path)
        guard limit > 0 else {
            throw locator.error(
                .outOfRange, at: path, problem: "a \"within\" of 0 leaves no time",
                expected: "a time above 0, such as \"5s\" (a state already held counts as reached at once)")
        }
        if limit > remaining {
            throw locator.error(
                .conflict, at: path,
                problem: "the run ends \(ScenarioTime.short(remaining)) after step \(JSONWriter.quoted(step.name)) "
                    + "starts, before \(ScenarioTime.short(limit)) have passed",
                expected: "a \"within\" of at most \(Quantity.formatTime(remaining)), or longer holds from step "
                    + "\(JSONWriter.quoted(step.name)) on")
        }
    }

    /// A `grace` shorter than the step's hold (reported at the grace, or at the step reference without one).
    func checkGrace(_ grace: UInt64, at path: JSONPath, step: ScenarioStep, stepPath: JSONPath) throws(DocumentError) {
        try locator.checkTime(grace, at: path)
        guard grace >= step.hold else { return }
        let written = locator.document == nil ? grace > 0 : locator.value(at: path) != nil
        throw locator.error(
            .conflict, at: written ? path : stepPath,
            problem: step.hold == 0
                ? "step \(JSONWriter.quoted(step.name)) holds 0: there is nothing to hold the state over"
                : "the grace (\(ScenarioTime.short(grace))) leaves nothing of step \(JSONWriter.quoted(step.name)) "
                    + "(\(ScenarioTime.short(step.hold)))",
            expected: step.hold == 0
                ? "a step with a hold above 0"
                : "a grace shorter than the step's hold of \(Quantity.formatTime(step.hold))")
    }
}

extension Expectation {
    /// Whether the rule is `reaches` (rather than `holds`).
    var isReaches: Bool {
        if case .reaches = rule { return true }
        return false
    }
}

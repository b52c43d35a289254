import Profiles
import Conditioning
import Glibc
import JSONDocument
import Timeline

/// Reads scenario files (JSON) into ``Scenario`` values, as strictly as ``ProfileParser`` reads profiles:
/// every problem is refused before the run starts, with the file, the JSON path, the line and column, and
/// what was expected. The format is described in `scenarios/FORMAT.md`:
///
/// ```json
/// {
///   "name": "tunnel",
///   "description": "...",
///   "cellular": false,
///   "probe": {"interval": "1s", "timeout": "4s", "failureThreshold": 2, "backoffMax": "1s"},
///   "steps": [
///     {"name": "lte", "apply": "lte", "hold": "10s"},
///     {"name": "tunnel", "apply": "100-loss", "hold": "25s"}
///   ],
///   "expectations": [
///     {"name": "prober notices", "lane": "reachability", "reaches": "offline", "within": "12s", "after": "tunnel"},
///     {"name": "path unaffected", "lane": "path", "holds": "satisfied", "during": "tunnel"}
///   ]
/// }
/// ```
///
/// A step has a `name`, a `hold` and exactly one action: `"apply": "PROFILE"`, `"clear": true`,
/// `"link": "down"|"up"` with `"side": "client"|"router"` and an optional `"interface": "wifi"|"cellular"`,
/// `"address": "remove"|"restore"` and `"defaultRoute": "remove"|"restore"` (each with an optional
/// `"interface"`), `"portal": "on"|"off"`, `"handover": "cellular"|"wifi"`, `"wait": true`.
///
/// Refused: invalid JSON, duplicate keys, unknown keys (with a suggestion), wrong types, bad times, an
/// empty step list, a step without an action or with two, `side`/`interface` beside an action they do not
/// belong to, `"clear": false`, a `wait` of 0, duplicate step or expectation names, expectations naming a
/// step that does not exist or a state their lane never has, a `within` of 0 or longer than the rest of the
/// run, a `grace` not shorter than its step, steps needing the cellular link without `"cellular": true`,
/// and profiles the catalog does not have (or that are themselves refused).
public enum ScenarioParser {
    /// The most a scenario file may hold.
    public static let maximumSize = 1 << 20

    /// Parses the UTF-8 JSON in `data`; `source` names it in errors, becomes ``Scenario/source``, and is the
    /// folder profile paths are resolved against. `profileExists` says whether a profile reference (a catalog
    /// name, or a resolved path) can be applied.
    public static func parse(
        data: [UInt8], source: String, profileExists: (String) -> Bool
    ) throws(ScenarioError) -> Scenario {
        try parse(data: data, source: source, lookup: { reference in
            profileExists(reference) ? .found : .missing(candidates: [])
        })
    }

    /// Parses `text`; see ``parse(data:source:profileExists:)``.
    public static func parse(
        text: String, source: String, profileExists: (String) -> Bool
    ) throws(ScenarioError) -> Scenario {
        try parse(data: Array(text.utf8), source: source, profileExists: profileExists)
    }

    /// Parses the UTF-8 JSON in `data`, checking every applied profile against `catalog`: a name must be in
    /// it, a path must lead to a profile file, and the profile must itself be valid.
    public static func parse(data: [UInt8], source: String, catalog: ProfileCatalog) throws(ScenarioError) -> Scenario {
        var names: [String]?
        return try parse(data: data, source: source, lookup: { reference in
            lookUp(reference, in: catalog, names: &names)
        })
    }

    /// Whether the catalog (or the file system, for a path) has the profile `reference`, and whether it is
    /// valid; `names` caches the catalog's names (listed on first need).
    static func lookUp(_ reference: String, in catalog: ProfileCatalog, names: inout [String]?) -> ProfileLookup {
        if ProfileCatalog.isPath(reference) {
            do {
                _ = try ProfileParser.load(path: reference)
                return .found
            } catch {
                return error.kind == .unreadable ? .unreadable(error.problem) : .invalid(error)
            }
        }
        if names == nil {
            do { names = try catalog.names() } catch { return .unreadable(error.description) }
        }
        guard let names, names.contains(reference) else { return .missing(candidates: names ?? []) }
        do {
            _ = try catalog.profile(named: reference)
            return .found
        } catch {
            return .invalid(error)
        }
    }

    /// Parses `text`; see ``parse(data:source:catalog:)``.
    public static func parse(text: String, source: String, catalog: ProfileCatalog) throws(ScenarioError) -> Scenario {
        try parse(data: Array(text.utf8), source: source, catalog: catalog)
    }

    /// Reads and parses the file at `path`, checking profiles against `catalog`.
    public static func load(path: String, catalog: ProfileCatalog) throws(ScenarioError) -> Scenario {
        try parse(data: try read(path), source: path, catalog: catalog)
    }

    /// Reads and parses the file at `path`; see ``parse(data:source:profileExists:)``.
    public static func load(path: String, profileExists: (String) -> Bool) throws(ScenarioError) -> Scenario {
        try parse(data: try read(path), source: path, profileExists: profileExists)
    }

    /// `reference` as a step stores it: a catalog name as is; a relative path (see ``ProfileCatalog/isPath(_:)``)
    /// joined to the folder of `source` (`scenarios/x.json` + `mine.json` → `scenarios/mine.json`).
    public static func resolve(profile reference: String, source: String) -> String {
        guard ProfileCatalog.isPath(reference), !reference.hasPrefix("/"),
            let slash = source.lastIndex(of: "/")
        else { return reference }
        var relative = Substring(reference)
        while relative.hasPrefix("./") { relative = relative.dropFirst(2) }
        let folder = source[..<slash]
        return (folder.isEmpty ? "" : String(folder)) + "/" + relative
    }

    // MARK: Internals

    /// What a profile check found.
    enum ProfileLookup {
        case found
        /// No such profile; `candidates` are the catalog's names, for suggestions.
        case missing(candidates: [String])
        /// A profile file (or the catalog) that cannot be read.
        case unreadable(String)
        /// A profile that exists but is refused.
        case invalid(ProfileError)
    }

    static func parse(
        data: [UInt8], source: String, lookup: (String) -> ProfileLookup
    ) throws(ScenarioError) -> Scenario {
        let document: ParsedJSON
        do {
            document = try JSONParser.parse(data, maximumDepth: 16)
        } catch {
            throw ScenarioError(file: source, parseError: error)
        }
        let reader = ScenarioReader(file: source, document: document)
        var scenario = try reader.scenario(lookup: lookup)
        scenario.source = source
        return scenario
    }

    static func read(_ path: String) throws(ScenarioError) -> [UInt8] {
        do {
            return try DocumentFile.read(path, maximumSize: maximumSize)
        } catch {
            throw ScenarioError(.unreadable, file: path, problem: error.problem, expected: error.tooLarge ? "a scenario file" : nil)
        }
    }
}

// MARK: - Reading

/// Reads one document, with the file name for errors.
private struct ScenarioReader {
    let file: String
    let document: ParsedJSON

    static let scenarioExpectation =
        "a scenario: an object with \"name\", \"steps\" and optionally \"description\", \"cellular\", \"probe\" "
        + "and \"expectations\""
    static let stepsExpectation =
        "a list of steps such as [{\"name\": \"lte\", \"apply\": \"lte\", \"hold\": \"10s\"}]"
    static let stepExpectation =
        "a step: an object with \"name\", \"hold\" and one action, such as "
        + "{\"name\": \"lte\", \"apply\": \"lte\", \"hold\": \"10s\"}"
    static let actionKeys = ["apply", "clear", "link", "address", "defaultRoute", "portal", "handover", "wait"]
    static let actionExpectation =
        "exactly one action: " + actionKeys.map(JSONWriter.quoted).joined(separator: ", ")
    static let probeExpectation =
        "probe settings such as {\"interval\": \"1s\", \"timeout\": \"5s\", \"failureThreshold\": 2, "
        + "\"backoffMax\": \"4s\"}"
    static let expectationsExpectation =
        "a list of expectations such as [{\"name\": \"notices\", \"lane\": \"reachability\", \"reaches\": "
        + "\"offline\", \"within\": \"12s\", \"after\": \"tunnel\"}]"
    static let expectationExpectation =
        "an expectation: an object with \"name\", \"lane\" and a rule, \"reaches\" (with \"within\" and "
        + "\"after\") or \"holds\" (with \"during\" and optionally \"grace\")"
    static let ruleExpectation =
        "one rule: \"reaches\" (with \"within\" and \"after\") or \"holds\" (with \"during\" and optionally "
        + "\"grace\")"
    static let cellularExpectation =
        "\"cellular\": true at the top of the scenario, so the sandbox gets its cellular link (ww0)"
    static let profileReferenceHint = "or a path to a profile file (with a '/' or ending in .json)"

    // MARK: Errors

    func error(_ kind: ScenarioError.Kind, _ element: JSONElement, problem: String, expected: String) -> ScenarioError {
        ScenarioError(kind, file: file, path: element.path, position: element.position, problem: problem, expected: expected)
    }

    func wrap(_ error: JSONReadError) -> ScenarioError {
        ScenarioError(file: file, readError: error)
    }

    func object(_ element: JSONElement, expected: String) throws(ScenarioError) -> JSONObjectReader {
        do { return try element.object(expected: expected) } catch { throw wrap(error) }
    }

    func array(_ element: JSONElement, expected: String) throws(ScenarioError) -> [JSONElement] {
        do { return try element.array(expected: expected) } catch { throw wrap(error) }
    }

    func finish(_ reader: JSONObjectReader) throws(ScenarioError) {
        do { try reader.finish() } catch { throw wrap(error) }
    }

    func missing(_ key: String, in element: JSONElement, expected: String) -> ScenarioError {
        error(.missingKey, element, problem: "missing key \(JSONWriter.quoted(key))", expected: expected)
    }

    func string(_ element: JSONElement, expected: String) throws(ScenarioError) -> String {
        do { return try element.string(expected: expected) } catch { throw wrap(error) }
    }

    func bool(_ element: JSONElement, expected: String) throws(ScenarioError) -> Bool {
        do { return try element.bool(expected: expected) } catch { throw wrap(error) }
    }

    func time(_ element: JSONElement, what: String) throws(ScenarioError) -> UInt64 {
        let text = try string(element, expected: "\(what) as a string, such as \"10s\"")
        do {
            return try Quantity.time(text)
        } catch {
            let kind: ScenarioError.Kind =
                switch error.kind {
                case .invalid, .ambiguousUnit: .invalidValue
                case .outOfRange: .outOfRange
                }
            throw self.error(kind, element, problem: error.problem, expected: error.expected)
        }
    }

    /// One of `choices`, with a suggestion for a near miss (`aliases` map other spellings to a choice).
    func choice(
        _ element: JSONElement, _ choices: [String], noun: String, aliases: [String: String] = [:]
    ) throws(ScenarioError) -> String {
        let listed = Self.list(choices)
        let text = try string(element, expected: listed)
        if choices.contains(text) { return text }
        var problem = "\(JSONWriter.quoted(text)) is not \(noun)"
        if let suggestion = aliases[text.lowercased()] ?? Suggestions.closest(to: text, in: choices) {
            problem += " (did you mean \(JSONWriter.quoted(suggestion))?)"
        }
        throw error(.invalidValue, element, problem: problem, expected: listed)
    }

    /// `"a"`, `"a" or "b"`, `one of "a", "b", "c"`.
    static func list(_ choices: [String]) -> String {
        let quoted = choices.map(JSONWriter.quoted)
        switch quoted.count {
        case 1: return quoted[0]
        case 2: return quoted[0] + " or " + quoted[1]
        default: return "one of " + quoted.joined(separator: ", ")
        }
    }

    /// A step or expectation name: not empty, no control characters, no spaces at either end.
    func name(_ element: JSONElement, of thing: String) throws(ScenarioError) -> String {
        let expected = "a name for the \(thing): text without control characters or spaces at either end"
        let text = try string(element, expected: "a \(thing) name as a string")
        if text.isEmpty {
            throw error(.invalidValue, element, problem: "the \(thing) name is empty", expected: expected)
        }
        if text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            throw error(
                .invalidValue, element, problem: "the \(thing) name \(JSONWriter.quoted(text)) has a control character",
                expected: expected)
        }
        if text.first!.isWhitespace || text.last!.isWhitespace {
            throw error(
                .invalidValue, element, problem: "the \(thing) name \(JSONWriter.quoted(text)) has spaces at an end",
                expected: expected)
        }
        return text
    }

    /// Of `present` (key and value), the one whose key comes second in the object (document order).
    static func second(
        of present: [(key: String, element: JSONElement)], in reader: JSONObjectReader
    ) -> (key: String, element: JSONElement) {
        let order = reader.keys
        let sorted = present.sorted { (order.firstIndex(of: $0.key) ?? 0) < (order.firstIndex(of: $1.key) ?? 0) }
        return sorted[1]
    }

    // MARK: The document

    func scenario(lookup: (String) -> ScenarioParser.ProfileLookup) throws(ScenarioError) -> Scenario {
        let root = document.root
        var top = try object(root, expected: Self.scenarioExpectation)
        let name = top.take("name")
        let description = top.take("description")
        let cellular = top.take("cellular")
        let probe = top.take("probe")
        let steps = top.take("steps")
        let expectations = top.take("expectations")
        try finish(top)

        guard let name else {
            throw missing("name", in: root, expected: "a \"name\" such as \"tunnel\" (the file name without .json)")
        }
        let nameText = try string(name, expected: "a scenario name as a string, such as \"tunnel\"")
        guard Profile.isValidName(nameText) else {
            throw error(
                .invalidValue, name, problem: "\(JSONWriter.quoted(nameText)) is not a usable scenario name",
                expected: "1 to 64 lowercase letters, digits, '-', '_' or '.', starting with a letter or digit")
        }
        var scenario = Scenario(name: nameText, steps: [])
        if let description {
            scenario.description = try string(description, expected: "a description as a string")
        }
        if let cellular {
            scenario.cellular = try bool(cellular, expected: "true or false: whether the sandbox needs its cellular link")
        }
        if let probe { scenario.probe = try probeSettings(probe) }
        guard let steps else {
            throw missing(
                "steps", in: root, expected: "\"steps\": " + Self.stepsExpectation)
        }
        scenario.steps = try self.steps(steps, cellular: scenario.cellular, lookup: lookup)
        if let expectations {
            scenario.expectations = try self.expectations(expectations, steps: scenario.steps)
        }
        return scenario
    }

    func probeSettings(_ element: JSONElement) throws(ScenarioError) -> ProbeSettingsOverride {
        var reader = try object(element, expected: Self.probeExpectation)
        let interval = reader.take("interval")
        let timeout = reader.take("timeout")
        let failureThreshold = reader.take("failureThreshold")
        let backoffMax = reader.take("backoffMax")
        try finish(reader)
        var settings = ProbeSettingsOverride()
        if let interval { settings.interval = try time(interval, what: "the pause between probe rounds") }
        if let timeout {
            let value = try time(timeout, what: "the probe timeout")
            guard value > 0 else {
                throw error(
                    .outOfRange, timeout, problem: "a timeout of 0 fails every round",
                    expected: "a probe timeout above 0, such as \"5s\"")
            }
            settings.timeout = value
        }
        if let failureThreshold {
            let expected = "a whole number of failed rounds from 1 to 100, such as 2"
            let value: Int
            do { value = try failureThreshold.integer(Int.self, expected: expected) } catch { throw wrap(error) }
            guard (1...100).contains(value) else {
                throw error(.outOfRange, failureThreshold, problem: "\(value) is out of range", expected: expected)
            }
            settings.failureThreshold = value
        }
        if let backoffMax { settings.backoffMax = try time(backoffMax, what: "the longest pause while offline") }
        return settings
    }

    // MARK: Steps

    func steps(
        _ element: JSONElement, cellular: Bool, lookup: (String) -> ScenarioParser.ProfileLookup
    ) throws(ScenarioError) -> [ScenarioStep] {
        let elements = try array(element, expected: Self.stepsExpectation)
        guard !elements.isEmpty else {
            throw error(.outOfRange, element, problem: "the list of steps is empty", expected: "at least one step")
        }
        var steps: [ScenarioStep] = []
        var names: [String: JSONElement] = [:]
        for element in elements {
            let (step, nameElement) = try self.step(element, cellular: cellular, lookup: lookup)
            if let first = names[step.name] {
                throw error(
                    .duplicateName, nameElement,
                    problem: "a step named \(JSONWriter.quoted(step.name)) already exists (at \(first.position))",
                    expected: "a name no other step has")
            }
            names[step.name] = nameElement
            steps.append(step)
        }
        return steps
    }

    func step(
        _ element: JSONElement, cellular: Bool, lookup: (String) -> ScenarioParser.ProfileLookup
    ) throws(ScenarioError) -> (ScenarioStep, JSONElement) {
        var reader = try object(element, expected: Self.stepExpectation)
        let name = reader.take("name")
        let hold = reader.take("hold")
        var actions: [(key: String, element: JSONElement)] = []
        for key in Self.actionKeys {
            if let value = reader.take(key) { actions.append((key, value)) }
        }
        let side = reader.take("side")
        let interface = reader.take("interface")
        try finish(reader)

        guard let name else { throw missing("name", in: element, expected: "a \"name\" for the step, such as \"tunnel\"") }
        let nameText = try self.name(name, of: "step")
        guard let action = actions.first else {
            throw error(.missingKey, element, problem: "the step has no action", expected: Self.actionExpectation)
        }
        if actions.count > 1 {
            let extra = Self.second(of: actions, in: reader)
            let other = actions.first { $0.key != extra.key }!
            throw error(
                .conflict, extra.element,
                problem:
                    "\(JSONWriter.quoted(extra.key)) cannot be combined with \(JSONWriter.quoted(other.key)) in one step",
                expected: Self.actionExpectation + " (chain actions with a hold of \"0\" between them)")
        }
        if let side, action.key != "link" {
            throw error(
                .conflict, side, problem: "\"side\" does not go with \(JSONWriter.quoted(action.key))",
                expected: "\"side\" only in a \"link\" step")
        }
        if let interface, !["link", "address", "defaultRoute"].contains(action.key) {
            throw error(
                .conflict, interface, problem: "\"interface\" does not go with \(JSONWriter.quoted(action.key))",
                expected: "\"interface\" only in a \"link\", \"address\" or \"defaultRoute\" step"
                    + (action.key == "handover" ? " (\"handover\" names the link it hands over to)" : ""))
        }
        guard let hold else {
            throw missing(
                "hold", in: element, expected: "a \"hold\" such as \"10s\": how long to stay in this step (\"0\" to go straight on)")
        }

        var linkName = LinkName.wifi
        if let interface { linkName = try link(interface) }
        var cellularElement = linkName == .cellular ? interface : nil
        let stepAction: StepAction
        switch action.key {
        case "apply":
            stepAction = .apply(profile: try profile(action.element, lookup: lookup))
        case "clear", "wait":
            let value = try bool(action.element, expected: "true")
            guard value else {
                throw error(
                    .invalidValue, action.element, problem: "\"\(action.key)\": false does nothing",
                    expected: "true (a step that changes nothing is \"wait\": true)")
            }
            stepAction = action.key == "clear" ? .clear : .wait
        case "link":
            let change = try choice(action.element, ["down", "up"], noun: "a link change")
            guard let side else {
                throw missing(
                    "side", in: element,
                    expected: "a \"side\" for the link change: \"router\" (the device loses carrier, like walking "
                        + "out of range) or \"client\" (the device's own interface, like switching the radio off)")
            }
            let sideValue = LinkSide(rawValue: try choice(side, LinkSide.allCases.map(\.rawValue), noun: "a link side"))!
            stepAction = change == "down" ? .linkDown(side: sideValue, link: linkName) : .linkUp(side: sideValue, link: linkName)
        case "address":
            let change = try choice(action.element, ["remove", "restore"], noun: "an address change")
            stepAction = change == "remove" ? .removeAddress(link: linkName) : .restoreAddress(link: linkName)
        case "defaultRoute":
            let change = try choice(action.element, ["remove", "restore"], noun: "a default route change")
            stepAction = change == "remove" ? .removeDefaultRoute(link: linkName) : .restoreDefaultRoute(link: linkName)
        case "portal":
            let state = try choice(action.element, ["on", "off"], noun: "a portal state")
            stepAction = .portal(on: state == "on")
        case "handover":
            stepAction = .handover(to: try link(action.element))
            cellularElement = action.element
        default:
            preconditionFailure("unhandled action key \(action.key)")
        }
        if stepAction.needsCellular, !cellular, let cellularElement {
            let problem =
                if case .handover = stepAction {
                    "a handover needs the cellular link, and the scenario does not ask for it"
                } else {
                    "the step acts on the cellular link, and the scenario does not ask for it"
                }
            throw error(.needsCellular, cellularElement, problem: problem, expected: Self.cellularExpectation)
        }
        let holdValue = try time(hold, what: "how long to stay in the step")
        if stepAction == .wait, holdValue == 0 {
            throw error(
                .outOfRange, hold, problem: "a \"wait\" step of 0 does nothing", expected: "a hold above 0, such as \"5s\"")
        }
        return (ScenarioStep(name: nameText, action: stepAction, hold: holdValue), name)
    }

    func link(_ element: JSONElement) throws(ScenarioError) -> LinkName {
        let aliases = [
            "wl0": "wifi", "c-wl0": "wifi", "wlan": "wifi", "wlan0": "wifi", "wi-fi": "wifi",
            "ww0": "cellular", "c-ww0": "cellular", "wwan": "cellular", "wwan0": "cellular", "lte": "cellular",
            "mobile": "cellular",
        ]
        return LinkName(
            rawValue: try choice(element, LinkName.allCases.map(\.rawValue), noun: "a link of the sandbox", aliases: aliases))!
    }

    func profile(_ element: JSONElement, lookup: (String) -> ScenarioParser.ProfileLookup) throws(ScenarioError) -> String {
        let text = try string(element, expected: "a profile name such as \"lte\", " + Self.profileReferenceHint)
        guard !text.isEmpty else {
            throw error(
                .invalidValue, element, problem: "the profile name is empty",
                expected: "a profile name such as \"lte\", " + Self.profileReferenceHint)
        }
        let reference = ScenarioParser.resolve(profile: text, source: file)
        let isPath = ProfileCatalog.isPath(reference)
        switch lookup(reference) {
        case .found:
            return reference
        case .missing(let candidates):
            if isPath {
                throw error(
                    .unknownProfile, element, problem: "no profile file at \(JSONWriter.quoted(reference))",
                    expected: "a path to a profile file, relative to the scenario's folder, or a catalog profile name")
            }
            var problem = "no profile named \(JSONWriter.quoted(text)) in the catalog"
            if let suggestion = Suggestions.closest(to: text, in: candidates) {
                problem += " (did you mean \(JSONWriter.quoted(suggestion))?)"
            }
            throw error(
                .unknownProfile, element, problem: problem,
                expected: (candidates.isEmpty
                    ? "a profile in the catalog" : "one of " + candidates.joined(separator: ", "))
                    + ", " + Self.profileReferenceHint)
        case .unreadable(let problem):
            throw error(
                .unknownProfile, element, problem: "profile \(JSONWriter.quoted(text)): \(problem)",
                expected: isPath ? "a readable profile file" : "a readable profile catalog")
        case .invalid(let profileError):
            throw error(
                .invalidProfile, element, problem: "profile \(JSONWriter.quoted(text)) is refused: \(profileError)",
                expected: "a valid profile (see profiles/FORMAT.md)")
        }
    }

    // MARK: Expectations

    func expectations(_ element: JSONElement, steps: [ScenarioStep]) throws(ScenarioError) -> [Expectation] {
        let elements = try array(element, expected: Self.expectationsExpectation)
        var expectations: [Expectation] = []
        var names: [String: JSONElement] = [:]
        for element in elements {
            let (expectation, nameElement) = try self.expectation(element, steps: steps)
            if let first = names[expectation.name] {
                throw error(
                    .duplicateName, nameElement,
                    problem: "an expectation named \(JSONWriter.quoted(expectation.name)) already exists (at \(first.position))",
                    expected: "a name no other expectation has")
            }
            names[expectation.name] = nameElement
            expectations.append(expectation)
        }
        return expectations
    }

    func expectation(_ element: JSONElement, steps: [ScenarioStep]) throws(ScenarioError) -> (Expectation, JSONElement) {
        var reader = try object(element, expected: Self.expectationExpectation)
        let name = reader.take("name")
        let lane = reader.take("lane")
        let reaches = reader.take("reaches")
        let within = reader.take("within")
        let after = reader.take("after")
        let holds = reader.take("holds")
        let during = reader.take("during")
        let grace = reader.take("grace")
        try finish(reader)

        guard let name else {
            throw missing("name", in: element, expected: "a \"name\" for the expectation, such as \"prober notices\"")
        }
        let nameText = try self.name(name, of: "expectation")
        guard let lane else {
            throw missing("lane", in: element, expected: "a \"lane\": " + Self.list(Expectation.lanes.map(\.rawValue)))
        }
        let laneValue = try self.lane(lane)

        let rules = [("reaches", reaches), ("holds", holds)].compactMap { key, value in value.map { (key: key, element: $0) } }
        guard let rule = rules.first else {
            throw error(.missingKey, element, problem: "the expectation has no rule", expected: Self.ruleExpectation)
        }
        if rules.count > 1 {
            let extra = Self.second(of: rules, in: reader)
            let other = rules.first { $0.key != extra.key }!
            throw error(
                .conflict, extra.element,
                problem: "\(JSONWriter.quoted(extra.key)) cannot be combined with \(JSONWriter.quoted(other.key))",
                expected: Self.ruleExpectation + " (write two expectations for two rules)")
        }
        let foreign: [(key: String, element: JSONElement?)] =
            rule.key == "reaches" ? [("during", during), ("grace", grace)] : [("within", within), ("after", after)]
        for (key, value) in foreign {
            guard let value else { continue }
            let owner = rule.key == "reaches" ? "holds" : "reaches"
            throw error(
                .conflict, value, problem: "\(JSONWriter.quoted(key)) belongs to \(JSONWriter.quoted(owner))",
                expected: rule.key == "reaches"
                    ? "\"within\" and \"after\" beside \"reaches\""
                    : "\"during\" and optionally \"grace\" beside \"holds\"")
        }

        let state = try self.state(rule.element, lane: laneValue)
        let stepKey = rule.key == "reaches" ? "after" : "during"
        guard let stepElement = rule.key == "reaches" ? after : during else {
            throw missing(
                stepKey, in: element,
                expected: "\(JSONWriter.quoted(stepKey)): the name of the step the rule is about")
        }
        let index = try self.step(stepElement, in: steps)
        let step = steps[index]

        let expectation: Expectation
        if rule.key == "reaches" {
            guard let within else {
                throw missing("within", in: element, expected: "\"within\": the time allowed after the step starts, such as \"12s\"")
            }
            let limit = try time(within, what: "the time allowed")
            guard limit > 0 else {
                throw error(
                    .outOfRange, within, problem: "a \"within\" of 0 leaves no time",
                    expected: "a time above 0, such as \"5s\" (a state already held counts as reached at once)")
            }
            let remaining = steps[index...].reduce(UInt64(0)) { $0 &+ $1.hold }
            if limit > remaining {
                throw error(
                    .conflict, within,
                    problem: "the run ends \(ScenarioTime.short(remaining)) after step \(JSONWriter.quoted(step.name)) "
                        + "starts, before \(ScenarioTime.short(limit)) have passed",
                    expected: "a \"within\" of at most \(Quantity.formatTime(remaining)), or longer holds from step "
                        + "\(JSONWriter.quoted(step.name)) on")
            }
            expectation = Expectation(name: nameText, lane: laneValue, rule: .reaches(state: state, within: limit, afterStep: step.name))
        } else {
            var graceValue: UInt64 = 0
            if let grace { graceValue = try time(grace, what: "the grace") }
            if graceValue >= step.hold {
                let problem =
                    step.hold == 0
                    ? "step \(JSONWriter.quoted(step.name)) holds 0: there is nothing to hold the state over"
                    : "the grace (\(ScenarioTime.short(graceValue))) leaves nothing of step "
                        + "\(JSONWriter.quoted(step.name)) (\(ScenarioTime.short(step.hold)))"
                throw error(
                    .conflict, grace ?? stepElement, problem: problem,
                    expected: step.hold == 0
                        ? "a step with a hold above 0" : "a grace shorter than the step's hold of \(Quantity.formatTime(step.hold))")
            }
            expectation = Expectation(name: nameText, lane: laneValue, rule: .holds(state: state, duringStep: step.name, grace: graceValue))
        }
        return (expectation, name)
    }

    func lane(_ element: JSONElement) throws(ScenarioError) -> TimelineLane {
        let names = Expectation.lanes.map(\.rawValue)
        let text = try string(element, expected: Self.list(names))
        if let lane = TimelineLane(rawValue: text), Expectation.lanes.contains(lane) { return lane }
        if let lane = TimelineLane(rawValue: text) {
            throw error(
                .invalidValue, element,
                problem: "the \(lane) lane records what \(lane == .conditions ? "the steps did" : "the scenario did") "
                    + "and cannot be expected",
                expected: Self.list(names))
        }
        var problem = "\(JSONWriter.quoted(text)) is not a lane"
        if let suggestion = Suggestions.closest(to: text, in: names) {
            problem += " (did you mean \(JSONWriter.quoted(suggestion))?)"
        }
        throw error(.invalidValue, element, problem: problem, expected: Self.list(names))
    }

    func state(_ element: JSONElement, lane: TimelineLane) throws(ScenarioError) -> String {
        let states = Expectation.states(of: lane)
        let expected = states.map { "a \(lane) state: " + Self.list($0) } ?? "a state the app prints, as a string"
        let text = try string(element, expected: expected)
        guard let states else {
            guard !text.isEmpty else { throw error(.invalidValue, element, problem: "the state is empty", expected: expected) }
            return text
        }
        if states.contains(text) { return text }
        var problem = "the \(lane) lane has no state \(JSONWriter.quoted(text))"
        if let suggestion = Suggestions.closest(to: text, in: states) {
            problem += " (did you mean \(JSONWriter.quoted(suggestion))?)"
        }
        throw error(.unknownState, element, problem: problem, expected: expected)
    }

    /// The index of the step `element` names.
    func step(_ element: JSONElement, in steps: [ScenarioStep]) throws(ScenarioError) -> Int {
        let text = try string(element, expected: "a step name as a string")
        if let index = steps.firstIndex(where: { $0.name == text }) { return index }
        let names = steps.map(\.name)
        var problem = "no step named \(JSONWriter.quoted(text))"
        if let suggestion = Suggestions.closest(to: text, in: names) {
            problem += " (did you mean \(JSONWriter.quoted(suggestion))?)"
        }
        throw error(.unknownStep, element, problem: problem, expected: "the name of a step: " + Self.list(names))
    }
}

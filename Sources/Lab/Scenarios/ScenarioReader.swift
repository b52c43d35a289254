import JSONDocument
import Profiles
import Timeline

/// Reads a scenario document into a ``Scenario``: its shape (keys, JSON types, one action per step, one
/// rule per expectation, keys that belong to another action or rule) and its words and times. Ranges,
/// names, references between steps and expectations, profiles and the cellular link are the business of
/// ``ScenarioValidator``, which runs next.
struct ScenarioReader {
    /// The document's value.
    let root: JSONElement
    /// The scenario file, against whose folder profile paths are resolved.
    let file: String

    static let scenarioExpectation =
        "a scenario: an object with \"name\", \"steps\" and optionally \"description\", \"links\", \"probe\" "
        + "and \"expectations\""
    static let stepsExpectation =
        "a list of steps such as [{\"name\": \"lte\", \"apply\": \"lte\", \"hold\": \"10s\"}]"
    static let stepExpectation =
        "a step: an object with \"name\", \"hold\" and one action, such as "
        + "{\"name\": \"lte\", \"apply\": \"lte\", \"hold\": \"10s\"}"
    static let actionKeys = ["apply", "clear", "link", "address", "defaultRoute", "portal", "handover", "wait"]
    static let actionExpectation = "exactly one action: " + actionKeys.map(JSONWriter.quoted).joined(separator: ", ")
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
    static let linkAliases = [
        "wl0": "wifi", "c-wl0": "wifi", "wlan": "wifi", "wlan0": "wifi", "wi-fi": "wifi",
        "ww0": "cellular", "c-ww0": "cellular", "wwan": "cellular", "wwan0": "cellular", "lte": "cellular",
        "mobile": "cellular",
    ]

    func time(_ element: JSONElement, what: String) throws(DocumentError) -> UInt64 {
        try element.string(expected: "\(what) as a string, such as \"10s\"", parse: Quantity.time)
    }

    func link(_ element: JSONElement) throws(DocumentError) -> LinkName {
        try element.choice(LinkName.self, noun: "a link of the sandbox", aliases: Self.linkAliases)
    }

    /// `"links"`: a list of link names (checked by ``ScenarioValidator``).
    func links(_ element: JSONElement) throws(DocumentError) -> [LinkName] {
        var links: [LinkName] = []
        for item in try element.array(expected: ScenarioValidator.linksExpectation) { links.append(try link(item)) }
        return links
    }

    // MARK: The document

    func scenario() throws(DocumentError) -> Scenario {
        let fields = try root.fields(
            ["name", "description", "links", "cellular", "probe", "steps", "expectations"], expected: Self.scenarioExpectation)
        let name = try fields.require("name", expected: "a \"name\" such as \"tunnel\" (the file name without .json)")
        var scenario = Scenario(
            name: try name.string(expected: "a scenario name as a string, such as \"tunnel\""), steps: [])
        if let description = fields["description"] {
            scenario.description = try description.string(expected: "a description as a string")
        }
        if let links = fields["links"] {
            if let cellular = fields["cellular"] {
                throw cellular.error(
                    "\"cellular\" cannot be combined with \"links\"", expected: "only \"links\" (\"cellular\": true is the older spelling of "
                        + "\"links\": [\"wifi\", \"cellular\"])", kind: .conflict)
            }
            scenario.links = try self.links(links)
            scenario.cellular = scenario.links?.contains(.cellular) == true
        } else if let cellular = fields["cellular"] {
            scenario.cellular = try cellular.bool(
                expected: "true or false: whether the sandbox needs its cellular link")
        }
        scenario.probe = try fields["probe"].map(probeSettings)
        let steps = try fields.require("steps", expected: "\"steps\": " + Self.stepsExpectation)
        scenario.steps = try steps.array(expected: Self.stepsExpectation).map(step)
        if let expectations = fields["expectations"] {
            scenario.expectations = try expectations.array(expected: Self.expectationsExpectation).map(expectation)
        }
        return scenario
    }

    func probeSettings(_ element: JSONElement) throws(DocumentError) -> ProbeSettingsOverride {
        let fields = try element.fields(
            ["interval", "timeout", "failureThreshold", "backoffMax"], expected: Self.probeExpectation)
        var settings = ProbeSettingsOverride()
        if let interval = fields["interval"] {
            settings.interval = try time(interval, what: "the pause between probe rounds")
        }
        if let timeout = fields["timeout"] { settings.timeout = try time(timeout, what: "the probe timeout") }
        if let failureThreshold = fields["failureThreshold"] {
            settings.failureThreshold = try failureThreshold.integer(
                Int.self, expected: ScenarioValidator.failureThresholdExpectation)
        }
        if let backoffMax = fields["backoffMax"] {
            settings.backoffMax = try time(backoffMax, what: "the longest pause while offline")
        }
        return settings
    }

    // MARK: Steps

    func step(_ element: JSONElement) throws(DocumentError) -> ScenarioStep {
        let fields = try element.fields(
            ["name", "hold"] + Self.actionKeys + ["side", "interface", "family"], expected: Self.stepExpectation)
        let name = try fields.require("name", expected: "a \"name\" for the step, such as \"tunnel\"")
        let nameText = try name.string(expected: "a step name as a string")
        guard
            let action = try fields.present(Self.actionKeys).atMostOne(
                problemSuffix: " in one step",
                expected: Self.actionExpectation + " (chain actions with a hold of \"0\" between them)")
        else {
            throw element.error("the step has no action", expected: Self.actionExpectation, kind: .missingKey)
        }
        if let side = fields["side"], action.key != "link" {
            throw side.error(
                "\"side\" does not go with \(JSONWriter.quoted(action.key))", expected: "\"side\" only in a \"link\" step",
                kind: .conflict)
        }
        if let interface = fields["interface"], !["link", "address", "defaultRoute", "apply", "clear"].contains(action.key) {
            throw interface.error(
                "\"interface\" does not go with \(JSONWriter.quoted(action.key))",
                expected: "\"interface\" only in a \"link\", \"address\", \"defaultRoute\", \"apply\" or \"clear\" step"
                    + (action.key == "handover" ? " (\"handover\" names the link it hands over to)" : ""),
                kind: .conflict)
        }
        if let family = fields["family"], !["address", "defaultRoute"].contains(action.key) {
            throw family.error(
                "\"family\" does not go with \(JSONWriter.quoted(action.key))",
                expected: "\"family\" only in an \"address\" or \"defaultRoute\" step", kind: .conflict)
        }
        let hold = try fields.require(
            "hold", expected: "a \"hold\" such as \"10s\": how long to stay in this step (\"0\" to go straight on)")
        let scope = try fields["interface"].map(link)
        let family = try fields["family"]?.choice(AddressFamilyName.self, noun: "an address family")
        let stepAction = try self.action(action, side: fields["side"], link: scope, family: family, in: element)
        return ScenarioStep(name: nameText, action: stepAction, hold: try time(hold, what: "how long to stay in the step"))
    }

    /// The action of a step; `scope` is the step's `interface` (nil: wifi for link changes, every link for
    /// apply and clear), `family` its `family` (nil: both).
    func action(
        _ action: JSONMember, side: JSONElement?, link scope: LinkName?, family: AddressFamilyName?, in step: JSONElement
    ) throws(DocumentError) -> StepAction {
        let element = action.element
        let linkName = scope ?? .wifi
        switch action.key {
        case "apply":
            let text = try element.string(
                expected: "a profile name such as \"lte\", " + ScenarioValidator.profileReferenceHint)
            return .apply(profile: ScenarioParser.resolve(profile: text, source: file), link: scope)
        case "clear", "wait":
            guard try element.bool(expected: "true") else {
                throw element.error(
                    "\"\(action.key)\": false does nothing",
                    expected: "true (a step that changes nothing is \"wait\": true)")
            }
            return action.key == "clear" ? .clear(link: scope) : .wait
        case "link":
            let change = try element.choice(["down", "up"], noun: "a link change")
            guard let side else {
                throw step.missing(
                    "side",
                    expected: "a \"side\" for the link change: \"router\" (the device loses carrier, like walking "
                        + "out of range) or \"client\" (the device's own interface, like switching the radio off)")
            }
            let sideValue = try side.choice(LinkSide.self, noun: "a link side")
            return change == "down" ? .linkDown(side: sideValue, link: linkName) : .linkUp(side: sideValue, link: linkName)
        case "address":
            let change = try element.choice(["remove", "restore"], noun: "an address change")
            return change == "remove" ? .removeAddress(link: linkName, family: family) : .restoreAddress(link: linkName, family: family)
        case "defaultRoute":
            let change = try element.choice(["remove", "restore"], noun: "a default route change")
            return change == "remove"
                ? .removeDefaultRoute(link: linkName, family: family) : .restoreDefaultRoute(link: linkName, family: family)
        case "portal":
            return .portal(on: try element.choice(["on", "off"], noun: "a portal state") == "on")
        case "handover":
            return .handover(to: try link(element))
        default:
            preconditionFailure("unhandled action key \(action.key)")
        }
    }

    // MARK: Expectations

    func expectation(_ element: JSONElement) throws(DocumentError) -> Expectation {
        let fields = try element.fields(
            ["name", "lane", "family", "reaches", "within", "after", "holds", "during", "grace"],
            expected: Self.expectationExpectation)
        let name = try fields.require(
            "name", expected: "a \"name\" for the expectation, such as \"prober notices\"")
        let nameText = try name.string(expected: "an expectation name as a string")
        let lane = try fields.require(
            "lane", expected: "a \"lane\": " + Suggestions.alternatives(Expectation.lanes.map(\.rawValue)))
        let laneValue = try self.lane(lane)
        let family = try fields["family"].map { element throws(DocumentError) in
            guard laneValue == .reachability else {
                throw element.error(
                    "\"family\" does not go with the \(laneValue) lane",
                    expected: "\"family\" only on the reachability lane (the prober's state for one family)", kind: .conflict)
            }
            return try element.choice(AddressFamilyName.self, noun: "an address family")
        }
        guard
            let rule = try fields.present(["reaches", "holds"]).atMostOne(
                expected: Self.ruleExpectation + " (write two expectations for two rules)")
        else {
            throw element.error("the expectation has no rule", expected: Self.ruleExpectation, kind: .missingKey)
        }
        let reaches = rule.key == "reaches"
        for foreign in fields.present(reaches ? ["during", "grace"] : ["within", "after"]) {
            throw foreign.element.error(
                "\(JSONWriter.quoted(foreign.key)) belongs to \(JSONWriter.quoted(reaches ? "holds" : "reaches"))",
                expected: reaches
                    ? "\"within\" and \"after\" beside \"reaches\"" : "\"during\" and optionally \"grace\" beside \"holds\"",
                kind: .conflict)
        }

        let state = try self.state(rule.element, lane: laneValue)
        let stepKey = reaches ? "after" : "during"
        let step = try fields.require(
            stepKey, expected: "\(JSONWriter.quoted(stepKey)): the name of the step the rule is about"
        ).string(expected: "a step name as a string")
        guard reaches else {
            let grace = try fields["grace"].map { element throws(DocumentError) in
                try time(element, what: "the grace")
            }
            return Expectation(
                name: nameText, lane: laneValue, rule: .holds(state: state, duringStep: step, grace: grace ?? 0), family: family)
        }
        let within = try fields.require(
            "within", expected: "\"within\": the time allowed after the step starts, such as \"12s\"")
        let limit = try time(within, what: "the time allowed")
        return Expectation(
            name: nameText, lane: laneValue, rule: .reaches(state: state, within: limit, afterStep: step), family: family)
    }

    func lane(_ element: JSONElement) throws(DocumentError) -> TimelineLane {
        let names = Expectation.lanes.map(\.rawValue)
        let listed = Suggestions.alternatives(names)
        let text = try element.string(expected: listed)
        if let lane = TimelineLane(rawValue: text), Expectation.lanes.contains(lane) { return lane }
        if let lane = TimelineLane(rawValue: text) {
            throw element.error(
                "the \(lane) lane records what \(lane == .conditions ? "the steps did" : "the scenario did") "
                    + "and cannot be expected",
                expected: listed)
        }
        throw element.error(
            "\(JSONWriter.quoted(text)) is not a lane" + Suggestions.didYouMean(text, in: names), expected: listed)
    }

    func state(_ element: JSONElement, lane: TimelineLane) throws(DocumentError) -> String {
        let states = Expectation.states(of: lane)
        let expected =
            states.map { "a \(lane) state: " + Suggestions.alternatives($0) } ?? "a state the app prints, as a string"
        let text = try element.string(expected: expected)
        guard let states else {
            guard !text.isEmpty else { throw element.error("the state is empty", expected: expected) }
            return text
        }
        if states.contains(text) { return text }
        throw element.error(
            "the \(lane) lane has no state \(JSONWriter.quoted(text))" + Suggestions.didYouMean(text, in: states),
            expected: expected, kind: .unknownState)
    }
}

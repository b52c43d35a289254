import JSONDocument
import Profiles

/// Writes a ``Scenario`` as JSON, in the layout of the shipped scenarios (`name`, the action, then `hold`
/// for a step), leaving out what is empty or a default, such that reading the text gives the scenario back.
enum ScenarioWriter {
    static func json(_ scenario: Scenario) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [("name", .string(scenario.name))]
        if !scenario.description.isEmpty { members.append(("description", .string(scenario.description))) }
        if let links = scenario.links {
            members.append(("links", .array(links.map { .string($0.rawValue) })))
        } else if scenario.cellular {
            members.append(("cellular", .bool(true)))
        }
        if let probe = scenario.probe { members.append(("probe", json(probe))) }
        members.append(("steps", .array(scenario.steps.map { json($0, source: scenario.source) })))
        if !scenario.expectations.isEmpty { members.append(("expectations", .array(scenario.expectations.map(json)))) }
        return .object(members)
    }

    static func time(_ nanoseconds: UInt64) -> JSONValue { .string(Quantity.formatTime(nanoseconds)) }

    static func json(_ probe: ProbeSettingsOverride) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = []
        if let interval = probe.interval { members.append(("interval", time(interval))) }
        if let timeout = probe.timeout { members.append(("timeout", time(timeout))) }
        if let threshold = probe.failureThreshold { members.append(("failureThreshold", .number(JSONNumber(threshold)))) }
        if let backoffMax = probe.backoffMax { members.append(("backoffMax", time(backoffMax))) }
        return .object(members)
    }

    static func json(_ step: ScenarioStep, source: String?) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [("name", .string(step.name))]
        func link(_ key: String, _ value: String, side: LinkSide? = nil, on link: LinkName, family: AddressFamilyName? = nil) {
            members.append((key, .string(value)))
            if let side { members.append(("side", .string(side.rawValue))) }
            if link != .wifi { members.append(("interface", .string(link.rawValue))) }
            if let family { members.append(("family", .string(family.rawValue))) }
        }
        switch step.action {
        case .apply(let reference, let scope):
            members.append(("apply", .string(written(reference, source: source))))
            if let scope { members.append(("interface", .string(scope.rawValue))) }
        case .clear(let scope):
            members.append(("clear", .bool(true)))
            if let scope { members.append(("interface", .string(scope.rawValue))) }
        case .wait: members.append(("wait", .bool(true)))
        case .linkDown(let side, let name): link("link", "down", side: side, on: name)
        case .linkUp(let side, let name): link("link", "up", side: side, on: name)
        case .removeAddress(let name, let family): link("address", "remove", on: name, family: family)
        case .restoreAddress(let name, let family): link("address", "restore", on: name, family: family)
        case .removeDefaultRoute(let name, let family): link("defaultRoute", "remove", on: name, family: family)
        case .restoreDefaultRoute(let name, let family): link("defaultRoute", "restore", on: name, family: family)
        case .portal(let on): members.append(("portal", .string(on ? "on" : "off")))
        case .handover(let name): members.append(("handover", .string(name.rawValue)))
        }
        members.append(("hold", time(step.hold)))
        return .object(members)
    }

    /// A profile reference as the file spells it: a path inside the scenario's folder relative to it (the
    /// reader joins it to the folder again; `./` keeps it a path), anything else as it is. A relative path
    /// outside the folder cannot be spelled so that it reads back the same.
    static func written(_ reference: String, source: String?) -> String {
        guard ProfileCatalog.isPath(reference), let source, let slash = source.lastIndex(of: "/") else {
            return reference
        }
        let folder = source[...slash]
        guard reference.hasPrefix(folder) else { return reference }
        let relative = String(reference.dropFirst(folder.count))
        for candidate in [relative, "./" + relative]
        where ScenarioParser.resolve(profile: candidate, source: source) == reference {
            return candidate
        }
        return reference
    }

    static func json(_ expectation: Expectation) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [
            ("name", .string(expectation.name)), ("lane", .string(expectation.lane.rawValue)),
        ]
        if let family = expectation.family { members.append(("family", .string(family.rawValue))) }
        switch expectation.rule {
        case .reaches(let state, let within, let step):
            members += [("reaches", .string(state)), ("within", time(within)), ("after", .string(step))]
        case .holds(let state, let step, let grace):
            members += [("holds", .string(state)), ("during", .string(step))]
            if grace > 0 { members.append(("grace", time(grace))) }
        }
        return .object(members)
    }
}

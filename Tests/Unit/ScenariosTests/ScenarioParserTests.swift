import Profiles
import Conditioning
import Foundation
import JSONDocument
import Timeline
import XCTest

@testable import Scenarios

final class ScenarioParserTests: XCTestCase {
    private let file = "scenarios/bad.json"
    private static let second: UInt64 = 1_000_000_000
    private static let known: Set<String> = ["lte", "3g", "100-loss", "high-latency-dns", "edge"]

    private func s(_ seconds: UInt64) -> UInt64 { seconds * Self.second }

    private func parse(_ text: String) throws -> Scenario {
        try ScenarioParser.parse(text: text, source: file, profileExists: { Self.known.contains($0) })
    }

    private func parseError(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> ScenarioError? {
        do {
            let scenario = try ScenarioParser.parse(
                text: text, source: self.file, profileExists: { Self.known.contains($0) })
            XCTFail("accepted: \(scenario)", file: file, line: line)
            return nil
        } catch {
            return error
        }
    }

    /// A scenario named "t". Layout: line 1 `{`, line 2 the name, then one line per `top` entry, then
    /// `"steps": [`, one line per step (each starting at column 5), `],`, `"expectations": [`, one line per
    /// expectation (column 5), `]`, `}`. With 2 steps and no `top`, steps are on lines 4–5 and expectations
    /// start on line 8.
    private func document(top: [String] = [], steps: [String], expectations: [String] = []) -> String {
        var lines = ["{", "  \"name\": \"t\","]
        lines += top.map { "  \($0)," }
        lines.append("  \"steps\": [")
        lines += steps.enumerated().map { "    \($1)" + ($0 < steps.count - 1 ? "," : "") }
        lines.append("  ],")
        lines.append("  \"expectations\": [")
        lines += expectations.enumerated().map { "    \($1)" + ($0 < expectations.count - 1 ? "," : "") }
        lines.append("  ]")
        lines.append("}")
        return lines.joined(separator: "\n") + "\n"
    }

    private static let lte = #"{"name": "lte", "apply": "lte", "hold": "10s"}"#
    private static let tunnel = #"{"name": "tunnel", "apply": "100-loss", "hold": "20s"}"#

    /// Two steps (lte 10 s, tunnel 20 s) and `expectation` on line 8.
    private func expectationError(
        _ expectation: String, file: StaticString = #filePath, line: UInt = #line
    ) -> ScenarioError? {
        parseError(document(steps: [Self.lte, Self.tunnel], expectations: [expectation]), file: file, line: line)
    }

    /// `step` on line 4, after no other step.
    private func stepError(_ step: String, top: [String] = [], file: StaticString = #filePath, line: UInt = #line)
        -> ScenarioError?
    {
        parseError(document(top: top, steps: [step]), file: file, line: line)
    }

    private func assertError(
        _ error: ScenarioError?, _ kind: ScenarioError.Kind, path: String, line: Int, column: Int,
        problem: String? = nil, expected: String? = nil, file: StaticString = #filePath, testLine: UInt = #line
    ) {
        guard let error else { return }
        XCTAssertEqual(error.kind, kind, "\(error)", file: file, line: testLine)
        XCTAssertEqual(error.file, self.file, file: file, line: testLine)
        XCTAssertEqual(error.path?.description, path, "\(error)", file: file, line: testLine)
        XCTAssertEqual(error.position, SourcePosition(line: line, column: column), "\(error)", file: file, line: testLine)
        if let problem { XCTAssertEqual(error.problem, problem, file: file, line: testLine) }
        if let expected { XCTAssertEqual(error.expected, expected, file: file, line: testLine) }
    }

    // MARK: Accepted

    func testEveryAction() throws {
        let scenario = try parse(
            document(
                top: [#""description": "all of it""#, #""cellular": true"#],
                steps: [
                    #"{"name": "a", "apply": "lte", "hold": "10s"}"#,
                    #"{"name": "b", "clear": true, "hold": "1s"}"#,
                    #"{"name": "c", "link": "down", "side": "router", "interface": "wifi", "hold": "2s"}"#,
                    #"{"name": "d", "link": "up", "side": "client", "interface": "cellular", "hold": "2s"}"#,
                    #"{"name": "e", "link": "down", "side": "client", "hold": "0"}"#,
                    #"{"name": "f", "address": "remove", "interface": "wifi", "hold": "3s"}"#,
                    #"{"name": "g", "address": "restore", "hold": "3s"}"#,
                    #"{"name": "h", "defaultRoute": "remove", "interface": "cellular", "hold": "1500ms"}"#,
                    #"{"name": "i", "defaultRoute": "restore", "interface": "cellular", "hold": "1s"}"#,
                    #"{"name": "j", "portal": "on", "hold": "5s"}"#,
                    #"{"name": "k", "portal": "off", "hold": "5s"}"#,
                    #"{"name": "l", "handover": "cellular", "hold": "5s"}"#,
                    #"{"name": "m", "handover": "wifi", "hold": "5s"}"#,
                    #"{"name": "n", "wait": true, "hold": "3s"}"#,
                    #"{"name": "o", "clear": true, "hold": "0"}"#,
                ]))
        XCTAssertEqual(scenario.name, "t")
        XCTAssertEqual(scenario.description, "all of it")
        XCTAssertTrue(scenario.cellular)
        XCTAssertNil(scenario.probe)
        XCTAssertEqual(scenario.source, file)
        XCTAssertEqual(scenario.expectations, [])
        XCTAssertEqual(
            scenario.steps,
            [
                ScenarioStep(name: "a", action: .apply(profile: "lte"), hold: s(10)),
                ScenarioStep(name: "b", action: .clear(), hold: s(1)),
                ScenarioStep(name: "c", action: .linkDown(side: .router, link: .wifi), hold: s(2)),
                ScenarioStep(name: "d", action: .linkUp(side: .client, link: .cellular), hold: s(2)),
                ScenarioStep(name: "e", action: .linkDown(side: .client, link: .wifi), hold: 0),
                ScenarioStep(name: "f", action: .removeAddress(link: .wifi), hold: s(3)),
                ScenarioStep(name: "g", action: .restoreAddress(link: .wifi), hold: s(3)),
                ScenarioStep(name: "h", action: .removeDefaultRoute(link: .cellular), hold: 1_500_000_000),
                ScenarioStep(name: "i", action: .restoreDefaultRoute(link: .cellular), hold: s(1)),
                ScenarioStep(name: "j", action: .portal(on: true), hold: s(5)),
                ScenarioStep(name: "k", action: .portal(on: false), hold: s(5)),
                ScenarioStep(name: "l", action: .handover(to: .cellular), hold: s(5)),
                ScenarioStep(name: "m", action: .handover(to: .wifi), hold: s(5)),
                ScenarioStep(name: "n", action: .wait, hold: s(3)),
                ScenarioStep(name: "o", action: .clear(), hold: 0),
            ])
        XCTAssertEqual(scenario.duration, 46_500_000_000)
        XCTAssertEqual(scenario.plannedStart(ofStep: "a"), 0)
        XCTAssertEqual(scenario.plannedStart(ofStep: "d"), s(13))
        XCTAssertNil(scenario.plannedStart(ofStep: "zz"))
        XCTAssertEqual(scenario.step(named: "j")?.action, .portal(on: true))
    }

    func testSummaries() {
        let cases: [(StepAction, String)] = [
            (.apply(profile: "100-loss"), "apply 100-loss"),
            (.clear(), "clear"),
            (.linkDown(side: .router, link: .wifi), "link down (router side, wifi)"),
            (.linkUp(side: .client, link: .cellular), "link up (client side, cellular)"),
            (.removeAddress(link: .wifi), "remove address (wifi)"),
            (.restoreAddress(link: .cellular), "restore address (cellular)"),
            (.removeDefaultRoute(link: .wifi), "remove default route (wifi)"),
            (.restoreDefaultRoute(link: .wifi), "restore default route (wifi)"),
            (.portal(on: true), "captive portal on"),
            (.portal(on: false), "captive portal off"),
            (.handover(to: .cellular), "hand over to cellular"),
            (.wait, "wait"),
        ]
        for (action, summary) in cases { XCTAssertEqual(action.summary, summary) }
        XCTAssertTrue(StepAction.handover(to: .wifi).needsCellular)
        XCTAssertTrue(StepAction.removeAddress(link: .cellular).needsCellular)
        XCTAssertFalse(StepAction.linkDown(side: .router, link: .wifi).needsCellular)
        XCTAssertFalse(StepAction.apply(profile: "lte").needsCellular)
    }

    func testProbeAndExpectations() throws {
        let scenario = try parse(
            document(
                top: [#""probe": {"interval": "500ms", "timeout": "8s", "failureThreshold": 3, "backoffMax": "2s"}"#],
                steps: [Self.lte, Self.tunnel],
                expectations: [
                    #"{"name": "notices", "lane": "reachability", "reaches": "offline", "within": "12s", "after": "tunnel"}"#,
                    #"{"name": "path", "lane": "path", "holds": "satisfied", "during": "tunnel"}"#,
                    #"{"name": "graced", "lane": "path", "holds": "requiresConnection", "during": "lte", "grace": "1s"}"#,
                    #"{"name": "app", "lane": "app", "reaches": "Loaded feed", "within": "3s", "after": "lte"}"#,
                ]))
        XCTAssertEqual(
            scenario.probe,
            ProbeSettingsOverride(interval: 500_000_000, timeout: s(8), failureThreshold: 3, backoffMax: s(2)))
        let settings = scenario.probeSettings()
        XCTAssertEqual(settings.interval, 0.5)
        XCTAssertEqual(settings.timeout, 8)
        XCTAssertEqual(settings.failureThreshold, 3)
        XCTAssertEqual(settings.offlineBackoffMaximum, 2)
        XCTAssertEqual(settings.offlineBackoffInitial, 1, "not overridden")
        XCTAssertEqual(
            scenario.expectations,
            [
                Expectation(name: "notices", lane: .reachability, rule: .reaches(state: "offline", within: s(12), afterStep: "tunnel")),
                Expectation(name: "path", lane: .path, rule: .holds(state: "satisfied", duringStep: "tunnel")),
                Expectation(name: "graced", lane: .path, rule: .holds(state: "requiresConnection", duringStep: "lte", grace: s(1))),
                Expectation(name: "app", lane: .app, rule: .reaches(state: "Loaded feed", within: s(3), afterStep: "lte")),
            ])
        XCTAssertEqual(
            scenario.expectations.map(\.ruleDescription),
            [
                "reachability reaches offline within 12 s of step 'tunnel'",
                "path holds satisfied during step 'tunnel'",
                "path holds requiresConnection during step 'lte' (after a 1 s grace)",
                "app reaches Loaded feed within 3 s of step 'lte'",
            ])
    }

    func testMinimalScenarioDefaults() throws {
        let scenario = try parse(#"{"name": "m", "steps": [{"name": "x", "wait": true, "hold": "1s"}]}"#)
        XCTAssertEqual(scenario, Scenario(name: "m", steps: [ScenarioStep(name: "x", action: .wait, hold: s(1))], source: file))
        XCTAssertEqual(scenario.probeSettings(), scenario.probeSettings(base: .init()))
        XCTAssertTrue(ProbeSettingsOverride().isEmpty)
        let empty = try parse(#"{"name": "m", "probe": {}, "steps": [{"name": "x", "clear": true, "hold": "0"}], "expectations": []}"#)
        XCTAssertEqual(empty.probe, ProbeSettingsOverride())
        XCTAssertEqual(empty.steps[0].hold, 0, "a hold of 0 for the last step is fine")
    }

    func testTimeFormatting() {
        XCTAssertEqual(ScenarioTime.seconds(27_412_000_000), "27.412 s")
        XCTAssertEqual(ScenarioTime.seconds(7_379_600_000), "7.380 s")
        XCTAssertEqual(ScenarioTime.seconds(0), "0.000 s")
        XCTAssertEqual(ScenarioTime.seconds(999_999_999), "1.000 s")
        XCTAssertEqual(ScenarioTime.short(s(12)), "12 s")
        XCTAssertEqual(ScenarioTime.short(1_500_000_000), "1.5 s")
        XCTAssertEqual(ScenarioTime.short(250_000), "0.00025 s")
        XCTAssertEqual(ScenarioTime.short(0), "0 s")
    }

    // MARK: Profile references

    func testProfilePathsResolveAgainstTheScenarioFolder() throws {
        XCTAssertEqual(ScenarioParser.resolve(profile: "lte", source: "scenarios/x.json"), "lte")
        XCTAssertEqual(ScenarioParser.resolve(profile: "mine.json", source: "scenarios/x.json"), "scenarios/mine.json")
        XCTAssertEqual(ScenarioParser.resolve(profile: "./p/mine.json", source: "/a/b/x.json"), "/a/b/p/mine.json")
        XCTAssertEqual(ScenarioParser.resolve(profile: "/abs/mine.json", source: "scenarios/x.json"), "/abs/mine.json")
        XCTAssertEqual(ScenarioParser.resolve(profile: "mine.json", source: "x.json"), "mine.json")
        XCTAssertEqual(ScenarioParser.resolve(profile: "mine.json", source: "/x.json"), "/mine.json")

        var asked: [String] = []
        let scenario = try ScenarioParser.parse(
            text: #"{"name": "p", "steps": [{"name": "x", "apply": "../profiles/mine.json", "hold": "1s"}]}"#,
            source: "scenarios/p.json", profileExists: { asked.append($0); return true })
        XCTAssertEqual(asked, ["scenarios/../profiles/mine.json"])
        XCTAssertEqual(scenario.steps[0].action, .apply(profile: "scenarios/../profiles/mine.json"))
    }

    func testCatalogLookups() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("scenario-catalog-\(getpid())").path
        try FileManager.default.createDirectory(atPath: folder + "/profiles", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try #"{"name": "lte", "downlink": {"delay": "50ms"}}"#.write(
            toFile: folder + "/profiles/lte.json", atomically: false, encoding: .utf8)
        try #"{"name": "broken", "downlink": {"dealy": "50ms"}}"#.write(
            toFile: folder + "/profiles/broken.json", atomically: false, encoding: .utf8)
        try #"{"name": "mine", "uplink": {"loss": "1%"}}"#.write(
            toFile: folder + "/mine.json", atomically: false, encoding: .utf8)
        let catalog = ProfileCatalog(directory: folder + "/profiles")
        let source = folder + "/s.json"

        func step(_ apply: String) -> String {
            "{\n  \"name\": \"s\",\n  \"steps\": [\n    {\"name\": \"x\", \"apply\": \"\(apply)\", \"hold\": \"1s\"}\n  ]\n}\n"
        }
        func error(_ apply: String) -> ScenarioError? {
            do {
                _ = try ScenarioParser.parse(text: step(apply), source: source, catalog: catalog)
                XCTFail("accepted \(apply)")
                return nil
            } catch {
                return error
            }
        }

        XCTAssertEqual(
            try ScenarioParser.parse(text: step("lte"), source: source, catalog: catalog).steps[0].action,
            .apply(profile: "lte"))
        XCTAssertEqual(
            try ScenarioParser.parse(text: step("mine.json"), source: source, catalog: catalog).steps[0].action,
            .apply(profile: folder + "/mine.json"))

        let missing = try XCTUnwrap(error("ltee"))
        XCTAssertEqual(missing.kind, .unknownProfile)
        XCTAssertEqual(missing.path?.description, "$.steps[0].apply")
        XCTAssertEqual(missing.position, SourcePosition(line: 4, column: 28))
        XCTAssertEqual(missing.problem, #"no profile named "ltee" in the catalog (did you mean "lte"?)"#)
        XCTAssertEqual(
            missing.expected, "one of broken, lte, or a path to a profile file (with a '/' or ending in .json)")

        let broken = try XCTUnwrap(error("broken"))
        XCTAssertEqual(broken.kind, .invalidProfile)
        XCTAssertTrue(broken.problem.hasPrefix(#"profile "broken" is refused: "#), broken.problem)
        XCTAssertTrue(broken.problem.contains(#"unknown key "dealy" (did you mean "delay"?)"#), broken.problem)

        let noFile = try XCTUnwrap(error("gone.json"))
        XCTAssertEqual(noFile.kind, .unknownProfile)
        XCTAssertTrue(noFile.problem.hasPrefix(#"profile "gone.json": cannot read the file"#), noFile.problem)

        let noCatalog = ProfileCatalog(directory: folder + "/nowhere")
        do {
            _ = try ScenarioParser.parse(text: step("lte"), source: source, catalog: noCatalog)
            XCTFail("accepted without a catalog")
        } catch {
            XCTAssertEqual(error.kind, .unknownProfile)
            XCTAssertTrue(error.problem.contains("cannot list the catalog"), error.problem)
        }
        // A scenario that applies no profile does not need the catalog.
        XCTAssertNoThrow(
            try ScenarioParser.parse(
                text: #"{"name": "w", "steps": [{"name": "x", "wait": true, "hold": "1s"}]}"#, source: source,
                catalog: noCatalog))
    }

    func testProfileNotFoundWithInjectedCheck() throws {
        let error = stepError(#"{"name": "x", "apply": "4g-fast", "hold": "1s"}"#)
        assertError(
            error, .unknownProfile, path: "$.steps[0].apply", line: 4, column: 28,
            problem: #"no profile named "4g-fast" in the catalog"#,
            expected: "a profile in the catalog, or a path to a profile file (with a '/' or ending in .json)")
        assertError(
            stepError(#"{"name": "x", "apply": "", "hold": "1s"}"#), .invalidValue, path: "$.steps[0].apply", line: 4,
            column: 28, problem: "the profile name is empty")
    }

    // MARK: Syntax and the top level

    func testSyntaxError() throws {
        let error = parseError("{\n  \"name\": \"t\",\n  \"steps\": [],\n}\n")
        assertError(error, .syntax, path: "$", line: 4, column: 1)
        XCTAssertEqual(error?.description.hasPrefix("scenarios/bad.json: $ (line 4, column 1): unexpected character '}'"), true)
    }

    func testDuplicateKeyIsASyntaxError() {
        let error = parseError("{\n  \"name\": \"t\",\n  \"name\": \"u\"\n}\n")
        assertError(error, .syntax, path: "$.name", line: 3, column: 3)
    }

    func testUnknownTopLevelKey() {
        let error = parseError("{\n  \"name\": \"t\",\n  \"stpes\": []\n}\n")
        assertError(
            error, .unknownKey, path: "$.stpes", line: 3, column: 3,
            problem: #"unknown key "stpes" (did you mean "steps"?)"#,
            expected: #"one of "name", "description", "links", "cellular", "probe", "steps", "expectations""#)
        XCTAssertEqual(
            error?.description,
            #"scenarios/bad.json: $.stpes (line 3, column 3): unknown key "stpes" (did you mean "steps"?): "#
                + #"expected one of "name", "description", "links", "cellular", "probe", "steps", "expectations""#)
    }

    func testTopLevelShape() {
        assertError(parseError("[]"), .wrongType, path: "$", line: 1, column: 1, problem: "found an array")
        assertError(
            parseError("{\n  \"steps\": []\n}"), .missingKey, path: "$", line: 1, column: 1,
            problem: #"missing key "name""#)
        assertError(
            parseError("{\n  \"name\": \"t\"\n}"), .missingKey, path: "$", line: 1, column: 1,
            problem: #"missing key "steps""#)
        assertError(
            parseError("{\n  \"name\": \"Tunnel 1\",\n  \"steps\": []\n}"), .invalidValue, path: "$.name", line: 2,
            column: 11, problem: #""Tunnel 1" is not a usable scenario name"#)
        assertError(
            parseError("{\n  \"name\": \"t\",\n  \"cellular\": \"yes\",\n  \"steps\": []\n}"), .wrongType,
            path: "$.cellular", line: 3, column: 15, problem: #"found the string "yes""#)
        assertError(
            parseError("{\n  \"name\": \"t\",\n  \"description\": 5,\n  \"steps\": []\n}"), .wrongType,
            path: "$.description", line: 3, column: 18)
        assertError(
            parseError("{\n  \"name\": \"t\",\n  \"steps\": {}\n}"), .wrongType, path: "$.steps", line: 3, column: 12,
            problem: "found an object")
    }

    func testEmptySteps() {
        assertError(
            parseError("{\n  \"name\": \"t\",\n  \"steps\": []\n}"), .outOfRange, path: "$.steps", line: 3, column: 12,
            problem: "the list of steps is empty", expected: "at least one step")
    }

    // MARK: Probe settings

    func testProbeErrors() {
        assertError(
            stepError(Self.lte, top: [#""probe": {"timout": "5s"}"#]), .unknownKey, path: "$.probe.timout", line: 3,
            column: 13, problem: #"unknown key "timout" (did you mean "timeout"?)"#)
        assertError(
            stepError(Self.lte, top: [#""probe": {"timeout": "0"}"#]), .outOfRange, path: "$.probe.timeout", line: 3,
            column: 24, problem: "a timeout of 0 fails every round")
        assertError(
            stepError(Self.lte, top: [#""probe": {"timeout": 5}"#]), .wrongType, path: "$.probe.timeout", line: 3,
            column: 24, problem: "found the number 5", expected: #"the probe timeout as a string, such as "10s""#)
        assertError(
            stepError(Self.lte, top: [#""probe": {"failureThreshold": 0}"#]), .outOfRange,
            path: "$.probe.failureThreshold", line: 3, column: 33, problem: "0 is out of range",
            expected: "a whole number of failed rounds from 1 to 100, such as 2")
        assertError(
            stepError(Self.lte, top: [#""probe": {"failureThreshold": 1.5}"#]), .invalidValue,
            path: "$.probe.failureThreshold", line: 3, column: 33,
            problem: "found the number 1.5, which is not a whole number")
        assertError(
            stepError(Self.lte, top: [#""probe": {"failureThreshold": "2"}"#]), .wrongType,
            path: "$.probe.failureThreshold", line: 3, column: 33)
        assertError(
            stepError(Self.lte, top: [#""probe": {"interval": "1sec"}"#]), .invalidValue, path: "$.probe.interval",
            line: 3, column: 25)
        assertError(
            stepError(Self.lte, top: [#""probe": "fast""#]), .wrongType, path: "$.probe", line: 3, column: 12)
    }

    // MARK: Steps

    func testUnknownStepKey() {
        let error = stepError(#"{"name": "x", "aply": "lte", "hold": "1s"}"#)
        assertError(
            error, .unknownKey, path: "$.steps[0].aply", line: 4, column: 19,
            problem: #"unknown key "aply" (did you mean "apply"?)"#,
            expected: #"one of "name", "hold", "apply", "clear", "link", "address", "defaultRoute", "portal", "#
                + #""handover", "wait", "side", "interface", "family""#)
    }

    func testStepShape() {
        assertError(
            stepError(#""lte""#), .wrongType, path: "$.steps[0]", line: 4, column: 5, problem: #"found the string "lte""#)
        assertError(
            stepError(#"{"apply": "lte", "hold": "1s"}"#), .missingKey, path: "$.steps[0]", line: 4, column: 5,
            problem: #"missing key "name""#)
        assertError(
            stepError(#"{"name": "x", "apply": "lte"}"#), .missingKey, path: "$.steps[0]", line: 4, column: 5,
            problem: #"missing key "hold""#)
        assertError(
            stepError(#"{"name": "x", "hold": "1s"}"#), .missingKey, path: "$.steps[0]", line: 4, column: 5,
            problem: "the step has no action",
            expected: #"exactly one action: "apply", "clear", "link", "address", "defaultRoute", "portal", "#
                + #""handover", "wait""#)
        assertError(
            stepError(#"{"name": 3, "wait": true, "hold": "1s"}"#), .wrongType, path: "$.steps[0].name", line: 4,
            column: 14)
        assertError(
            stepError(#"{"name": "", "wait": true, "hold": "1s"}"#), .invalidValue, path: "$.steps[0].name", line: 4,
            column: 14, problem: "the step name is empty")
        assertError(
            stepError(#"{"name": " x", "wait": true, "hold": "1s"}"#), .invalidValue, path: "$.steps[0].name",
            line: 4, column: 14, problem: #"the step name " x" has spaces at an end"#)
        assertError(
            stepError(#"{"name": "a\tb", "wait": true, "hold": "1s"}"#), .invalidValue, path: "$.steps[0].name",
            line: 4, column: 14, problem: #"the step name "a\tb" has a control character"#)
    }

    func testTwoActionsInOneStep() {
        let error = stepError(#"{"name": "x", "portal": "on", "apply": "lte", "hold": "1s"}"#)
        assertError(
            error, .conflict, path: "$.steps[0].apply", line: 4, column: 44,
            problem: #""apply" cannot be combined with "portal" in one step"#)
    }

    func testModifiersThatDoNotBelong() {
        assertError(
            stepError(#"{"name": "x", "apply": "lte", "side": "router", "hold": "1s"}"#), .conflict,
            path: "$.steps[0].side", line: 4, column: 43, problem: #""side" does not go with "apply""#,
            expected: #""side" only in a "link" step"#)
        assertError(
            stepError(#"{"name": "x", "portal": "on", "interface": "wifi", "hold": "1s"}"#), .conflict,
            path: "$.steps[0].interface", line: 4, column: 48, problem: #""interface" does not go with "portal""#)
        assertError(
            stepError(#"{"name": "x", "handover": "wifi", "interface": "wifi", "hold": "1s"}"#, top: [#""cellular": true"#]),
            .conflict, path: "$.steps[0].interface", line: 5, column: 52,
            expected: #""interface" only in a "link", "address", "defaultRoute", "apply" or "clear" step ("handover" names the link it hands over to)"#)
        assertError(
            stepError(#"{"name": "x", "address": "remove", "side": "client", "hold": "1s"}"#), .conflict,
            path: "$.steps[0].side", line: 4, column: 48)
    }

    /// Apply and clear on one link; a family on address and route steps and on reachability expectations; all
    /// of it written back so that it reads back the same.
    func testLinkScopesAndFamilies() throws {
        let text = document(
            top: [#""cellular": true"#],
            steps: [
                #"{"name": "wifi-good", "apply": "lte", "interface": "wifi", "hold": "5s"}"#,
                #"{"name": "cell-3g", "apply": "100-loss", "interface": "cellular", "hold": "5s"}"#,
                #"{"name": "no-v6", "defaultRoute": "remove", "family": "ipv6", "hold": "5s"}"#,
                #"{"name": "v6-back", "address": "restore", "interface": "cellular", "family": "ipv6", "hold": "5s"}"#,
                #"{"name": "clean", "clear": true, "interface": "cellular", "hold": "1s"}"#,
            ],
            expectations: [
                #"{"name": "v6 offline", "lane": "reachability", "family": "ipv6", "reaches": "offline", "within": "5s", "after": "no-v6"}"#
            ])
        let scenario = try parse(text)
        XCTAssertEqual(
            scenario.steps.map(\.action),
            [
                .apply(profile: "lte", link: .wifi), .apply(profile: "100-loss", link: .cellular),
                .removeDefaultRoute(link: .wifi, family: .ipv6), .restoreAddress(link: .cellular, family: .ipv6),
                .clear(link: .cellular),
            ])
        XCTAssertEqual(scenario.expectations.first?.family, .ipv6)
        XCTAssertEqual(scenario.expectations.first?.ruleDescription, "reachability (ipv6) reaches offline within 5 s of step 'no-v6'")
        XCTAssertEqual(scenario.steps[2].action.summary, "remove ipv6 default route (wifi)")
        XCTAssertEqual(scenario.steps[1].action.summary, "apply 100-loss on cellular")
        XCTAssertTrue(scenario.steps[1].action.needsCellular)
        let written = ScenarioParser.jsonText(of: scenario)
        XCTAssertEqual(try parse(written), scenario, written)

        assertError(
            stepError(#"{"name": "x", "portal": "on", "family": "ipv4", "hold": "1s"}"#), .conflict,
            path: "$.steps[0].family", line: 4, column: 45, problem: #""family" does not go with "portal""#)
        assertError(
            stepError(#"{"name": "x", "address": "remove", "family": "ipv5", "hold": "1s"}"#), .invalidValue,
            path: "$.steps[0].family", line: 4, column: 50)
        assertError(
            expectationError(#"{"name": "p", "lane": "path", "family": "ipv4", "reaches": "satisfied", "within": "1s", "after": "lte"}"#),
            .conflict, path: "$.expectations[0].family", line: 8, column: 45,
            problem: #""family" does not go with the path lane"#)
        // A link scope on cellular needs the cellular link.
        XCTAssertNotNil(stepError(#"{"name": "x", "apply": "lte", "interface": "cellular", "hold": "1s"}"#))
    }

    func testActionValues() {
        assertError(
            stepError(#"{"name": "x", "clear": false, "hold": "1s"}"#), .invalidValue, path: "$.steps[0].clear", line: 4,
            column: 28, problem: #""clear": false does nothing"#)
        assertError(
            stepError(#"{"name": "x", "wait": "yes", "hold": "1s"}"#), .wrongType, path: "$.steps[0].wait", line: 4,
            column: 27, expected: "true")
        assertError(
            stepError(#"{"name": "x", "link": "dwn", "side": "router", "hold": "1s"}"#), .invalidValue,
            path: "$.steps[0].link", line: 4, column: 27, problem: #""dwn" is not a link change (did you mean "down"?)"#,
            expected: #""down" or "up""#)
        assertError(
            stepError(#"{"name": "x", "link": "down", "hold": "1s"}"#), .missingKey, path: "$.steps[0]", line: 4,
            column: 5, problem: #"missing key "side""#)
        assertError(
            stepError(#"{"name": "x", "link": "down", "side": "roter", "hold": "1s"}"#), .invalidValue,
            path: "$.steps[0].side", line: 4, column: 43, problem: #""roter" is not a link side (did you mean "router"?)"#,
            expected: #""client" or "router""#)
        assertError(
            stepError(#"{"name": "x", "link": "down", "side": "router", "interface": "wl0", "hold": "1s"}"#),
            .invalidValue, path: "$.steps[0].interface", line: 4, column: 66,
            problem: #""wl0" is not a link of the sandbox (did you mean "wifi"?)"#, expected: #""wifi" or "cellular""#)
        assertError(
            stepError(#"{"name": "x", "address": "delete", "hold": "1s"}"#), .invalidValue, path: "$.steps[0].address",
            line: 4, column: 30, problem: #""delete" is not an address change"#, expected: #""remove" or "restore""#)
        assertError(
            stepError(#"{"name": "x", "defaultRoute": "restor", "hold": "1s"}"#), .invalidValue,
            path: "$.steps[0].defaultRoute", line: 4, column: 35,
            problem: #""restor" is not a default route change (did you mean "restore"?)"#)
        assertError(
            stepError(#"{"name": "x", "portal": true, "hold": "1s"}"#), .wrongType, path: "$.steps[0].portal", line: 4,
            column: 29, problem: "found true", expected: #""on" or "off""#)
        assertError(
            stepError(#"{"name": "x", "handover": "wwan", "hold": "1s"}"#, top: [#""cellular": true"#]), .invalidValue,
            path: "$.steps[0].handover", line: 5, column: 31,
            problem: #""wwan" is not a link of the sandbox (did you mean "cellular"?)"#)
        assertError(
            stepError(#"{"name": "x", "apply": 3, "hold": "1s"}"#), .wrongType, path: "$.steps[0].apply", line: 4,
            column: 28)
    }

    func testHoldErrors() {
        assertError(
            stepError(#"{"name": "x", "wait": true, "hold": 10}"#), .wrongType, path: "$.steps[0].hold", line: 4,
            column: 41, problem: "found the number 10", expected: #"how long to stay in the step as a string, such as "10s""#)
        assertError(
            stepError(#"{"name": "x", "wait": true, "hold": "10sec"}"#), .invalidValue, path: "$.steps[0].hold",
            line: 4, column: 41, problem: #""10sec" has an unknown unit "sec" (did you mean "10s"?)"#)
        assertError(
            stepError(#"{"name": "x", "wait": true, "hold": "10"}"#), .invalidValue, path: "$.steps[0].hold", line: 4,
            column: 41, problem: #""10" has no unit"#)
        assertError(
            stepError(#"{"name": "x", "wait": true, "hold": "5000s"}"#), .outOfRange, path: "$.steps[0].hold", line: 4,
            column: 41, problem: #""5000s" is out of range"#)
        assertError(
            stepError(#"{"name": "x", "wait": true, "hold": "0"}"#), .outOfRange, path: "$.steps[0].hold", line: 4,
            column: 41, problem: #"a "wait" step of 0 does nothing"#)
    }

    func testDuplicateStepName() {
        let error = parseError(
            document(steps: [Self.lte, #"{"name": "lte", "apply": "3g", "hold": "1s"}"#]))
        assertError(
            error, .duplicateName, path: "$.steps[1].name", line: 5, column: 14,
            problem: #"a step named "lte" already exists (at line 4, column 14)"#)
    }

    func testStepsNeedingCellular() {
        assertError(
            stepError(#"{"name": "x", "link": "down", "side": "router", "interface": "cellular", "hold": "1s"}"#),
            .needsCellular, path: "$.steps[0].interface", line: 4, column: 66,
            problem: "the step acts on the cellular link, and the scenario does not ask for it",
            expected: #""links": ["wifi", "cellular"] at the top of the scenario, so the sandbox gets its cellular link (ww0)"#)
        assertError(
            stepError(#"{"name": "x", "defaultRoute": "remove", "interface": "cellular", "hold": "1s"}"#),
            .needsCellular, path: "$.steps[0].interface", line: 4, column: 58)
        assertError(
            stepError(#"{"name": "x", "handover": "wifi", "hold": "1s"}"#), .needsCellular,
            path: "$.steps[0].handover", line: 4, column: 31,
            problem: "a handover needs the cellular link, and the scenario does not ask for it")
        assertError(
            stepError(#"{"name": "x", "handover": "cellular", "hold": "1s"}"#, top: [#""cellular": false"#]),
            .needsCellular, path: "$.steps[0].handover", line: 5, column: 31)
        assertError(
            stepError(#"{"name": "x", "handover": "cellular", "hold": "1s"}"#, top: [#""links": ["wifi"]"#]),
            .needsCellular, path: "$.steps[0].handover", line: 5, column: 31)
    }

    func testLinksNameTheShapeTheScenarioIsWrittenFor() throws {
        let both = try parse(document(top: [#""links": ["wifi", "cellular"]"#], steps: [#"{"name": "x", "handover": "cellular", "hold": "1s"}"#]))
        XCTAssertEqual(both.links, [.wifi, .cellular])
        XCTAssertTrue(both.cellular)
        XCTAssertEqual(both.neededLinks, [.wifi, .cellular])
        let wifi = try parse(document(top: [#""links": ["wifi"]"#], steps: [Self.lte]))
        XCTAssertEqual(wifi.links, [.wifi])
        XCTAssertFalse(wifi.cellular)
        // Not declared: wifi, and nothing said about the shape.
        let undeclared = try parse(document(steps: [Self.lte]))
        XCTAssertNil(undeclared.links)
        XCTAssertEqual(undeclared.neededLinks, [.wifi])
        // Written back as read.
        XCTAssertEqual(try parse(ScenarioParser.jsonText(of: both)).links, [.wifi, .cellular])

        assertError(
            parseError(document(top: [#""links": ["cellular"]"#], steps: [Self.lte])), .outOfRange, path: "$.links", line: 3, column: 12,
            problem: "every sandbox has wifi, and the list leaves it out",
            expected: #"the links the scenario is written for: ["wifi"] or ["wifi", "cellular"]"#)
        assertError(
            parseError(document(top: [#""links": []"#], steps: [Self.lte])), .outOfRange, path: "$.links", line: 3, column: 12,
            problem: "the list of links is empty")
        assertError(
            parseError(document(top: [#""links": ["wifi", "wifi"]"#], steps: [Self.lte])), .duplicateName, path: "$.links[1]",
            line: 3, column: 21, problem: #""wifi" is listed twice"#)
        assertError(
            parseError(document(top: [#""links": ["wifi", "wlan0"]"#], steps: [Self.lte])), .invalidValue, path: "$.links[1]",
            line: 3, column: 21, problem: #""wlan0" is not a link of the sandbox (did you mean "wifi"?)"#)
        assertError(
            parseError(document(top: [#""links": ["wifi"]"#, #""cellular": true"#], steps: [Self.lte])), .conflict, path: "$.cellular",
            line: 4, column: 15, problem: #""cellular" cannot be combined with "links""#)
    }

    // MARK: Expectations

    func testUnknownExpectationKey() {
        let error = expectationError(
            #"{"name": "n", "lane": "path", "reaches": "unsatisfied", "witin": "1s", "after": "lte"}"#)
        assertError(
            error, .unknownKey, path: "$.expectations[0].witin", line: 8, column: 61,
            problem: #"unknown key "witin" (did you mean "within"?)"#,
            expected: #"one of "name", "lane", "family", "reaches", "within", "after", "holds", "during", "grace""#)
    }

    func testExpectationShape() {
        assertError(
            parseError(document(steps: [Self.lte]).replacingOccurrences(of: "\"expectations\": [", with: "\"expectations\": {").replacingOccurrences(of: "  ]\n}", with: "  }\n}")),
            .wrongType, path: "$.expectations", line: 6, column: 19)
        assertError(
            expectationError(#"{"lane": "path", "holds": "satisfied", "during": "lte"}"#), .missingKey,
            path: "$.expectations[0]", line: 8, column: 5, problem: #"missing key "name""#)
        assertError(
            expectationError(#"{"name": "n", "holds": "satisfied", "during": "lte"}"#), .missingKey,
            path: "$.expectations[0]", line: 8, column: 5, problem: #"missing key "lane""#)
        assertError(
            expectationError(#"{"name": "n", "lane": "path"}"#), .missingKey, path: "$.expectations[0]", line: 8,
            column: 5, problem: "the expectation has no rule")
        assertError(
            expectationError(#"{"name": "n", "lane": "path", "reaches": "satisfied", "after": "lte"}"#), .missingKey,
            path: "$.expectations[0]", line: 8, column: 5, problem: #"missing key "within""#)
        assertError(
            expectationError(#"{"name": "n", "lane": "path", "reaches": "satisfied", "within": "1s"}"#), .missingKey,
            path: "$.expectations[0]", line: 8, column: 5, problem: #"missing key "after""#)
        assertError(
            expectationError(#"{"name": "n", "lane": "path", "holds": "satisfied"}"#), .missingKey,
            path: "$.expectations[0]", line: 8, column: 5, problem: #"missing key "during""#)
        assertError(
            expectationError(#"{"name": "", "lane": "path", "holds": "satisfied", "during": "lte"}"#), .invalidValue,
            path: "$.expectations[0].name", line: 8, column: 14, problem: "the expectation name is empty")
    }

    func testLanes() {
        assertError(
            expectationError(#"{"name": "n", "lane": "pth", "holds": "satisfied", "during": "lte"}"#), .invalidValue,
            path: "$.expectations[0].lane", line: 8, column: 27, problem: #""pth" is not a lane (did you mean "path"?)"#,
            expected: #"one of "path", "reachability", "app""#)
        assertError(
            expectationError(#"{"name": "n", "lane": "conditions", "holds": "lte", "during": "lte"}"#), .invalidValue,
            path: "$.expectations[0].lane", line: 8, column: 27,
            problem: "the conditions lane records what the steps did and cannot be expected")
        assertError(
            expectationError(#"{"name": "n", "lane": "scenario", "holds": "lte", "during": "lte"}"#), .invalidValue,
            path: "$.expectations[0].lane", line: 8, column: 27)
        assertError(
            expectationError(#"{"name": "n", "lane": 1, "holds": "lte", "during": "lte"}"#), .wrongType,
            path: "$.expectations[0].lane", line: 8, column: 27)
    }

    func testRulesThatDoNotGoTogether() {
        assertError(
            expectationError(
                #"{"name": "n", "lane": "path", "holds": "satisfied", "reaches": "satisfied", "during": "lte"}"#),
            .conflict, path: "$.expectations[0].reaches", line: 8, column: 68,
            problem: #""reaches" cannot be combined with "holds""#)
        assertError(
            expectationError(#"{"name": "n", "lane": "path", "holds": "satisfied", "during": "lte", "within": "1s"}"#),
            .conflict, path: "$.expectations[0].within", line: 8, column: 84, problem: #""within" belongs to "reaches""#)
        assertError(
            expectationError(
                #"{"name": "n", "lane": "path", "reaches": "satisfied", "within": "1s", "after": "lte", "grace": "1s"}"#),
            .conflict, path: "$.expectations[0].grace", line: 8, column: 100, problem: #""grace" belongs to "holds""#)
        assertError(
            expectationError(
                #"{"name": "n", "lane": "path", "reaches": "satisfied", "within": "1s", "after": "lte", "during": "lte"}"#),
            .conflict, path: "$.expectations[0].during", line: 8, column: 101)
    }

    func testStatesALaneNeverHas() {
        assertError(
            expectationError(#"{"name": "n", "lane": "path", "holds": "online", "during": "lte"}"#), .unknownState,
            path: "$.expectations[0].holds", line: 8, column: 44, problem: #"the path lane has no state "online""#,
            expected: #"a path state: one of "satisfied", "unsatisfied", "requiresConnection""#)
        assertError(
            expectationError(#"{"name": "n", "lane": "reachability", "reaches": "offlne", "within": "5s", "after": "lte"}"#),
            .unknownState, path: "$.expectations[0].reaches", line: 8, column: 54,
            problem: #"the reachability lane has no state "offlne" (did you mean "offline"?)"#,
            expected: #"a reachability state: one of "unknown", "online", "portal", "limited", "offline""#)
        assertError(
            expectationError(#"{"name": "n", "lane": "path", "holds": "Satisfied", "during": "lte"}"#), .unknownState,
            path: "$.expectations[0].holds", line: 8, column: 44,
            problem: #"the path lane has no state "Satisfied" (did you mean "satisfied"?)"#)
        assertError(
            expectationError(#"{"name": "n", "lane": "app", "holds": "", "during": "lte"}"#), .invalidValue,
            path: "$.expectations[0].holds", line: 8, column: 43, problem: "the state is empty")
        assertError(
            expectationError(#"{"name": "n", "lane": "app", "holds": null, "during": "lte"}"#), .wrongType,
            path: "$.expectations[0].holds", line: 8, column: 43)
    }

    func testExpectationNamingAStepThatDoesNotExist() {
        let error = expectationError(
            #"{"name": "n", "lane": "reachability", "reaches": "offline", "within": "12s", "after": "tunel"}"#)
        assertError(
            error, .unknownStep, path: "$.expectations[0].after", line: 8, column: 91,
            problem: #"no step named "tunel" (did you mean "tunnel"?)"#, expected: #"the name of a step: "lte" or "tunnel""#)
        XCTAssertEqual(
            error?.description,
            #"scenarios/bad.json: $.expectations[0].after (line 8, column 91): no step named "tunel" (did you mean "#
                + #""tunnel"?): expected the name of a step: "lte" or "tunnel""#)
        assertError(
            expectationError(#"{"name": "n", "lane": "path", "holds": "satisfied", "during": "idle"}"#), .unknownStep,
            path: "$.expectations[0].during", line: 8, column: 67, problem: #"no step named "idle""#)
    }

    func testWithinErrors() {
        assertError(
            expectationError(#"{"name": "n", "lane": "path", "reaches": "satisfied", "within": "0", "after": "lte"}"#),
            .outOfRange, path: "$.expectations[0].within", line: 8, column: 69, problem: #"a "within" of 0 leaves no time"#)
        assertError(
            expectationError(#"{"name": "n", "lane": "path", "reaches": "satisfied", "within": "1 s", "after": "lte"}"#),
            .invalidValue, path: "$.expectations[0].within", line: 8, column: 69)
        // tunnel starts at 10 s and the run ends at 30 s.
        assertError(
            expectationError(#"{"name": "n", "lane": "path", "reaches": "satisfied", "within": "21s", "after": "tunnel"}"#),
            .conflict, path: "$.expectations[0].within", line: 8, column: 69,
            problem: #"the run ends 20 s after step "tunnel" starts, before 21 s have passed"#,
            expected: #"a "within" of at most 20s, or longer holds from step "tunnel" on"#)
        XCTAssertNoThrow(
            try parse(
                document(
                    steps: [Self.lte, Self.tunnel],
                    expectations: [#"{"name": "n", "lane": "path", "reaches": "satisfied", "within": "30s", "after": "lte"}"#])))
    }

    func testGraceErrors() {
        assertError(
            expectationError(#"{"name": "n", "lane": "path", "holds": "satisfied", "during": "lte", "grace": "10s"}"#),
            .conflict, path: "$.expectations[0].grace", line: 8, column: 83,
            problem: #"the grace (10 s) leaves nothing of step "lte" (10 s)"#,
            expected: "a grace shorter than the step's hold of 10s")
        assertError(
            expectationError(#"{"name": "n", "lane": "path", "holds": "satisfied", "during": "lte", "grace": 1}"#),
            .wrongType, path: "$.expectations[0].grace", line: 8, column: 83)
        let zero = parseError(
            document(
                steps: [#"{"name": "a", "clear": true, "hold": "0"}"#, Self.lte],
                expectations: [#"{"name": "n", "lane": "path", "holds": "satisfied", "during": "a"}"#]))
        assertError(
            zero, .conflict, path: "$.expectations[0].during", line: 8, column: 67,
            problem: #"step "a" holds 0: there is nothing to hold the state over"#)
    }

    func testDuplicateExpectationName() {
        let error = parseError(
            document(
                steps: [Self.lte],
                expectations: [
                    #"{"name": "n", "lane": "path", "holds": "satisfied", "during": "lte"}"#,
                    #"{"name": "n", "lane": "reachability", "holds": "online", "during": "lte"}"#,
                ]))
        assertError(
            error, .duplicateName, path: "$.expectations[1].name", line: 8, column: 14,
            problem: #"an expectation named "n" already exists (at line 7, column 14)"#)
    }

    // MARK: Files

    func testUnreadableFile() {
        do {
            _ = try ScenarioParser.load(path: "/nonexistent/scenario.json", profileExists: { _ in true })
            XCTFail("loaded a missing file")
        } catch {
            XCTAssertEqual(error.kind, .unreadable)
            XCTAssertEqual(error.file, "/nonexistent/scenario.json")
            XCTAssertNil(error.path)
            XCTAssertEqual(error.description, "/nonexistent/scenario.json: cannot read the file: No such file or directory")
        }
    }

    func testAFIFOIsRefusedAtOnce() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("scenario-fifo-\(UUID())").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let fifo = folder + "/run.json"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let run = unblockingFIFO(fifo) { () -> String in
            do throws(ScenarioError) {
                return "loaded \(try ScenarioParser.load(path: fifo, profileExists: { _ in true }))"
            } catch {
                return error.description
            }
        }
        XCTAssertEqual(run, "\(fifo): it is a FIFO, not a regular file: expected a scenario file")

        // A step that applies a profile "file" that is a FIFO.
        let source = folder + "/s.json"
        let text = "{\n  \"name\": \"s\",\n  \"steps\": [\n    {\"name\": \"x\", \"apply\": \"run.json\", \"hold\": \"1s\"}\n  ]\n}\n"
        let step = unblockingFIFO(fifo) { () -> String in
            do throws(ScenarioError) {
                let catalog = ProfileCatalog(directory: folder)
                return "parsed \(try ScenarioParser.parse(text: text, source: source, catalog: catalog))"
            } catch {
                return error.description
            }
        }
        XCTAssertEqual(
            step,
            "\(source): $.steps[0].apply (line 4, column 28): profile \"run.json\": it is a FIFO, not a regular file: "
                + "expected a readable profile file")
    }

    func testWhitespaceOnlyFileSaysSo() {
        assertError(
            parseError(" \n\t\n"), .syntax, path: "$", line: 1, column: 1, problem: "the file contains only whitespace",
            expected: "a JSON value, such as an object in braces")
    }

    // MARK: Writing and reading back

    /// `scenarios/` and `profiles/` in the source tree.
    private static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    func testEveryShippedScenarioReadsBackFromWhatIsWritten() throws {
        let directory = Self.root.appendingPathComponent("scenarios").path
        let catalog = ProfileCatalog(directory: Self.root.appendingPathComponent("profiles").path)
        let files = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".json") }
        XCTAssertGreaterThanOrEqual(files.count, 5)
        for file in files {
            let path = directory + "/" + file
            let scenario = try ScenarioParser.load(path: path, catalog: catalog)
            let text = ScenarioParser.jsonText(of: scenario)
            let again = try ScenarioParser.parse(text: text, source: path, catalog: catalog)
            XCTAssertEqual(again, scenario, text)
            XCTAssertEqual(ScenarioParser.jsonText(of: again), text, "writing is stable")
        }
    }

    func testEverythingReadsBackFromWhatIsWritten() throws {
        let source = "/lab/scenarios/all.json"
        let scenario = Scenario(
            name: "all", description: "every action, rule and setting", cellular: true,
            probe: ProbeSettingsOverride(interval: 500_000_000, timeout: s(4), failureThreshold: 3, backoffMax: s(2)),
            steps: [
                ScenarioStep(name: "a", action: .apply(profile: "lte"), hold: s(1)),
                ScenarioStep(name: "mine", action: .apply(profile: "/lab/scenarios/p/mine.json"), hold: s(1)),
                ScenarioStep(name: "abs", action: .apply(profile: "/elsewhere/x.json"), hold: s(1)),
                ScenarioStep(name: "no-suffix", action: .apply(profile: "/lab/scenarios/lte"), hold: s(1)),
                ScenarioStep(name: "b", action: .clear(), hold: 0),
                ScenarioStep(name: "c", action: .linkDown(side: .router, link: .wifi), hold: s(2)),
                ScenarioStep(name: "d", action: .linkUp(side: .client, link: .cellular), hold: 1_500_000),
                ScenarioStep(name: "e", action: .removeAddress(link: .cellular), hold: s(1)),
                ScenarioStep(name: "f", action: .restoreAddress(link: .wifi), hold: s(1)),
                ScenarioStep(name: "g", action: .removeDefaultRoute(link: .wifi), hold: s(1)),
                ScenarioStep(name: "h", action: .restoreDefaultRoute(link: .cellular), hold: s(1)),
                ScenarioStep(name: "i", action: .portal(on: true), hold: s(1)),
                ScenarioStep(name: "j", action: .portal(on: false), hold: s(1)),
                ScenarioStep(name: "k", action: .handover(to: .cellular), hold: s(1)),
                ScenarioStep(name: "l", action: .handover(to: .wifi), hold: s(1)),
                ScenarioStep(name: "m", action: .wait, hold: s(3)),
            ],
            expectations: [
                Expectation(name: "r", lane: .reachability, rule: .reaches(state: "offline", within: s(2), afterStep: "c")),
                Expectation(name: "h", lane: .path, rule: .holds(state: "satisfied", duringStep: "m")),
                Expectation(name: "g", lane: .app, rule: .holds(state: "ok", duringStep: "m", grace: 250_000_000)),
            ],
            source: source)
        XCTAssertNoThrow(try ScenarioParser.validate(scenario, profileExists: { _ in true }))
        let text = ScenarioParser.jsonText(of: scenario)
        XCTAssertTrue(text.contains(#""apply": "p/mine.json""#), "relative to the scenario's folder: \(text)")
        XCTAssertTrue(text.contains(#""apply": "/elsewhere/x.json""#), text)
        XCTAssertTrue(text.contains(#""apply": "./lte""#), "still a path, not the catalog's lte: \(text)")
        var asked: [String] = []
        XCTAssertEqual(
            try ScenarioParser.parse(text: text, source: source, profileExists: { asked.append($0); return true }),
            scenario)
        XCTAssertEqual(asked, ["lte", "/lab/scenarios/p/mine.json", "/elsewhere/x.json", "/lab/scenarios/lte"])
    }

    // MARK: Scenarios made in code

    func testValidateAppliesTheRulesOfAFile() {
        let lte = ScenarioStep(name: "lte", action: .apply(profile: "lte"), hold: s(10))
        var wifiButCellular = Scenario(name: "t", links: [.wifi], steps: [lte])
        wifiButCellular.cellular = true
        let cases: [(Scenario, ScenarioError.Kind, String, String)] = [
            (Scenario(name: "t", steps: []), .outOfRange, "$.steps", "the list of steps is empty"),
            (wifiButCellular, .conflict, "$.cellular", #""cellular": true disagrees with "links""#),
            (
                Scenario(name: "t", steps: [lte, lte]), .duplicateName, "$.steps[1].name",
                #"a step named "lte" already exists (step 1)"#
            ),
            (
                Scenario(name: "t", steps: [ScenarioStep(name: "x", action: .wait, hold: 5000 * 1_000_000_000)]),
                .outOfRange, "$.steps[0].hold", "5000s is out of range"
            ),
            (
                Scenario(name: "t", steps: [ScenarioStep(name: "x", action: .handover(to: .wifi), hold: s(1))]),
                .needsCellular, "$.steps[0].handover",
                "a handover needs the cellular link, and the scenario does not ask for it"
            ),
            (
                Scenario(
                    name: "t", steps: [lte],
                    expectations: [
                        Expectation(name: "h", lane: .path, rule: .holds(state: "satisfied", duringStep: "lte", grace: s(10)))
                    ]),
                .conflict, "$.expectations[0].grace", #"the grace (10 s) leaves nothing of step "lte" (10 s)"#
            ),
            (
                Scenario(
                    name: "t", steps: [lte],
                    expectations: [
                        Expectation(name: "r", lane: .path, rule: .reaches(state: "satisfied", within: s(1), afterStep: "lt"))
                    ]),
                .unknownStep, "$.expectations[0].after", #"no step named "lt" (did you mean "lte"?)"#
            ),
            (
                Scenario(name: "t", probe: ProbeSettingsOverride(failureThreshold: 101), steps: [lte]), .outOfRange,
                "$.probe.failureThreshold", "101 is out of range"
            ),
            (Scenario(name: "t", steps: [lte]), .unknownProfile, "$.steps[0].apply", #"no profile named "lte" in the catalog"#),
        ]
        for (index, (scenario, kind, path, problem)) in cases.enumerated() {
            XCTAssertThrowsError(try ScenarioParser.validate(scenario, profileExists: { _ in index != cases.count - 1 }))
            { error in
                let error = error as? ScenarioError
                XCTAssertEqual(error?.kind, kind, path)
                XCTAssertEqual(error?.path?.description, path)
                XCTAssertNil(error?.position, path)
                XCTAssertEqual(error?.problem, problem, path)
                XCTAssertEqual(error?.file, #"scenario "t""#)
            }
        }
    }
}

/// `body` runs on a thread of its own. It must not open the FIFO at `path` for reading; if it does (and
/// blocks, as a plain `open` of a FIFO does), a writer comes and goes so that it returns — with a wrong
/// answer the test then reports — instead of hanging the suite.
private func unblockingFIFO<T: Sendable>(_ path: String, _ body: @escaping @Sendable () -> T) -> T {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    Thread {
        box.value = body()
        done.signal()
    }.start()
    while done.wait(timeout: .now() + .milliseconds(20)) == .timedOut {
        let writer = open(path, O_WRONLY | O_NONBLOCK)
        if writer >= 0 { close(writer) }
    }
    return box.value!
}

/// What the thread of ``unblockingFIFO(_:_:)`` returns; read only after its semaphore is signalled.
private final class ResultBox<T>: @unchecked Sendable { var value: T? }

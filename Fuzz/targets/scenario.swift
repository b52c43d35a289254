// libFuzzer target: the scenario reader and validator (Scenarios), with an injected profile check (no
// file is read). Any input must be accepted or refused with a message; an accepted scenario must
// validate, and must read back equal from what the writer writes.
import JSONDocument
import Scenarios

let knownProfiles: Set<String> = ["lte", "3g", "edge", "100-loss", "wifi", "high-latency-dns"]

/// Catalog names from a short list; any path (anything with a `/` or ending in `.json`) exists.
func profileExists(_ reference: String) -> Bool {
    knownProfiles.contains(reference) || reference.contains("/") || reference.hasSuffix(".json")
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzScenario(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let scenario: Scenario
    do {
        scenario = try ScenarioParser.parse(data: bytes, source: "scenarios/fuzz.json", profileExists: profileExists)
    } catch {
        _ = error.description
        return 0
    }
    do {
        try ScenarioParser.validate(scenario, profileExists: profileExists)
    } catch {
        fatalError("an accepted scenario does not validate: \(error)")
    }
    _ = scenario.steps.map(\.action.summary)
    _ = scenario.expectations.map(\.ruleDescription)
    let text = ScenarioParser.jsonText(of: scenario)
    let again: Scenario
    do {
        again = try ScenarioParser.parse(text: text, source: "scenarios/fuzz.json", profileExists: profileExists)
    } catch {
        fatalError("the written scenario is refused: \(error)\n\(text)")
    }
    guard again == scenario else { fatalError("read back differently:\n\(text)") }
    return 0
}

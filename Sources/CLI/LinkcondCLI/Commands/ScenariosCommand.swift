import Foundation
import Profiles
import Scenarios

/// `linkcond scenarios`: the shipped scenarios, each with its links, steps, length and what it shows.
enum ScenariosCommand {
    static func run(_ parsed: ParsedCommand) throws -> Int32 {
        let profiles = try ProfileCatalog.locate()
        let catalog = ScenarioCatalog.beside(profiles)
        let scenarios = try catalog.all(profiles: profiles)
        if parsed.flag("json") {
            struct Row: Encodable { let name, description: String; let links: [String]; let steps, expectations: Int; let seconds: Double }
            try Output.json(scenarios.map {
                Row(name: $0.name, description: $0.description, links: $0.neededLinks.map(\.rawValue), steps: $0.steps.count,
                    expectations: $0.expectations.count, seconds: Double($0.duration) / 1e9)
            })
            return 0
        }
        let rows = [["SCENARIO", "LINKS", "STEPS", "LENGTH", "WHAT IT SHOWS"]] + scenarios.map { scenario in
            let sentence = scenario.description.split(separator: ".", maxSplits: 1).first.map(String.init) ?? ""
            return [scenario.name, scenario.neededLinks.map(\.rawValue).joined(separator: "+"), "\(scenario.steps.count)",
                    ScenarioTime.short(scenario.duration), sentence.count > 70 ? String(sentence.prefix(69)) + "…" : sentence]
        }
        let widths = (0..<4).map { column in rows.map { $0[column].count }.max() ?? 0 }
        for row in rows {
            Output.print((0..<4).map { row[$0].padding(toLength: widths[$0], withPad: " ", startingAt: 0) }.joined(separator: "  ") + "  " + row[4])
        }
        Output.print("scenarios: \(catalog.origin); run one with 'sudo linkcond run NAME'")
        return 0
    }
}

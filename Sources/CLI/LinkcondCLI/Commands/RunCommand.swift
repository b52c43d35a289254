import Profiles
import Conditioning
import Foundation
import Glibc
import Sandboxing
import Scenarios
import Timeline

/// `linkcond run SCENARIO`: runs a scenario, shows progress, writes the reports, exits 1 on a failed
/// expectation.
enum RunCommand {
    static func run(_ parsed: ParsedCommand) throws -> Int32 {
        let reference = parsed.positional("scenario")!
        let catalog = try ProfileCatalog.locate()
        let scenario = try ScenarioCatalog.beside(catalog).scenario(reference, profiles: catalog)
        if let name = parsed.value("name"), !SandboxTopology.isValidName(name) {
            throw UsageError("'\(name)' is not a usable sandbox name", hint: "use 1 to 20 lowercase letters, digits and '-'", commandPath: parsed.commandPath)
        }
        var bringUp: Sandbox.ServerLaunch?
        let attachment = AttachCommands.named(parsed)
        if let attachment {
            // Checked before the report directory is made: a run that cannot start leaves nothing behind.
            if let need = scenario.needsOfASandbox.first {
                throw LabError.scenarioNeedsSandbox(scenario: scenario.name, need: need, attachment: attachment.name)
            }
            guard attachment.status()?.healthy == true else {
                throw CommandFailure("attachment '\(attachment.name)' is not attached: see 'linkcond status --name \(attachment.name)'")
            }
        } else if let name = parsed.value("name") {
            // A sandbox that is not up is brought up for the run (and left up), as `apply` does.
            let sandbox = Sandbox(topology: try SandboxTopology(name: name))
            if !(sandbox.look(for: "run").state.map(sandbox.isHealthy) ?? false) {
                bringUp = SandboxCommands.serveLaunch(sandbox, executable: try SandboxCommands.ownExecutable())
                Output.errorRaw("linkcond: sandbox '\(name)' is not up: the run brings it up (\(scenario.neededLinks.map(\.rawValue).joined(separator: " and "))) and leaves it up")
            }
        }
        // Made by the run once it has a sandbox: a run that cannot start leaves nothing behind.
        let directory = parsed.value("report") ?? "linkcond-reports/\(scenario.name)"
        Interrupts.install()
        let terminal = isatty(STDERR_FILENO) == 1
        let seconds = String(format: "%.0f", Double(scenario.duration) / 1e9)
        let place = attachment.map { "on attachment '\($0.name)'" } ?? parsed.value("name").map { "in sandbox '\($0)'" } ?? "in a sandbox of its own"
        Output.errorRaw("linkcond: running '\(scenario.name)' (\(scenario.steps.count) steps, about \(seconds) s) \(place)")
        var progress: (@Sendable (ScenarioProgress) -> Void)?
        if terminal {
            progress = { (progress: ScenarioProgress) in
                let line = String(
                    format: "\r\u{1b}[K[%d/%d %@] %6.1fs (%.0fs left)  path: %@  reachability: %@", progress.stepIndex + 1,
                    progress.stepCount, progress.stepName as NSString, progress.elapsed, progress.remainingInStep,
                    progress.path as NSString, progress.reachability as NSString)
                Output.standardError(line)
            }
        }
        let options = ScenarioRunOptions(
            sandboxName: attachment == nil ? parsed.value("name") : nil, reportDirectory: directory, observeCommand: parsed.value("observe"),
            catalogDirectory: catalog.directory, progress: progress, isCancelled: { Interrupts.received },
            backend: SandboxCommands.backendChoice(parsed), bringUp: bringUp, attachmentName: attachment?.name)
        let outcome = try ScenarioRunner.run(scenario, options: options)
        if terminal { Output.standardError("\r\u{1b}[K") }
        let results = outcome.report.expectations
        let passed = results.filter { (result: ExpectationResult) in result.passed }.count
        Output.print("scenario '\(scenario.name)': \(passed)/\(results.count) expectations passed\(outcome.interrupted ? " (interrupted)" : "")")
        for result in results {
            Output.print("  \(result.passed ? "PASS" : "FAIL")  \(result.name): \(result.evidence)")
        }
        for error in outcome.report.errors {
            Output.print("  ERROR \(error.step.map { "step '\($0)'" } ?? "run"): \(error.message)\(error.hint.map { " (\($0))" } ?? "")")
        }
        Output.print("reports: " + outcome.files.map { ($0 as NSString).lastPathComponent }.joined(separator: ", ") + " in \(directory)")
        if outcome.interrupted { return 130 }
        return outcome.passed ? 0 : 1
    }
}

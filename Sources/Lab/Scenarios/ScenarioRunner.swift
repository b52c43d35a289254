import Conditioning
import Foundation
import LinkcondBase
import Glibc
import PathMonitor
import Sandboxing
import Timeline

/// Where a run stands, for a live progress line.
public struct ScenarioProgress: Sendable {
    public var stepIndex: Int
    public var stepCount: Int
    public var stepName: String
    /// Seconds since the run started.
    public var elapsed: Double
    /// Seconds left in the current step.
    public var remainingInStep: Double
    public var path: String
    public var reachability: String
}

/// How a scenario is run.
public struct ScenarioRunOptions: Sendable {
    /// An existing sandbox (left up afterwards); nil makes one for the run and removes it after.
    public var sandboxName: String?
    /// Where `events.jsonl` and the reports go.
    public var reportDirectory: String
    /// A command to run in the client namespace whose JSON lines become the app lane.
    public var observeCommand: String?
    public var catalogDirectory: String?
    public var store: SandboxStore
    public var progress: (@Sendable (ScenarioProgress) -> Void)?
    public var isCancelled: @Sendable () -> Bool
    /// The backend for a sandbox the run makes (an existing one keeps its own).
    public var backend: BackendChoice
    /// When ``sandboxName`` names a sandbox that is not up: bring it up (with the scenario's links and this
    /// server) and leave it up after the run, as `linkcond apply` does; nil refuses such a sandbox.
    public var bringUp: Sandbox.ServerLaunch?
    /// An attachment to run on instead of a sandbox (attached already; left attached): the monitor and the
    /// prober run in its target, the steps act on its spliced link. See ``Scenario/needsOfASandbox``.
    public var attachmentName: String?

    /// Options for a run.
    public init(
        sandboxName: String? = nil, reportDirectory: String, observeCommand: String? = nil, catalogDirectory: String? = nil,
        store: SandboxStore = .standard, progress: (@Sendable (ScenarioProgress) -> Void)? = nil,
        isCancelled: @escaping @Sendable () -> Bool = { false }, backend: BackendChoice = .auto, bringUp: Sandbox.ServerLaunch? = nil,
        attachmentName: String? = nil
    ) {
        self.backend = backend
        self.bringUp = bringUp
        self.attachmentName = attachmentName
        self.sandboxName = sandboxName
        self.reportDirectory = reportDirectory
        self.observeCommand = observeCommand
        self.catalogDirectory = catalogDirectory
        self.store = store
        self.progress = progress
        self.isCancelled = isCancelled
    }
}

/// What a run produced.
public struct ScenarioOutcome: Sendable {
    public var report: RunReport
    /// Paths of the files written (events.jsonl and the reports).
    public var files: [String]
    /// True when the run was interrupted before its last step ended.
    public var interrupted: Bool
    /// True when every expectation passed, no step failed and the run was not interrupted.
    public var passed: Bool { report.passed && !interrupted }
}

/// Runs a scenario: opens a ``LinkLab``, performs the steps on time, records everything on the timeline,
/// judges the expectations against it, and writes the reports.
public enum ScenarioRunner {
    /// Runs `scenario`. Throws only when the run cannot start (no sandbox, one of another shape than the
    /// scenario's `"links"`, a bad report directory…). Failed
    /// expectations and a failed step are in the outcome, not thrown: a step that fails ends the run, is
    /// recorded as an event and in every report (an error test case in `junit.xml`), and the lab puts back
    /// what the run changed.
    public static func run(_ scenario: Scenario, options: ScenarioRunOptions) throws -> ScenarioOutcome {
        let settings = scenario.probeSettings()
        if let attachment = options.attachmentName, let need = scenario.needsOfASandbox.first {
            throw LabError.scenarioNeedsSandbox(scenario: scenario.name, need: need, attachment: attachment)
        }
        let startedAt = ISO8601DateFormatter().string(from: Date())
        let lab = try LinkLab.open(
            LinkLab.Options(
                sandboxName: options.sandboxName, cellular: scenario.cellular, reportDirectory: options.reportDirectory,
                probe: settings, store: options.store, catalogDirectory: options.catalogDirectory, backend: options.backend,
                links: scenario.links.map { Set($0.map(\.sandboxLink)) }, bringUp: options.bringUp, name: scenario.name,
                attachmentName: options.attachmentName),
            isCancelled: options.isCancelled)
        var steps: [StepRecord] = []
        var interrupted = false
        var errors: [RunError] = []
        var currentStep: (name: String, action: String, start: UInt64)?
        do {
            if let command = options.observeCommand { try lab.observe(command: command) }
            try lab.recorder.record(.scenario, "scenario", "scenario '\(scenario.name)': \(scenario.description)", details: [
                "steps": .number(Double(scenario.steps.count)), "expectations": .number(Double(scenario.expectations.count)),
            ])
            stepLoop: for (index, step) in scenario.steps.enumerated() {
                let start = lab.recorder.now()
                try lab.recorder.record(TimelineEvent(
                    t: start, lane: .scenario, kind: TimelineKind.stepStarted,
                    summary: "step \(index + 1)/\(scenario.steps.count) '\(step.name)': \(step.action.summary)",
                    state: step.name, details: ["action": .string(step.action.summary)]))
                currentStep = (step.name, step.action.summary, start)
                try perform(step.action, in: lab)
                let deadline = start + step.hold
                while true {
                    let now = lab.recorder.now()
                    options.progress?(ScenarioProgress(
                        stepIndex: index, stepCount: scenario.steps.count, stepName: step.name, elapsed: Double(now) / 1e9,
                        remainingInStep: Double(deadline > now ? deadline - now : 0) / 1e9,
                        path: lab.monitor.currentPath?.status.rawValue ?? "unknown", reachability: lab.prober.currentState.rawValue))
                    if options.isCancelled() {
                        interrupted = true
                        steps.append(StepRecord(name: step.name, action: step.action.summary, start: start, end: now))
                        try lab.recorder.record(.scenario, "interrupted", "run interrupted during step '\(step.name)'")
                        break stepLoop
                    }
                    guard now < deadline else { break }
                    usleep(UInt32(min(100_000, (deadline - now) / 1000)))
                }
                let end = lab.recorder.now()
                currentStep = nil
                steps.append(StepRecord(name: step.name, action: step.action.summary, start: start, end: end))
                try lab.recorder.record(TimelineEvent(
                    t: end, lane: .scenario, kind: TimelineKind.stepFinished, summary: "step '\(step.name)' finished",
                    details: ["durationSeconds": .number(Double(end - start) / 1e9)]))
            }
        } catch {
            let now = lab.recorder.now()
            let failure = RunError(step: currentStep?.name, message: "\(error)", hint: hint(for: error), t: now)
            errors.append(failure)
            if let current = currentStep {
                steps.append(StepRecord(name: current.name, action: current.action, start: current.start, end: now))
            }
            _ = try? lab.recorder.record(
                .scenario, TimelineKind.error, "\(failure.step.map { "step '\($0)' failed" } ?? "the run failed"): \(failure.message)"
                    + (failure.hint.map { " (\($0))" } ?? ""),
                state: "error", details: ["message": .string(failure.message), "hint": failure.hint.map(TimelineValue.string) ?? .null])
        }
        lab.close(writingReports: false)
        let events = try lab.events()
        var results = ExpectationEvaluator.evaluate(scenario.expectations, events: events, steps: steps)
        if interrupted {
            results = results.map { result in
                var result = result
                if !result.passed { result.evidence += " (the run was interrupted)" }
                return result
            }
        }
        for result in results {
            try lab.recorder.record(.scenario, TimelineKind.expectation, "\(result.passed ? "PASS" : "FAIL") \(result.name): \(result.evidence)",
                                    details: ["name": .string(result.name), "passed": .bool(result.passed),
                                              "evidence": .string(result.evidence), "rule": .string(result.rule),
                                              "at": result.at.map(TimelineValue.number) ?? .null])
        }
        let allEvents = try lab.events()
        let metadata = RunMetadata(
            name: scenario.name, description: scenario.description, sandbox: lab.sandbox.topology.name, startedAt: startedAt,
            duration: lab.recorder.now(), steps: steps, observeCommand: options.observeCommand)
        let report = RunReport(metadata: metadata, events: allEvents, expectations: results, errors: errors)
        let files = [lab.recorder.path] + (try ReportWriter.write(report, to: options.reportDirectory))
        return ScenarioOutcome(report: report, files: files, interrupted: interrupted)
    }

    /// What to do about a failed step, when something useful can be said.
    static func hint(for error: any Error) -> String? {
        let text = "\(error)"
        if text.contains("qdisc kind is unknown") || text.contains("not supported") {
            return "this kernel lacks a feature the step needs: run 'linkcond doctor', or use '--backend userspace'"
        }
        if let sandboxError = error as? SandboxError, case .notUp = sandboxError {
            return "the sandbox went away during the run"
        }
        return nil
    }

    /// Carries out one step's action on the lab.
    public static func perform(_ action: StepAction, in lab: LinkLab) throws {
        switch action {
        case let .apply(profile, link): try lab.apply(profile, links: link.map { [$0.sandboxLink] })
        case let .clear(link): try lab.clear(links: link.map { [$0.sandboxLink] })
        case let .linkDown(side, link): try lab.setLink(link.sandboxLink, side: side.sandboxSide, up: false)
        case let .linkUp(side, link): try lab.setLink(link.sandboxLink, side: side.sandboxSide, up: true)
        case let .removeAddress(link, family): try lab.setAddresses(link.sandboxLink, present: false, family: family?.addressFamily)
        case let .restoreAddress(link, family): try lab.setAddresses(link.sandboxLink, present: true, family: family?.addressFamily)
        case let .removeDefaultRoute(link, family): try lab.setDefaultRoutes(link.sandboxLink, present: false, family: family?.addressFamily)
        case let .restoreDefaultRoute(link, family): try lab.setDefaultRoutes(link.sandboxLink, present: true, family: family?.addressFamily)
        case let .portal(on): try lab.setPortal(on: on)
        case let .handover(link): try lab.handOver(to: link.sandboxLink)
        case .wait: break
        }
    }
}

extension AddressFamilyName {
    var addressFamily: AddressFamily { self == .ipv4 ? .inet : .inet6 }
}

extension LinkName {
    var sandboxLink: Sandbox.ClientLink { self == .wifi ? .wifi : .cellular }
}

extension LinkSide {
    var sandboxSide: Sandbox.LinkSide { self == .client ? .client : .router }
}

import Profiles
import Conditioning
import Foundation
import JSONDocument
import LinkcondBase
import RouteNetlink
import Sandboxing

/// `linkcond apply`, `clear`, `show`, `profiles`: thin wrappers over ``SandboxConditioning`` and the catalog.
enum ConditionCommands {
    /// `--link wl0|ww0` as client links (nil: every link).
    static func links(_ parsed: ParsedCommand) -> Set<Sandbox.ClientLink>? {
        guard let value = parsed.value("link") else { return nil }
        return [value == SandboxPlan.cellularInterface ? .cellular : .wifi]
    }

    /// The profile `apply` puts on: the PROFILE argument, or the conditions given as options (`--delay
    /// 100ms --loss 1%`), read and checked as a profile file is — never both.
    static func profile(_ parsed: ParsedCommand) throws -> Profile {
        var values: [String: String] = [:]
        for option in InlineConditions.options { if let value = parsed.value(option.option) { values[option.option] = value } }
        let direction: InlineConditions.Direction = parsed.flag("downlink") ? .downlink : parsed.flag("uplink") ? .uplink : .both
        switch (parsed.positional("profile"), values.isEmpty) {
        case (let reference?, true):
            if direction != .both {
                throw UsageError("'--\(direction.rawValue)' goes with conditions given as options", hint: "a profile says what each direction gets", commandPath: parsed.commandPath)
            }
            return try ProfileCatalog.find(reference)
        case (nil, false): return try InlineConditions(values: values, direction: direction).profile()
        case (_?, false):
            throw UsageError("give a profile or conditions as options (--delay, --loss…), not both", hint: "put everything in a profile file, or leave the profile out", commandPath: parsed.commandPath)
        case (nil, true):
            throw UsageError("missing the profile", hint: "give a catalog name such as 'edge', a profile file, or conditions such as '--delay 100ms --loss 1%'", commandPath: parsed.commandPath)
        }
    }

    /// `--for DURATION` in seconds (nil without it): a time as profiles write them, above 0.
    static func duration(_ parsed: ParsedCommand) throws -> Double? {
        guard let text = parsed.value("for") else { return nil }
        let nanoseconds: UInt64
        do {
            nanoseconds = try Quantity.time(text)
        } catch {
            throw UsageError("'--for': \(error.problem)", hint: "expected \(error.expected), such as '--for 30s'", commandPath: parsed.commandPath)
        }
        guard nanoseconds > 0 else { throw UsageError("'--for 0' ends before it starts", hint: "give a time above 0, such as '--for 30s'", commandPath: parsed.commandPath) }
        return Double(nanoseconds) / 1e9
    }

    static func apply(_ parsed: ParsedCommand) throws -> Int32 {
        if let attachment = AttachCommands.named(parsed) { return try AttachedCommands.apply(parsed, attachment) }
        let topology = try SandboxCommands.topology(parsed)
        // Parse and validate first: bad input changes nothing.
        let profile = try profile(parsed)
        let seconds = try duration(parsed)
        let sandbox = Sandbox(topology: topology)
        Interrupts.install()
        let executable = try SandboxCommands.ownExecutable()
        let conditioning = SandboxConditioning(sandbox: sandbox, engineExecutable: executable)
        // One transaction: the whole apply (bringing the sandbox up included) holds the sandbox's lock, taken
        // once, and reads its state once.
        let transaction = try sandbox.transaction(for: "apply \(profile.name)", progress: Output.progress)
        defer { transaction.end() }
        let links = links(parsed)
        let change = try conditioning.apply(
            profile, links: links, for: seconds, choice: SandboxCommands.backendChoice(parsed),
            server: SandboxCommands.serveLaunch(sandbox, executable: executable), in: transaction, isCancelled: { Interrupts.received },
            progress: Output.progress)
        if !parsed.flag("json") {
            switch change.outcome {
            case .repaired?: Output.print("sandbox '\(topology.name)': a process had died; started it again (the namespaces were left alone)")
            case .created?, .rebuilt?: Output.print("sandbox '\(topology.name)' was not up: created it (conditions by \(change.backend.kind.rawValue))")
            case .extended?, .alreadyUp?, nil: break
            }
        }
        for note in change.notes { Output.error("note: \(note)") }
        if parsed.flag("json") {
            try Output.json(change.report)
        } else {
            printApplied(change.report, profile: profile, links: links, sandbox: topology.name)
        }
        guard let seconds, let timed = change.timed else { return 0 }
        Output.print("  for \(ProfileSummary.seconds(seconds)), until \(timed.endsAt); then \(restoreWords(timed)) (Ctrl-C ends it sooner)")
        // The lock goes while the conditions hold: other commands (show, another apply) are not held up.
        transaction.end()
        return try waitAndPutBack(timed, seconds: seconds, backend: change.backend, sandbox: sandbox, profile: profile.name)
    }

    /// The end of `apply --for`: waits until the time is up (or Ctrl-C), then puts back what was there in a
    /// transaction of its own; exit status 130 when interrupted. The caller has let the lock go. `oneLink`:
    /// an attachment's, whose internal name is not worth printing.
    static func waitAndPutBack(
        _ timed: SandboxState.TimedChange, seconds: Double, backend: any ConditioningBackend, sandbox: Sandbox, profile: String,
        oneLink: Bool = false
    ) throws -> Int32 {
        let deadline = MonotonicClock.nanoseconds() + UInt64(seconds * 1e9)
        while !Interrupts.received && MonotonicClock.nanoseconds() < deadline { usleep(20_000) }
        let end = try sandbox.transaction(for: "apply \(profile) (end of --for)", progress: Output.progress)
        defer { end.end() }
        var done = try backend.endTimedChange(timed.generation, in: end)
        if oneLink { done = done.map { $0.split(separator: ": ", maxSplits: 1).last.map(String.init) ?? $0 } }
        let when = Interrupts.received ? "interrupted" : "after \(ProfileSummary.seconds(seconds))"
        Output.print(done.isEmpty ? "\(when): a later change took over; nothing put back"
                                  : "\(when): put back what was there (" + done.joined(separator: "; ") + ")")
        return Interrupts.received ? 130 : 0
    }

    /// `wifi: back to 'edge'; cellular: back to no conditions`.
    static func restoreWords(_ change: SandboxState.TimedChange) -> String {
        change.links.sorted().map { "\($0) back to " + (change.restore[$0].map { "'\($0.profile)'" } ?? "no conditions") }.joined(separator: ", ")
    }

    static func printApplied(_ report: ApplyReport, profile: Profile, links: Set<Sandbox.ClientLink>?, sandbox: String) {
        // One decimal by hand: String(format:) goes through Foundation's varargs and dynamic casts, the
        // largest single cost of the apply's own output (callgrind).
        let tenths = Int((max(0, report.duration) * 10_000).rounded())
        let milliseconds = "\(tenths / 10).\(tenths % 10)"
        let unit = (report.backend == .netem ? "netlink request" : "engine request") + (report.requests == 1 ? "" : "s")
        let on = links.map { " on " + $0.map(\.rawValue).sorted().joined(separator: ", ") } ?? ""
        Output.print("applied '\(profile.name)' to sandbox '\(sandbox)'\(on) with \(report.backend.rawValue) (\(report.requests) \(unit), \(milliseconds) ms, read back and verified)")
        Output.print("  downlink: \(ProfileSummary.direction(profile.downlink))")
        Output.print("  uplink:   \(ProfileSummary.direction(profile.uplink))\(profile.dnsDelay > 0 ? "; DNS +\(ProfileSummary.time(profile.dnsDelay))" : "")")
        if !profile.targets.isEmpty { Output.print("  only for: " + profile.targets.map(\.description).joined(separator: "; ")) }
    }

    static func clear(_ parsed: ParsedCommand) throws -> Int32 {
        if let attachment = AttachCommands.named(parsed) { return try AttachedCommands.clear(parsed, attachment) }
        let topology = try SandboxCommands.topology(parsed)
        let sandbox = Sandbox(topology: topology)
        let transaction = try sandbox.transaction(for: "clear", progress: Output.progress)
        defer { transaction.end() }
        let backend = try SandboxConditioning(sandbox: sandbox).backend(in: transaction)
        for note in try backend.reconcile(in: transaction) { Output.error("note: \(note)") }
        let cleared = try backend.clear(links: links(parsed), in: transaction)
        Output.print(cleared.isEmpty ? "sandbox '\(topology.name)' had no conditions; nothing to clear"
                                     : "cleared the conditions of sandbox '\(topology.name)' (\(cleared.count) sites)")
        return 0
    }

    /// `queue drops: tail 3, codel 12; sojourn median 4.1 ms, p99 38.0 ms, max 51.2 ms` (the counts since the
    /// last apply).
    static func queueLine(_ engine: InstalledSite.EngineCounters) -> String {
        let reasons = [("tail", engine.tailDropped), ("head", engine.headDropped), ("codel", engine.codelDropped), ("pie", engine.pieDropped), ("red", engine.redDropped)]
        let drops = reasons.filter { $0.1 > 0 }.map { "\($0.0) \($0.1)" }
        let milliseconds = { (nanoseconds: UInt64) in String(format: "%.1f ms", Double(nanoseconds) / 1e6) }
        let sojourn = engine.sojourn.map { "sojourn median \(milliseconds($0.median)), p99 \(milliseconds($0.p99)), max \(milliseconds($0.maximum))" }
            ?? "no frame queued"
        return "queue drops: " + (drops.isEmpty ? "none" : drops.joined(separator: ", ")) + "; " + sojourn
    }

    static func show(_ parsed: ParsedCommand) throws -> Int32 {
        if let attachment = AttachCommands.named(parsed) { return try AttachedCommands.show(parsed, attachment) }
        let topology = try SandboxCommands.topology(parsed)
        let report = try SandboxConditioning(sandbox: Sandbox(topology: topology)).report()
        if parsed.flag("json") {
            Output.json(report.json)
            return 0
        }
        let state = report.state
        Output.print("sandbox '\(topology.name)': conditions by \(report.backend.rawValue)")
        for note in report.notes { Output.print("  note: \(note)") }
        for link in state.clientLinks {
            guard let record = state.conditions[link.rawValue] else {
                Output.print("  \(link.rawValue): no profile applied")
                continue
            }
            let timed = report.timedChange(of: link)
            Output.print("  \(link.rawValue): profile '\(record.profile)' applied \(record.appliedAt)" + (record.source.map { " (\($0))" } ?? "")
                + (timed.map { ", until \($0.endsAt), then " + ($0.restore[link.rawValue].map { "'\($0.profile)'" } ?? "no conditions") } ?? ""))
            if let targets = record.targets { Output.print("    only for: " + targets.joined(separator: "; ") + " (other traffic passes untouched; DNS gets its delay)") }
        }
        for site in report.installed {
            Output.print("  \(site.site.direction.rawValue) \(site.site.link) — \(site.site.interface) in \(site.site.namespace)")
            for stage in site.stages {
                var line = "    \(stage.kind) \(stage.handle)" + (stage.parent == "-" ? "" : " parent \(stage.parent)")
                if let text = stage.text { line += ": " + text }
                line += "  [since the last apply: sent \(stage.sentPackets) pkts / \(stage.sentBytes) B, dropped \(stage.dropped), overlimits \(stage.overlimits), backlog \(stage.backlogPackets) pkts / \(stage.backlogBytes) B]"
                Output.print(line)
                if stage.agreesWithRecord == false {
                    let recorded = state.conditions[site.site.link].map { "profile '\($0.profile)'" } ?? "no profile"
                    Output.print("      differs from what the state records for \(site.site.link) (\(recorded)): changed outside linkcond, or an apply did not finish")
                }
                if let engine = stage.engine {
                    Output.print("      lost \(engine.lost), queue-dropped \(engine.queueDropped), duplicated \(engine.duplicated), corrupted \(engine.corrupted), reordered \(engine.reordered), ECN-marked \(engine.ecnMarked)"
                        + (engine.receiveOverruns > 0 ? ", receive overruns \(engine.receiveOverruns) (the engine fell behind)" : "")
                        + (engine.sendFailures > 0 ? ", send failures \(engine.sendFailures)" : "")
                        + (engine.truncated > 0 ? ", truncated \(engine.truncated) (longer than the engine's receive slots)" : "")
                        + (engine.oversized > 0 ? ", oversized \(engine.oversized) (longer than the sending end's MTU)" : ""))
                    Output.print("      " + Self.queueLine(engine))
                    if engine.orderHolds > 0 || engine.jitterReordered > 0 {
                        Output.print("      order holds \(engine.orderHolds) (ordered jitter), jitter-reordered \(engine.jitterReordered) (netem jitter)")
                    }
                    if let totals = engine.totals {
                        Output.print("      since the engine started: offered \(totals.offered), sent \(totals.sent), lost \(totals.lost), queue-dropped \(totals.queueDropped)")
                    }
                }
                if let queueDrops = stage.queueDrops { Output.print("      " + queueDrops.text) }
                for note in stage.notes { Output.print("      note: \(note)") }
            }
        }
        return 0
    }

    /// `linkcond profiles show NAME`: the profile as JSON in the profile format, as parsing reads it back.
    static func showProfile(_ parsed: ParsedCommand) throws -> Int32 {
        let profile = try ProfileCatalog.find(parsed.positional("profile")!)
        Output.write(ProfileParser.jsonText(of: profile))
        return 0
    }

    static func profiles(_ parsed: ParsedCommand) throws -> Int32 {
        let catalog = try ProfileCatalog.locate()
        let profiles = try catalog.all()
        if parsed.flag("json") {
            struct Row: Encodable { let name, description, downlink, uplink: String; let dnsDelay: String? }
            try Output.json(profiles.map {
                Row(name: $0.name, description: $0.description, downlink: ProfileSummary.direction($0.downlink),
                    uplink: ProfileSummary.direction($0.uplink), dnsDelay: $0.dnsDelay == 0 ? nil : ProfileSummary.time($0.dnsDelay))
            })
            return 0
        }
        let header = ["PROFILE", "DOWNLINK", "UPLINK", "DNS"]
        var rows = [header]
        for profile in profiles {
            rows.append([profile.name, ProfileSummary.direction(profile.downlink), ProfileSummary.direction(profile.uplink),
                         profile.dnsDelay == 0 ? "-" : "+" + ProfileSummary.time(profile.dnsDelay)])
        }
        let widths = (0..<header.count).map { column in rows.map { $0[column].count }.max() ?? 0 }
        for row in rows {
            Output.print(row.enumerated().map { $1.padding(toLength: widths[$0], withPad: " ", startingAt: 0) }.joined(separator: "  ")
                .trimmingCharacters(in: .whitespaces))
        }
        Output.print("catalog: \(catalog.origin)")
        return 0
    }
}

/// One-line summaries of profile directions for terminal output.
enum ProfileSummary {
    /// `30 s`, `1.5 s`.
    static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
    }

    static func time(_ nanoseconds: UInt64) -> String {
        if nanoseconds == 0 { return "0ms" }
        if nanoseconds % 1_000_000 == 0 { return "\(nanoseconds / 1_000_000)ms" }
        return String(format: "%.3fms", Double(nanoseconds) / 1e6)
    }

    static func percent(_ fraction: Double) -> String {
        let value = fraction * 100
        return value == value.rounded() ? "\(Int(value))%" : String(format: "%g%%", value)
    }

    static func direction(_ conditions: LinkConditions) -> String {
        // A neutral direction has no conditions (an apply put none there; it did not leave earlier ones).
        if conditions.isNeutral { return "no conditions" }
        var words: [String] = []
        if let trace = conditions.trace {
            words.append("trace \(trace.file ?? "") (mean \(Quantity.formatRate(UInt64(trace.summary.meanRate.rounded()))))")
        }
        if let rate = conditions.rate {
            words.append(rate % 1_000_000 == 0 ? "\(rate / 1_000_000)mbit" : (rate % 1000 == 0 ? "\(rate / 1000)kbit" : "\(rate)bit"))
        }
        if conditions.delay > 0 { words.append(time(conditions.delay) + (conditions.jitter > 0 ? "±" + time(conditions.jitter) : "")) }
        switch conditions.loss {
        case let .random(probability, _)? where probability > 0: words.append("loss " + percent(probability))
        case .gilbertElliott?: words.append("loss gilbert-elliott")
        case .fourState?: words.append("loss 4-state")
        default: break
        }
        if let duplicate = conditions.duplicate, duplicate.probability > 0 { words.append("dup " + percent(duplicate.probability)) }
        if let corrupt = conditions.corrupt, corrupt.probability > 0 { words.append("corrupt " + percent(corrupt.probability)) }
        if let reorder = conditions.reorder, reorder.probability > 0 { words.append("reorder " + percent(reorder.probability)) }
        return words.isEmpty ? "no conditions" : words.joined(separator: ", ")
    }
}

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

    static func apply(_ parsed: ParsedCommand) throws -> Int32 {
        if let attachment = AttachCommands.named(parsed) { return try AttachedCommands.apply(parsed, attachment) }
        let topology = try SandboxCommands.topology(parsed)
        let reference = parsed.positional("profile")!
        // Parse and validate first: bad input changes nothing.
        let profile = try ProfileCatalog.find(reference)
        let sandbox = Sandbox(topology: topology)
        Interrupts.install()
        let executable = try SandboxCommands.ownExecutable()
        let conditioning = SandboxConditioning(sandbox: sandbox, engineExecutable: executable)
        // One transaction: the whole apply (bringing the sandbox up included) holds the sandbox's lock, taken
        // once, and reads its state once.
        let transaction = try sandbox.transaction(for: "apply \(profile.name)", progress: Output.progress)
        defer { transaction.end() }
        let links = links(parsed)
        let (backend, outcome) = try conditioning.prepare(
            SandboxCommands.backendChoice(parsed), cellular: links?.contains(.cellular) ?? false,
            server: SandboxCommands.serveLaunch(sandbox, executable: executable), in: transaction, verify: .quick, isCancelled: { Interrupts.received },
            progress: Output.progress)
        if !parsed.flag("json") {
            switch outcome {
            case .repaired?: Output.print("sandbox '\(topology.name)': a process had died; started it again (the namespaces were left alone)")
            case .created?, .rebuilt?: Output.print("sandbox '\(topology.name)' was not up: created it (conditions by \(backend.kind.rawValue))")
            case .alreadyUp?, nil: break
            }
        }
        for note in try backend.reconcile(in: transaction) { Output.error("note: \(note)") }
        let report: ApplyReport
        do {
            report = try backend.apply(profile, links: links, in: transaction)
        } catch {
            // A sandbox this apply created is not left behind half-conditioned.
            if outcome == .created || outcome == .rebuilt { _ = sandbox.remove(in: transaction) }
            throw CommandFailure(explain(error, sandbox: topology.name))
        }
        if parsed.flag("json") {
            try Output.json(report)
            return 0
        }
        // One decimal by hand: String(format:) goes through Foundation's varargs and dynamic casts, the
        // largest single cost of the apply's own output (callgrind).
        let tenths = Int((max(0, report.duration) * 10_000).rounded())
        let milliseconds = "\(tenths / 10).\(tenths % 10)"
        let unit = (report.backend == .netem ? "netlink request" : "engine request") + (report.requests == 1 ? "" : "s")
        let on = links.map { " on " + $0.map(\.rawValue).sorted().joined(separator: ", ") } ?? ""
        Output.print("applied '\(profile.name)' to sandbox '\(topology.name)'\(on) with \(report.backend.rawValue) (\(report.requests) \(unit), \(milliseconds) ms, read back and verified)")
        Output.print("  downlink: \(ProfileSummary.direction(profile.downlink))")
        Output.print("  uplink:   \(ProfileSummary.direction(profile.uplink))\(profile.dnsDelay > 0 ? "; DNS +\(ProfileSummary.time(profile.dnsDelay))" : "")")
        if !profile.targets.isEmpty { Output.print("  only for: " + profile.targets.map(\.description).joined(separator: "; ")) }
        return 0
    }

    /// Adds what to do to a kernel refusal that means a feature is missing.
    static func explain(_ error: SandboxError, sandbox: String) -> String {
        if case let .netlink(inner) = error, inner.errno == 2, inner.description.contains("qdisc kind is unknown") {
            return error.description + "; this kernel lacks a qdisc linkcond needs: run 'linkcond doctor' to see which, or use '--backend userspace' (after 'linkcond down\(SandboxError.nameOption(sandbox))')"
        }
        return error.description
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

    static func show(_ parsed: ParsedCommand) throws -> Int32 {
        if let attachment = AttachCommands.named(parsed) { return try AttachedCommands.show(parsed, attachment) }
        let topology = try SandboxCommands.topology(parsed)
        let sandbox = Sandbox(topology: topology)
        // One look: the state is read once, without the lock (show never waits for a run).
        let look = sandbox.look()
        let backend = try SandboxConditioning(sandbox: sandbox).backend(in: look)
        let installed = try backend.installed(in: look)
        let state = try look.upState()
        let notes = try backend.reconcile(in: look)
        if parsed.flag("json") {
            let links: [(key: String, value: JSONValue)] = state.clientLinks.map { link in
                guard let record = state.conditions[link.rawValue] else { return (link.rawValue, .null) }
                var members: [(key: String, value: JSONValue)] = [("profile", .string(record.profile)), ("appliedAt", .string(record.appliedAt))]
                if let source = record.source { members.append(("source", .string(source))) }
                if let targets = record.targets { members.append(("targets", .array(targets.map(JSONValue.string)))) }
                return (link.rawValue, .object(members))
            }
            Output.json(.object([
                ("sandbox", .string(topology.name)), ("backend", .string(backend.kind.rawValue)), ("links", .object(links)),
                ("notes", .array(notes.map(JSONValue.string))), ("sites", .array(installed.map(\.json))),
            ]))
            return 0
        }
        Output.print("sandbox '\(topology.name)': conditions by \(backend.kind.rawValue)")
        for note in notes { Output.print("  note: \(note)") }
        for link in state.clientLinks {
            guard let record = state.conditions[link.rawValue] else {
                Output.print("  \(link.rawValue): no profile applied")
                continue
            }
            Output.print("  \(link.rawValue): profile '\(record.profile)' applied \(record.appliedAt)" + (record.source.map { " (\($0))" } ?? ""))
            if let targets = record.targets { Output.print("    only for: " + targets.joined(separator: "; ") + " (other traffic passes untouched; DNS gets its delay)") }
        }
        for site in installed {
            Output.print("  \(site.site.direction.rawValue) \(site.site.link) — \(site.site.interface) in \(site.site.namespace)")
            for stage in site.stages {
                var line = "    \(stage.kind) \(stage.handle)" + (stage.parent == "-" ? "" : " parent \(stage.parent)")
                if let text = stage.text { line += ": " + text }
                line += "  [sent \(stage.sentPackets) pkts / \(stage.sentBytes) B, dropped \(stage.dropped), overlimits \(stage.overlimits), backlog \(stage.backlogPackets) pkts / \(stage.backlogBytes) B]"
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
                }
            }
        }
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
        Output.print("catalog: \(catalog.directory)")
        return 0
    }
}

/// One-line summaries of profile directions for terminal output.
enum ProfileSummary {
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

import Conditioning
import Foundation
import JSONDocument
import NetNamespace
import Profiles
import Sandboxing

/// `apply`, `clear`, `show`, `exec` and `down` when `--name` names an attachment: the same verbs, on the
/// spliced link (one link, the target's interface; `--link` does not apply).
enum AttachedCommands {
    static func refuseLink(_ parsed: ParsedCommand, _ attachment: Attachment) throws {
        if parsed.value("link") != nil {
            throw UsageError("attachment '\(attachment.name)' has one link, its spliced interface", hint: "leave --link out", commandPath: parsed.commandPath)
        }
    }

    static func apply(_ parsed: ParsedCommand, _ attachment: Attachment) throws -> Int32 {
        try refuseLink(parsed, attachment)
        // Parse and validate first: bad input changes nothing (a profile, or conditions as options; --for).
        let profile = try ConditionCommands.profile(parsed)
        let seconds = try ConditionCommands.duration(parsed)
        Interrupts.install()
        let transaction = try attachment.sandbox.transaction(for: "apply \(profile.name)", progress: Output.progress)
        defer { transaction.end() }
        let choice = SandboxCommands.backendChoice(parsed)
        let change = try AttachmentConditioning(attachment: attachment, engineExecutable: try SandboxCommands.ownExecutable())
            .apply(profile, backend: choice, for: seconds, in: transaction)
        for note in change.notes { Output.error("note: \(note)") }
        if parsed.flag("json") {
            try Output.json(change.report)
        } else {
            let tenths = Int((max(0, change.report.duration) * 10_000).rounded())
            Output.print("applied '\(profile.name)' to attachment '\(attachment.name)' (\(change.record.interface) of \(change.record.target.description)) with \(change.report.backend.rawValue) (\(tenths / 10).\(tenths % 10) ms, read back and verified)")
            Output.print("  downlink: \(ProfileSummary.direction(profile.downlink))")
            Output.print("  uplink:   \(ProfileSummary.direction(profile.uplink))\(profile.dnsDelay > 0 ? "; DNS +\(ProfileSummary.time(profile.dnsDelay))" : "")")
        }
        guard let seconds, let timed = change.timed else { return 0 }
        let back = timed.restore.values.first.map { "'\($0.profile)'" } ?? "no conditions"
        Output.print("  for \(ProfileSummary.seconds(seconds)), until \(timed.endsAt); then back to \(back) (Ctrl-C ends it sooner)")
        transaction.end()
        return try ConditionCommands.waitAndPutBack(timed, seconds: seconds, backend: change.backend, sandbox: attachment.sandbox, profile: profile.name, oneLink: true)
    }

    static func clear(_ parsed: ParsedCommand, _ attachment: Attachment) throws -> Int32 {
        try refuseLink(parsed, attachment)
        let transaction = try attachment.sandbox.transaction(for: "clear", progress: Output.progress)
        defer { transaction.end() }
        let (cleared, notes) = try AttachmentConditioning(attachment: attachment).clear(in: transaction)
        for note in notes { Output.error("note: \(note)") }
        Output.print(cleared.isEmpty ? "attachment '\(attachment.name)' had no conditions; nothing to clear" : "cleared the conditions of attachment '\(attachment.name)'")
        return 0
    }

    static func show(_ parsed: ParsedCommand, _ attachment: Attachment) throws -> Int32 {
        let shown = try AttachmentConditioning(attachment: attachment).report()
        let record = shown.record
        if parsed.flag("json") {
            Output.json(shown.json)
            return 0
        }
        Output.print("attachment '\(attachment.name)': \(record.interface) of \(record.target.description), conditions by \(shown.backend.rawValue)")
        for note in shown.notes { Output.print("  note: \(note)") }
        Output.print(shown.applied.map { "  profile '\($0.profile)' applied \($0.appliedAt)" + ($0.source.map { " (\($0))" } ?? "") } ?? "  no profile applied")
        for site in shown.installed {
            // Towards the network: out of the original interface; towards the target: out of the wire's end facing it.
            let way = site.site.direction == .uplink ? "from \(record.interface), out of the original" : "to \(record.interface), out of \(site.site.interface)"
            Output.print("  \(site.site.direction.rawValue) (\(way)) in \(site.site.namespace)")
            for stage in site.stages {
                var line = "    \(stage.kind) \(stage.handle)" + (stage.parent == "-" ? "" : " parent \(stage.parent)")
                if let text = stage.text { line += ": " + text }
                line += "  [sent \(stage.sentPackets) pkts / \(stage.sentBytes) B, dropped \(stage.dropped), backlog \(stage.backlogPackets) pkts / \(stage.backlogBytes) B]"
                Output.print(line)
                if let engine = stage.engine {
                    Output.print("      lost \(engine.lost), queue-dropped \(engine.queueDropped), duplicated \(engine.duplicated), corrupted \(engine.corrupted), reordered \(engine.reordered)"
                        + (engine.receiveOverruns > 0 ? ", receive overruns \(engine.receiveOverruns) (the engine fell behind)" : ""))
                    Output.print("      " + ConditionCommands.queueLine(engine))
                }
                if let queueDrops = stage.queueDrops { Output.print("      " + queueDrops.text) }
            }
        }
        return 0
    }

    /// `exec --name ATTACHMENT -- CMD`: runs CMD in the target's network namespace (its mounts, users and
    /// processes stay the host's), as `ip netns exec lca-NAME-target` and `nsenter --net` do.
    static func exec(_ parsed: ParsedCommand, _ attachment: Attachment, program: String) throws -> Int32 {
        guard let record = attachment.record, let target = try? NamedNamespace(existing: record.targetNamespace) else {
            throw CommandFailure("attachment '\(attachment.name)' is not attached: see 'linkcond status --name \(attachment.name)'")
        }
        Interrupts.ignoreWhileChildRuns()
        do {
            return try target.spawn(program, arguments: Array(parsed.passthrough.dropFirst())).wait()
        } catch {
            switch error {
            case .executableNotFound: throw CommandFailure(error.description, exitCode: 127)
            case .cannotExecute: throw CommandFailure(error.description, exitCode: 126)
            default: throw SandboxError.namespace(error)
            }
        }
    }
}

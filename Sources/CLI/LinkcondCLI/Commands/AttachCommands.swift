import Conditioning
import Foundation
import Sandboxing

/// `linkcond attach` and `detach`, and the attachment side of `down`, `status` and the commands that take
/// `--name`: thin wrappers over ``AttachmentConditioning`` and ``Attachment``.
enum AttachCommands {
    /// The attachment `--name` names, when one of that name exists (a name is a sandbox's otherwise).
    static func named(_ parsed: ParsedCommand) -> Attachment? {
        guard let name = parsed.value("name"), let attachment = try? Attachment(name: name), attachment.isRecordedOrNamed else { return nil }
        return attachment
    }

    /// The target the options name; exactly one of them.
    static func target(_ parsed: ParsedCommand) throws -> AttachmentTarget {
        var targets: [AttachmentTarget] = []
        if let name = parsed.value("netns") { targets.append(.namespace(name)) }
        if let path = parsed.value("netns-path") { targets.append(.namespacePath(path)) }
        if let text = parsed.value("pid") {
            guard let pid = Int32(text), pid > 0 else {
                throw UsageError("'\(text)' is not a process id", hint: "give a positive number, such as 4242", commandPath: parsed.commandPath)
            }
            targets.append(.process(pid))
        }
        if let reference = parsed.value("container") { targets.append(.container(reference)) }
        guard let target = targets.first else {
            throw UsageError("attach needs a target", hint: "give one of --netns NAME, --netns-path PATH, --pid PID, --container ID", commandPath: parsed.commandPath)
        }
        return target
    }

    static func attach(_ parsed: ParsedCommand) throws -> Int32 {
        let target = try target(parsed)
        // The name: given, or derived from the target once it is found.
        let found = try target.resolve()
        guard let name = parsed.value("name") ?? found.defaultName else {
            throw UsageError("no name can be derived from \(target)", hint: "give one with --name", commandPath: parsed.commandPath)
        }
        let attachment: Attachment
        do {
            attachment = try Attachment(name: name)
        } catch {
            throw UsageError("'\(name)' is not a usable attachment name", hint: "use 1 to 20 lowercase letters, digits and '-'", commandPath: parsed.commandPath)
        }
        Interrupts.install()
        let conditioning = AttachmentConditioning(attachment: attachment, engineExecutable: try SandboxCommands.ownExecutable())
        let (record, kind) = try conditioning.attach(
            found, interface: parsed.value("dev"), backend: SandboxCommands.backendChoice(parsed), isCancelled: { Interrupts.received },
            progress: Output.progress)
        if parsed.flag("json") {
            try Output.json(attachment.status())
            return 0
        }
        Output.print("attached '\(name)' to \(record.interface) of \(record.target.description) (conditions by \(kind.rawValue))")
        Output.print("  \(record.interface) is now a stand-in with the same index, address, MTU, addresses and routes; the original is in \(record.wireNamespace)")
        Output.print("try: linkcond apply 3g --name \(name); linkcond show --name \(name); linkcond detach --name \(name)")
        return 0
    }

    static func detach(_ parsed: ParsedCommand) throws -> Int32 {
        let names = parsed.flag("all") ? Attachment.names() : [try name(parsed)]
        if names.isEmpty { Output.print("no attachments; nothing to detach") }
        for name in names {
            let report = try Attachment(name: name).detach(progress: Output.progress)
            Output.print(describe(report, name: name))
        }
        return 0
    }

    /// `--name`, required for one attachment.
    static func name(_ parsed: ParsedCommand) throws -> String {
        guard let name = parsed.value("name") else {
            throw UsageError("detach needs the attachment's name", hint: "give --name NAME (see 'linkcond status'), or --all", commandPath: parsed.commandPath)
        }
        return name
    }

    static func describe(_ report: DetachReport, name: String) -> String {
        var parts: [String] = []
        if report.movedHome { parts.append("the original interface is home") }
        if !report.stoppedProcesses.isEmpty { parts.append("stopped " + report.stoppedProcesses.joined(separator: ", ")) }
        if !report.removedNamespaces.isEmpty { parts.append("deleted " + report.removedNamespaces.joined(separator: ", ")) }
        var lines = ["detached '\(name)'" + (parts.isEmpty ? "" : " (\(parts.joined(separator: "; ")))")]
        lines += report.notes.map { "  note: \($0)" }
        return lines.joined(separator: "\n")
    }

    static func render(_ status: AttachmentStatus) -> String {
        let health = status.healthy ? "healthy" : (status.complete ? "broken" : "incomplete")
        var head = "attachment \(status.name): \(status.busy.map { "busy (\($0)), " } ?? "")\(health)"
        if let backend = status.backend { head += ", conditions by \(backend)" }
        var lines = [head, "  target: \(status.interface) of \(status.target) (\(status.request))"]
        lines.append("  wire: \(status.wireNamespace); the target is named \(status.targetNamespace) while attached")
        if status.cablePulled {
            lines.append("  cable: pulled, \(status.interface) in the target has no carrier" + (status.busy == nil
                ? " (left so by a run that did not end: the next run, or 'linkcond detach --name \(status.name)', plugs it back)" : " (by the run)"))
        }
        for problem in status.problems { lines.append("  problem: \(problem)") }
        for process in status.processes { lines.append("  \(process.role): pid \(process.pid), \(process.running ? "running" : "not running")") }
        return lines.joined(separator: "\n")
    }
}

import Conditioning
import Foundation
import Glibc
import LinkcondBase
import NetNamespace
import Sandboxing

/// `linkcond up`, `down`, `status`, `exec`: thin wrappers over ``Sandbox``.
enum SandboxCommands {
    static func topology(_ parsed: ParsedCommand) throws -> SandboxTopology {
        let name = parsed.value("name") ?? SandboxTopology.defaultName
        do {
            return try SandboxTopology(name: name)
        } catch {
            throw UsageError(
                "'\(name)' is not a usable sandbox name", hint: "use 1 to 20 lowercase letters, digits and '-'",
                commandPath: parsed.commandPath)
        }
    }

    /// The path of this executable, so `up` can start `linkcond serve` in the server namespace.
    static func ownExecutable() throws -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else { throw CommandFailure("cannot find linkcond's own executable (/proc/self/exe)") }
        return String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `linkcond serve` for a sandbox, with its captive-portal switch.
    static func serveLaunch(_ sandbox: Sandbox, executable: String) -> Sandbox.ServerLaunch {
        .process(executable: executable, arguments: ["serve", "--name", sandbox.topology.name, "--portal-flag", sandbox.portalFlagPath])
    }

    /// The `--backend` choice (default auto).
    static func backendChoice(_ parsed: ParsedCommand) -> BackendChoice {
        parsed.value("backend").flatMap(BackendChoice.init(rawValue:)) ?? .auto
    }

    static func up(_ parsed: ParsedCommand) throws -> Int32 {
        if let attachment = AttachCommands.named(parsed) {
            throw CommandFailure("'\(attachment.name)' is an attachment, not a sandbox: choose another --name, or 'linkcond detach --name \(attachment.name)' first")
        }
        let topology = try topology(parsed)
        let sandbox = Sandbox(topology: topology)
        Interrupts.install()
        let executable = try ownExecutable()
        let conditioning = SandboxConditioning(sandbox: sandbox, engineExecutable: executable)
        let (backend, outcome) = try conditioning.prepare(
            backendChoice(parsed), cellular: parsed.flag("cellular"), server: serveLaunch(sandbox, executable: executable),
            addingCellular: true, isCancelled: { Interrupts.received }, progress: Output.progress)
        if parsed.flag("json") {
            try Output.json(try sandbox.status())
            return 0
        }
        let namespaces = (try sandbox.status()?.namespaces.map(\.name) ?? topology.namespaces).joined(separator: ", ")
        let held = "conditions by \(backend.kind.rawValue)"
        switch outcome {
        case .created?: Output.print("sandbox '\(topology.name)' is up (\(held)): \(namespaces)")
        case .rebuilt?: Output.print("sandbox '\(topology.name)' was incomplete or broken and has been rebuilt (\(held)): \(namespaces)")
        case .repaired?: Output.print("sandbox '\(topology.name)' had a process that died: started it again, nothing else changed (\(held)): \(namespaces)")
        case .extended?:
            Output.print("sandbox '\(topology.name)' was up with wifi alone: added the cellular link \(SandboxPlan.cellularInterface)"
                + (backend.kind == .userspace ? " (the engine was started again to forward it; each link's conditions were put back)" : "") + " (\(held)): \(namespaces)")
        case .alreadyUp?, nil: Output.print("sandbox '\(topology.name)' is up already (\(held)): \(namespaces)")
        }
        Output.print("try: linkcond exec\(SandboxError.nameOption(topology.name)) -- curl -s -o /dev/null -w '%{http_code}\\n' http://\(SandboxPlan.serverName)/generate_204")
        return 0
    }

    static func down(_ parsed: ParsedCommand) throws -> Int32 {
        if let attachment = AttachCommands.named(parsed) {
            Output.print(AttachCommands.describe(try attachment.detach(progress: Output.progress), name: attachment.name))
            return 0
        }
        let store = SandboxStore.standard
        let names = parsed.flag("all") ? store.names() : [try topology(parsed).name]
        var removedAny = false
        for name in names {
            let sandbox = Sandbox(topology: try SandboxTopology(name: name), store: store)
            let report = try sandbox.remove(progress: Output.progress)
            for note in report.notes { Output.print("sandbox '\(name)': \(note)") }
            guard !report.isEmpty else { continue }
            removedAny = true
            var parts: [String] = []
            if !report.stoppedProcesses.isEmpty { parts.append("stopped " + report.stoppedProcesses.joined(separator: ", ")) }
            if !report.removedNamespaces.isEmpty { parts.append("deleted " + report.removedNamespaces.joined(separator: ", ")) }
            Output.print("sandbox '\(name)' removed" + (parts.isEmpty ? "" : " (\(parts.joined(separator: "; ")))"))
        }
        if parsed.flag("all") {
            for name in Attachment.names(store: store) {
                Output.print(AttachCommands.describe(try Attachment(name: name, store: store).detach(progress: Output.progress), name: name))
                removedAny = true
            }
            let unrecorded = Sandbox.listAll(store: store).compactMap { listing -> String? in
                if case let .damaged(name, _, _, _) = listing { return name }
                return nil
            }
            for name in unrecorded {
                Output.print("sandbox '\(name)' has leftovers but no state here; remove them with 'linkcond down\(SandboxError.nameOption(name))'")
            }
        }
        if !removedAny {
            Output.print(parsed.flag("all") ? "no sandboxes are up; nothing to remove" : "sandbox '\(names[0])' is not up; nothing to remove")
        }
        return 0
    }

    static func status(_ parsed: ParsedCommand) throws -> Int32 {
        if let name = parsed.value("name"), !SandboxTopology.isValidName(name) {
            throw UsageError("'\(name)' is not a usable sandbox name", commandPath: parsed.commandPath)
        }
        let attachments = AttachmentConditioning.statuses(store: .standard, named: parsed.value("name"))
        // A name that is an attachment's is not also looked up as a sandbox's.
        let listings = parsed.value("name") != nil && !attachments.isEmpty ? [] : SandboxConditioning.listings(store: .standard, named: parsed.value("name"))
        if parsed.flag("json") {
            try Output.json(listings.map { StatusJSON(.sandbox($0)) } + attachments.map { StatusJSON(.attachment($0)) })
        } else if listings.isEmpty && attachments.isEmpty {
            Output.print(parsed.value("name").map { "sandbox '\($0)' is not up" } ?? "no sandboxes are up (create one with 'linkcond up')")
        } else {
            for listing in listings { Output.print(render(listing)) }
            for attachment in attachments { Output.print(AttachCommands.render(attachment)) }
        }
        if attachments.contains(where: { !$0.healthy }) { return 1 }
        return statusExitCode(listings, named: parsed.value("name") != nil && attachments.isEmpty)
    }

    /// `status` exits as an LSB init script's status does: 0 when every sandbox listed is up and healthy
    /// (or, without `--name`, when none is up), 1 when one is broken, half-made or damaged, 3 when the named
    /// sandbox is not up.
    static func statusExitCode(_ listings: [SandboxListing], named: Bool) -> Int32 {
        if listings.isEmpty { return named ? 3 : 0 }
        let broken = listings.contains { listing in
            if case let .status(status) = listing { return !status.healthy }
            return true
        }
        return broken ? 1 : 0
    }

    /// A listing as `status --json` prints it: a sandbox's (``SandboxListing``'s own document) or an
    /// attachment's (with `"kind": "attachment"`).
    struct StatusJSON: Encodable {
        enum Entry {
            case sandbox(SandboxListing)
            case attachment(AttachmentStatus)
        }

        let entry: Entry
        init(_ entry: Entry) { self.entry = entry }

        func encode(to encoder: Encoder) throws {
            switch entry {
            case let .sandbox(listing): try listing.encode(to: encoder)
            case let .attachment(status): try status.encode(to: encoder)
            }
        }
    }

    static func render(_ listing: SandboxListing) -> String {
        switch listing {
        case let .status(status): return render(status)
        case let .damaged(name, detail, leftovers, busy):
            var lines = ["sandbox \(name): \(busy.map { "busy (\($0)); " } ?? "")\(detail)"]
            if !leftovers.isEmpty { lines.append("  found: " + leftovers.joined(separator: ", ")) }
            if busy == nil { lines.append("  remove it with 'linkcond down\(SandboxError.nameOption(name))'") }
            return lines.joined(separator: "\n")
        }
    }

    static func render(_ status: SandboxStatus) -> String {
        var lines: [String] = []
        let health = status.healthy ? "healthy" : (status.complete ? "broken (run 'linkcond up\(SandboxError.nameOption(status.name))' again to rebuild it)" : "incomplete")
        var head = "sandbox \(status.name): \(status.busy.map { "busy (\($0)), " } ?? "")\(health)"
        if let backend = status.backend { head += ", conditions by \(backend)" }
        head += "\(status.cellular ? ", with cellular" : ""), created \(status.createdAt)"
        lines.append(head)
        for problem in status.problems { lines.append("  problem: \(problem)") }
        for entry in status.conditions {
            var line = "  \(entry.link): " + (entry.profile.map { "profile '\($0)' applied \(entry.appliedAt ?? "-")" } ?? "no conditions")
            if let source = entry.source { line += " (\(source))" }
            if let until = entry.until { line += ", until \(until), then " + (entry.then.map { "'\($0)'" } ?? "no conditions") }
            lines.append(line)
        }
        for process in status.processes {
            lines.append("  \(process.role): pid \(process.pid), \(process.running ? "running" : "not running")")
        }
        for namespace in status.namespaces {
            lines.append("  \(namespace.role) \(namespace.name)\(namespace.exists ? "" : " (missing)")")
            for interface in namespace.interfaces {
                let state = "\(interface.up ? "up" : "down")/\(interface.operationalState.lowercased())\(interface.carrier ? "" : ", no carrier")"
                let addresses = interface.addresses.isEmpty ? "" : "  " + interface.addresses.joined(separator: " ")
                lines.append("    \(interface.name.padding(toLength: 6, withPad: " ", startingAt: 0)) \(state)\(addresses)")
            }
            for route in namespace.defaultRoutes { lines.append("    \(route)") }
        }
        return lines.joined(separator: "\n")
    }

    static func exec(_ parsed: ParsedCommand) throws -> Int32 {
        guard let program = parsed.passthrough.first else {
            throw UsageError("missing the command to run", hint: "write it after '--'", commandPath: parsed.commandPath)
        }
        if let attachment = AttachCommands.named(parsed) { return try AttachedCommands.exec(parsed, attachment, program: program) }
        let topology = try topology(parsed)
        let sandbox = Sandbox(topology: topology)
        Interrupts.ignoreWhileChildRuns()
        do {
            return try sandbox.exec(program, arguments: Array(parsed.passthrough.dropFirst()))
        } catch let SandboxError.namespace(error) {
            // As a shell reports a command it cannot run: 127 when there is none, 126 when it cannot execute.
            switch error {
            case .executableNotFound: throw CommandFailure(error.description, exitCode: 127)
            case let .cannotExecute(_, code): throw CommandFailure(error.description, exitCode: code == ENOENT ? 127 : 126)
            default: throw SandboxError.namespace(error)
            }
        }
    }
}

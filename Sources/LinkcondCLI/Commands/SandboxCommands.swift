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

    static func up(_ parsed: ParsedCommand) throws -> Int32 {
        let topology = try topology(parsed)
        let sandbox = Sandbox(topology: topology)
        Interrupts.install()
        let executable = try ownExecutable()
        let outcome = try sandbox.up(
            cellular: parsed.flag("cellular"),
            server: serveLaunch(sandbox, executable: executable),
            isCancelled: { Interrupts.received },
            progress: Output.progress)
        if parsed.flag("json") {
            try Output.json(try sandbox.status())
            return 0
        }
        let namespaces = topology.namespaces.joined(separator: ", ")
        switch outcome {
        case .created: Output.print("sandbox '\(topology.name)' is up: \(namespaces)")
        case .rebuilt: Output.print("sandbox '\(topology.name)' was incomplete and has been rebuilt: \(namespaces)")
        case .alreadyUp: Output.print("sandbox '\(topology.name)' is up already: \(namespaces)")
        }
        let execName = topology.name == SandboxTopology.defaultName ? "" : " --name \(topology.name)"
        Output.print("try: linkcond exec\(execName) -- curl -s -o /dev/null -w '%{http_code}\\n' http://server.\(SandboxPlan.zone)/generate_204")
        return 0
    }

    static func down(_ parsed: ParsedCommand) throws -> Int32 {
        let store = SandboxStore.standard
        let names = parsed.flag("all") ? store.names() : [try topology(parsed).name]
        var removed: [String] = []
        for name in names {
            let sandbox = Sandbox(topology: try SandboxTopology(name: name), store: store)
            if try sandbox.down() { removed.append(name) }
        }
        if removed.isEmpty {
            Output.print(parsed.flag("all") ? "no sandboxes are up; nothing to remove" : "sandbox '\(names[0])' is not up; nothing to remove")
        } else {
            for name in removed { Output.print("sandbox '\(name)' removed") }
        }
        return 0
    }

    static func status(_ parsed: ParsedCommand) throws -> Int32 {
        let store = SandboxStore.standard
        let names = parsed.value("name").map { [$0] } ?? store.names()
        var statuses: [SandboxStatus] = []
        for name in names {
            guard SandboxTopology.isValidName(name) else {
                throw UsageError("'\(name)' is not a usable sandbox name", commandPath: parsed.commandPath)
            }
            if let status = try Sandbox(topology: try SandboxTopology(name: name), store: store).status() {
                statuses.append(status)
            }
        }
        if parsed.flag("json") {
            try Output.json(statuses)
            return 0
        }
        if statuses.isEmpty {
            Output.print(parsed.value("name").map { "sandbox '\($0)' is not up" } ?? "no sandboxes are up (create one with 'linkcond up')")
            return 0
        }
        for status in statuses { Output.print(render(status)) }
        return 0
    }

    static func render(_ status: SandboxStatus) -> String {
        var lines: [String] = []
        let health = status.healthy ? "healthy" : (status.complete ? "broken (run 'linkcond up' again to rebuild it)" : "incomplete")
        lines.append("sandbox \(status.name): \(health)\(status.cellular ? ", with cellular" : ""), created \(status.createdAt)")
        if let pid = status.serverPID {
            lines.append("  server: pid \(pid), \(status.serverRunning ? "running" : "not running")")
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
        let topology = try topology(parsed)
        let sandbox = Sandbox(topology: topology)
        guard let program = parsed.passthrough.first else {
            throw UsageError("missing the command to run", hint: "write it after '--'", commandPath: parsed.commandPath)
        }
        guard try sandbox.store.load(topology.name) != nil else { throw SandboxError.notUp(name: topology.name) }
        Interrupts.ignoreWhileChildRuns()
        return try sandbox.exec(program, arguments: Array(parsed.passthrough.dropFirst()))
    }
}

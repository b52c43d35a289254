import Engine
import Foundation
import PacketEngine
import Sandboxing

/// `linkcond engine`: the userspace engine of a sandbox, run by `up` inside the sandbox's wire namespace.
enum EngineCommand {
    static func run(_ parsed: ParsedCommand) throws -> Int32 {
        let topology = try SandboxCommands.topology(parsed)
        let store = parsed.value("store").map(SandboxStore.init(directory:)) ?? .standard
        var options = EngineOptions()
        // SCHED_FIFO for the forwarding threads keeps departures punctual on a busy machine, at the cost of
        // taking a CPU from everything else while they forward at full speed: opt-in.
        if let priority = ProcessInfo.processInfo.environment["LINKCOND_ENGINE_PRIORITY"].flatMap(Int32.init) {
            options.realtimePriority = priority
        }
        var attached: WireEnds?
        if parsed.flag("attached") {
            // An attachment's engine: its two ends are in the attachment's state (the wire's end facing the
            // stand-in, and the target's original interface).
            guard let record = try store.load(topology.name)?.attachment else {
                throw CommandFailure("the engine of attachment '\(topology.name)' found no attachment in \(store.path(for: topology.name))")
            }
            attached = WireEnds(namespace: nil, clientSide: record.wireEnd, routerSide: record.interface)
        }
        let configuration = EngineService.Configuration(
            socketPath: store.engineSocketPath(for: topology.name), clientNamespace: topology.clientNamespace,
            routerNamespace: topology.routerNamespace, options: options, attached: attached)
        do {
            return try EngineService.run(configuration) { line in Output.print("linkcond engine: \(line)") }
        } catch {
            throw CommandFailure("the engine of sandbox '\(topology.name)' could not start: \(error)")
        }
    }
}

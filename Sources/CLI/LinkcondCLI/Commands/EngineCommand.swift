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
        let configuration = EngineService.Configuration(
            socketPath: store.engineSocketPath(for: topology.name), clientNamespace: topology.clientNamespace,
            routerNamespace: topology.routerNamespace, options: options)
        do {
            return try EngineService.run(configuration) { line in Output.print("linkcond engine: \(line)") }
        } catch {
            throw CommandFailure("the engine of sandbox '\(topology.name)' could not start: \(error)")
        }
    }
}

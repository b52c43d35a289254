import Conditioning
import Dispatch
import Foundation
import Glibc
import LinkcondBase
import NetNamespace
import PathMonitor
import Sandboxing

/// `linkcond monitor`: streams path updates (and probe results with `--probe`) as they happen.
enum MonitorCommand {
    static func run(_ parsed: ParsedCommand) throws -> Int32 {
        let namespace: NamedNamespace?
        if parsed.flag("host") {
            namespace = nil
        } else if let attachment = AttachCommands.named(parsed) {
            // The target's own namespace, as linkcond named it while attached.
            guard let record = attachment.record, let target = try? NamedNamespace(existing: record.targetNamespace) else {
                throw CommandFailure("attachment '\(attachment.name)' is not attached: see 'linkcond status --name \(attachment.name)'")
            }
            if parsed.flag("probe") {
                throw CommandFailure("the prober probes a sandbox's server (server.linkcond.test), which attachment '\(attachment.name)' does not have: watch its path without --probe")
            }
            namespace = target
        } else {
            let topology = try SandboxCommands.topology(parsed)
            namespace = try Sandbox(topology: topology).clientNamespace()
        }
        let json = parsed.flag("json")
        let origin = MonotonicClock.nanoseconds()
        let output = DispatchQueue(label: "linkcond.monitor.output")
        let monitor = PathMonitor(namespace: namespace)
        try monitor.start(queue: output) { update in
            emit(lane: "path", json: json, origin: origin, time: update.time, line: (update.isBaseline ? "baseline " : "") + update.path.summary, object: update)
        }
        let prober = try MonitorProbing.startIfRequested(parsed, namespace: namespace, queue: output, json: json, origin: origin)
        // Runs until Ctrl-C / SIGTERM, or until the sandbox's client namespace goes away (`down`, or a new
        // sandbox of the same name: another namespace behind the same name is not the one watched).
        Interrupts.install()
        let watched = namespace?.identity
        var gone = false
        while !Interrupts.received {
            usleep(50_000)
            if let namespace, let watched, namespace.identity != watched {
                gone = true
                break
            }
        }
        prober?.cancel()
        monitor.cancel()
        if gone, let namespace {
            Output.error("namespace \(namespace.name) went away (the sandbox was removed or rebuilt, or the attachment detached); stopped watching")
            return 1
        }
        return 0
    }

    static func emit<T: Encodable>(lane: String, json: Bool, origin: UInt64, time: UInt64, line: String, object: T) {
        let seconds = Double(Int64(bitPattern: time &- origin)) / 1e9
        if json {
            if let text = UpdateLine.json(lane: lane, update: object, time: time, origin: origin) { Output.print(text) }
        } else {
            Output.print(String(format: "%9.3fs  ", seconds) + lane.padding(toLength: 13, withPad: " ", startingAt: 0) + line)
        }
    }
}

/// `--probe`: the reachability prober next to the path monitor.
enum MonitorProbing {
    static func startIfRequested(_ parsed: ParsedCommand, namespace: NamedNamespace?, queue: DispatchQueue, json: Bool, origin: UInt64) throws -> ReachabilityProber? {
        guard parsed.flag("probe") else { return nil }
        let prober = ReachabilityProber(namespace: namespace, settings: ReachabilitySettings())
        prober.start(queue: queue) { update in
            MonitorCommand.emit(lane: "reachability", json: json, origin: origin, time: update.time, line: line(update), object: update)
        }
        return prober
    }

    /// One human line: the overall state, each family's, the best family's samples, then the family whose
    /// round this was and what it found, e.g. `online, only ipv4 [ipv4 online, ipv6 offline], quality good,
    /// rtt 0.1 ms, loss 0%; ipv6 round: failure — dns: 2001:2:0:100::2: connect: Network is unreachable`.
    static func line(_ update: ReachabilityUpdate) -> String {
        var line = "\(update.state)"
        if update.isStateChange { line += " (was \(update.previousState))" }
        let families = [update.ipv4, update.ipv6].compactMap { $0 }
        if update.isSingleFamily, let only = families.first(where: { $0.state == .online }) { line += ", only \(only.family)" }
        let states = families.map { family -> String in
            var text = "\(family.family) \(family.state)"
            if family.family == update.family && family.isStateChange { text += " (was \(family.previousState))" }
            return text
        }
        if !states.isEmpty { line += " [" + states.joined(separator: ", ") + "]" }
        line += ", quality \(update.quality)"
        if let rtt = update.medianRTT { line += String(format: ", rtt %.1f ms", rtt * 1000) }
        line += String(format: ", loss %.0f%%", update.lossFraction * 100)
        line += "; \(update.family) round: \(update.outcome)"
        let failures = update.results.filter { !$0.success }.map { "\($0.kind): \($0.error ?? "failed")" }
        if !failures.isEmpty { line += " — " + failures.joined(separator: "; ") }
        return line
    }
}

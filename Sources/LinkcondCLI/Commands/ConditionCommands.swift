import Profiles
import Conditioning
import Foundation
import RouteNetlink
import Sandboxing

/// `linkcond apply`, `clear`, `show`, `profiles`: thin wrappers over ``NetemBackend`` and the catalog.
enum ConditionCommands {
    static func apply(_ parsed: ParsedCommand) throws -> Int32 {
        let topology = try SandboxCommands.topology(parsed)
        let reference = parsed.positional("profile")!
        // Parse and validate first: bad input changes nothing.
        let profile = try ProfileCatalog.find(reference)
        let backend = parsed.value("backend") ?? "auto"
        if backend == "userspace" {
            throw CommandFailure("the userspace backend is not available yet; use a kernel with sch_netem (see 'linkcond doctor')")
        }
        let sandbox = Sandbox(topology: topology)
        let existing = try sandbox.store.load(topology.name)
        if existing == nil || !sandbox.isHealthy(existing!) {
            Output.progress("sandbox '\(topology.name)' is not up; creating it")
            Interrupts.install()
            try sandbox.up(
                server: SandboxCommands.serveLaunch(sandbox, executable: try SandboxCommands.ownExecutable()),
                isCancelled: { Interrupts.received }, progress: Output.progress)
            if !parsed.flag("json") { Output.print("sandbox '\(topology.name)' was not up: created it") }
        }
        let report: NetemBackend.ApplyReport
        do {
            report = try NetemBackend(sandbox: sandbox).apply(profile)
        } catch {
            throw CommandFailure(explain(error))
        }
        if parsed.flag("json") {
            try Output.json(report)
            return 0
        }
        let milliseconds = String(format: "%.1f", report.duration * 1000)
        Output.print("applied '\(profile.name)' to sandbox '\(topology.name)' (\(report.requests) netlink requests, \(milliseconds) ms, read back and verified)")
        Output.print("  downlink: \(ProfileSummary.direction(profile.downlink))")
        Output.print("  uplink:   \(ProfileSummary.direction(profile.uplink))\(profile.dnsDelay > 0 ? "; DNS +\(ProfileSummary.time(profile.dnsDelay))" : "")")
        return 0
    }

    /// Adds what to do to a kernel refusal that means a feature is missing.
    static func explain(_ error: SandboxError) -> String {
        if case let .netlink(inner) = error, inner.errno == 2, inner.description.contains("qdisc kind is unknown") {
            return error.description + "; this kernel lacks a qdisc linkcond needs: run 'linkcond doctor' to see which and how to get it"
        }
        return error.description
    }

    static func clear(_ parsed: ParsedCommand) throws -> Int32 {
        let topology = try SandboxCommands.topology(parsed)
        let cleared = try NetemBackend(sandbox: Sandbox(topology: topology)).clear()
        Output.print(cleared.isEmpty ? "sandbox '\(topology.name)' had no conditions; nothing to clear"
                                     : "cleared the conditions of sandbox '\(topology.name)' (\(cleared.count) sites)")
        return 0
    }

    static func show(_ parsed: ParsedCommand) throws -> Int32 {
        let topology = try SandboxCommands.topology(parsed)
        let sandbox = Sandbox(topology: topology)
        let installed = try NetemBackend(sandbox: sandbox).installed()
        let applied = try sandbox.store.load(topology.name)?.conditions
        if parsed.flag("json") {
            struct Shown: Encodable {
                let sandbox: String
                let profile: SandboxState.AppliedConditions?
                let sites: [NetemBackend.InstalledSite]
            }
            try Output.json(Shown(sandbox: topology.name, profile: applied, sites: installed))
            return 0
        }
        Output.print("sandbox '\(topology.name)': " + (applied.map { "profile '\($0.profile)' applied \($0.appliedAt)" } ?? "no profile applied"))
        for site in installed {
            Output.print("  \(site.site.direction.rawValue) \(site.site.link) — \(site.site.interface) in \(site.site.namespace)")
            for qdisc in site.qdiscs {
                var line = "    \(qdisc.kind) \(qdisc.handle) parent \(qdisc.parent)"
                if let conditions = qdisc.conditions {
                    line += ": " + describe(conditions)
                }
                line += "  [sent \(qdisc.sentPackets) pkts / \(qdisc.sentBytes) B, dropped \(qdisc.dropped), overlimits \(qdisc.overlimits), backlog \(qdisc.backlogPackets) pkts / \(qdisc.backlogBytes) B]"
                Output.print(line)
            }
        }
        return 0
    }

    /// The netem qdisc's conditions as tc's arguments: NetemDescription's one text.
    static func describe(_ conditions: NetemDescription) -> String {
        conditions.text
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
        if conditions.isNeutral { return "unchanged" }
        var words: [String] = []
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
        return words.isEmpty ? "unchanged" : words.joined(separator: ", ")
    }
}

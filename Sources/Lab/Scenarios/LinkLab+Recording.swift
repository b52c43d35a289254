import Foundation
import PathMonitor
import Timeline

extension LinkLab {
    /// Records the run's start, then every path update, probe result and prober update on the timeline.
    func start() throws {
        let place = attachment.map { "attachment '\($0.name)'" } ?? "sandbox '\(sandbox.topology.name)'"
        try recorder.record(.scenario, TimelineKind.runStarted, "run started in \(place)")
        let recorder = self.recorder
        try monitor.start(queue: queue) { update in
            let path = update.path
            var details: [String: TimelineValue] = [
                "interfaces": .string(path.availableInterfaces.map(\.name).joined(separator: ",")),
                "expensive": .bool(path.isExpensive), "constrained": .bool(path.isConstrained),
                "ipv4": .bool(path.supportsIPv4), "ipv6": .bool(path.supportsIPv6), "dns": .bool(path.supportsDNS),
                "baseline": .bool(update.isBaseline),
                "latencyMs": .number(Double(update.time &- update.eventTime) / 1e6),
            ]
            if let reason = path.unsatisfiedReason { details["reason"] = .string(reason.rawValue) }
            _ = try? recorder.record(TimelineEvent(
                t: recorder.runTime(ofMonotonic: update.eventTime), lane: .path, kind: TimelineKind.pathUpdate,
                summary: (update.isBaseline ? "baseline: " : "") + path.summary, state: path.status.rawValue, details: details))
        }
        prober.start(queue: queue) { update in
            for result in update.results {
                _ = try? recorder.record(TimelineEvent(
                    t: recorder.runTime(ofMonotonic: result.time), lane: .reachability, kind: TimelineKind.sample,
                    summary: "\(result.kind) probe \(result.success ? "succeeded" : "failed")"
                        + (result.rtt.map { String(format: " in %.1f ms", $0 * 1000) } ?? "") + (result.error.map { ": \($0)" } ?? ""),
                    details: [
                        "probe": .string(result.kind.rawValue), "success": .bool(result.success),
                        "rttMs": result.rtt.map { .number($0 * 1000) } ?? .null,
                    ]))
            }
            var details: [String: TimelineValue] = [
                "previous": .string(update.previousState.rawValue), "quality": .string(update.quality.rawValue),
                "rttMs": update.medianRTT.map { .number($0 * 1000) } ?? .null,
                "loss": .number(update.lossFraction),
            ]
            details["generation"] = .number(Double(update.generation))
            details["family"] = .string(update.family.rawValue)
            if let ipv4 = update.ipv4 { details[TimelineDetail.ipv4] = .string(ipv4.state.rawValue) }
            if let ipv6 = update.ipv6 { details[TimelineDetail.ipv6] = .string(ipv6.state.rawValue) }
            details[TimelineDetail.singleFamily] = .bool(update.isSingleFamily)
            _ = try? recorder.record(TimelineEvent(
                t: recorder.runTime(ofMonotonic: update.time), lane: .reachability, kind: TimelineKind.reachabilityUpdate,
                summary: "\(update.state) (quality \(update.quality))", state: update.state.rawValue, details: details))
        }
    }
}

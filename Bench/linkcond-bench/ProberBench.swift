// The prober's detection of 100% loss, with adaptive and with fixed timeouts, on LTE, 3G and Edge: a sandbox
// of its own (userspace backend, so it runs on any kernel) with the profile applied by `linkcond apply`, a
// ReachabilityProber in its client namespace (as `linkcond monitor --probe` runs it), then `linkcond apply
// 100-loss`: the time from that command's return (the loss is in force and verified) to the prober's first
// offline update. Before the loss the prober runs a healthy period of at least five rounds per family on the
// profile; any offline conclusion there is a false alarm, and the row's notes count them. Every wait is bounded;
// the sandbox and its store are removed whatever happens.
import Foundation
import Glibc
import PathMonitor
import NetNamespace
import Synchronization

enum ProberBench {
    static let profiles = ["lte", "3g", "edge"]
    /// Rounds of each family on the profile before the loss (the adaptive estimator learns the link).
    static let healthyRounds: UInt64 = 5

    /// Collects a prober's updates.
    final class Log: Sendable {
        private let updates = Mutex<[ReachabilityUpdate]>([])
        func append(_ update: ReachabilityUpdate) { updates.withLock { $0.append(update) } }
        var all: [ReachabilityUpdate] { updates.withLock { $0 } }

        /// Waits up to `seconds` for an update from index `from` on that satisfies `predicate`.
        func first(from: Int = 0, within seconds: Double, where predicate: (ReachabilityUpdate) -> Bool) -> ReachabilityUpdate? {
            let deadline = now() + UInt64(seconds * 1e9)
            while true {
                if let found = all.dropFirst(from).first(where: predicate) { return found }
                if now() >= deadline { return nil }
                usleep(10_000)
            }
        }
    }

    /// What one detection measured.
    struct Detection {
        var seconds: Double?
        var bound: Double
        var healthyRounds: Int
        var falseOffline: Int
        var problem: String?
    }

    static func rows(linkcond: String?) -> [BenchRow] {
        guard let linkcond else {
            return [BenchRow(operation: "prober detection of 100% loss", ours_us: nil, floor_us: nil, peers: [:], notes: ["no linkcond executable"])]
        }
        let store = "/run/lcb-prober-\(getpid())"
        let sandbox = "lcp\(getpid() % 100_000)"
        var environment = ["LINKCOND_STORE": store]
        if access(NetlinkBench.profilesDirectory + "/edge.json", R_OK) == 0 { environment["LINKCOND_PROFILES"] = NetlinkBench.profilesDirectory }
        defer {
            _ = ProcessRunner.run([linkcond, "down", "--name", sandbox], environment: environment, seconds: 60)
            rmdir(store)
        }
        guard ProcessRunner.run([linkcond, "up", "--name", sandbox, "--backend", "userspace"], environment: environment, seconds: 60) != nil,
            let client = try? NamedNamespace(existing: "lc-\(sandbox)-client")
        else {
            return [BenchRow(
                operation: "prober detection of 100% loss", ours_us: nil, floor_us: nil, peers: [:],
                notes: ["'linkcond up --backend userspace' failed or took over 60 s"])]
        }
        var rows: [BenchRow] = []
        for profile in profiles {
            let adaptive = detect(profile, settings: ReachabilitySettings(), client: client, sandbox: sandbox, linkcond: linkcond, environment: environment)
            let fixed = detect(
                profile, settings: ReachabilitySettings(timeoutMode: .fixed), client: client, sandbox: sandbox, linkcond: linkcond,
                environment: environment)
            var notes: [String] = []
            for (mode, detection) in [("adaptive", adaptive), ("fixed", fixed)] {
                var note = String(format: "%@: bound %.2f s; healthy period %d rounds, ", mode, detection.bound, detection.healthyRounds)
                note += detection.falseOffline == 0 ? "never offline" : "offline \(detection.falseOffline) times (false alarms)"
                if let problem = detection.problem { note += "; " + problem }
                notes.append(note)
            }
            rows.append(BenchRow(
                operation: "prober: 100% loss seen offline on \(profile), adaptive timeouts (1 run)",
                ours_us: adaptive.seconds.flatMap { Summary([$0 * 1e6]) }, floor_us: nil,
                peers: fixed.seconds.flatMap { Summary([$0 * 1e6]) }.map { ["fixed 5 s timeouts": $0] } ?? [:], notes: notes))
        }
        return rows
    }

    /// Applies `profile`, runs a prober with `settings` through a healthy period, applies 100-loss and times
    /// the first offline update.
    static func detect(
        _ profile: String, settings: ReachabilitySettings, client: NamedNamespace, sandbox: String, linkcond: String, environment: [String: String]
    ) -> Detection {
        var detection = Detection(seconds: nil, bound: settings.detectionBound, healthyRounds: 0, falseOffline: 0)
        guard ProcessRunner.run([linkcond, "apply", profile, "--name", sandbox], environment: environment, seconds: 60) != nil else {
            detection.problem = "'linkcond apply \(profile)' failed"
            return detection
        }
        let prober = ReachabilityProber(namespace: client, settings: settings)
        let log = Log()
        prober.start(queue: DispatchQueue(label: "linkcond-bench-prober")) { log.append($0) }
        defer { prober.cancel() }
        let families = settings.families
        let healthy = log.first(within: 120) { update in
            families.allSatisfy { (update.reachability(of: $0)?.rounds ?? 0) >= healthyRounds }
        }
        let mark = log.all.count
        detection.healthyRounds = mark
        detection.falseOffline = log.all.prefix(mark).filter { update in
            update.state == .offline || families.contains { update.reachability(of: $0)?.state == .offline }
        }.count
        guard healthy != nil else {
            detection.problem = "no \(healthyRounds) rounds per family within 120 s"
            return detection
        }
        // The bound for the timeouts in force as the loss begins.
        let inForce = families.compactMap { update in log.all.last { $0.family == update }?.reachability(of: update)?.timeouts.longest }.max()
        if let inForce { detection.bound = settings.detectionBound(probeTimeout: inForce) }
        guard ProcessRunner.run([linkcond, "apply", "100-loss", "--name", sandbox], environment: environment, seconds: 60) != nil else {
            detection.problem = "'linkcond apply 100-loss' failed"
            return detection
        }
        let lost = now()
        let from = log.all.count
        guard let offline = log.first(from: from, within: detection.bound + 10, where: { $0.state == .offline }) else {
            detection.problem = String(format: "not offline within %.1f s", detection.bound + 10)
            return detection
        }
        detection.seconds = Double(Int64(bitPattern: offline.time &- lost)) / 1e9
        return detection
    }
}

import LinkcondBase
import PathMonitor

extension LinkLab {
    /// Waits until the path monitor reports `status`; returns the update. Throws ``LabError/timedOut``.
    @discardableResult
    public func waitForPath(_ status: NetworkPath.Status, within seconds: Double) async throws -> PathUpdate {
        let deadline = MonotonicClock.nanoseconds() + UInt64(seconds * 1e9)
        while true {
            if let update = monitor.currentUpdate, update.path.status == status { return update }
            guard MonotonicClock.nanoseconds() < deadline else {
                throw LabError.timedOut(what: "path \(status)", seconds: seconds, last: monitor.currentPath?.summary ?? "none")
            }
            try await Task.sleep(nanoseconds: 5_000_000)
        }
    }

    /// Waits until the prober reports `state`. Throws ``LabError/timedOut``.
    public func waitForReachability(_ state: ReachabilityState, within seconds: Double) async throws {
        let deadline = MonotonicClock.nanoseconds() + UInt64(seconds * 1e9)
        while prober.currentState != state {
            guard MonotonicClock.nanoseconds() < deadline else {
                throw LabError.timedOut(what: "reachability \(state)", seconds: seconds, last: prober.currentState.rawValue)
            }
            try await Task.sleep(nanoseconds: 10_000_000)
        }
    }
}

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
                throw LabError.timedOut(what: "path \(status)", seconds: seconds, last: monitor.currentPath?.summary ?? "none", reports: reportDirectory)
            }
            try await Task.sleep(nanoseconds: 5_000_000)
        }
    }

    /// Waits until the prober reports `state` overall (online as soon as either family is), or, with
    /// `everyFamily`, until each probed family has (IPv4 and IPv6 alike). Wait for `.online` of every family
    /// before timing an outage: a family that has not finished a round has no measured round trip, and its
    /// first timeouts are the ceiling's, not the bound's (``ReachabilitySettings/detectionBound(probeTimeout:)``).
    /// Throws ``LabError/timedOut``, naming what was last seen.
    public func waitForReachability(_ state: ReachabilityState, within seconds: Double, everyFamily: Bool = false) async throws {
        let deadline = MonotonicClock.nanoseconds() + UInt64(seconds * 1e9)
        let families = prober.settings.probedFamilies
        func reached() -> Bool {
            everyFamily ? families.allSatisfy { prober.currentState(of: $0) == state } : prober.currentState == state
        }
        while !reached() {
            guard MonotonicClock.nanoseconds() < deadline else {
                let last = everyFamily
                    ? families.map { "\($0) \(prober.currentState(of: $0)?.rawValue ?? "no round yet")" }.joined(separator: ", ")
                    : prober.currentState.rawValue
                throw LabError.timedOut(
                    what: "reachability \(state)\(everyFamily ? " of every family" : "")", seconds: seconds, last: last, reports: reportDirectory)
            }
            try await Task.sleep(nanoseconds: 10_000_000)
        }
    }
}

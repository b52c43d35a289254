import LinkcondBase
import RouteNetlink

/// Turns probe rounds into reachability states, link quality and the pause before the next round.
/// A pure value: no clock, no sockets, so every rule can be tested with scripted rounds.
///
/// Rules, per round (``ProbeOutcome``):
/// - ``ProbeOutcome/online`` (204) or ``ProbeOutcome/portal`` (another HTTP response) decide at once:
///   the first success after any number of failures is ``ReachabilityState/online`` (or portal).
/// - ``ProbeOutcome/limited`` and ``ProbeOutcome/failure`` count as failed rounds. Below
///   ``ReachabilitySettings/failureThreshold`` failed rounds in a row the state stays as it was (an unknown
///   prober stays unknown); from the threshold on it is ``ReachabilityState/limited`` when the latest round
///   was limited, ``ReachabilityState/offline`` otherwise.
/// - The next round follows after ``ReachabilitySettings/interval`` in every state but offline; offline
///   backs off (``ReachabilitySettings/offlineBackoff(afterOfflineRounds:)``) until a round succeeds.
/// - Quality comes from the last ``ReachabilitySettings/qualityWindow`` rounds: the median TCP connect time
///   of those that got one, and the fraction that were failures (``LinkQuality/classify(medianRTT:loss:)``).
public struct ReachabilityStateMachine: Sendable {
    /// What one round did to the machine.
    public struct Evaluation: Sendable, Equatable {
        public var state: ReachabilityState
        public var previousState: ReachabilityState
        public var outcome: ProbeOutcome
        public var quality: LinkQuality
        public var medianRTT: Double?
        public var lossFraction: Double
        public var windowRounds: Int
        public var consecutiveFailures: Int
        /// Seconds to wait before the next round.
        public var nextDelay: Double
    }

    private struct Sample: Sendable {
        var failed: Bool
        var rtt: Double?
    }

    public let settings: ReachabilitySettings
    public private(set) var state: ReachabilityState = .unknown
    /// Failed (or limited) rounds in a row.
    public private(set) var consecutiveFailures = 0
    /// The address the last successful DNS query gave: where TCP goes while DNS fails.
    public private(set) var lastKnownAddress: IPAddress?
    /// Failed rounds since offline was declared, for the backoff.
    private var offlineRounds = 0
    /// The quality window, oldest first.
    private var samples: [Sample] = []

    public init(settings: ReachabilitySettings) {
        self.settings = settings
    }

    /// Seconds to wait before the next round.
    public var nextDelay: Double {
        state == .offline ? settings.offlineBackoff(afterOfflineRounds: offlineRounds) : max(0, settings.interval)
    }

    /// Applies one round's results.
    public mutating func record(_ results: [ProbeResult]) -> Evaluation {
        let previous = state
        let outcome = ProbeOutcome(results)
        if let dns = results.last(where: { $0.kind == .dns && $0.success }),
           let text = dns.address, let address = IPAddress(text) {
            lastKnownAddress = address
        }
        let rtt = results.last(where: { $0.kind == .tcp && $0.success })?.rtt
        samples.append(Sample(failed: outcome == .failure, rtt: rtt))
        if samples.count > max(1, settings.qualityWindow) { samples.removeFirst(samples.count - max(1, settings.qualityWindow)) }

        switch outcome {
        case .online, .portal:
            consecutiveFailures = 0
            offlineRounds = 0
            state = outcome == .online ? .online : .portal
        case .limited, .failure:
            consecutiveFailures += 1
            if consecutiveFailures >= settings.effectiveThreshold {
                let next: ReachabilityState = outcome == .limited ? .limited : .offline
                offlineRounds = next == .offline && previous == .offline ? offlineRounds + 1 : 0
                state = next
            }
        }

        let (median, loss) = windowStatistics()
        return Evaluation(
            state: state, previousState: previous, outcome: outcome,
            quality: LinkQuality.classify(medianRTT: median, loss: loss), medianRTT: median, lossFraction: loss ?? 0,
            windowRounds: samples.count, consecutiveFailures: consecutiveFailures, nextDelay: nextDelay)
    }

    /// The median RTT of the window's rounds that have one, and the fraction of failed rounds (nil: empty).
    private func windowStatistics() -> (median: Double?, loss: Double?) {
        guard !samples.isEmpty else { return (nil, nil) }
        let loss = Double(samples.filter(\.failed).count) / Double(samples.count)
        let rtts = samples.compactMap(\.rtt).sorted()
        guard !rtts.isEmpty else { return (nil, loss) }
        let middle = rtts.count / 2
        let median = rtts.count % 2 == 1 ? rtts[middle] : (rtts[middle - 1] + rtts[middle]) / 2
        return (median, loss)
    }
}

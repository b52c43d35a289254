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
///   backs off (``ReachabilitySettings/offlineBackoff(afterOfflineRounds:)``) until a round succeeds. In
///   adaptive mode a failed round below the threshold is followed after the retry delay instead
///   (``ReachabilitySettings/AdaptiveTimeouts/retryDelay``).
/// - Quality comes from the last ``ReachabilitySettings/qualityWindow`` rounds: the median TCP connect time
///   of those that got one, and the fraction that were failures (``LinkQuality/classify(medianRTT:loss:)``).
/// - Timeouts (``timeouts``): two ``RoundTripEstimator``s, one fed by DNS probes, one by TCP connects and
///   HTTP exchanges. Each probe's ``ProbeResult/rttSample`` is a sample, each ``ProbeResult/timedOut`` a
///   backoff, in the order they ended. In fixed mode the timeouts are always ``ReachabilitySettings/timeout``.
///
/// One machine judges one family; ``OverallReachability`` combines the families.
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
    /// DNS round trips.
    public private(set) var dnsEstimator: RoundTripEstimator
    /// TCP connect and HTTP exchange round trips.
    public private(set) var transportEstimator: RoundTripEstimator

    public init(settings: ReachabilitySettings) {
        self.settings = settings
        dnsEstimator = settings.makeEstimator()
        transportEstimator = settings.makeEstimator()
    }

    /// Seconds to wait before the next round.
    public var nextDelay: Double {
        if state == .offline { return settings.offlineBackoff(afterOfflineRounds: offlineRounds) }
        if consecutiveFailures > 0 && consecutiveFailures < settings.effectiveThreshold, let adaptive = settings.adaptive {
            return max(0, adaptive.retryDelay)
        }
        return max(0, settings.interval)
    }

    /// The timeouts of the next round: the estimators' in adaptive mode, ``ReachabilitySettings/timeout``
    /// for everything in fixed mode.
    public var timeouts: ProbeTimeouts {
        guard settings.adaptive != nil else { return .fixed(max(0, settings.timeout)) }
        return ProbeTimeouts(
            dns: dnsEstimator.timeout, transport: transportEstimator.timeout, dnsPatience: dnsEstimator.maximum,
            isAdaptive: true)
    }

    /// Applies one round's results.
    public mutating func record(_ results: [ProbeResult]) -> Evaluation {
        let previous = state
        let outcome = ProbeOutcome(results)
        if let dns = results.last(where: { $0.kind == .dns && $0.success }),
           let text = dns.address, let address = IPAddress(text) {
            lastKnownAddress = address
        }
        for result in results {
            switch result.kind {
            case .dns: Self.feed(&dnsEstimator, result)
            case .tcp, .http: Self.feed(&transportEstimator, result)
            }
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

    private static func feed(_ estimator: inout RoundTripEstimator, _ result: ProbeResult) {
        if result.success, let sample = result.rttSample {
            estimator.add(sample: sample)
        } else if result.timedOut {
            estimator.timedOut()
        }
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

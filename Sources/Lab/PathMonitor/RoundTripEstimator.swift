/// A probe timeout that follows the round trips measured, computed as TCP computes its retransmission
/// timeout (RFC 6298). A pure value: samples and timeouts are fed in, nothing reads a clock.
///
/// - The first sample R sets SRTT = R and RTTVAR = R/2; each later one RTTVAR = ¾·RTTVAR + ¼·|SRTT − R|,
///   then SRTT = ⅞·SRTT + ⅛·R (§2.2–2.3).
/// - The timeout is SRTT + max(G, 4·RTTVAR), kept within [``minimum``, ``maximum``] (§2.4–2.5). G, the
///   ``granularity``, is the least margin above SRTT: the RFC's clock granularity, here wide enough for
///   what a steady link still varies by (scheduling, serialization of larger packets).
/// - A probe that times out doubles the timeout, up to ``maximum`` (§5.5); the doubled value holds until a
///   sample comes in, which recomputes it. After two timeouts in a row SRTT and RTTVAR are cleared as
///   bogus (§5, "MAY clear"), so the next sample starts afresh: a link that got much slower gets a
///   timeout of 3 × its new round trip at once rather than creeping up from the old one.
/// - Before the first sample the timeout is ``maximum``: nothing is known about the link yet.
/// - Samples must be unambiguous (Karn's algorithm): the caller leaves out round trips that include a
///   retransmission.
public struct RoundTripEstimator: Sendable, Equatable {
    /// The gain of SRTT, α = 1/8.
    public static let alpha = 0.125
    /// The gain of RTTVAR, β = 1/4.
    public static let beta = 0.25
    /// RTTVAR's weight in the timeout, K = 4.
    public static let k = 4.0

    /// The floor of the timeout, in seconds.
    public let minimum: Double
    /// The ceiling of the timeout, in seconds: also the timeout before any sample.
    public let maximum: Double
    /// G: the least margin, in seconds, between SRTT and the timeout.
    public let granularity: Double
    /// SRTT, in seconds; nil before the first sample and after the state was cleared.
    public private(set) var smoothedRTT: Double?
    /// RTTVAR, in seconds; nil when ``smoothedRTT`` is.
    public private(set) var rttVariation: Double?
    /// Timeouts since the last sample.
    public private(set) var backoffs = 0
    /// The timeout after backoffs, until the next sample.
    private var backedOff: Double?

    /// An estimator without samples. A ceiling below the floor wins over the floor.
    public init(minimum: Double, maximum: Double, granularity: Double) {
        self.maximum = max(0.001, maximum)
        self.minimum = min(max(0, minimum), self.maximum)
        self.granularity = max(0, granularity)
    }

    /// The timeout, in seconds, for the next probe.
    public var timeout: Double {
        if let backedOff { return backedOff }
        guard let smoothedRTT, let rttVariation else { return maximum }
        return clamp(smoothedRTT + max(granularity, Self.k * rttVariation))
    }

    /// Takes one round-trip sample, in seconds (negative samples count as 0).
    public mutating func add(sample: Double) {
        let sample = max(0, sample)
        if let smoothed = smoothedRTT, let variation = rttVariation {
            rttVariation = (1 - Self.beta) * variation + Self.beta * abs(smoothed - sample)
            smoothedRTT = (1 - Self.alpha) * smoothed + Self.alpha * sample
        } else {
            smoothedRTT = sample
            rttVariation = sample / 2
        }
        backoffs = 0
        backedOff = nil
    }

    /// A probe timed out: doubles the timeout (up to ``maximum``); the second timeout in a row clears SRTT
    /// and RTTVAR.
    public mutating func timedOut() {
        backedOff = clamp(timeout * 2)
        backoffs += 1
        if backoffs >= 2 {
            smoothedRTT = nil
            rttVariation = nil
        }
    }

    /// The timeout this estimator settles on for a link whose round trips all take `rtt` seconds: RTTVAR
    /// decays towards 0, so SRTT + G within the floor and the ceiling.
    public func steadyTimeout(rtt: Double) -> Double {
        clamp(max(0, rtt) + granularity)
    }

    private func clamp(_ value: Double) -> Double {
        min(maximum, max(minimum, value))
    }
}

/// How long each probe of a round may take, as ``ReachabilityStateMachine/timeouts`` gives them for the
/// next round.
public struct ProbeTimeouts: Sendable, Codable, Equatable {
    /// Seconds the DNS query may take.
    public var dns: Double
    /// Seconds a TCP connect may take, and then the HTTP exchange.
    public var transport: Double
    /// Adaptive mode only: seconds from the round's start that a DNS answer is still waited for after
    /// ``dns`` has passed, as long as TCP connects to the last known address keep succeeding (the link
    /// carries traffic, so the answer is slow rather than lost). The ceiling, ``ReachabilitySettings/timeout``.
    public var dnsPatience: Double
    /// True: each probe has its own deadline and a slow DNS answer may be waited for (adaptive mode).
    /// False: the fixed mode's rules: the DNS query and the TCP connect share one deadline, and the HTTP
    /// exchange (with a fresh connect, if one is needed) another.
    public var isAdaptive: Bool

    /// Timeouts, in seconds, and the rules they follow.
    public init(dns: Double, transport: Double, dnsPatience: Double, isAdaptive: Bool) {
        self.dns = dns
        self.transport = transport
        self.dnsPatience = dnsPatience
        self.isAdaptive = isAdaptive
    }

    /// The fixed mode's timeouts: `timeout` for everything.
    public static func fixed(_ timeout: Double) -> ProbeTimeouts {
        ProbeTimeouts(dns: timeout, transport: timeout, dnsPatience: timeout, isAdaptive: false)
    }

    /// The longer of ``dns`` and ``transport``: what a round takes when nothing comes back.
    public var longest: Double { max(dns, transport) }
}

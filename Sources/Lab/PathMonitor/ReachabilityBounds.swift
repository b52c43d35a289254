/// What the settings add up to: how long the prober can take, at worst, to see an outage and a recovery.
/// Each family is probed on its own and side by side, so every bound holds for each family and for the
/// overall state (which is offline once every family is).
///
/// | | fixed | adaptive |
/// |---|---|---|
/// | detection, any link | n·(i + t + a) = 12.1 s | i + Σ min(C, 2ᵏ·C) + (n−1)·r + n·a = 11.1 s |
/// | detection, LTE / 3G / DSL / Wi-Fi | 12.1 s | d₁ = 0.5 s: 1 + 0.5 + 1 + 0.1 = 2.6 s |
/// | detection, Edge (850 ms round trip) | 12.1 s | d₁ ≈ 1.05 s: 1 + 1.05 + 2.1 + 0.1 ≈ 4.25 s |
/// | detection, 3 s DNS delay | 12.1 s | d₁ = 3.2 s: 1 + 3.2 + 5 + 0.1 = 9.3 s (11.1 s until DNS's RTTVAR has decayed, ~30 answers) |
/// | limited (DNS unanswered, TCP works) | 12.1 s | 11.1 s |
/// | recovery | 2·(t + a) + b = 14.1 s | 2·(C + a) + b = 14.1 s |
///
/// i = ``interval``, t = C = ``timeout``, n = ``failureThreshold``, r = retry delay, b =
/// ``offlineBackoffMaximum``, a = ``roundAllowance``, d₁ = the longer of a family's DNS and transport
/// timeouts when the loss begins (``FamilyReachability/timeouts``); defaults throughout.
extension ReachabilitySettings {
    /// Seconds allowed per round, in the bounds, for what is not probing: judging and delivering a round
    /// and the thread waking up on time. (Reading resolv.conf and opening sockets in the namespace happen
    /// inside a round's timeouts, and the pause counts from the round's end.) 50 ms.
    public static let roundAllowance = 0.05

    /// Worst-case seconds, over every link, from the moment nothing gets through any more (100 % loss, a dead
    /// link) to the update that says offline — and from the moment DNS stops answering while TCP works to
    /// the update that says limited. ``detectionBound(probeTimeout:)`` with the probe timeouts at their
    /// ceiling, ``timeout``.
    ///
    /// - Fixed mode: ``failureThreshold`` × (``interval`` + ``timeout`` + ``roundAllowance``);
    ///   defaults 2 × (1 + 5 + 0.05) = 12.1 s.
    /// - Adaptive mode: ``interval`` + ``failureThreshold`` × ``timeout`` + (``failureThreshold`` − 1) ×
    ///   retry delay + ``failureThreshold`` × ``roundAllowance``; defaults 1 + 2 × 5 + 0 + 0.1 = 11.1 s.
    ///   A link whose round trips have been measured does much better: ``detectionBound(probeTimeout:)``.
    public static func detectionBound(_ settings: ReachabilitySettings = ReachabilitySettings()) -> Double {
        settings.detectionBound(probeTimeout: settings.timeout)
    }

    /// Worst-case seconds from the moment nothing gets through any more to the update that says offline,
    /// when a family's probe timeouts were `probeTimeout` (d₁: the longer of the DNS and the transport
    /// timeout, ``ProbeTimeouts/longest``) as the loss began.
    ///
    /// **Fixed mode**: ``failureThreshold`` × (``interval`` + ``timeout`` + ``roundAllowance``), whatever
    /// `probeTimeout` is. Worst case: the loss starts just after a round succeeded. Each of the
    /// ``failureThreshold`` failing rounds then starts ``interval`` after the previous one's end and fails
    /// within one ``timeout`` of its start (the DNS query and the TCP connect share one deadline; without
    /// them the HTTP phase never starts). A round under way when the loss starts fails within one
    /// ``timeout`` of it, which is sooner.
    ///
    /// **Adaptive mode**: with n = ``failureThreshold``, C = ``timeout``, d₁ within [minimum, C],
    /// ``interval`` + Σₖ₌₀ⁿ⁻¹ min(C, 2ᵏ·d₁) + (n − 1) × retry delay + n × ``roundAllowance``.
    /// With the defaults: 1 + d₁ + min(5, 2·d₁) + 0.1, so 2.6 s for d₁ = 0.5 s (LTE, 3G, DSL, Wi-Fi:
    /// round trips below 0.3 s settle on the 0.5 s floor), about 4.25 s on Edge (d₁ ≈ 0.85 + 0.2 s),
    /// 9.3 s while DNS answers 3 s late (d₁ = 3.2 s).
    /// - The loss starts just after a round succeeded: the next round starts ``interval`` later and fails
    ///   within d₁ (the DNS query and the TCP connect time out; a slow DNS answer is only waited for past
    ///   its timeout while TCP connects succeed, which none does on a dead link). Every timeout doubles, so
    ///   each following round starts after the retry delay and fails within min(C, 2ᵏ·d₁).
    /// - The loss starts during a round: the probe under way fails within its own timeout (≤ d₁) of its
    ///   start, and the rounds after it as above: sooner.
    /// - The loss starts while a slow DNS answer is being waited for: a TCP connect to the known address
    ///   starts every min(transport timeout, ``interval``) and ends the round when it fails, within
    ///   ``interval`` + d₁ of the loss: no later.
    /// - ICMP errors (an unreachable next hop) end rounds sooner still.
    public func detectionBound(probeTimeout: Double) -> Double {
        let rounds = effectiveThreshold
        let ceiling = max(0, timeout)
        guard let adaptive else {
            return Double(rounds) * (max(0, interval) + ceiling + Self.roundAllowance)
        }
        let first = min(ceiling, max(min(adaptive.minimum, ceiling), probeTimeout))
        var total = max(0, interval) + Double(rounds) * Self.roundAllowance + Double(rounds - 1) * max(0, adaptive.retryDelay)
        var roundTimeout = first
        for _ in 0..<rounds {
            total += roundTimeout
            roundTimeout = min(ceiling, roundTimeout * 2)
        }
        return total
    }

    /// ``detectionBound(probeTimeout:)`` for a steady link whose round trips take `rtt` seconds, and whose DNS
    /// answers take `dnsRTT` (nil: `rtt` too): the timeouts adaptive mode settles on there
    /// (``steadyTimeout(rtt:)``). Fixed mode: the same as ``detectionBound``.
    public func detectionBound(rtt: Double, dnsRTT: Double? = nil) -> Double {
        detectionBound(probeTimeout: max(steadyTimeout(rtt: rtt), steadyTimeout(rtt: dnsRTT ?? rtt)))
    }

    /// The timeout a probe settles on, in seconds, on a link whose round trips all take `rtt`: adaptive
    /// mode, rtt + margin within [minimum, ``timeout``] (``RoundTripEstimator/steadyTimeout(rtt:)``);
    /// fixed mode, ``timeout``.
    public func steadyTimeout(rtt: Double) -> Double {
        guard adaptive != nil else { return max(0, timeout) }
        return makeEstimator().steadyTimeout(rtt: rtt)
    }

    /// Worst-case seconds from the moment the path works again to the update that says online, when the
    /// prober was offline: 2 × (``timeout`` + ``roundAllowance``) + ``offlineBackoffMaximum``, in both modes.
    /// Defaults: 5 + 4 + 5 + 0.1 = 14.1 s; typically the pause alone (≤ 4 s) plus a few RTTs.
    ///
    /// Worst case: the path comes back just after a round started whose first packets were lost. That round
    /// fails within its timeouts — ``timeout`` in fixed mode; in adaptive mode they have doubled with every
    /// failed round towards the same ceiling, so after a short outage they are shorter (its DNS
    /// retransmissions and TCP's SYN retransmissions often rescue it sooner) — the pause after it is at most
    /// ``offlineBackoffMaximum``, and the next round succeeds within one more ``timeout``: on a working link
    /// it takes a few RTTs.
    public static func recoveryBound(_ settings: ReachabilitySettings = ReachabilitySettings()) -> Double {
        2 * (max(0, settings.timeout) + roundAllowance) + max(0, settings.offlineBackoffMaximum)
    }

    /// ``detectionBound(_:)`` for these settings: the worst case over every link.
    public var detectionBound: Double { Self.detectionBound(self) }
    /// ``recoveryBound(_:)`` for these settings.
    public var recoveryBound: Double { Self.recoveryBound(self) }

    /// An estimator with these settings' floor, ceiling and margin (adaptive mode's; fixed mode's has the
    /// ceiling as floor, so its timeout is always ``timeout``).
    func makeEstimator() -> RoundTripEstimator {
        let parameters = adaptive ?? AdaptiveTimeouts(minimum: timeout)
        return RoundTripEstimator(minimum: parameters.minimum, maximum: timeout, granularity: parameters.margin)
    }
}

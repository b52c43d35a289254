import LinkcondBase
import RouteNetlink

/// How the reachability prober probes, and how it turns rounds into states. Every setting has a default
/// chosen from REFERENCE.md §4; ReachabilityBounds.swift says what they add up to (``detectionBound(_:)``,
/// ``recoveryBound(_:)``, ``detectionBound(probeTimeout:)``).
///
/// Each family in ``families`` is probed on its own, side by side, with rounds of its own. A *round* is:
/// a query for ``host`` (A for IPv4, AAAA for IPv6) over UDP to the first nameserver of that family, and
/// at the same time a TCP connect to the address the last successful query gave; then `GET path` over a
/// connection to the resolved address. How long each probe may take is the ``timeoutMode``'s business.
public struct ReachabilitySettings: Sendable, Equatable {
    /// How each probe's timeout is chosen.
    public enum TimeoutMode: Sendable, Equatable {
        /// Every phase of a round gets ``ReachabilitySettings/timeout``, whatever the link: the DNS query
        /// together with the TCP connect, then the HTTP exchange (a fresh connect, if DNS gave a new address,
        /// included). A failed round is followed by ``ReachabilitySettings/interval`` like any other.
        /// Detection takes the same time on every link (12.1 s with the defaults).
        case fixed
        /// Each probe's timeout follows the round trips it measured, as TCP's retransmission timeout does
        /// (RFC 6298, ``RoundTripEstimator``), with ``ReachabilitySettings/timeout`` as the ceiling. DNS
        /// has an estimator of its own, TCP connects and HTTP exchanges share another (each per family),
        /// so a slow resolver does not stretch the TCP timeouts nor a fast link shorten the DNS ones.
        /// A failed round is retried after ``AdaptiveTimeouts/retryDelay`` with doubled timeouts, as TCP
        /// retransmits; a DNS answer that is late while TCP to the known address keeps working is waited
        /// for up to the ceiling. Detection follows the link: 2.6 s on LTE, 3G, DSL and Wi-Fi.
        case adaptive(AdaptiveTimeouts = AdaptiveTimeouts())
    }

    /// The adaptive mode's parameters.
    public struct AdaptiveTimeouts: Sendable, Equatable {
        /// The least timeout, in seconds, any probe gets. Default 0.5 s: it is what LTE, 3G, DSL and Wi-Fi
        /// settle on (their round trips plus ``margin`` stay below it), it leaves a fast link 0.5 s of
        /// scheduling hiccups before a probe counts as lost, and its doubling (1 s) still carries Edge's
        /// 0.85 s round trips when a link suddenly gets that slow. It is what keeps detection on those links
        /// at 1 + 0.5 + 1 + 0.1 = 2.6 s (``ReachabilitySettings/detectionBound(probeTimeout:)``).
        public var minimum: Double
        /// G in RFC 6298: the least margin, in seconds, between the smoothed round trip and the timeout.
        /// Default 0.2 s. On a steady link RTTVAR decays towards 0, and this is what is left for what a steady
        /// link still varies by: serialization of a larger HTTP packet (Edge: ~10 ms), the server, the
        /// prober's thread waking up.
        public var margin: Double
        /// Pause, in seconds, after a failed round while fewer than ``ReachabilitySettings/failureThreshold``
        /// rounds in a row have failed. Default 0: the next round confirms or refutes the loss at once, with
        /// doubled timeouts, as TCP retransmits when its timer expires.
        public var retryDelay: Double

        public init(minimum: Double = 0.5, margin: Double = 0.2, retryDelay: Double = 0) {
            self.minimum = minimum
            self.margin = margin
            self.retryDelay = retryDelay
        }
    }

    /// Pause, in seconds, between the end of one round and the start of the next while not offline.
    /// Default 1 s. Probing never stops while online: the peers that only probe at start-up or every
    /// 300 s never notice 100 % loss on a link that stays up (REFERENCE.md §4), and path state cannot see it.
    public var interval: Double
    /// In ``TimeoutMode/fixed`` mode: seconds each phase of a round may take. In ``TimeoutMode/adaptive(_:)``
    /// mode: the ceiling: no probe gets more, every probe gets this much before the first round trip is
    /// measured, and a slow DNS answer is waited for this long while TCP keeps working. Default 5 s: probe
    /// timeouts of 2–3 s fail on 3G-class links, while 5–12 s work (REFERENCE.md §4), and NLC's
    /// "High Latency DNS" preset alone delays DNS by 3 s.
    public var timeout: Double
    /// How probe timeouts are chosen. Default ``TimeoutMode/adaptive(_:)`` with its defaults.
    public var timeoutMode: TimeoutMode
    /// Failed rounds in a row before the state becomes offline (or limited). Default 2: one lost round on a
    /// lossy link is not an outage.
    public var failureThreshold: Int
    /// Pause, in seconds, after the round that declared offline; it doubles after every further failed
    /// round, up to ``offlineBackoffMaximum``. Default 1 s (Android's and NetworkManager's first retry).
    public var offlineBackoffInitial: Double
    /// Longest pause, in seconds, between rounds while offline. Default 4 s: the peers back off to 300 s or
    /// 10 min, which hides a recovery for minutes; 4 s keeps a recovery visible within seconds at the cost
    /// of one small exchange every ~9 s (4 s pause + 5 s timeout) on a dead link.
    public var offlineBackoffMaximum: Double
    /// Rounds the RTT and loss samples are taken over for ``LinkQuality``. Default 20 (about 20 s online).
    public var qualityWindow: Int
    /// The IP versions probed, each on its own (``ReachabilityFamily``). Default both; empty means both.
    /// When ``host`` is an IP literal only its own family is probed.
    public var families: [ReachabilityFamily]
    /// The name looked up and sent as `Host:`. Default `server.linkcond.test`, the sandbox server.
    /// An IP literal skips DNS.
    public var host: String
    /// The probe URL's path. Default `/generate_204`: 204 means online, anything else a portal.
    public var path: String
    /// The probe URL's TCP port. Default 80.
    public var port: UInt16
    /// Nameservers to query, overriding resolv.conf. Default nil: the `nameserver` lines of
    /// `/etc/netns/NAME/resolv.conf` (the namespace's, as `ip netns exec` shows it) or `/etc/resolv.conf`,
    /// read again every round. A family asks the first nameserver of its own family, or the first of all
    /// when there is none of its family, as a stub resolver asks only one at a time.
    public var nameservers: [IPAddress]?
    /// UDP port of the nameservers. Default 53.
    public var dnsPort: UInt16
    /// Seconds between retransmissions of an unanswered DNS query, at most (adaptive mode: at most the DNS
    /// timeout). Default 1 s (what a stub resolver's timeout does per try), so a single lost datagram does
    /// not fail a round; TCP retransmits its SYN by itself. Each transmission has an ID of its own, so an
    /// answer tells which one it answers and its round trip is never ambiguous.
    public var dnsRetransmitInterval: Double
    /// Most updates an `updates` stream keeps when its consumer falls behind (the newest are kept). Default 64.
    public var streamBufferSize: Int

    public init(
        interval: Double = 1, timeout: Double = 5, timeoutMode: TimeoutMode = .adaptive(), failureThreshold: Int = 2,
        offlineBackoffInitial: Double = 1, offlineBackoffMaximum: Double = 4, qualityWindow: Int = 20,
        families: [ReachabilityFamily] = [.ipv4, .ipv6], host: String = SandboxPlan.serverName,
        path: String = "/generate_204", port: UInt16 = 80, nameservers: [IPAddress]? = nil, dnsPort: UInt16 = 53,
        dnsRetransmitInterval: Double = 1, streamBufferSize: Int = 64
    ) {
        self.interval = interval
        self.timeout = timeout
        self.timeoutMode = timeoutMode
        self.failureThreshold = failureThreshold
        self.offlineBackoffInitial = offlineBackoffInitial
        self.offlineBackoffMaximum = offlineBackoffMaximum
        self.qualityWindow = qualityWindow
        self.families = families
        self.host = host
        self.path = path
        self.port = port
        self.nameservers = nameservers
        self.dnsPort = dnsPort
        self.dnsRetransmitInterval = dnsRetransmitInterval
        self.streamBufferSize = streamBufferSize
    }

    /// The families a prober runs: the literal's own when ``host`` is an IP literal, else ``families``
    /// (without repeats, in family order).
    public var probedFamilies: [ReachabilityFamily] {
        if let literal = IPAddress(host) { return [ReachabilityFamily(literal)] }
        return families.isEmpty ? ReachabilityFamily.allCases : Array(Set(families)).sorted()
    }

    /// The adaptive parameters, nil in fixed mode.
    var adaptive: AdaptiveTimeouts? {
        if case .adaptive(let parameters) = timeoutMode { return parameters }
        return nil
    }

    /// ``failureThreshold``, at least 1.
    var effectiveThreshold: Int { max(1, failureThreshold) }

    /// The pause after the `n`-th failed round while offline (n = 0 for the round that declared offline):
    /// ``offlineBackoffInitial`` × 2ⁿ, at most ``offlineBackoffMaximum``. Defaults: 1, 2, 4, 4, 4 … s.
    public func offlineBackoff(afterOfflineRounds n: Int) -> Double {
        var delay = max(0, offlineBackoffInitial)
        for _ in 0..<max(0, n) where delay < offlineBackoffMaximum { delay *= 2 }
        return min(delay, max(0, offlineBackoffMaximum))
    }
}

import LinkcondBase
import RouteNetlink

/// How the reachability prober probes, and how it turns rounds into states. Every setting has a default
/// chosen from REFERENCE.md §4; ``detectionBound(_:)`` and ``recoveryBound(_:)`` say what they add up to.
///
/// A *round* is: an A query for ``host`` over UDP to the first nameserver, and at the same time a TCP connect
/// to the address the last successful query gave; then `GET path` over a connection to the resolved address.
/// The TCP connect time is the round's RTT sample.
public struct ReachabilitySettings: Sendable, Equatable {
    /// Pause, in seconds, between the end of one round and the start of the next while not offline.
    /// Default 1 s. Probing never stops while online: the peers that only probe at start-up or every
    /// 300 s never notice 100 % loss on a link that stays up (REFERENCE.md §4), and path state cannot see it.
    public var interval: Double
    /// Seconds each phase of a round may take: the DNS query together with the TCP connect, then the HTTP
    /// exchange (a fresh connect, if DNS gave a new address, included). Default 5 s: probe timeouts of 2–3 s
    /// fail on 3G-class links, while 5–12 s work (REFERENCE.md §4), and NLC's "High Latency DNS" preset
    /// alone delays DNS by 3 s.
    public var timeout: Double
    /// Failed rounds in a row before the state becomes offline (or limited). Default 2: one lost round on a
    /// lossy link is not an outage, and a second one costs only ``interval`` + ``timeout`` more.
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
    /// The name looked up and sent as `Host:`. Default `server.linkcond.test`, the sandbox server.
    /// An IP literal skips DNS.
    public var host: String
    /// The probe URL's path. Default `/generate_204`: 204 means online, anything else a portal.
    public var path: String
    /// The probe URL's TCP port. Default 80.
    public var port: UInt16
    /// Nameservers to query, overriding resolv.conf. Default nil: the `nameserver` lines of
    /// `/etc/netns/NAME/resolv.conf` (the namespace's, as `ip netns exec` shows it) or `/etc/resolv.conf`,
    /// read again every round. Only the first is asked, as a stub resolver does.
    public var nameservers: [IPAddress]?
    /// UDP port of the nameservers. Default 53.
    public var dnsPort: UInt16
    /// Seconds between retransmissions of an unanswered DNS query within one ``timeout``. Default 1 s
    /// (what a stub resolver's timeout does per try), so a single lost datagram does not fail a round;
    /// TCP retransmits its SYN by itself.
    public var dnsRetransmitInterval: Double
    /// Most updates an `updates` stream keeps when its consumer falls behind (the newest are kept). Default 64.
    public var streamBufferSize: Int

    public init(
        interval: Double = 1, timeout: Double = 5, failureThreshold: Int = 2, offlineBackoffInitial: Double = 1,
        offlineBackoffMaximum: Double = 4, qualityWindow: Int = 20, host: String = SandboxPlan.serverName,
        path: String = "/generate_204", port: UInt16 = 80, nameservers: [IPAddress]? = nil, dnsPort: UInt16 = 53,
        dnsRetransmitInterval: Double = 1, streamBufferSize: Int = 64
    ) {
        self.interval = interval
        self.timeout = timeout
        self.failureThreshold = failureThreshold
        self.offlineBackoffInitial = offlineBackoffInitial
        self.offlineBackoffMaximum = offlineBackoffMaximum
        self.qualityWindow = qualityWindow
        self.host = host
        self.path = path
        self.port = port
        self.nameservers = nameservers
        self.dnsPort = dnsPort
        self.dnsRetransmitInterval = dnsRetransmitInterval
        self.streamBufferSize = streamBufferSize
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

    /// Seconds allowed per round, in the bounds, for what is not probing: judging and delivering a round
    /// and the thread waking up on time. (Reading resolv.conf and opening sockets in the namespace happen
    /// inside a round's ``timeout``, and the pause counts from the round's end.) 50 ms.
    public static let roundAllowance = 0.05

    /// Worst-case seconds from the moment nothing gets through any more (100 % loss, a dead link) to the
    /// update that says offline: ``failureThreshold`` × (``interval`` + ``timeout`` + ``roundAllowance``).
    /// Defaults: 2 × (1 + 5 + 0.05) = 12.1 s.
    ///
    /// Worst case: the loss starts just after a round succeeded. Each of the ``failureThreshold`` failing
    /// rounds then starts ``interval`` after the previous one's end and fails within one ``timeout`` of its
    /// start (the DNS query and the TCP connect run side by side under one timeout; without them the HTTP
    /// phase never starts). A round already under way when the loss starts fails within one ``timeout`` of
    /// it, which is sooner. ICMP errors (an unreachable next hop) end rounds sooner still.
    public static func detectionBound(_ settings: ReachabilitySettings = ReachabilitySettings()) -> Double {
        Double(settings.effectiveThreshold) * (max(0, settings.interval) + max(0, settings.timeout) + roundAllowance)
    }

    /// Worst-case seconds from the moment the path works again to the update that says online, when the
    /// prober was offline: 2 × ``timeout`` + ``offlineBackoffMaximum`` + 2 × ``roundAllowance``.
    /// Defaults: 5 + 4 + 5 + 0.1 = 14.1 s; typically the pause alone (≤ 4 s) plus a few RTTs.
    ///
    /// Worst case: the path comes back just after a round started whose first packets were lost. That round
    /// fails within one ``timeout`` (its DNS retransmissions and TCP's SYN retransmissions often rescue it
    /// sooner), the pause after it is at most ``offlineBackoffMaximum``, and the next round succeeds within
    /// one more ``timeout`` — on a working link it takes a few RTTs.
    public static func recoveryBound(_ settings: ReachabilitySettings = ReachabilitySettings()) -> Double {
        2 * (max(0, settings.timeout) + roundAllowance) + max(0, settings.offlineBackoffMaximum)
    }

    /// ``detectionBound(_:)`` for these settings.
    public var detectionBound: Double { Self.detectionBound(self) }
    /// ``recoveryBound(_:)`` for these settings.
    public var recoveryBound: Double { Self.recoveryBound(self) }
}

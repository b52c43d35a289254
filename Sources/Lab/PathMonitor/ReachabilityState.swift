/// What the active prober concludes about the network, the counterpart of NetworkManager's connectivity
/// states (UNKNOWN / NONE / PORTAL / LIMITED / FULL, REFERENCE.md §4).
public enum ReachabilityState: String, Sendable, Codable, CaseIterable, CustomStringConvertible {
    /// No conclusion yet: the state at start, until a round succeeds or ``ReachabilitySettings/failureThreshold``
    /// rounds in a row fail.
    case unknown
    /// The probe URL answered `204 No Content`: the internet is reachable.
    case online
    /// The probe URL answered something other than 204 (a login page, a redirect): a captive portal sits in
    /// front of the internet.
    case portal
    /// DNS fails while a TCP connection to the last address it gave still works: IP gets through, names do not.
    case limited
    /// Nothing got through for ``ReachabilitySettings/failureThreshold`` rounds in a row.
    case offline

    public var description: String { rawValue }
}

/// How good the link is, from the RTT and loss samples of recent rounds (Apple's `NWPath.LinkQuality`).
/// See ``LinkQuality/classify(medianRTT:loss:)`` for the thresholds.
public enum LinkQuality: String, Sendable, Codable, CaseIterable, CustomStringConvertible {
    /// No rounds yet.
    case unknown
    /// Enough for small messages at best: Edge-class RTTs, heavy loss, or nothing getting through.
    case minimal
    /// 3G-class: browsing works, slowly.
    case moderate
    /// LTE, DSL or Wi-Fi class.
    case good

    public var description: String { rawValue }

    /// Highest median RTT, in seconds, for ``good``: 150 ms. LTE (NLC: 50 + 65 ms) and Wi-Fi fall below,
    /// 3G (NLC: 100 + 100 ms) above.
    public static let goodRTT = 0.150
    /// Highest loss fraction for ``good``: 5 %, one failed round out of the default window of 20.
    public static let goodLoss = 0.05
    /// Highest median RTT, in seconds, for ``moderate``: 500 ms. 3G (200 ms) and WebPageTest's "3G Slow"
    /// (400 ms) fall below, Edge (NLC: 400 + 440 ms) above.
    public static let moderateRTT = 0.500
    /// Highest loss fraction for ``moderate``: 20 %.
    public static let moderateLoss = 0.20

    /// The quality for a window's median RTT (nil: no round got an RTT sample) and loss fraction (nil: no
    /// rounds). Both limits of a level must hold; no RTT sample at all is ``minimal``.
    public static func classify(medianRTT: Double?, loss: Double?) -> LinkQuality {
        guard let loss else { return .unknown }
        guard let medianRTT else { return .minimal }
        if medianRTT <= goodRTT && loss <= goodLoss { return .good }
        if medianRTT <= moderateRTT && loss <= moderateLoss { return .moderate }
        return .minimal
    }
}

/// One probe of a round: a DNS query, a TCP connect or an HTTP exchange.
public struct ProbeResult: Sendable, Codable, Equatable {
    public enum Kind: String, Sendable, Codable, CustomStringConvertible {
        /// An A (IPv4) or AAAA (IPv6) query over UDP to the family's nameserver.
        case dns
        /// A TCP connect to the probe port (the resolved address, or the last known one while DNS fails;
        /// in adaptive mode also the connects that check the link while a slow DNS answer is waited for).
        case tcp
        /// `GET path` over that connection.
        case http

        public var description: String { rawValue }
    }

    public var kind: Kind
    /// DNS: an address came back. TCP: the connection was established. HTTP: a whole response head came back
    /// (whatever its status).
    public var success: Bool
    /// Seconds the probe took: query to answer, connect to established, request sent to response read.
    /// Nil when it failed.
    public var rtt: Double?
    /// HTTP only: the response status.
    public var httpStatus: Int?
    /// The address the probe went to (TCP, HTTP) or the address DNS gave (DNS).
    public var address: String?
    /// Why the probe failed (`timed out after 5.0 s`, `connect: Connection refused`, `NXDOMAIN`).
    public var error: String?
    /// Monotonic time (CLOCK_MONOTONIC, nanoseconds) when the probe ended.
    public var time: UInt64
    /// The family the probe belongs to; nil when the engine did not say.
    public var family: ReachabilityFamily?
    /// True when the probe failed because its timeout passed (not an error, not a cancel): its estimator
    /// backs off.
    public var timedOut: Bool
    /// The round trip, in seconds, this probe gives its timeout estimator; nil when it gives none. DNS: from
    /// the answered transmission to its answer (each transmission has its own ID, so this is never
    /// ambiguous). TCP and HTTP: ``rtt``, unless the kernel retransmitted (Karn's algorithm).
    public var rttSample: Double?

    public init(
        kind: Kind, success: Bool, rtt: Double? = nil, httpStatus: Int? = nil, address: String? = nil,
        error: String? = nil, time: UInt64, family: ReachabilityFamily? = nil, timedOut: Bool = false,
        rttSample: Double? = nil
    ) {
        self.kind = kind
        self.success = success
        self.rtt = rtt
        self.httpStatus = httpStatus
        self.address = address
        self.error = error
        self.time = time
        self.family = family
        self.timedOut = timedOut
        self.rttSample = rttSample
    }
}

/// What one probe round found, judged by captive-portal semantics (REFERENCE.md §4).
public enum ProbeOutcome: String, Sendable, Codable, CustomStringConvertible {
    /// The probe URL answered 204.
    case online
    /// The probe URL answered with another status (200 with a body, a redirect, ...).
    case portal
    /// DNS failed, but a TCP connection to the last known address worked.
    case limited
    /// Nothing useful got through.
    case failure

    public var description: String { rawValue }

    /// The outcome of a round's results (in the order they ended): an HTTP response decides (204 online,
    /// anything else portal); without one, a failed DNS query while the last TCP connect to end was
    /// established is limited; everything else a failure.
    public init(_ results: [ProbeResult]) {
        if let http = results.last(where: { $0.kind == .http && $0.success }), let status = http.httpStatus {
            self = status == 204 ? .online : .portal
        } else if results.contains(where: { $0.kind == .dns && !$0.success }),
                  results.last(where: { $0.kind == .tcp })?.success == true {
            self = .limited
        } else {
            self = .failure
        }
    }

    /// True for the outcomes in which some exchange with the server got through (every one but ``failure``).
    public var gotThrough: Bool { self != .failure }
}


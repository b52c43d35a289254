import LinkcondBase

/// An IP version the prober probes on its own: DNS over a nameserver of that family for the family's
/// record (A or AAAA), then TCP and HTTP to the address it gave.
public enum ReachabilityFamily: String, Sendable, Codable, CaseIterable, Comparable, CustomStringConvertible {
    /// A records, an IPv4 nameserver, TCP and HTTP over IPv4.
    case ipv4
    /// AAAA records, an IPv6 nameserver, TCP and HTTP over IPv6.
    case ipv6

    /// The family of an address.
    public init(_ address: IPAddress) {
        self = address.isIPv4 ? .ipv4 : .ipv6
    }

    /// `AF_INET` or `AF_INET6`.
    public var addressFamily: AddressFamily { self == .ipv4 ? .inet : .inet6 }

    /// The record type a round asks for: A or AAAA.
    var recordType: DNSRecordType { self == .ipv4 ? .a : .aaaa }

    public var description: String { rawValue }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs == .ipv4 && rhs == .ipv6 }
}

/// What one family's probing concluded, as of its latest round.
public struct FamilyReachability: Sendable, Codable, Equatable {
    /// Which family.
    public var family: ReachabilityFamily
    /// The family's own state (``ReachabilityStateMachine/state``).
    public var state: ReachabilityState
    /// The family's state before its latest round (equal to ``state`` when that round changed nothing).
    public var previousState: ReachabilityState
    /// What the family's latest round found.
    public var outcome: ProbeOutcome
    /// The family's link quality over its quality window.
    public var quality: LinkQuality
    /// Median TCP connect time, in seconds, over the family's quality window.
    public var medianRTT: Double?
    /// Fraction of the family's rounds in the quality window that were failures (0 ... 1).
    public var lossFraction: Double
    /// Rounds in the family's quality window.
    public var windowRounds: Int
    /// The family's failed rounds in a row (0 after a success).
    public var consecutiveFailures: Int
    /// Rounds of this family so far in this generation.
    public var rounds: UInt64
    /// The timeouts the family's next round gets (``ReachabilityStateMachine/timeouts``).
    public var timeouts: ProbeTimeouts

    /// A family's conclusion, field by field.
    public init(
        family: ReachabilityFamily, state: ReachabilityState, previousState: ReachabilityState, outcome: ProbeOutcome,
        quality: LinkQuality, medianRTT: Double?, lossFraction: Double, windowRounds: Int, consecutiveFailures: Int,
        rounds: UInt64, timeouts: ProbeTimeouts
    ) {
        self.family = family
        self.state = state
        self.previousState = previousState
        self.outcome = outcome
        self.quality = quality
        self.medianRTT = medianRTT
        self.lossFraction = lossFraction
        self.windowRounds = windowRounds
        self.consecutiveFailures = consecutiveFailures
        self.rounds = rounds
        self.timeouts = timeouts
    }

    /// `family`'s conclusion from its machine's evaluation of a round, its round count and the timeouts its
    /// next round gets.
    public init(family: ReachabilityFamily, _ evaluation: ReachabilityStateMachine.Evaluation, rounds: UInt64, timeouts: ProbeTimeouts) {
        self.init(
            family: family, state: evaluation.state, previousState: evaluation.previousState, outcome: evaluation.outcome,
            quality: evaluation.quality, medianRTT: evaluation.medianRTT, lossFraction: evaluation.lossFraction,
            windowRounds: evaluation.windowRounds, consecutiveFailures: evaluation.consecutiveFailures, rounds: rounds,
            timeouts: timeouts)
    }

    /// True when the family's latest round changed its state.
    public var isStateChange: Bool { state != previousState }
}

/// The overall verdict from the families' own: a pure function of their latest states, so an app
/// that can use either IP version (Happy Eyeballs, RFC 8305) is told what it can reach.
///
/// - The overall state is the best family's, in the order online, portal, limited, unknown, offline:
///   online when either family works, offline only when every probed family is offline. Unknown ranks
///   above offline, because a family that has not decided yet may still work; a probed family that has
///   not finished a round yet counts as unknown.
/// - ``isSingleFamily`` flags an overall online that rests on one family while another probed family
///   has decided it is not online (offline, limited or portal). A family still unknown sets no flag, so
///   the flag does not flicker while the families' first rounds finish at slightly different times.
/// - ``primary`` is the family whose samples (quality, RTT, loss) stand for the link: the best state,
///   then the lower loss, then the lower median RTT, then IPv4 (a family without a round is never primary).
public struct OverallReachability: Sendable, Equatable {
    /// The best family's state.
    public var state: ReachabilityState
    /// Online through one family while another has concluded it is not online.
    public var isSingleFamily: Bool
    /// The family whose samples stand for the link; nil when no family has finished a round.
    public var primary: ReachabilityFamily?
    /// The families that are online, in family order.
    public var onlineFamilies: [ReachabilityFamily]

    /// Combines the families' latest results (any order, one per family) with the `probed` families that
    /// have none yet (unknown). Nothing at all: unknown.
    public init(_ families: [FamilyReachability], probed: [ReachabilityFamily] = []) {
        let ordered = families.sorted { lhs, rhs in
            let (l, r) = (Self.rank(lhs.state), Self.rank(rhs.state))
            if l != r { return l > r }
            if lhs.lossFraction != rhs.lossFraction { return lhs.lossFraction < rhs.lossFraction }
            switch (lhs.medianRTT, rhs.medianRTT) {
            case let (left?, right?) where left != right: return left < right
            case (.some, nil): return true
            case (nil, .some): return false
            default: return lhs.family < rhs.family
            }
        }
        let reported = Set(families.map(\.family))
        let states = families.map(\.state) + Set(probed).subtracting(reported).map { _ in ReachabilityState.unknown }
        state = states.max { Self.rank($0) < Self.rank($1) } ?? .unknown
        primary = ordered.first?.family
        onlineFamilies = families.filter { $0.state == .online }.map(\.family).sorted()
        isSingleFamily = states.count >= 2 && onlineFamilies.count == 1 && !states.contains(.unknown)
    }

    /// Online 4, portal 3, limited 2, unknown 1, offline 0: which family's state the overall takes.
    public static func rank(_ state: ReachabilityState) -> Int {
        switch state {
        case .online: 4
        case .portal: 3
        case .limited: 2
        case .unknown: 1
        case .offline: 0
        }
    }
}

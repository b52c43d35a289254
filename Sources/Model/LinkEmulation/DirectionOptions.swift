import Profiles

/// What a ``DirectionEmulator`` needs beyond the profile's ``LinkConditions``.
public struct DirectionOptions: Sendable, Equatable {
    /// The default for ``heldBytesLimit``: 256 MiB.
    public static let defaultHeldBytesLimit: UInt64 = 256 << 20

    /// Which direction this is: DNS queries are recognised on the uplink only, and ``targets`` match the
    /// destination on the uplink, the source on the downlink.
    public var direction: LinkDirection
    /// The extra delay for DNS queries (UDP and TCP to port 53), in nanoseconds, on top of the direction's
    /// conditions: the profile's `dnsDelay`, netem's second prio band. Used on the uplink only.
    public var dnsDelay: UInt64
    /// When not empty, only frames to (uplink) or from (downlink) one of these get the conditions; every
    /// other frame is forwarded at once, untouched. DNS queries get ``dnsDelay`` either way.
    public var targets: [TrafficTarget]
    /// Trace-driven delivery in place of the conditions' `rate` (Mahimahi's `mm-link`): each opportunity
    /// carries 1500 bytes of the queue, unused bytes are lost; then the delay line. The trace's time 0 is
    /// the arrival of the first frame it carries. The queue limit still applies.
    public var trace: DeliveryTrace?
    /// A limit on the transmit queue in bytes, beside the conditions' `queueLimit` in frames (like
    /// `bfifo`); `nil` for none.
    public var queueLimitBytes: UInt64?
    /// The most bytes the direction holds at once, whatever the conditions, so a runaway profile cannot
    /// exhaust memory; frames beyond it are counted as queue drops.
    public var heldBytesLimit: UInt64
    /// The seed of the direction's random numbers (loss, duplication, corruption, jitter, reordering,
    /// slots). Used when the emulator is built; ``DirectionEmulator/replace(conditions:options:)`` keeps
    /// the running generator, so a swap does not replay the same numbers.
    public var seed: UInt64

    /// Options for `direction`; by default no DNS delay, no targets, no trace and a random seed.
    public init(
        direction: LinkDirection, dnsDelay: UInt64 = 0, targets: [TrafficTarget] = [], trace: DeliveryTrace? = nil,
        queueLimitBytes: UInt64? = nil, heldBytesLimit: UInt64 = DirectionOptions.defaultHeldBytesLimit,
        seed: UInt64 = UInt64.random(in: .min ... .max)
    ) {
        self.direction = direction
        self.dnsDelay = dnsDelay
        self.targets = targets
        self.trace = trace
        self.queueLimitBytes = queueLimitBytes
        self.heldBytesLimit = heldBytesLimit
        self.seed = seed
    }

    /// The options `direction` of `profile` needs beside its conditions: the profile's DNS delay (used on the
    /// uplink), its targets and the direction's delivery trace.
    public init(profile: Profile, direction: LinkDirection, seed: UInt64 = UInt64.random(in: .min ... .max)) {
        self.init(
            direction: direction, dnsDelay: profile.dnsDelay, targets: profile.targets, trace: profile.conditions(direction).trace,
            seed: seed)
    }

    /// The DNS delay in force: ``dnsDelay`` on the uplink, 0 on the downlink.
    public var effectiveDNSDelay: UInt64 { direction == .uplink ? dnsDelay : 0 }
}

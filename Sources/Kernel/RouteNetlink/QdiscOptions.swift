import CMnl
import Netlink

/// A qdisc kind with its options: what `tc qdisc … KIND [options]` says after the handle.
///
/// Each value knows how to encode itself (`TCA_KIND` and `TCA_OPTIONS`) and how to say itself as tc's
/// arguments, both from the same stored values, so an operation's name cannot drift from its bytes.
public struct QdiscOptions: Sendable {
    /// `TCA_KIND`: `netem`, `prio`, `pfifo`, `tbf`…
    public let kind: String
    /// The options as tc's arguments (`delay 400ms rate 240kbit limit 1000`), empty for none. Written when
    /// asked for (an error message, a log line), never on the way to the kernel.
    public var arguments: String { describe() }
    private let describe: @Sendable () -> String
    private let encodeOptions: @Sendable (NetlinkMessageBuilder) -> Void

    private init(
        kind: String, arguments: @escaping @autoclosure @Sendable () -> String, encode: @escaping @Sendable (NetlinkMessageBuilder) -> Void
    ) {
        self.kind = kind
        describe = arguments
        encodeOptions = encode
    }

    /// A kind whose options another file encodes (the queue disciplines').
    static func custom(
        kind: String, arguments: @escaping @Sendable () -> String, encode: @escaping @Sendable (NetlinkMessageBuilder) -> Void
    ) -> QdiscOptions {
        QdiscOptions(kind: kind, arguments: arguments(), encode: encode)
    }

    /// `KIND [arguments]`, as tc's command line has it.
    public var text: String { arguments.isEmpty ? kind : "\(kind) \(arguments)" }

    /// Appends `TCA_KIND` and the kind's `TCA_OPTIONS` (if it has any) to `message`.
    public func encode(into message: NetlinkMessageBuilder) {
        message.put(UInt16(TCA_KIND), string: kind)
        encodeOptions(message)
    }

    /// A qdisc with no options: `tc qdisc … KIND` (`pfifo`, `ingress`, or a kind probed for presence).
    public static func bare(_ kind: String) -> QdiscOptions {
        QdiscOptions(kind: kind, arguments: "") { _ in }
    }

    /// `netem …`: delay, jitter, loss, rate and the rest, with times converted by `clock`.
    public static func netem(_ parameters: NetemParameters, clock: PacketSchedulerClock) -> QdiscOptions {
        QdiscOptions(kind: "netem", arguments: parameters.description) { parameters.encode(into: $0, clock: clock) }
    }

    /// `prio bands N priomap P0 … P15`.
    public static func prio(_ options: PrioOptions) -> QdiscOptions {
        QdiscOptions(kind: "prio", arguments: "bands \(options.bands) priomap " + options.priorityMap.map(String.init).joined(separator: " ")) {
            options.encode(into: $0)
        }
    }

    /// `pfifo [limit N]`: a packet FIFO; `TCA_OPTIONS` holds a `tc_fifo_qopt` only when a limit is given,
    /// as tc's `fifo_parse_opt` sends it.
    public static func pfifo(limit: UInt32? = nil) -> QdiscOptions {
        QdiscOptions(kind: "pfifo", arguments: limit.map { "limit \($0)" } ?? "") { message in
            if let limit { message.put(UInt16(TCA_OPTIONS), structure: tc_fifo_qopt(limit: limit)) }
        }
    }

    /// `tbf rate R burst B limit L`: a token bucket (rate in bytes per second, burst and limit in bytes).
    public static func tbf(_ options: TokenBucketOptions) -> QdiscOptions {
        QdiscOptions(
            kind: "tbf",
            arguments: "rate \(TrafficControlText.rate(bitsPerSecond: options.rate * 8)) burst \(options.burst) limit \(options.limit)"
        ) { options.encode(into: $0) }
    }
}

/// Options of a `tbf` qdisc: `tc qdisc … tbf rate R burst B limit L`.
public struct TokenBucketOptions: Sendable, Equatable {
    /// Rate in bytes per second.
    public var rate: UInt64
    /// Bucket size in bytes (`burst`).
    public var burst: UInt32
    /// Bytes that may wait for tokens (`limit`).
    public var limit: UInt32

    /// A bucket filling at `rate` bytes per second, holding `burst` bytes, queueing up to `limit` bytes.
    public init(rate: UInt64, burst: UInt32, limit: UInt32) {
        self.rate = rate
        self.burst = burst
        self.limit = limit
    }

    /// Appends `TCA_OPTIONS`: `TCA_TBF_PARMS` (a `tc_tbf_qopt` with the rate, link layer Ethernet so no
    /// rate table is needed) and `TCA_TBF_BURST`; `TCA_TBF_RATE64` beyond 32 bits.
    public func encode(into message: NetlinkMessageBuilder) {
        var parameters = tc_tbf_qopt()
        parameters.rate.rate = UInt32(min(rate, UInt64(UInt32.max)))
        parameters.rate.linklayer = UInt8(TC_LINKLAYER_ETHERNET.rawValue)
        parameters.limit = limit
        let nest = message.beginNest(UInt16(TCA_OPTIONS))
        message.put(UInt16(TCA_TBF_PARMS), structure: parameters)
        if rate > UInt64(UInt32.max) { message.put(UInt16(TCA_TBF_RATE64), uint64: rate) }
        message.put(UInt16(TCA_TBF_BURST), uint32: burst)
        message.endNest(nest)
    }
}

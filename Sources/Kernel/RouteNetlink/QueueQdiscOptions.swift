import CMnl
import Netlink

/// Options of a `codel` qdisc: `tc qdisc … codel limit N target T interval I [ecn]` (times in microseconds,
/// as tc sends them; the kernel keeps them in 1024 ns units, so they read back up to 2 µs lower).
public struct CoDelOptions: Sendable, Equatable {
    /// `TCA_CODEL_TARGET`: the acceptable standing queueing delay, microseconds.
    public var target: UInt32
    /// `TCA_CODEL_INTERVAL`: microseconds.
    public var interval: UInt32
    /// `TCA_CODEL_LIMIT`: the hard limit in packets.
    public var limit: UInt32
    /// `TCA_CODEL_ECN`: mark ECN-capable packets instead of dropping them.
    public var ecn: Bool

    /// CoDel with these values.
    public init(target: UInt32, interval: UInt32, limit: UInt32, ecn: Bool = false) {
        self.target = target
        self.interval = interval
        self.limit = limit
        self.ecn = ecn
    }

    /// Appends `TCA_OPTIONS` as tc (`q_codel.c`) lays it out: a nest of `LIMIT`, `INTERVAL`, `TARGET`, `ECN`.
    public func encode(into message: NetlinkMessageBuilder) {
        let nest = message.beginNest(UInt16(TCA_OPTIONS))
        message.put(UInt16(TCA_CODEL_LIMIT), uint32: limit)
        message.put(UInt16(TCA_CODEL_INTERVAL), uint32: interval)
        message.put(UInt16(TCA_CODEL_TARGET), uint32: target)
        message.put(UInt16(TCA_CODEL_ECN), uint32: ecn ? 1 : 0)
        message.endNest(nest)
    }

    /// Decodes a codel qdisc's `TCA_OPTIONS` payload as the kernel dumps it.
    public static func decode(options: [UInt8]) throws(RouteNetlinkError) -> CoDelOptions {
        var value = CoDelOptions(target: 0, interval: 0, limit: 0)
        var attributes = AttributeDecoder(options[...], operation: "decode codel options")
        while attributes.next() {
            switch Int(attributes.type) {
            case TCA_CODEL_TARGET: value.target = attributes.uint32()
            case TCA_CODEL_INTERVAL: value.interval = attributes.uint32()
            case TCA_CODEL_LIMIT: value.limit = attributes.uint32()
            case TCA_CODEL_ECN: value.ecn = attributes.uint32() != 0
            default: break
            }
        }
        if let error = attributes.error { throw .malformed(what: "codel options", detail: error.description) }
        return value
    }

    /// `limit N target T interval I [ecn]`, tc's arguments.
    public var arguments: String {
        "limit \(limit) target \(TrafficControlText.time(nanoseconds: UInt64(target) * 1000)) interval "
            + TrafficControlText.time(nanoseconds: UInt64(interval) * 1000) + (ecn ? " ecn" : "")
    }
}

/// Options of a `pie` qdisc: `tc qdisc … pie limit N target T tupdate U alpha A beta B [ecn]` (times in
/// microseconds; alpha and beta in sixteenths per second, 0 to 32: RFC 8033's 0.125 and 1.25 are 2 and 20).
/// The kernel keeps `tupdate` in jiffies, so it reads back rounded up to the next one.
public struct PIEOptions: Sendable, Equatable {
    /// `TCA_PIE_TARGET`: the target queueing delay, microseconds.
    public var target: UInt32
    /// `TCA_PIE_TUPDATE`: how often the drop probability is updated, microseconds.
    public var updateInterval: UInt32
    /// `TCA_PIE_ALPHA`: sixteenths.
    public var alpha: UInt32
    /// `TCA_PIE_BETA`: sixteenths.
    public var beta: UInt32
    /// `TCA_PIE_LIMIT`: the hard limit in packets.
    public var limit: UInt32
    /// `TCA_PIE_ECN`.
    public var ecn: Bool

    /// PIE with these values.
    public init(target: UInt32, updateInterval: UInt32, alpha: UInt32, beta: UInt32, limit: UInt32, ecn: Bool = false) {
        self.target = target
        self.updateInterval = updateInterval
        self.alpha = alpha
        self.beta = beta
        self.limit = limit
        self.ecn = ecn
    }

    /// Appends `TCA_OPTIONS` as tc (`q_pie.c`) lays it out: a nest of `LIMIT`, `TUPDATE`, `TARGET`, `ALPHA`,
    /// `BETA`, `ECN`.
    public func encode(into message: NetlinkMessageBuilder) {
        let nest = message.beginNest(UInt16(TCA_OPTIONS))
        message.put(UInt16(TCA_PIE_LIMIT), uint32: limit)
        message.put(UInt16(TCA_PIE_TUPDATE), uint32: updateInterval)
        message.put(UInt16(TCA_PIE_TARGET), uint32: target)
        message.put(UInt16(TCA_PIE_ALPHA), uint32: alpha)
        message.put(UInt16(TCA_PIE_BETA), uint32: beta)
        message.put(UInt16(TCA_PIE_ECN), uint32: ecn ? 1 : 0)
        message.endNest(nest)
    }

    /// Decodes a pie qdisc's `TCA_OPTIONS` payload as the kernel dumps it.
    public static func decode(options: [UInt8]) throws(RouteNetlinkError) -> PIEOptions {
        var value = PIEOptions(target: 0, updateInterval: 0, alpha: 0, beta: 0, limit: 0)
        var attributes = AttributeDecoder(options[...], operation: "decode pie options")
        while attributes.next() {
            switch Int(attributes.type) {
            case TCA_PIE_TARGET: value.target = attributes.uint32()
            case TCA_PIE_TUPDATE: value.updateInterval = attributes.uint32()
            case TCA_PIE_ALPHA: value.alpha = attributes.uint32()
            case TCA_PIE_BETA: value.beta = attributes.uint32()
            case TCA_PIE_LIMIT: value.limit = attributes.uint32()
            case TCA_PIE_ECN: value.ecn = attributes.uint32() != 0
            default: break
            }
        }
        if let error = attributes.error { throw .malformed(what: "pie options", detail: error.description) }
        return value
    }

    /// `limit N target T tupdate U alpha A beta B [ecn]`, tc's arguments.
    public var arguments: String {
        "limit \(limit) target \(TrafficControlText.time(nanoseconds: UInt64(target) * 1000)) tupdate "
            + "\(TrafficControlText.time(nanoseconds: UInt64(updateInterval) * 1000)) alpha \(alpha) beta \(beta)" + (ecn ? " ecn" : "")
    }
}

extension QdiscOptions {
    /// `bfifo limit BYTES`: a byte FIFO that drops arrivals beyond `limit` bytes (`tc_fifo_qopt`).
    public static func bfifo(limit: UInt32) -> QdiscOptions { fifo("bfifo", limit: limit) }

    /// `pfifo_head_drop limit N`: a packet FIFO that drops its oldest packet to make room (`tc_fifo_qopt`).
    public static func pfifoHeadDrop(limit: UInt32) -> QdiscOptions { fifo("pfifo_head_drop", limit: limit) }

    private static func fifo(_ kind: String, limit: UInt32) -> QdiscOptions {
        custom(kind: kind, arguments: { "limit \(limit)" }) { $0.put(UInt16(TCA_OPTIONS), structure: tc_fifo_qopt(limit: limit)) }
    }

    /// `codel limit N target T interval I [ecn]`.
    public static func codel(_ options: CoDelOptions) -> QdiscOptions {
        custom(kind: "codel", arguments: { options.arguments }) { options.encode(into: $0) }
    }

    /// `pie limit N target T tupdate U alpha A beta B [ecn]`.
    public static func pie(_ options: PIEOptions) -> QdiscOptions {
        custom(kind: "pie", arguments: { options.arguments }) { options.encode(into: $0) }
    }
}

/// The limit of a FIFO qdisc (`pfifo`, `bfifo`, `pfifo_head_drop`): its `TCA_OPTIONS` is a bare `tc_fifo_qopt`.
public enum FifoOptions {
    /// Decodes the limit (packets or bytes, as the kind counts) from a FIFO's `TCA_OPTIONS` payload.
    public static func decodeLimit(options: [UInt8]) throws(RouteNetlinkError) -> UInt32 {
        guard let value = options.load(tc_fifo_qopt.self, at: 0) else {
            throw .malformed(what: "fifo options", detail: "\(options.count) bytes, tc_fifo_qopt needs \(MemoryLayout<tc_fifo_qopt>.size)")
        }
        return value.limit
    }
}

extension TokenBucketOptions {
    /// Decodes a tbf qdisc's `TCA_OPTIONS` payload as the kernel dumps it: `TCA_TBF_PARMS` (rate, limit, and
    /// the bucket as `buffer`, the time the burst lasts at the rate, in packet-scheduler ticks) and
    /// `TCA_TBF_RATE64`. The burst is worked back from that time, so it may differ by a few bytes.
    public static func decode(options: [UInt8], clock: PacketSchedulerClock) throws(RouteNetlinkError) -> TokenBucketOptions {
        var parameters: tc_tbf_qopt?
        var rate64: UInt64?
        var burst: UInt32?
        var attributes = AttributeDecoder(options[...], operation: "decode tbf options")
        while attributes.next() {
            switch Int(attributes.type) {
            case TCA_TBF_PARMS: parameters = attributes.structure(tc_tbf_qopt.self)
            case TCA_TBF_RATE64: rate64 = attributes.uint64()
            case TCA_TBF_BURST: burst = attributes.uint32()
            default: break
            }
        }
        if let error = attributes.error { throw .malformed(what: "tbf options", detail: error.description) }
        guard let parameters else { throw .malformed(what: "tbf options", detail: "no TCA_TBF_PARMS") }
        let rate = rate64 ?? UInt64(parameters.rate.rate)
        let bucket = burst ?? UInt32(clamping: UInt64((Double(clock.nanoseconds(ticks: parameters.buffer)) * Double(rate) / 1e9).rounded()))
        return TokenBucketOptions(rate: rate, burst: bucket, limit: parameters.limit)
    }
}

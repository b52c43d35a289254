import CMnl
import Glibc
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

/// Options of a `red` qdisc: `tc qdisc … red limit BYTES min BYTES max BYTES avpkt A burst B probability P
/// bandwidth RATE [adaptive]`, sent as tc 6.x sends them — `TCA_RED_PARMS` (the thresholds in bytes and the
/// three logarithms tc works out: the averaging weight, the probability slope, the idle-damping cell),
/// `TCA_RED_STAB` (the 256-entry idle-damping table), `TCA_RED_MAX_P` and `TCA_RED_FLAGS` (a bitfield; the
/// historic flags byte of `TCA_RED_PARMS` stays 0). The kernel reads back the thresholds as sent and reports
/// the adaptive flag in both places; ARED moves `max_P` as it runs.
public struct REDOptions: Sendable, Equatable {
    /// `limit`: the hard limit of its queue, bytes.
    public var limit: UInt32
    /// `min`: the average queue length below which nothing is dropped, bytes.
    public var minimum: UInt32
    /// `max`: the average queue length above which everything is, bytes.
    public var maximum: UInt32
    /// `Wlog`: the averaging weight is 2^−Wlog.
    public var weightLog: UInt8
    /// `Plog`: log2 of (max − min) / probability, as `tc_red_eval_P` finds it.
    public var probabilityLog: UInt8
    /// `Scell_log`: the idle time cell of the damping table, 2^Scell_log ticks.
    public var cellLog: UInt8
    /// The drop probability at `max`, in 2^−32 units (`TCA_RED_MAX_P`).
    public var maxProbability: UInt32
    /// ARED (`TC_RED_ADAPTATIVE`).
    public var adaptive: Bool
    /// `TCA_RED_STAB`: how many averaging steps an idle time of each cell counts for; empty when read back
    /// (the kernel does not report it).
    public var idleTable: [UInt8]

    /// Options with these values.
    public init(
        limit: UInt32, minimum: UInt32, maximum: UInt32, weightLog: UInt8, probabilityLog: UInt8, cellLog: UInt8, maxProbability: UInt32,
        adaptive: Bool, idleTable: [UInt8] = []
    ) {
        self.limit = limit
        self.minimum = minimum
        self.maximum = maximum
        self.weightLog = weightLog
        self.probabilityLog = probabilityLog
        self.cellLog = cellLog
        self.maxProbability = maxProbability
        self.adaptive = adaptive
        self.idleTable = idleTable
    }

    /// The options tc sends for `limit`, `min`, `max` (bytes), the averaging weight 2^−`weightLog`,
    /// `probability` at `max`, packets of `averagePacket` bytes and a link of `bytesPerSecond`: `Plog` as
    /// `tc_red_eval_P` works it out, `Scell_log` and the table as `tc_red_eval_idle_damping` does (with the
    /// transmission time of one average packet in `clock`'s ticks). Nil when tc would refuse them.
    public static func evaluate(
        limit: UInt32, minimum: UInt32, maximum: UInt32, weightLog: Int, probability: Double, averagePacket: UInt32, bytesPerSecond: UInt64,
        adaptive: Bool, clock: PacketSchedulerClock
    ) -> REDOptions? {
        guard maximum >= minimum, (1..<32).contains(weightLog), probability > 0, probability <= 1, bytesPerSecond > 0 else { return nil }
        // tc_red_eval_P: the number of doublings that take probability / (max − min) above 1.
        var probabilityLog = 0
        if maximum > minimum {
            var slope = probability / Double(maximum - minimum)
            while probabilityLog < 32 && slope <= 1 {
                slope *= 2
                probabilityLog += 1
            }
            guard probabilityLog < 32 else { return nil }
        }
        // tc_red_eval_idle_damping: the idle time after which the average has decayed by e^−31, in cells of
        // 2^Scell_log ticks that number fewer than 512; each table entry is the decay of i cells, at most 31.
        // tc_calc_xmittime: whole microseconds, then whole ticks (tc_core_time2tick's unsigned ints).
        let microseconds = (1e6 * Double(averagePacket) / Double(bytesPerSecond)).rounded(.towardZero)
        let transmission = (microseconds * clock.ticksPerMicrosecond).rounded(.towardZero)
        guard transmission >= 1, transmission <= Double(UInt32.max) else { return nil }
        let decay = -log(1 - 1 / Double(1 << weightLog)) / transmission
        let longest = 31 / decay
        guard let cellLog = (0..<32).first(where: { longest / Double(1 << $0) < 512 }) else { return nil }
        var table = [UInt8](repeating: 31, count: 256)
        table[0] = 0
        for index in 1..<255 { table[index] = UInt8(min(31, Double(index << cellLog) * decay)) }
        return REDOptions(
            limit: limit, minimum: minimum, maximum: maximum, weightLog: UInt8(weightLog), probabilityLog: UInt8(probabilityLog),
            cellLog: UInt8(cellLog), maxProbability: UInt32(min(probability * 4_294_967_296, Double(UInt32.max))), adaptive: adaptive,
            idleTable: table)
    }

    /// The probability at `max` as a fraction.
    public var probability: Double { Double(maxProbability) / 4_294_967_296 }

    /// The flags' bits tc 6.x names in `TCA_RED_FLAGS`' selector: the historic ones and `nodrop`.
    static let flagSelector = UInt32(TC_RED_ECN | TC_RED_HARDDROP | TC_RED_ADAPTATIVE | TC_RED_NODROP)

    /// Appends `TCA_OPTIONS` as tc (`q_red.c`) lays it out: `PARMS`, `STAB`, `MAX_P`, `FLAGS`.
    public func encode(into message: NetlinkMessageBuilder) {
        let nest = message.beginNest(UInt16(TCA_OPTIONS))
        var parameters = tc_red_qopt()
        parameters.limit = limit
        parameters.qth_min = minimum
        parameters.qth_max = maximum
        parameters.Wlog = weightLog
        parameters.Plog = probabilityLog
        parameters.Scell_log = cellLog
        message.put(UInt16(TCA_RED_PARMS), structure: parameters)
        message.put(UInt16(TCA_RED_STAB), bytes: idleTable)
        message.put(UInt16(TCA_RED_MAX_P), uint32: maxProbability)
        message.put(UInt16(TCA_RED_FLAGS), structure: nla_bitfield32(value: adaptive ? UInt32(TC_RED_ADAPTATIVE) : 0, selector: Self.flagSelector))
        message.endNest(nest)
    }

    /// Decodes a red qdisc's `TCA_OPTIONS` payload as the kernel dumps it.
    public static func decode(options: [UInt8]) throws(RouteNetlinkError) -> REDOptions {
        var value = REDOptions(limit: 0, minimum: 0, maximum: 0, weightLog: 0, probabilityLog: 0, cellLog: 0, maxProbability: 0, adaptive: false)
        var attributes = AttributeDecoder(options[...], operation: "decode red options")
        var found = false
        while attributes.next() {
            switch Int(attributes.type) {
            case TCA_RED_PARMS:
                guard let parameters = attributes.structure(tc_red_qopt.self) else { continue }
                found = true
                value.limit = parameters.limit
                value.minimum = parameters.qth_min
                value.maximum = parameters.qth_max
                value.weightLog = parameters.Wlog
                value.probabilityLog = parameters.Plog
                value.cellLog = parameters.Scell_log
                if parameters.flags & UInt8(TC_RED_ADAPTATIVE) != 0 { value.adaptive = true }
            case TCA_RED_MAX_P: value.maxProbability = attributes.uint32()
            case TCA_RED_FLAGS:
                if let flags = attributes.structure(nla_bitfield32.self), flags.value & UInt32(TC_RED_ADAPTATIVE) != 0 { value.adaptive = true }
            default: break
            }
        }
        if let error = attributes.error { throw .malformed(what: "red options", detail: error.description) }
        guard found else { throw .malformed(what: "red options", detail: "no TCA_RED_PARMS") }
        return value
    }

    /// `limit L min A max B probability P [adaptive]`, tc's arguments (with the logarithms tc shows).
    public var arguments: String {
        "limit \(limit)b min \(minimum)b max \(maximum)b probability \(probability)" + (adaptive ? " adaptive" : "")
            + " Wlog \(weightLog) Plog \(probabilityLog) Scell_log \(cellLog)"
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

    /// `red limit L min A max B avpkt 1000 burst N probability P bandwidth R [adaptive]`.
    public static func red(_ options: REDOptions) -> QdiscOptions {
        custom(kind: "red", arguments: { options.arguments }) { options.encode(into: $0) }
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

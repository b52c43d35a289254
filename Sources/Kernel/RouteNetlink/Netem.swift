import CMnl
import Glibc
import Netlink

/// netem's probabilities and correlations on the wire: a fraction scaled to the whole u32 range
/// (100% = `UINT32_MAX`), rounded to nearest-even as tc's `rint(fraction * UINT32_MAX)` does.
public enum NetemProbability {
    /// The wire value of `fraction` (0…1; clamped).
    public static func scaled(_ fraction: Double) -> UInt32 {
        let clamped = min(max(fraction, 0), 1)
        return UInt32((clamped * Double(UInt32.max)).rounded(.toNearestOrEven))
    }

    /// The fraction a wire value stands for.
    public static func fraction(_ value: UInt32) -> Double {
        Double(value) / Double(UInt32.max)
    }
}

/// A netem loss model other than independent random loss (`TCA_NETEM_LOSS`).
public enum NetemLossModel: Sendable, Equatable {
    /// `loss gemodel p r 1-h 1-k`: Gilbert-Elliott. The wire carries `h` (= 1 − (1−h)) and `k1` (= 1−k).
    case gilbertElliott(p: UInt32, r: UInt32, h: UInt32, k1: UInt32)
    /// `loss state p13 p31 p32 p23 p14`: the 4-state Markov model (`NETEM_LOSS_GI`).
    case fourState(p13: UInt32, p31: UInt32, p32: UInt32, p14: UInt32, p23: UInt32)
}

/// `slot MIN [MAX] [packets N] [bytes N]`: packets leave in bursts ("slots"), as on Wi-Fi or cellular.
public struct NetemSlot: Sendable, Equatable {
    /// Shortest wait between slots, in nanoseconds.
    public var minDelay: Int64
    /// Longest wait between slots, in nanoseconds.
    public var maxDelay: Int64
    /// Packets per slot at most (`packets`), 0 for no limit.
    public var maxPackets: Int32
    /// Bytes per slot at most (`bytes`), 0 for no limit.
    public var maxBytes: Int32

    /// A value with these fields.
    public init(minDelay: Int64, maxDelay: Int64, maxPackets: Int32 = 0, maxBytes: Int32 = 0) {
        self.minDelay = minDelay
        self.maxDelay = maxDelay
        self.maxPackets = maxPackets
        self.maxBytes = maxBytes
    }
}

/// The parameters of one netem qdisc in wire terms (ticks, scaled probabilities, bytes per second): what
/// `TCA_OPTIONS` of kind `netem` carries. Conversions from user intent live with the profile model.
public struct NetemParameters: Sendable, Equatable {
    /// Delay in nanoseconds (sent as ticks in `tc_netem_qopt`, or as `TCA_NETEM_LATENCY64` when it does
    /// not fit 32-bit ticks).
    public var delay: UInt64 = 0
    /// Jitter in nanoseconds (likewise).
    public var jitter: UInt64 = 0
    /// Queue limit in packets (`limit`, default 1000).
    public var limit: UInt32 = 1000
    /// Random loss probability (scaled).
    public var loss: UInt32 = 0
    /// `gap`: with reordering, every gap-th packet is sent at once.
    public var gap: UInt32 = 0
    /// Duplication probability (scaled).
    public var duplicate: UInt32 = 0
    /// Correlation of successive delays (scaled).
    public var delayCorrelation: UInt32 = 0
    /// Correlation of successive losses (scaled).
    public var lossCorrelation: UInt32 = 0
    /// Correlation of successive duplications (scaled).
    public var duplicateCorrelation: UInt32 = 0
    /// Probability that a packet is sent at once, out of order (scaled).
    public var reorder: UInt32 = 0
    /// Correlation of successive reorderings (scaled).
    public var reorderCorrelation: UInt32 = 0
    /// Probability of a one-bit corruption (scaled).
    public var corrupt: UInt32 = 0
    /// Correlation of successive corruptions (scaled).
    public var corruptCorrelation: UInt32 = 0
    /// Mark packets with ECN CE instead of dropping them.
    public var ecn = false
    /// Slotted sending (`slot …`), nil for none.
    public var slot: NetemSlot?
    /// A loss model instead of random loss, nil for none.
    public var lossModel: NetemLossModel?
    /// Rate limit in bytes per second (`rate`); nil for none.
    public var rate: UInt64?
    /// The delay distribution table (`TCA_NETEM_DELAY_DIST`), e.g. the contents of tc's `normal.dist`;
    /// not read back by the kernel.
    public var distribution: [Int16]?

    /// Values that change nothing (netem's defaults; no counters yet).
    public init() {}
}

extension NetemParameters {
    /// Appends `TCA_OPTIONS` for netem, attribute for attribute as `tc qdisc … netem …` (iproute2 6.1)
    /// lays it out: the `tc_netem_qopt` struct, then `CORR` (when a correlation is set), `REORDER`, `ECN`,
    /// `CORRUPT`, `SLOT`, the `LOSS` nest, `RATE64`+`RATE`, `LATENCY64`/`JITTER64` (only beyond 32-bit
    /// ticks, where tc cannot go), and `DELAY_DIST`.
    public func encode(into message: NetlinkMessageBuilder, clock: PacketSchedulerClock) {
        let latencyTicks = clock.ticks(nanoseconds: delay)
        let jitterTicks = clock.ticks(nanoseconds: jitter)
        var options = tc_netem_qopt()
        options.latency = latencyTicks ?? UInt32.max
        options.limit = limit
        options.loss = loss
        options.gap = reorder != 0 && gap == 0 ? 1 : gap
        options.duplicate = duplicate
        options.jitter = jitterTicks ?? UInt32.max

        let nest = message.beginNest(UInt16(TCA_OPTIONS))
        message.putStruct(options)
        if delayCorrelation != 0 || lossCorrelation != 0 || duplicateCorrelation != 0 || reorderCorrelation != 0
            || corruptCorrelation != 0
        {
            // tc sends CORR whenever a correlation was given, the reorder and corrupt ones included.
            var correlation = tc_netem_corr()
            correlation.delay_corr = delayCorrelation
            correlation.loss_corr = lossCorrelation
            correlation.dup_corr = duplicateCorrelation
            message.put(UInt16(TCA_NETEM_CORR), structure: correlation)
        }
        if reorder != 0 {
            message.put(UInt16(TCA_NETEM_REORDER), structure: tc_netem_reorder(probability: reorder, correlation: reorderCorrelation))
        }
        if ecn { message.put(UInt16(TCA_NETEM_ECN), uint32: 1) }
        if corrupt != 0 {
            message.put(UInt16(TCA_NETEM_CORRUPT), structure: tc_netem_corrupt(probability: corrupt, correlation: corruptCorrelation))
        }
        if let slot {
            var wire = tc_netem_slot()
            wire.min_delay = slot.minDelay
            wire.max_delay = slot.maxDelay
            wire.max_packets = slot.maxPackets
            wire.max_bytes = slot.maxBytes
            message.put(UInt16(TCA_NETEM_SLOT), structure: wire)
        }
        if let lossModel {
            let loss = message.beginNest(UInt16(TCA_NETEM_LOSS), nestedFlag: true)
            switch lossModel {
            case let .gilbertElliott(p, r, h, k1):
                message.put(UInt16(NETEM_LOSS_GE), structure: tc_netem_gemodel(p: p, r: r, h: h, k1: k1))
            case let .fourState(p13, p31, p32, p14, p23):
                message.put(UInt16(NETEM_LOSS_GI), structure: tc_netem_gimodel(p13: p13, p31: p31, p32: p32, p14: p14, p23: p23))
            }
            message.endNest(loss)
        }
        if let rate {
            if rate > UInt64(UInt32.max) { message.put(UInt16(TCA_NETEM_RATE64), uint64: rate) }
            var wire = tc_netem_rate()
            wire.rate = UInt32(min(rate, UInt64(UInt32.max)))
            message.put(UInt16(TCA_NETEM_RATE), structure: wire)
        }
        if latencyTicks == nil { message.put(UInt16(TCA_NETEM_LATENCY64), uint64: UInt64(bitPattern: Int64(delay))) }
        if jitterTicks == nil { message.put(UInt16(TCA_NETEM_JITTER64), uint64: UInt64(bitPattern: Int64(jitter))) }
        if let distribution {
            message.put(UInt16(TCA_NETEM_DELAY_DIST), bytes: distribution.flatMap { rawBytes(of: $0) })
        }
        message.endNest(nest)
    }

    /// Decodes the `TCA_OPTIONS` payload of a netem qdisc as the kernel dumps it (`tc_netem_qopt`, then
    /// attributes; the kernel reports delay and jitter in nanoseconds as `LATENCY64`/`JITTER64`).
    /// The distribution table is not dumped by the kernel and stays nil.
    public static func decode(options: [UInt8], clock: PacketSchedulerClock) throws(RouteNetlinkError) -> NetemParameters {
        guard let qopt = options.load(tc_netem_qopt.self, at: 0) else {
            throw .malformed(what: "netem options", detail: "\(options.count) bytes, tc_netem_qopt needs \(MemoryLayout<tc_netem_qopt>.size)")
        }
        var parameters = NetemParameters()
        parameters.delay = clock.nanoseconds(ticks: qopt.latency)
        parameters.jitter = clock.nanoseconds(ticks: qopt.jitter)
        parameters.limit = qopt.limit
        parameters.loss = qopt.loss
        parameters.gap = qopt.gap
        parameters.duplicate = qopt.duplicate
        let start = netlinkAlign(MemoryLayout<tc_netem_qopt>.size)
        guard start <= options.count else { return parameters }
        var attributes = AttributeDecoder(options[start...], operation: "decode netem options")
        var rate64: UInt64?
        while attributes.next() {
            switch Int(attributes.type) {
            case TCA_NETEM_LATENCY64: parameters.delay = attributes.uint64()
            case TCA_NETEM_JITTER64: parameters.jitter = attributes.uint64()
            case TCA_NETEM_CORR:
                if let value = attributes.structure(tc_netem_corr.self) {
                    parameters.delayCorrelation = value.delay_corr
                    parameters.lossCorrelation = value.loss_corr
                    parameters.duplicateCorrelation = value.dup_corr
                }
            case TCA_NETEM_REORDER:
                if let value = attributes.structure(tc_netem_reorder.self) {
                    parameters.reorder = value.probability
                    parameters.reorderCorrelation = value.correlation
                }
            case TCA_NETEM_CORRUPT:
                if let value = attributes.structure(tc_netem_corrupt.self) {
                    parameters.corrupt = value.probability
                    parameters.corruptCorrelation = value.correlation
                }
            case TCA_NETEM_RATE:
                if let value = attributes.structure(tc_netem_rate.self), value.rate != 0 { parameters.rate = UInt64(value.rate) }
            case TCA_NETEM_RATE64: rate64 = attributes.uint64()
            case TCA_NETEM_ECN: parameters.ecn = attributes.uint32() != 0
            case TCA_NETEM_SLOT:
                if let value = attributes.structure(tc_netem_slot.self), value.min_delay != 0 || value.max_delay != 0 {
                    parameters.slot = NetemSlot(minDelay: value.min_delay, maxDelay: value.max_delay, maxPackets: value.max_packets, maxBytes: value.max_bytes)
                }
            case TCA_NETEM_LOSS:
                var models = attributes.nested()
                while models.next() {
                    switch Int(models.type) {
                    case NETEM_LOSS_GE:
                        if let value = models.structure(tc_netem_gemodel.self) {
                            parameters.lossModel = .gilbertElliott(p: value.p, r: value.r, h: value.h, k1: value.k1)
                        }
                    case NETEM_LOSS_GI:
                        if let value = models.structure(tc_netem_gimodel.self) {
                            parameters.lossModel = .fourState(p13: value.p13, p31: value.p31, p32: value.p32, p14: value.p14, p23: value.p23)
                        }
                    default: break
                    }
                }
                if let error = models.error { throw .malformed(what: "netem loss model", detail: error.description) }
            default: break
            }
        }
        if let error = attributes.error { throw .malformed(what: "netem options", detail: error.description) }
        if let rate64 { parameters.rate = rate64 }
        return parameters
    }
}

/// netem's delay distribution tables, read from iproute2's `*.dist` files as tc reads them.
public enum NetemDistribution {
    /// Where iproute2 installs its tables (Debian multiarch first, then the upstream default).
    public static let searchDirectories = ["/usr/lib/x86_64-linux-gnu/tc", "/usr/lib/aarch64-linux-gnu/tc", "/usr/lib/tc", "/usr/lib64/tc", "/usr/share/tc"]

    /// The table named `name` (`normal`, `pareto`, `paretonormal`, `experimental`).
    public static func load(_ name: String, directories: [String] = searchDirectories) throws(RouteNetlinkError) -> [Int16] {
        for directory in directories {
            let path = "\(directory)/\(name).dist"
            guard let file = fopen(path, "r") else { continue }
            defer { fclose(file) }
            var table: [Int16] = []
            var line: UnsafeMutablePointer<CChar>?
            var capacity = 0
            defer { free(line) }
            while getline(&line, &capacity, file) >= 0, let line {
                let text = String(cString: line)
                if text.hasPrefix("#") { continue }
                for word in text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }) {
                    guard let value = Int16(word) else {
                        throw .invalidArgument("\(path): '\(word)' is not a distribution value")
                    }
                    table.append(value)
                }
            }
            guard !table.isEmpty, table.count <= 65_536 else {
                throw .invalidArgument("\(path): a distribution table needs 1 to 65536 values, found \(table.count)")
            }
            return table
        }
        throw .invalidArgument(
            "no '\(name).dist' distribution table in \(directories.joined(separator: ", ")); install iproute2, which ships them")
    }
}

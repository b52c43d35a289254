import RouteNetlink

/// A netem qdisc's parameters in profile terms ("400ms", "1%", "240kbit"), for `linkcond show` and for
/// error messages; and the comparison of what was sent with what the kernel reports.
public struct NetemDescription: Sendable, Codable, Equatable {
    public var delay: String
    public var jitter: String?
    public var delayCorrelation: String?
    public var loss: String?
    public var lossCorrelation: String?
    public var lossModel: String?
    public var duplicate: String?
    public var corrupt: String?
    public var reorder: String?
    public var gap: UInt32?
    public var rate: String?
    public var slot: String?
    public var ecn: Bool
    public var limit: UInt32

    public init(_ parameters: NetemParameters) {
        delay = Self.time(parameters.delay)
        jitter = parameters.jitter == 0 ? nil : Self.time(parameters.jitter)
        delayCorrelation = Self.optionalPercent(parameters.delayCorrelation)
        loss = Self.optionalPercent(parameters.loss)
        lossCorrelation = Self.optionalPercent(parameters.lossCorrelation)
        switch parameters.lossModel {
        case nil: lossModel = nil
        case let .gilbertElliott(p, r, h, k1)?:
            lossModel = "gemodel p \(Self.percent(p)) r \(Self.percent(r)) 1-h \(Self.percent(UInt32.max - h)) 1-k \(Self.percent(k1))"
        case let .fourState(p13, p31, p32, p14, p23)?:
            lossModel = "state p13 \(Self.percent(p13)) p31 \(Self.percent(p31)) p32 \(Self.percent(p32)) p23 \(Self.percent(p23)) p14 \(Self.percent(p14))"
        }
        duplicate = Self.optionalPercent(parameters.duplicate)
        corrupt = Self.optionalPercent(parameters.corrupt)
        reorder = Self.optionalPercent(parameters.reorder)
        gap = parameters.gap == 0 ? nil : parameters.gap
        rate = parameters.rate.map { Self.rate(bitsPerSecond: $0 * 8) }
        slot = parameters.slot.map { "\(Self.time(UInt64($0.minDelay)))–\(Self.time(UInt64($0.maxDelay)))" }
        ecn = parameters.ecn
        limit = parameters.limit
    }

    /// `delay 400ms 50ms 25% loss 1% rate 240kbit limit 500`: the parameters as tc's arguments, for
    /// operation names in errors.
    public static func text(of parameters: NetemParameters, clock: PacketSchedulerClock) -> String {
        let view = NetemDescription(parameters)
        var words = ["delay \(view.delay)"]
        if let jitter = view.jitter { words.append(jitter) }
        if let correlation = view.delayCorrelation { words.append(correlation) }
        if let loss = view.loss { words.append("loss \(loss)\(view.lossCorrelation.map { " \($0)" } ?? "")") }
        if let model = view.lossModel { words.append("loss \(model)") }
        if let duplicate = view.duplicate { words.append("duplicate \(duplicate)") }
        if let corrupt = view.corrupt { words.append("corrupt \(corrupt)") }
        if let reorder = view.reorder { words.append("reorder \(reorder) gap \(view.gap ?? 1)") }
        if let slot = view.slot { words.append("slot \(slot)") }
        if let rate = view.rate { words.append("rate \(rate)") }
        if view.ecn { words.append("ecn") }
        words.append("limit \(view.limit)")
        return words.joined(separator: " ")
    }

    /// What differs between the parameters sent and those the kernel reports. Delay and jitter may differ
    /// by what tc's whole-microsecond, 64 ns-tick encoding loses; the distribution table is not reported.
    public static func differences(sent: NetemParameters, read: NetemParameters, clock: PacketSchedulerClock) -> [String] {
        var differences: [String] = []
        func close(_ a: UInt64, _ b: UInt64) -> Bool { (a > b ? a - b : b - a) <= 1_064 }
        func check<T: Equatable>(_ name: String, _ a: T, _ b: T) {
            if a != b { differences.append("\(name): sent \(a), kernel has \(b)") }
        }
        if !close(sent.delay, read.delay) { differences.append("delay: sent \(time(sent.delay)), kernel has \(time(read.delay))") }
        if !close(sent.jitter, read.jitter) { differences.append("jitter: sent \(time(sent.jitter)), kernel has \(time(read.jitter))") }
        check("limit", sent.limit, read.limit)
        check("loss", sent.loss, read.loss)
        check("duplicate", sent.duplicate, read.duplicate)
        check("gap", sent.reorder != 0 && sent.gap == 0 ? 1 : sent.gap, read.gap)
        check("delay correlation", sent.delayCorrelation, read.delayCorrelation)
        check("loss correlation", sent.lossCorrelation, read.lossCorrelation)
        check("duplicate correlation", sent.duplicateCorrelation, read.duplicateCorrelation)
        check("reorder", sent.reorder, read.reorder)
        check("reorder correlation", sent.reorderCorrelation, read.reorderCorrelation)
        check("corrupt", sent.corrupt, read.corrupt)
        check("corrupt correlation", sent.corruptCorrelation, read.corruptCorrelation)
        check("rate", sent.rate, read.rate)
        check("ecn", sent.ecn, read.ecn)
        check("slot", sent.slot.map { "\($0)" }, read.slot.map { "\($0)" })
        check("loss model", sent.lossModel.map { "\($0)" }, read.lossModel.map { "\($0)" })
        return differences
    }

    static func time(_ nanoseconds: UInt64) -> String {
        if nanoseconds == 0 { return "0ms" }
        if nanoseconds % 1_000_000_000 == 0 { return "\(nanoseconds / 1_000_000_000)s" }
        if nanoseconds % 1_000_000 == 0 { return "\(nanoseconds / 1_000_000)ms" }
        if nanoseconds % 1_000 == 0 { return "\(nanoseconds / 1_000)us" }
        return "\(nanoseconds)ns"
    }

    static func percent(_ scaled: UInt32) -> String {
        let value = NetemProbability.fraction(scaled) * 100
        let rounded = (value * 10_000).rounded() / 10_000
        if rounded == rounded.rounded() { return "\(Int(rounded))%" }
        return "\(rounded)%"
    }

    static func optionalPercent(_ scaled: UInt32) -> String? {
        scaled == 0 ? nil : percent(scaled)
    }

    static func rate(bitsPerSecond: UInt64) -> String {
        for (divisor, unit) in [(UInt64(1_000_000_000), "gbit"), (1_000_000, "mbit"), (1_000, "kbit")] where bitsPerSecond >= divisor {
            if bitsPerSecond % divisor == 0 { return "\(bitsPerSecond / divisor)\(unit)" }
        }
        return "\(bitsPerSecond)bit"
    }
}

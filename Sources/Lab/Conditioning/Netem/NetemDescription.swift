import RouteNetlink

/// A netem qdisc's parameters in profile terms ("400ms", "1%", "240kbit"), for `linkcond show` and for
/// error messages; and the comparison of what was sent with what the kernel reports.
public struct NetemDescription: Sendable, Codable, Equatable {
    /// `400ms`.
    public var delay: String
    /// `50ms`, nil without jitter.
    public var jitter: String?
    /// `25%`, nil for none.
    public var delayCorrelation: String?
    /// Random loss, `1%`; nil for none.
    public var loss: String?
    /// `25%`, nil for none.
    public var lossCorrelation: String?
    /// A loss model with its parameters named (`gemodel p 1% r 10% 1-h 70% 1-k 5%`), nil for none.
    public var lossModel: String?
    /// `1%`, nil for none.
    public var duplicate: String?
    /// `1%`, nil for none.
    public var corrupt: String?
    /// `25%`, nil for none.
    public var reorder: String?
    /// The reorder gap, nil for none.
    public var gap: UInt32?
    /// `240kbit`, nil for no rate limit.
    public var rate: String?
    /// `10ms 20ms packets 10`, nil for none.
    public var slot: String?
    /// True when packets are marked (ECN CE) instead of dropped.
    public var ecn: Bool
    /// The queue limit in packets.
    public var limit: UInt32
    /// Everything above as tc's arguments (`delay 400ms 50ms 25% loss 1% rate 240kbit ecn limit 500`): the
    /// one text linkcond writes for a netem qdisc, in operation names, errors and `linkcond show`.
    public var text: String

    /// The description of `parameters`, written with ``TrafficControlText`` as tc writes values.
    public init(_ parameters: NetemParameters) {
        let percent = { (value: UInt32) in value == 0 ? nil : TrafficControlText.percent(scaled: value) }
        delay = TrafficControlText.time(nanoseconds: parameters.delay)
        jitter = parameters.jitter == 0 ? nil : TrafficControlText.time(nanoseconds: parameters.jitter)
        delayCorrelation = percent(parameters.delayCorrelation)
        loss = percent(parameters.loss)
        lossCorrelation = percent(parameters.lossCorrelation)
        lossModel = parameters.lossModel?.description
        duplicate = percent(parameters.duplicate)
        corrupt = percent(parameters.corrupt)
        reorder = percent(parameters.reorder)
        gap = parameters.gap == 0 ? nil : parameters.gap
        rate = parameters.rate.map { TrafficControlText.rate(bitsPerSecond: $0 * 8) }
        slot = parameters.slot?.description
        ecn = parameters.ecn
        limit = parameters.limit
        text = parameters.description
    }

    /// What differs between the parameters sent and those the kernel reports. Delay and jitter may differ
    /// by what tc's whole-microsecond, 64 ns-tick encoding loses; the distribution table is not reported.
    public static func differences(sent: NetemParameters, read: NetemParameters, clock: PacketSchedulerClock) -> [String] {
        var differences: [String] = []
        func close(_ a: UInt64, _ b: UInt64) -> Bool { (a > b ? a - b : b - a) <= 1_064 }
        func check<T: Equatable>(_ name: String, _ a: T, _ b: T) {
            if a != b { differences.append("\(name): sent \(a), kernel has \(b)") }
        }
        if !close(sent.delay, read.delay) { differences.append("delay: sent \(TrafficControlText.time(nanoseconds: sent.delay)), kernel has \(TrafficControlText.time(nanoseconds: read.delay))") }
        if !close(sent.jitter, read.jitter) { differences.append("jitter: sent \(TrafficControlText.time(nanoseconds: sent.jitter)), kernel has \(TrafficControlText.time(nanoseconds: read.jitter))") }
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
}

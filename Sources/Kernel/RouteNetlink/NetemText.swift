/// How linkcond writes traffic-control values for people — `400ms`, `1%`, `240kbit` — the way `tc`
/// writes them, so that what a message says and what a request carries come from one place.
public enum TrafficControlText {
    /// `400ms`, `1.5s` as `1500ms`, `250us`, `17ns`: the largest unit that divides the time exactly.
    public static func time(nanoseconds: UInt64) -> String {
        if nanoseconds == 0 { return "0ms" }
        if nanoseconds % 1_000_000_000 == 0 { return "\(nanoseconds / 1_000_000_000)s" }
        if nanoseconds % 1_000_000 == 0 { return "\(nanoseconds / 1_000_000)ms" }
        if nanoseconds % 1_000 == 0 { return "\(nanoseconds / 1_000)us" }
        return "\(nanoseconds)ns"
    }

    /// A netem probability (scaled to the u32 range) as a percentage with at most four decimals: `1%`,
    /// `0.0125%`.
    public static func percent(scaled: UInt32) -> String {
        let value = NetemProbability.fraction(scaled) * 100
        let rounded = (value * 10_000).rounded() / 10_000
        if rounded == rounded.rounded() { return "\(Int(rounded))%" }
        return "\(rounded)%"
    }

    /// A rate in bits per second with tc's 1000-based units: `240kbit`, `50mbit`, `1500bit`.
    public static func rate(bitsPerSecond: UInt64) -> String {
        for (divisor, unit) in [(UInt64(1_000_000_000), "gbit"), (1_000_000, "mbit"), (1_000, "kbit")] where bitsPerSecond >= divisor {
            if bitsPerSecond % divisor == 0 { return "\(bitsPerSecond / divisor)\(unit)" }
        }
        return "\(bitsPerSecond)bit"
    }
}

extension NetemLossModel: CustomStringConvertible {
    /// `gemodel p 1% r 10% 1-h 70% 1-k 5%` or `state p13 1% p31 10% p32 0% p23 100% p14 0%`: tc's
    /// `loss gemodel`/`loss state` arguments with each one named.
    public var description: String {
        let percent = TrafficControlText.percent(scaled:)
        switch self {
        case let .gilbertElliott(p, r, h, k1):
            return "gemodel p \(percent(p)) r \(percent(r)) 1-h \(percent(UInt32.max - h)) 1-k \(percent(k1))"
        case let .fourState(p13, p31, p32, p14, p23):
            return "state p13 \(percent(p13)) p31 \(percent(p31)) p32 \(percent(p32)) p23 \(percent(p23)) p14 \(percent(p14))"
        }
    }
}

extension NetemSlot: CustomStringConvertible {
    /// `10ms 20ms packets 10 bytes 1500`: tc's `slot` arguments.
    public var description: String {
        var words = [TrafficControlText.time(nanoseconds: UInt64(max(0, minDelay))), TrafficControlText.time(nanoseconds: UInt64(max(0, maxDelay)))]
        if maxPackets != 0 { words.append("packets \(maxPackets)") }
        if maxBytes != 0 { words.append("bytes \(maxBytes)") }
        return words.joined(separator: " ")
    }
}

extension NetemParameters: CustomStringConvertible {
    /// The parameters as `tc qdisc … netem` arguments, from exactly the values the request encodes:
    /// `delay 400ms 50ms 25% distribution table loss 1% 25% rate 240kbit ecn limit 500`. Used in operation
    /// names, errors and `linkcond show`; a loss model is written with its parameters named.
    public var description: String {
        let percent = TrafficControlText.percent(scaled:)
        var words = ["delay \(TrafficControlText.time(nanoseconds: delay))"]
        if jitter != 0 || delayCorrelation != 0 { words.append(TrafficControlText.time(nanoseconds: jitter)) }
        if delayCorrelation != 0 { words.append(percent(delayCorrelation)) }
        if let distribution { words.append("distribution table(\(distribution.count))") }
        if loss != 0 || lossCorrelation != 0 {
            words.append("loss \(percent(loss))" + (lossCorrelation != 0 ? " \(percent(lossCorrelation))" : ""))
        }
        if let lossModel { words.append("loss \(lossModel)") }
        if duplicate != 0 || duplicateCorrelation != 0 {
            words.append("duplicate \(percent(duplicate))" + (duplicateCorrelation != 0 ? " \(percent(duplicateCorrelation))" : ""))
        }
        if corrupt != 0 || corruptCorrelation != 0 {
            words.append("corrupt \(percent(corrupt))" + (corruptCorrelation != 0 ? " \(percent(corruptCorrelation))" : ""))
        }
        if reorder != 0 {
            words.append("reorder \(percent(reorder))" + (reorderCorrelation != 0 ? " \(percent(reorderCorrelation))" : ""))
        }
        if reorder != 0 || gap != 0 { words.append("gap \(reorder != 0 && gap == 0 ? 1 : gap)") }
        if let slot { words.append("slot \(slot)") }
        if let rate { words.append("rate \(TrafficControlText.rate(bitsPerSecond: rate * 8))") }
        if ecn { words.append("ecn") }
        words.append("limit \(limit)")
        return words.joined(separator: " ")
    }
}

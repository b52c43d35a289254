import Profiles

/// Link conditions as `linkcond show` writes them for either backend: tc's order and words, with the
/// profile's own forms — `delay 30ms ± 10ms uniform (ordered)` with the jitter model, `loss 3% 25%` as a
/// profile writes a correlated loss, `rate 240kbit`, `limit 120` or the queue with its discipline
/// (`queue codel target 5ms interval 100ms limit 1000 packets`), delay and loss traces with their range.
public enum ConditionsText {
    /// `conditions` in one line; `limit` is the queue limit in force when the conditions leave it derived.
    public static func describe(_ conditions: LinkConditions, limit: UInt32? = nil) -> String {
        let percent = Quantity.formatPercentage
        func chance(_ probability: Double, _ correlation: Double) -> String {
            percent(probability) + (correlation > 0 ? " " + percent(correlation) : "")
        }
        var words: [String] = []
        if let trace = conditions.trace {
            let summary = trace.summary
            words.append(
                "trace \(trace.file ?? trace.path ?? "(in memory)") (\(Quantity.formatRate(UInt64(summary.meanRate.rounded()))) mean over "
                    + "\(Quantity.formatTime(summary.duration)), \(summary.opportunities) opportunities)")
        }
        if let rate = conditions.rate { words.append("rate \(Quantity.formatRate(rate))") }
        var delay = "delay " + (conditions.delayTrace.map { trace(named: "trace", $0) } ?? Quantity.formatTime(conditions.delay))
        if conditions.jitter > 0 {
            delay += " ± \(Quantity.formatTime(conditions.jitter)) \((conditions.distribution ?? .uniform).rawValue)"
            if conditions.delayCorrelation > 0 { delay += " \(percent(conditions.delayCorrelation))" }
            delay += " (\(conditions.effectiveJitterModel.rawValue))"
        }
        words.append(delay)
        if let lossTrace = conditions.lossTrace { words.append("loss " + trace(named: "trace", lossTrace)) }
        switch conditions.loss {
        case nil: break
        case let .random(probability, correlation)?: words.append("loss \(chance(probability, correlation))")
        case let .gilbertElliott(p, r, oneMinusH, oneMinusK)?:
            words.append("loss gilbert-elliott p \(percent(p)) r \(percent(r)) 1-h \(percent(oneMinusH)) 1-k \(percent(oneMinusK))")
        case let .fourState(p13, p31, p32, p23, p14)?:
            words.append("loss 4-state p13 \(percent(p13)) p31 \(percent(p31)) p32 \(percent(p32)) p23 \(percent(p23)) p14 \(percent(p14))")
        }
        if conditions.ecn { words.append("ecn") }
        if let duplicate = conditions.duplicate { words.append("duplicate \(chance(duplicate.probability, duplicate.correlation))") }
        if let corrupt = conditions.corrupt { words.append("corrupt \(chance(corrupt.probability, corrupt.correlation))") }
        if let reorder = conditions.reorder, reorder.probability > 0 {
            words.append("reorder \(chance(reorder.probability, reorder.correlation))" + (reorder.gap > 1 ? " gap \(reorder.gap)" : ""))
        }
        if let slot = conditions.slot {
            var text = "slot \(Quantity.formatTime(slot.minDelay))"
            if slot.maxDelay != slot.minDelay { text += "–\(Quantity.formatTime(slot.maxDelay))" }
            if let packets = slot.packets { text += " packets \(packets)" }
            if let bytes = slot.bytes { text += " bytes \(bytes)" }
            words.append(text)
        }
        if let queue = conditions.queue {
            words.append(describe(queue))
        } else if let queueLimit = conditions.queueLimit ?? limit {
            words.append("limit \(queueLimit)")
        }
        return words.joined(separator: " ")
    }

    /// A queue as `show` writes it, discipline first: `queue codel target 5ms interval 100ms limit 1000
    /// packets`, `queue droptail 64KB`.
    public static func describe(_ queue: LinkQueue) -> String {
        let time = Quantity.formatTime
        var words = ["queue", queue.discipline.name]
        switch queue.discipline {
        case .dropTail: return "queue droptail \(queue.limit)"
        case .dropHead: break
        case .codel(let settings): words += ["target", time(settings.target), "interval", time(settings.interval)]
        case .pie(let settings):
            words += ["target", time(settings.target), "tupdate", time(settings.updateInterval), "alpha", "\(settings.alpha)", "beta", "\(settings.beta)"]
        case .red(let settings):
            words += [
                "min", Quantity.formatSize(settings.minimum), "max", Quantity.formatSize(settings.maximum), "probability",
                Quantity.formatPercentage(settings.probability), "burst", "\(settings.effectiveBurst)",
            ]
            if settings.adaptive { words.append("adaptive") }
        }
        return (words + ["limit", queue.limit.description]).joined(separator: " ")
    }

    /// A delay or loss trace: its file, its range and its period.
    private static func trace(named word: String, _ trace: StepTrace) -> String {
        let values = trace.steps.map(\.value)
        let format = { (value: Double) in trace.kind == .delay ? Quantity.formatTime(UInt64(value)) : Quantity.formatPercentage(value) }
        let range = values.min() == values.max() ? format(values[0]) : "\(format(values.min() ?? 0))–\(format(values.max() ?? 0))"
        let period = trace.period.map { ", repeats every \(Quantity.formatTime(UInt64($0) * 1_000_000))" } ?? ""
        return "\(word) \(trace.file ?? trace.path ?? "(in memory)") (\(range) in \(trace.steps.count) steps\(period))"
    }
}

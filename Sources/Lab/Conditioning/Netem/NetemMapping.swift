import Profiles
import RouteNetlink

/// Turns a profile direction (user intent: fractions, nanoseconds, bits per second) into netem's wire
/// parameters (scaled u32 probabilities, bytes per second, a queue limit).
public enum NetemMapping {
    /// The queue limit used when a profile does not set one; the rule lives with the profile model
    /// (``LinkConditions/derivedQueueLimit(extraDelay:)``) so that every backend drops at the same depth.
    public static func derivedQueueLimit(for conditions: LinkConditions, extraDelay: UInt64 = 0) -> UInt32 {
        conditions.derivedQueueLimit(extraDelay: extraDelay)
    }

    /// The netem parameters for `conditions`, with `extraDelay` nanoseconds added (the DNS branch).
    /// `distributions` loads a named delay table (tc's `*.dist` files).
    public static func parameters(
        for conditions: LinkConditions, extraDelay: UInt64 = 0,
        distributions: (String) throws(RouteNetlinkError) -> [Int16] = { name throws(RouteNetlinkError) in try NetemDistribution.load(name) }
    ) throws(RouteNetlinkError) -> NetemParameters {
        var parameters = NetemParameters()
        parameters.delay = conditions.delay + extraDelay
        parameters.jitter = conditions.jitter
        if conditions.jitter > 0 {
            parameters.delayCorrelation = NetemProbability.scaled(conditions.delayCorrelation)
            if let distribution = conditions.distribution, distribution != .uniform {
                parameters.distribution = try distributions(distribution.rawValue)
            }
        }
        switch conditions.loss {
        case nil: break
        case let .random(probability, correlation)? where correlation > 0 && probability < 1:
            // netem's correlated random numbers (get_crandom) pull towards the middle, so "loss 3% 25%"
            // drops about 0.03%. The same intent — mean loss P, each loss making the next one likelier by
            // the correlation c — is the simple Gilbert model p = (1-c)P, r = (1-c)(1-P), with every
            // packet lost in the bad state and none in the good one; its stationary loss is exactly P.
            parameters.lossModel = .gilbertElliott(
                p: NetemProbability.scaled((1 - correlation) * probability),
                r: NetemProbability.scaled((1 - correlation) * (1 - probability)), h: 0, k1: 0)
        case let .random(probability, _)?:
            parameters.loss = NetemProbability.scaled(probability)
        case let .gilbertElliott(p, r, oneMinusH, oneMinusK)?:
            // As tc: the wire carries h = 1 - (1-h), computed from the top of the range, and 1-k as is.
            parameters.lossModel = .gilbertElliott(
                p: NetemProbability.scaled(p), r: NetemProbability.scaled(r),
                h: UInt32.max - NetemProbability.scaled(oneMinusH), k1: NetemProbability.scaled(oneMinusK))
        case let .fourState(p13, p31, p32, p23, p14)?:
            parameters.lossModel = .fourState(
                p13: NetemProbability.scaled(p13), p31: NetemProbability.scaled(p31), p32: NetemProbability.scaled(p32),
                p14: NetemProbability.scaled(p14), p23: NetemProbability.scaled(p23))
        }
        if let duplicate = conditions.duplicate {
            parameters.duplicate = NetemProbability.scaled(duplicate.probability)
            parameters.duplicateCorrelation = NetemProbability.scaled(duplicate.correlation)
        }
        if let corrupt = conditions.corrupt {
            parameters.corrupt = NetemProbability.scaled(corrupt.probability)
            parameters.corruptCorrelation = NetemProbability.scaled(corrupt.correlation)
        }
        if let reorder = conditions.reorder, reorder.probability > 0 {
            parameters.reorder = NetemProbability.scaled(reorder.probability)
            parameters.reorderCorrelation = NetemProbability.scaled(reorder.correlation)
            parameters.gap = reorder.gap
        }
        if let slot = conditions.slot {
            parameters.slot = NetemSlot(
                minDelay: Int64(slot.minDelay), maxDelay: Int64(slot.maxDelay),
                maxPackets: Int32(clamping: slot.packets ?? 0), maxBytes: Int32(clamping: slot.bytes ?? 0))
        }
        if let rate = conditions.rate { parameters.rate = rate / 8 }
        parameters.ecn = conditions.ecn
        parameters.limit = conditions.effectiveQueueLimit(extraDelay: extraDelay)
        return parameters
    }
}

extension NetemMapping {
    /// What a netem qdisc's parameters (as the kernel reports them) mean in profile terms: the inverse of
    /// ``parameters(for:extraDelay:distributions:)``. Each probability is the shortest percentage that
    /// scales to the same wire value (the kernel's 25% reads back as 25%, not 25.0000000058%); the queue
    /// limit is explicit. What the kernel does not report stays out: the distribution table (so
    /// `distribution` is nil), and the form the loss was written in (a correlated random loss is sent as its
    /// Gilbert model and reads back as one; ``NetemBackend`` shows the recorded profile's form when the two
    /// agree).
    public static func conditions(from parameters: NetemParameters) -> LinkConditions {
        let fraction = NetemProbability.shortestFraction
        var conditions = LinkConditions(delay: parameters.delay, jitter: parameters.jitter, queueLimit: parameters.limit, ecn: parameters.ecn)
        if parameters.jitter > 0 {
            conditions.delayCorrelation = fraction(parameters.delayCorrelation)
            // netem has one jitter model, its own.
            conditions.jitterModel = .netem
        }
        if let model = parameters.lossModel {
            switch model {
            case let .gilbertElliott(p, r, h, k1):
                conditions.loss = .gilbertElliott(p: fraction(p), r: fraction(r), oneMinusH: fraction(UInt32.max - h), oneMinusK: fraction(k1))
            case let .fourState(p13, p31, p32, p14, p23):
                conditions.loss = .fourState(p13: fraction(p13), p31: fraction(p31), p32: fraction(p32), p23: fraction(p23), p14: fraction(p14))
            }
        } else if parameters.loss > 0 {
            conditions.loss = .random(probability: fraction(parameters.loss), correlation: fraction(parameters.lossCorrelation))
        }
        if parameters.duplicate > 0 {
            conditions.duplicate = Chance(fraction(parameters.duplicate), correlation: fraction(parameters.duplicateCorrelation))
        }
        if parameters.corrupt > 0 {
            conditions.corrupt = Chance(fraction(parameters.corrupt), correlation: fraction(parameters.corruptCorrelation))
        }
        if parameters.reorder > 0 {
            conditions.reorder = Reorder(fraction(parameters.reorder), correlation: fraction(parameters.reorderCorrelation), gap: max(parameters.gap, 1))
        }
        if let slot = parameters.slot {
            conditions.slot = Slot(
                minDelay: UInt64(max(0, slot.minDelay)), maxDelay: UInt64(max(0, slot.maxDelay)),
                packets: slot.maxPackets > 0 ? UInt32(slot.maxPackets) : nil, bytes: slot.maxBytes > 0 ? UInt32(slot.maxBytes) : nil)
        }
        conditions.rate = parameters.rate.map { $0 * 8 }
        return conditions
    }
}

extension NetemProbability {
    /// The fraction with the shortest decimal percentage that ``scaled(_:)`` turns into `value`, read as a
    /// profile reads it: netem's 32-bit probabilities hold about nine digits, so `"25%"` sent reads back as
    /// `"25%"` and `"0.3%"` as `"0.3%"`.
    public static func shortestFraction(_ value: UInt32) -> Double {
        if value == 0 { return 0 }
        if value == UInt32.max { return 1 }
        let exact = fraction(value)
        var scale: UInt64 = 1
        for digits in 0...12 {
            let whole = UInt64((exact * 100 * Double(scale)).rounded())
            var text = String(whole)
            if digits > 0 {
                if text.count <= digits { text = String(repeating: "0", count: digits - text.count + 1) + text }
                text.insert(".", at: text.index(text.endIndex, offsetBy: -digits))
            }
            if let candidate = try? Quantity.percentage(text + "%"), scaled(candidate) == value { return candidate }
            scale *= 10
        }
        return exact
    }
}

import Profiles
import RouteNetlink

/// Turns a profile direction (user intent: fractions, nanoseconds, bits per second) into netem's wire
/// parameters (scaled u32 probabilities, bytes per second, a queue limit).
public enum NetemMapping {
    /// The queue limit used when a profile does not set one: large enough that the bandwidth-delay
    /// product never tail-drops (netem's default of 1000 packets silently does at high rate × delay).
    ///
    /// The bandwidth-delay product (delay + jitter + slot wait, at the profile's rate, or 1 Gbit/s without
    /// one) counted in 64-byte packets with 25% headroom, or four times it in 1500-byte packets, whichever
    /// is larger; at least 1000 (netem's default), at most 100 000.
    public static func derivedQueueLimit(for conditions: LinkConditions, extraDelay: UInt64 = 0) -> UInt32 {
        let wait = Double(conditions.delay + conditions.jitter + extraDelay + (conditions.slot?.maxDelay ?? 0)) / 1e9
        let bytesInFlight = Double(conditions.rate ?? 1_000_000_000) / 8 * wait
        // The limit counts packets, not bytes: small packets (64-byte frames, e.g. ACKs or probes) fill it
        // fastest. Size it for those, with headroom, and never below four full-size products.
        let smallPackets = (bytesInFlight / 64 * 1.25).rounded(.up)
        let fullPackets = (bytesInFlight / 1500 * 4).rounded(.up)
        return UInt32(min(max(1000, smallPackets, fullPackets), 100_000))
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
        parameters.limit = conditions.queueLimit ?? derivedQueueLimit(for: conditions, extraDelay: extraDelay)
        return parameters
    }
}

/// The queue limit a direction gets when its profile sets none, shared by every backend so that netem and
/// the userspace engine drop at the same depth.
extension LinkConditions {
    /// The queue limit in packets used when ``queueLimit`` is `nil`: large enough that the bandwidth-delay
    /// product never tail-drops (netem's default `limit 1000` silently does at high rate × delay).
    ///
    /// The bandwidth-delay product (delay (a delay trace's largest) + jitter + `extraDelay` + slot wait, at
    /// ``rate``, or 1 Gbit/s without one) counted in 64-byte packets with 25% headroom, or four times it in
    /// 1500-byte packets, whichever is larger; at least 1000 (netem's default), at most 100 000.
    public func derivedQueueLimit(extraDelay: UInt64 = 0) -> UInt32 {
        let propagation = max(delay, delayTrace.map { UInt64($0.maximum) } ?? 0)
        let wait = Double(propagation + jitter + extraDelay + (slot?.maxDelay ?? 0)) / 1e9
        let bytesInFlight = Double(rate ?? 1_000_000_000) / 8 * wait
        // The limit counts packets, not bytes: small packets (64-byte frames, e.g. ACKs or probes) fill it
        // fastest. Size it for those, with headroom, and never below four full-size products.
        let smallPackets = (bytesInFlight / 64 * 1.25).rounded(.up)
        let fullPackets = (bytesInFlight / 1500 * 4).rounded(.up)
        return UInt32(min(max(1000, smallPackets, fullPackets), 100_000))
    }

    /// The queue limit in packets in force: a DropTail ``queue`` in packets, or ``queueLimit``, when the
    /// profile sets one, else ``derivedQueueLimit(extraDelay:)`` (netem's `limit`).
    public func effectiveQueueLimit(extraDelay: UInt64 = 0) -> UInt32 {
        if let queue, queue.discipline == .dropTail, case .packets(let limit) = queue.limit { return limit }
        return queueLimit ?? derivedQueueLimit(extraDelay: extraDelay)
    }
}

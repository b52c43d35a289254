/// The engine's pseudo-random numbers: xoshiro256** (Blackman and Vigna), seeded through SplitMix64.
///
/// Deterministic for a seed, so a run can be replayed and tests use fixed seeds. netem uses the kernel's
/// `prandom_u32_state`; the generator differs, the way its numbers are used does not.
struct EmulatorRandom: RandomNumberGenerator {
    private var s0: UInt64
    private var s1: UInt64
    private var s2: UInt64
    private var s3: UInt64

    /// A generator whose state is expanded from `seed` with SplitMix64 (never all zero).
    init(seed: UInt64) {
        var state = seed
        func splitMix() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        s0 = splitMix()
        s1 = splitMix()
        s2 = splitMix()
        s3 = splitMix()
    }

    @inline(__always)
    mutating func next() -> UInt64 {
        let result = ((s1 &* 5) << 7 | (s1 &* 5) >> 57) &* 9
        let t = s1 << 17
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = s3 << 45 | s3 >> 19
        return result
    }

    /// 32 uniform bits, as netem's `prandom_u32`.
    @inline(__always)
    mutating func nextUInt32() -> UInt32 { UInt32(truncatingIfNeeded: next() >> 32) }

    /// A uniform integer in 0..<bound (bound > 0), by Lemire's multiply-shift (bias below 2^-32 for the
    /// bounds used here).
    @inline(__always)
    mutating func next(below bound: UInt64) -> UInt64 { next().multipliedFullWidth(by: bound).high }
}

/// netem's wire scale for a probability: a fraction from 0 to 1 as a 32-bit integer (`UINT32_MAX` = 1).
enum ScaledProbability {
    /// The 32-bit value of `fraction` (clamped to 0...1), rounded as tc does.
    static func scaled(_ fraction: Double) -> UInt32 {
        let clamped = min(max(fraction.isNaN ? 0 : fraction, 0), 1)
        return UInt32((clamped * Double(UInt32.max)).rounded(.toNearestOrEven))
    }
}

/// netem's correlated random numbers (`get_crandom`): each output is a weighted average of a fresh
/// uniform number and the previous output, with the correlation as the previous output's weight.
///
/// What this does to the numbers: they stay uniform in mean (2^31) but gather towards the middle; their
/// standard deviation shrinks by √((1 − c)/(1 + c)) (c = 0.25: ×0.77; c = 0.5: ×0.58). A probability
/// compared against them therefore fires less often than asked for small probabilities, and a delay
/// distribution sampled through them is narrower than its table. linkcond keeps this for delay, duplicate,
/// corrupt and reorder so both backends behave alike; correlated *loss* is mapped to a Gilbert model
/// instead (see ``LossGenerator``), which keeps the mean.
struct CorrelatedRandom {
    /// The previous output's weight, netem's `rho` (0: independent numbers).
    let rho: UInt32
    private var last: UInt32

    /// A sequence with `correlation` (0 to 1); the first "previous" value is random, as in netem.
    init(correlation: Double, random: inout EmulatorRandom) {
        rho = ScaledProbability.scaled(correlation)
        last = random.nextUInt32()
    }

    /// The next number, 0 to `UInt32.max`.
    @inline(__always)
    mutating func next(_ random: inout EmulatorRandom) -> UInt32 {
        let value = UInt64(random.nextUInt32())
        if rho == 0 { return UInt32(value) }
        let weight = UInt64(rho) + 1
        // At most (2^32 - 1) * 2^32: no overflow.
        let answer = (value * ((1 << 32) - weight) + UInt64(last) * weight) >> 32
        last = UInt32(truncatingIfNeeded: answer)
        return last
    }
}

/// A yes/no decision with netem's probability and correlation semantics (`duplicate`, `corrupt`,
/// `reorder`): it happens when the scaled probability is non-zero and at least the next correlated number.
struct CorrelatedChance {
    /// The scaled probability; 0 never happens.
    let threshold: UInt32
    private var numbers: CorrelatedRandom

    /// A decision that happens with `probability` and `correlation`.
    init(probability: Double, correlation: Double, random: inout EmulatorRandom) {
        threshold = ScaledProbability.scaled(probability)
        numbers = CorrelatedRandom(correlation: correlation, random: &random)
    }

    /// A decision that never happens.
    static func never(random: inout EmulatorRandom) -> CorrelatedChance {
        CorrelatedChance(probability: 0, correlation: 0, random: &random)
    }

    /// Whether it happens this time. Draws a number only when the probability is non-zero.
    @inline(__always)
    mutating func happens(_ random: inout EmulatorRandom) -> Bool {
        threshold != 0 && threshold >= numbers.next(&random)
    }
}

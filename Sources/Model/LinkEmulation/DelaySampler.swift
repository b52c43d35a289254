#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Profiles

/// Draws each frame's propagation delay: netem's `delay TIME JITTER CORRELATION distribution NAME`
/// (`tabledist` in `sch_netem.c`) under the `netem` jitter model, or the smooth process of
/// ``SmoothJitter`` under the `ordered` one (mean `delay` exactly, the table's shape, correlation in time).
///
/// The `netem` model, per frame:
/// - uniform (netem's default): evenly spread over [delay - jitter, delay + jitter).
/// - normal, pareto, paretonormal: delay + jitter × v, where v is the value iproute2's table generator
///   (`netem/normal.c`, `pareto.c`, `paretonormal.c`) puts at quantile u, computed here instead of read
///   from a table file (see ``tableValue(_:at:)``).
///
/// The quantile u comes from netem's correlated random numbers (``CorrelatedRandom``), so a correlation
/// narrows the distribution as it does in netem. A negative result is clamped to 0 (netem sends such a
/// frame at once too).
struct DelaySampler {
    /// The mean delay in nanoseconds (netem's `latency`).
    let delay: UInt64
    /// A delay trace in place of ``delay``.
    let delayTrace: StepTrace?
    /// The jitter in nanoseconds (netem's `jitter`, its σ for table distributions).
    let jitter: UInt64
    /// The shape of the variation.
    let distribution: DelayDistribution
    /// The jitter model.
    let model: JitterModel
    private var numbers: CorrelatedRandom
    private var smooth: SmoothJitter

    /// A sampler for `conditions`' delay, jitter, correlation and distribution.
    init(_ conditions: LinkConditions, _ random: inout EmulatorRandom) {
        delay = conditions.delay
        delayTrace = conditions.delayTrace
        jitter = conditions.jitter
        distribution = conditions.distribution ?? .uniform
        model = conditions.effectiveJitterModel
        numbers = CorrelatedRandom(correlation: conditions.delayCorrelation, random: &random)
        smooth = SmoothJitter(jitter: jitter, distribution: distribution, correlation: conditions.delayCorrelation)
    }

    /// Whether the sampler draws the same delays as one built from `conditions` would.
    func isConfigured(as conditions: LinkConditions) -> Bool {
        delay == conditions.delay && delayTrace == conditions.delayTrace && jitter == conditions.jitter
            && (jitter == 0 || (distribution == (conditions.distribution ?? .uniform) && numbers.rho
                == ScaledProbability.scaled(conditions.delayCorrelation) && model == conditions.effectiveJitterModel))
    }

    /// The delay in nanoseconds, never negative, of the frame entering the delay line at `time` (times never
    /// decrease), `elapsed` nanoseconds after the direction's first frame (where a delay trace starts).
    @inline(__always)
    mutating func next(at time: MonotonicNanoseconds, elapsed: UInt64, _ random: inout EmulatorRandom) -> UInt64 {
        let base = delayTrace.map { UInt64($0.value(at: elapsed)) } ?? delay
        if jitter == 0 { return base }
        if model == .ordered { return shifted((Double(jitter) * smooth.offset(at: time, &random)).rounded(), base: base) }
        let number = numbers.next(&random)
        if distribution == .uniform {
            // [delay - jitter, delay + jitter): a multiply-shift where netem takes rnd % (2 × jitter).
            let product = UInt64(number).multipliedFullWidth(by: 2 * jitter)
            let offset = product.high << 32 | product.low >> 32
            return offset >= jitter ? base + (offset - jitter) : base - min(base, jitter - offset)
        }
        let quantile = (Double(number) + 0.5) * 0x1p-32
        return shifted((Double(jitter) * Self.tableValue(distribution, at: quantile)).rounded(), base: base)
    }

    /// `base` moved by `shift` nanoseconds, clamped at 0.
    @inline(__always)
    private func shifted(_ shift: Double, base delay: UInt64) -> UInt64 {
        if shift >= 0 { return delay + UInt64(shift) }
        let magnitude = UInt64(-shift)
        return magnitude >= delay ? 0 : delay - magnitude
    }

    /// The largest and smallest table values: iproute2's tables hold 16-bit integers scaled by
    /// `NETEM_DIST_SCALE` (8192), so values are clamped to [-4, 32767/8192].
    static let tableRange = -32768.0 / 8192...32767.0 / 8192

    /// The value, in units of jitter, that iproute2's table for `distribution` holds at quantile
    /// `u` (0 < u < 1), before netem adds delay + jitter × value:
    /// - normal: the standard normal quantile Φ⁻¹(u) (mean 0, σ 1);
    /// - pareto: (4/3)((1 - u)^(-1/3) - 1.5), a Pareto of shape 3 moved to mean 0 (σ 1.155 before the
    ///   table's clamp at 4; about 0.82 after it, with a mean of about -0.033);
    /// - paretonormal: (Φ⁻¹(u) + 3 × pareto(u)) / 4, both taken at the same u;
    /// - uniform: 2u - 1 (netem computes uniform without a table).
    static func tableValue(_ distribution: DelayDistribution, at u: Double) -> Double {
        let value: Double
        switch distribution {
        case .uniform: value = 2 * u - 1
        case .normal: value = normalQuantile(u)
        case .pareto: value = pareto(u)
        case .paretonormal: value = (min(max(normalQuantile(u), tableRange.lowerBound), tableRange.upperBound) + 3 * pareto(u)) / 4
        }
        return min(max(value, tableRange.lowerBound), tableRange.upperBound)
    }

    private static func pareto(_ u: Double) -> Double {
        min((4.0 / 3.0) * (1 / cbrt(1 - u) - 1.5), tableRange.upperBound)
    }

    /// Φ⁻¹(p) by Acklam's rational approximation (relative error below 1.2e-9), 0 < p < 1.
    static func normalQuantile(_ p: Double) -> Double {
        let low = 0.02425
        if p < low || p > 1 - low {
            let q = (-2 * log(p < low ? p : 1 - p)).squareRoot()
            var numerator = -7.784894002430293e-03
            numerator = numerator * q - 3.223964580411365e-01
            numerator = numerator * q - 2.400758277161838e+00
            numerator = numerator * q - 2.549732539343734e+00
            numerator = numerator * q + 4.374664141464968e+00
            numerator = numerator * q + 2.938163982698783e+00
            var denominator = 7.784695709041462e-03
            denominator = denominator * q + 3.224671290700398e-01
            denominator = denominator * q + 2.445134137142996e+00
            denominator = denominator * q + 3.754408661907416e+00
            denominator = denominator * q + 1
            let x = numerator / denominator
            return p < low ? x : -x
        }
        let q = p - 0.5
        let r = q * q
        var numerator = -3.969683028665376e+01
        numerator = numerator * r + 2.209460984245205e+02
        numerator = numerator * r - 2.759285104469687e+02
        numerator = numerator * r + 1.383577518672690e+02
        numerator = numerator * r - 3.066479806614716e+01
        numerator = numerator * r + 2.506628277459239e+00
        var denominator = -5.447609879822406e+01
        denominator = denominator * r + 1.615858368580409e+02
        denominator = denominator * r - 1.556989798598866e+02
        denominator = denominator * r + 6.680131188771972e+01
        denominator = denominator * r - 1.328068155288572e+01
        denominator = denominator * r + 1
        return numerator * q / denominator
    }
}

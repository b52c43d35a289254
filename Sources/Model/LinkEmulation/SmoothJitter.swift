#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Profiles

/// The `ordered` jitter model: the delay of a frame entering the delay line at time t is
/// d(t) = delay + jitter × (v(Φ(g(t))) − m), where g is a smooth stationary Gaussian process with unit
/// variance, Φ the standard normal distribution function, v the profile distribution's table value at a
/// quantile (``DelaySampler/tableValue(_:at:)``) and m that table's mean.
///
/// Because g(t) is standard normal at every instant, whatever the times at which it is sampled, the delays
/// have exactly the profile's distribution (mean `delay`, the table's spread) at any packet rate. Because
/// g is differentiable, two frames close in time get close delays: frame k+1 overtakes frame k only when
/// the delay falls faster than time passes (d' < −1). The correlation time is chosen so that happens with
/// probability 1e-4 at any instant (see ``slopeBound(_:)``); the rare frame that would overtake waits for
/// the one before it instead (the emulator counts it as an order hold).
///
/// The jitter correlation c (0 to 1) lengthens the correlation time by 1/(1 − c): the delays wander more
/// slowly, with the same distribution (netem's correlation narrows the distribution instead); at 100% the
/// delay is a fixed draw.
struct SmoothJitter {
    /// The process's rate λ = √3/ℓ, per nanosecond (ℓ: the Matérn correlation length).
    let rate: Double
    private let distribution: DelayDistribution
    private let centre: Double
    private var process: MaternProcess

    /// The model for `jitter` nanoseconds of `distribution` with `correlation`.
    init(jitter: UInt64, distribution: DelayDistribution, correlation: Double) {
        self.distribution = distribution
        centre = Self.tableMean(distribution)
        rate = jitter == 0 ? 0 : Self.slopeBound(distribution) * max(0, 1 - correlation) / Double(jitter)
        process = MaternProcess()
    }

    /// The table value minus its mean, in units of jitter, for the frame entering the delay line at `time`
    /// (times never decrease).
    @inline(__always)
    mutating func offset(at time: MonotonicNanoseconds, _ random: inout EmulatorRandom) -> Double {
        let g = process.value(at: time, rate: rate, &random)
        let range = DelaySampler.tableRange
        if distribution == .normal { return min(max(g, range.lowerBound), range.upperBound) - centre }
        return DelaySampler.tableValue(distribution, at: 0.5 * erfc(-g * 0.5.squareRoot())) - centre
    }

    /// The correlation length ℓ in units of jitter for `distribution` with no correlation: √3 / c*.
    static func correlationLength(_ distribution: DelayDistribution) -> Double { 3.0.squareRoot() / slopeBound(distribution) }

    /// c* = jitter × λ at which the delay's slope d'(t) = jitter × v'(g) × g'(t) is below −1 with probability
    /// 1e-4 (g' is normal with variance λ² and independent of g): E over g of Φ(−1 / (c* v'(g))) = 1e-4,
    /// solved numerically for each table (a unit test recomputes it). The correlation length is then
    /// 4.65 × jitter (uniform), 6.44 × (normal), 18.7 × (pareto) and 15.1 × (paretonormal): the steeper the
    /// table, the slower the process.
    static func slopeBound(_ distribution: DelayDistribution) -> Double {
        switch distribution {
        case .uniform: 0.372214
        case .normal: 0.268889
        case .pareto: 0.092751
        case .paretonormal: 0.114707
        }
    }

    /// The mean of the table values over quantiles in (0, 1): 0 for the symmetric tables; for pareto
    /// −(2/3)/c², c = 1.5 + 0.75 × 32767/8192 (the table's clamp at 4); three quarters of it (plus a
    /// negligible clamp) for paretonormal, whose normal quarter has mean 0 (a unit test recomputes both).
    static func tableMean(_ distribution: DelayDistribution) -> Double {
        switch distribution {
        case .uniform, .normal: 0
        case .pareto: -0.032923
        case .paretonormal: -0.024692
        }
    }
}

/// A stationary Gaussian process with unit variance and the Matérn-3/2 covariance (1 + λτ)e^(−λτ) — the
/// critically damped second-order Gauss–Markov process, whose paths are differentiable —, advanced exactly
/// over any time step: its state is the value and the slope divided by λ, two independent standard normals
/// at any instant, and a step of Δ multiplies the state by e^(−u)[[1+u, u], [−u, 1−u]] (u = λΔ) and adds
/// Gaussian noise with the covariance that keeps the state's unit variance. O(1) per sample, no history.
struct MaternProcess {
    private var value = 0.0
    private var slope = 0.0
    private var time: MonotonicNanoseconds?

    /// A process whose state is drawn from its stationary distribution when it is first sampled.
    init() {}

    /// The value at `time` (not earlier than the last time asked; an earlier one is taken as that time).
    @inline(__always)
    mutating func value(at now: MonotonicNanoseconds, rate: Double, _ random: inout EmulatorRandom) -> Double {
        guard let last = time else {
            (value, slope) = Self.normalPair(&random)
            time = now
            return value
        }
        time = max(last, now)
        guard now > last, rate > 0 else { return value }
        step(u: rate * Double(now - last), &random)
        return value
    }

    /// Advances by u = λΔ > 0.
    mutating func step(u: Double, _ random: inout EmulatorRandom) {
        let decay = exp(-u)
        let newValue = decay * ((1 + u) * value + u * slope)
        let newSlope = decay * (-u * value + (1 - u) * slope)
        let (q11, q12, q22) = Self.noiseCovariance(u)
        let a = q11.squareRoot()
        let b = a > 0 ? q12 / a : 0
        let c = max(0, q22 - b * b).squareRoot()
        let (z1, z2) = Self.normalPair(&random)
        value = newValue + a * z1
        slope = newSlope + b * z1 + c * z2
    }

    /// The covariance of the noise a step of u adds: I − A Aᵀ, i.e. 1 − e^(−2u)(1 + 2u + 2u²),
    /// 2u²e^(−2u) and 1 − e^(−2u)(1 − 2u + 2u²). The diagonal terms are integrals of 4s²e^(−2s) and
    /// 4(1 − s)²e^(−2s) over [0, u], summed as series below u = 0.5, where the closed forms would cancel.
    static func noiseCovariance(_ u: Double) -> (Double, Double, Double) {
        let e2 = exp(-2 * u)
        let q12 = 2 * u * u * e2
        guard u < 0.5 else {
            return (1 - e2 * (1 + 2 * u + 2 * u * u), q12, 1 - e2 * (1 - 2 * u + 2 * u * u))
        }
        // I_k = ∫₀ᵘ sᵏ e^(−2s) ds = Σⱼ (−2)ʲ u^(j+k+1) / (j! (j+k+1)).
        func integral(_ k: Int) -> Double {
            var sum = 0.0
            var term = pow(u, Double(k + 1))  // (−2u)ʲ/j! × u^(k+1)
            for j in 0..<30 {
                sum += term / Double(j + k + 1)
                term *= -2 * u / Double(j + 1)
                if abs(term) < 1e-18 * abs(sum) { break }
            }
            return sum
        }
        let i0 = integral(0)
        let i1 = integral(1)
        let i2 = integral(2)
        return (4 * i2, q12, 4 * (i0 - 2 * i1 + i2))
    }

    /// Two independent standard normals (Box–Muller on 53-bit uniforms).
    @inline(__always)
    static func normalPair(_ random: inout EmulatorRandom) -> (Double, Double) {
        let u1 = (Double(random.next() >> 11) + 1) * 0x1p-53  // (0, 1]
        let u2 = Double(random.next() >> 11) * 0x1p-53
        let radius = (-2 * log(u1)).squareRoot()
        let angle = 2 * Double.pi * u2
        return (radius * cos(angle), radius * sin(angle))
    }
}

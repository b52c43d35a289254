#if canImport(Glibc)
    import Glibc
#endif
@testable import LinkEmulation
import Profiles
import XCTest

/// The `ordered` jitter model against its promise: frames stay in order, and the one-way delays keep the
/// profile's mean and spread at 10 to 50 000 frames/s, periodic or Poisson; and the `netem` model's
/// reordering. Every check is judged against its standard error, computed from the effective sample size
/// of the correlated delays, and each test first checks that it has the power to see a 5% error.
final class OrderedJitterTests: XCTestCase {
    /// What one run measured: every frame's delay in order of arrival, and the frames that left out of order.
    private struct Run {
        var delays: [Double] = []
        var outOfOrder = 0
        var orderHolds: UInt64 = 0
        var jitterReordered: UInt64 = 0
    }

    /// Offers `count` 100-byte frames at the times `arrival(k)` (increasing) to `conditions` and lets each
    /// leave when due, recording its delay; no rate, so frames never wait behind each other in a queue.
    private func run(_ conditions: LinkConditions, count: Int, seed: UInt64, arrival: (Int) -> UInt64) -> Run {
        let emulator = DirectionEmulator(conditions: conditions, options: DirectionOptions(direction: .downlink, seed: seed))
        var frame = FrameBuilder.frame(protocol: 17, payload: 58, id: 0)
        var arrivals = [UInt64](repeating: 0, count: count)
        var result = Run()
        result.delays = [Double](repeating: .nan, count: count)
        var lastID = -1
        func depart(upTo time: UInt64) {
            while let next = emulator.nextDeparture, next <= time {
                emulator.departDue(at: next) { bytes, due in
                    let id = Int(bytes.loadUnaligned(fromByteOffset: bytes.count - 8, as: UInt64.self))
                    if id < lastID { result.outOfOrder += 1 }
                    lastID = max(lastID, id)
                    result.delays[id] = Double(due - arrivals[id])
                }
            }
        }
        for k in 0..<count {
            let time = arrival(k)
            arrivals[k] = time
            depart(upTo: time)
            let verdict = frame.withUnsafeMutableBytes { bytes in
                bytes.storeBytes(of: UInt64(k), toByteOffset: bytes.count - 8, as: UInt64.self)
                return emulator.offer(bytes, at: time)
            }
            if verdict == .forwardNow {
                if k < lastID { result.outOfOrder += 1 }
                lastID = max(lastID, k)
                result.delays[k] = 0
            }
        }
        depart(upTo: .max)
        result.orderHolds = emulator.counters.orderHolds
        result.jitterReordered = emulator.counters.jitterReorderedFrames
        return result
    }

    /// Arrival times: every 1/rate seconds, or a Poisson process of that rate (seeded).
    private func arrivals(rate: Double, poisson: Bool, count: Int, seed: UInt64) -> [UInt64] {
        var random = EmulatorRandom(seed: seed)
        var time = Double(t0)
        var times: [UInt64] = []
        times.reserveCapacity(count)
        for _ in 0..<count {
            let gap = poisson ? -log((Double(random.next() >> 11) + 1) * 0x1p-53) / rate : 1 / rate
            time += gap * 1e9
            times.append(UInt64(time))
        }
        return times
    }

    /// Mean, standard deviation and fourth standardized moment of the table value (units of jitter), by the
    /// midpoint rule over the quantile.
    private func tableMoments(_ distribution: DelayDistribution) -> (mean: Double, sigma: Double, kurtosis: Double) {
        let steps = 200_000
        let values = (0..<steps).map { DelaySampler.tableValue(distribution, at: (Double($0) + 0.5) / Double(steps)) }
        let mean = values.reduce(0, +) / Double(steps)
        let variance = values.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(steps)
        let fourth = values.reduce(0) { $0 + pow($1 - mean, 4) } / Double(steps)
        return (mean, variance.squareRoot(), fourth / (variance * variance))
    }

    /// The Matérn-3/2 correlation at lag `tau` ns for rate λ per ns.
    private func matern(_ tau: Double, _ lambda: Double) -> Double { (1 + lambda * tau) * exp(-lambda * tau) }

    /// The sums 1 + 2Σ ρ(lag) and 1 + 2Σ ρ(lag)² over the lags to the other frames, which divide the frame
    /// count into the effective sample sizes of the mean and of the variance: summed over the lags k/rate for
    /// periodic frames, and their expectation 2 × rate × ∫ρ (= 4 rate/λ) and ∫ρ² (= 1.25/λ) for Poisson
    /// ones. The delays' correlation is at most the process's (a monotone map of a Gaussian correlates no
    /// more than the Gaussian itself).
    private func correlationSums(rate: Double, poisson: Bool, lambda: Double) -> (mean: Double, variance: Double) {
        let lambdaPerSecond = lambda * 1e9
        if poisson { return (1 + 4 * rate / lambdaPerSecond, 1 + 2.5 * rate / lambdaPerSecond) }
        var first = 0.0
        var second = 0.0
        var k = 1.0
        // Lags beyond 12/λ contribute below 1e-4 each.
        while k / rate < 12 / lambdaPerSecond {
            let rho = matern(k / rate * 1e9, lambda)
            first += rho
            second += rho * rho
            k += 1
        }
        return (1 + 2 * first, 1 + 2 * second)
    }

    /// Runs `distribution` at `rate` frames/s for as many frames as it takes to see a 5% error in σ with
    /// margin (3.29 standard errors within 4%), and checks mean, σ and order. Returns the frame count.
    @discardableResult
    private func check(
        _ distribution: DelayDistribution, rate: Double, poisson: Bool, jitter: UInt64, seed: UInt64, model: JitterModel = .ordered
    ) -> Int {
        let label = "\(distribution), \(Int(rate)) frames/s \(poisson ? "Poisson" : "periodic"), jitter \(Double(jitter) / 1e6) ms"
        let delay = 20 * jitter
        let conditions = LinkConditions(delay: delay, jitter: jitter, distribution: distribution, jitterModel: model)
        let moments = tableMoments(distribution)
        let lambda = SmoothJitter.slopeBound(distribution) / Double(jitter)
        let sums = correlationSums(rate: rate, poisson: poisson, lambda: lambda)
        // Var(s²) ≈ (κ − 1)σ⁴ × sums.variance / n for a correlated sequence (κ − 1 = 2 for a normal); the
        // larger of κ − 1 and 2 is taken.
        let excess = max(moments.kurtosis - 1, 2)
        let count = Int((excess * sums.variance * pow(3.29 / 0.04, 2) / 4).rounded(.up))
        let times = arrivals(rate: rate, poisson: poisson, count: count, seed: seed ^ 0x5eed)
        let result = run(conditions, count: count, seed: seed) { times[$0] }
        XCTAssertFalse(result.delays.contains { $0.isNaN }, "\(label): every frame left")
        let sigma = Double(jitter) * moments.sigma
        let n = Double(count)
        let mean = result.delays.reduce(0, +) / n
        let measuredSigma = (result.delays.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / (n - 1)).squareRoot()
        let meanError = sigma * (sums.mean / n).squareRoot()
        let sigmaError = sigma * (excess * sums.variance / n).squareRoot() / 2
        XCTAssertLessThan(3.29 * sigmaError / sigma, 0.05, "\(label): the run is long enough to see a 5% error in σ")
        XCTAssertEqual(mean / Double(delay), 1, accuracy: 0.05, "\(label): mean within 5% of the delay")
        assertWithinBound(mean, expected: Double(delay), standardDeviation: meanError, "\(label): mean")
        XCTAssertEqual(
            measuredSigma / sigma, 1, accuracy: 0.05, "\(label): σ within 5% (measured \(measuredSigma / 1e6) ms of \(sigma / 1e6) ms)")
        XCTAssertEqual(result.outOfOrder, 0, "\(label): frames in order")
        XCTAssertLessThan(Double(result.orderHolds) / n, 1e-3, "\(label): order holds are rare (\(result.orderHolds) of \(count))")
        return count
    }

    func testUniformAndNormalKeepTheirMeanAndSpreadInOrderAtEveryRate() {
        // Jitters of 10, 10, 2 and 0.2 ms: 0.1, 1, 2 and 10 frames per jitter, so frames crowd each other
        // at the higher rates (the model's promise is the same at any spacing; the runs stay short).
        for distribution in [DelayDistribution.uniform, .normal] {
            for poisson in [false, true] {
                check(distribution, rate: 10, poisson: poisson, jitter: 10 * ms, seed: 1)
                check(distribution, rate: 100, poisson: poisson, jitter: 10 * ms, seed: 2)
                check(distribution, rate: 1_000, poisson: poisson, jitter: 2 * ms, seed: 3)
                check(distribution, rate: 50_000, poisson: poisson, jitter: 200_000, seed: 4)
            }
        }
    }

    func testParetoTablesKeepTheirMeanAndSpreadInOrder() {
        // Their correlation time is 15 to 19 jitters (steep tables need slower paths to stay in order).
        for distribution in [DelayDistribution.pareto, .paretonormal] {
            check(distribution, rate: 10, poisson: true, jitter: 5 * ms, seed: 5)
            check(distribution, rate: 1_000, poisson: true, jitter: ms, seed: 6)
        }
    }

    func testTheNetemModelKeepsItsSpreadButReorders() {
        // netem draws every frame's delay anew: the spread holds at any rate, and frames 1 ms apart with a
        // jitter of 10 ms overtake each other, as in netem.
        let jitter = 10 * ms
        let conditions = LinkConditions(delay: 200 * ms, jitter: jitter, jitterModel: .netem)
        let count = 20_000
        let result = run(conditions, count: count, seed: 9) { t0 + UInt64($0) * ms }
        let n = Double(count)
        let mean = result.delays.reduce(0, +) / n
        let sigma = (result.delays.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / (n - 1)).squareRoot()
        XCTAssertEqual(sigma / (Double(jitter) / 3.0.squareRoot()), 1, accuracy: 0.03, "uniform σ = jitter/√3")
        XCTAssertGreaterThan(result.outOfOrder, count / 4, "frames overtake each other")
        XCTAssertGreaterThan(result.jitterReordered, UInt64(count / 4), "and are counted")
        XCTAssertEqual(result.orderHolds, 0, "no frame waits for another")
    }

    func testCorrelationLengthensTheCorrelationTime() {
        // Normal jitter is the process itself: the delays' correlation at lag ℓ = √3/λ is 2.732 e^(−√3) =
        // 0.483; a 50% jitter correlation halves λ, which makes it 1.866 e^(−√3/2) = 0.785.
        let jitter = ms
        for (correlation, expected) in [(0.0, 0.4834), (0.5, 0.7849)] {
            let conditions = LinkConditions(delay: 20 * ms, jitter: jitter, delayCorrelation: correlation, distribution: .normal)
            let ell = SmoothJitter.correlationLength(.normal) * Double(jitter)
            let lag = UInt64(ell.rounded())
            let pairs = 4_000
            // Pairs of frames ℓ apart, each pair 40 ℓ after the last (nearly independent pairs).
            let result = run(conditions, count: 2 * pairs, seed: 13) { k in t0 + UInt64(k / 2) * 40 * lag + UInt64(k % 2) * lag }
            let x = stride(from: 0, to: 2 * pairs, by: 2).map { result.delays[$0] }
            let y = stride(from: 1, to: 2 * pairs, by: 2).map { result.delays[$0] }
            let mx = x.reduce(0, +) / Double(pairs)
            let my = y.reduce(0, +) / Double(pairs)
            let covariance = zip(x, y).reduce(0) { $0 + ($1.0 - mx) * ($1.1 - my) }
            let vx = x.reduce(0) { $0 + ($1 - mx) * ($1 - mx) }
            let vy = y.reduce(0) { $0 + ($1 - my) * ($1 - my) }
            let rho = covariance / (vx * vy).squareRoot()
            // The standard error of a sample correlation: (1 − ρ²)/√n.
            assertWithinBound(rho, expected: expected, standardDeviation: (1 - expected * expected) / Double(pairs).squareRoot(),
                "correlation \(correlation): delays ℓ apart")
        }
    }

    func testTheConstantsAreWhatTheirDefinitionsGive() {
        // tableMean: the mean of the table value; slopeBound: c with E_g[Φ(−1/(c v'(g)))] = 1e-4.
        for distribution in DelayDistribution.allCases {
            XCTAssertEqual(tableMoments(distribution).mean, SmoothJitter.tableMean(distribution), accuracy: 2e-5, "\(distribution) mean")
            let c = SmoothJitter.slopeBound(distribution)
            var probability = 0.0
            let step = 1e-4
            var g = -9.0
            while g < 9 {
                let u = { (x: Double) in 0.5 * erfc(-x / 2.0.squareRoot()) }
                let value = { (x: Double) in
                    distribution == .normal ? min(max(x, DelaySampler.tableRange.lowerBound), DelaySampler.tableRange.upperBound)
                        : DelaySampler.tableValue(distribution, at: u(x))
                }
                let slope = (value(g + step / 2) - value(g - step / 2)) / step
                let density = exp(-g * g / 2) / (2 * Double.pi).squareRoot()
                if slope > 0 { probability += 0.5 * erfc(1 / (c * slope) / 2.0.squareRoot()) * density * step }
                g += step
            }
            XCTAssertEqual(probability, 1e-4, accuracy: 3e-6, "\(distribution): the slope exceeds 1 with probability 1e-4")
        }
    }

    func testTheNoiseCovarianceIsContinuousAndKeepsUnitVariance() {
        // The series below u = 0.5 and the closed form above it agree at the seam, and a long run of steps
        // keeps the state's variance at 1.
        let below = MaternProcess.noiseCovariance(0.5.nextDown)
        let above = MaternProcess.noiseCovariance(0.5)
        XCTAssertEqual(below.0, above.0, accuracy: 1e-12)
        XCTAssertEqual(below.2, above.2, accuracy: 1e-12)
        let tiny = MaternProcess.noiseCovariance(1e-6)
        XCTAssertEqual(tiny.0 / (4.0 / 3.0 * 1e-18), 1, accuracy: 1e-5, "Q11 ≈ (4/3)u³")
        XCTAssertEqual(tiny.2 / 4e-6, 1, accuracy: 1e-5, "Q22 ≈ 4u")
        var random = EmulatorRandom(seed: 21)
        var process = MaternProcess()
        var sum = 0.0
        var squares = 0.0
        let count = 200_000
        var time = t0
        for k in 0..<count {
            time += UInt64(1 + k % 7) * 100_000
            let value = process.value(at: time, rate: 1e-6, &random)
            sum += value
            squares += value * value
        }
        let variance = squares / Double(count) - pow(sum / Double(count), 2)
        XCTAssertEqual(variance, 1, accuracy: 0.08, "unit variance along the path")
    }
}

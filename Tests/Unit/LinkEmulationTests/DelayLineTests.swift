#if canImport(Glibc)
    import Glibc
#endif
import LinkEmulation
import Profiles
import XCTest

/// The propagation delay line: jitter distributions with netem's meaning, order, clamping, reordering.
final class DelayLineTests: XCTestCase {
    private func udp(_ id: UInt64) -> [UInt8] { FrameBuilder.frame(protocol: 17, payload: 100, id: id) }

    // MARK: The distributions as iproute2's table generators define them

    /// The standard normal quantile by bisection on erfc: slow, simple, independent of the model's.
    private func normalQuantile(_ p: Double) -> Double {
        var low = -40.0
        var high = 40.0
        for _ in 0..<200 {
            let middle = (low + high) / 2
            if 0.5 * erfc(-middle / 2.0.squareRoot()) < p { low = middle } else { high = middle }
        }
        return (low + high) / 2
    }

    /// The value at quantile u of each table, in units of jitter, with the table's clamp to the 16-bit
    /// range (values are stored × 8192): normal.c, pareto.c (shape 3, moved to mean 0, scaled by 4/3) and
    /// paretonormal.c (a quarter normal plus three quarters Pareto at the same quantile).
    private func tableValue(_ distribution: DelayDistribution, _ u: Double) -> Double {
        let clamp = { (value: Double) in min(max(value, -32768.0 / 8192), 32767.0 / 8192) }
        let pareto = { (u: Double) in min((4.0 / 3.0) * (pow(1 - u, -1.0 / 3) - 1.5), 32767.0 / 8192) }
        switch distribution {
        case .uniform: return 2 * u - 1
        case .normal: return clamp(normalQuantile(u))
        case .pareto: return clamp(pareto(u))
        case .paretonormal: return clamp((clamp(normalQuantile(u)) + 3 * pareto(u)) / 4)
        }
    }

    /// Mean, variance and fourth central moment of the table value, by the midpoint rule over u.
    private func moments(_ distribution: DelayDistribution) -> (mean: Double, variance: Double, fourth: Double) {
        let steps = 100_000
        var values: [Double] = []
        values.reserveCapacity(steps)
        for step in 0..<steps { values.append(tableValue(distribution, (Double(step) + 0.5) / Double(steps))) }
        let mean = values.reduce(0, +) / Double(steps)
        let variance = values.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(steps)
        let fourth = values.reduce(0) { $0 + pow($1 - mean, 4) } / Double(steps)
        return (mean, variance, fourth)
    }

    func testTheClampedParetoHasTheClosedFormMoments() {
        // Pareto X of shape 3 on [1, ∞) cut at c = 1.5 + 0.75 × 32767/8192: E[min(X, c)] = 1.5 - 0.5/c²,
        // E[min(X, c)²] = 3 - 2/c. The table value is (4/3)(X - 1.5).
        let c = 1.5 + 0.75 * 32767.0 / 8192
        let mean = 1.5 - 0.5 / (c * c)
        let variance = 3 - 2 / c - mean * mean
        let numeric = moments(.pareto)
        XCTAssertEqual(numeric.mean, (4.0 / 3.0) * (mean - 1.5), accuracy: 1e-3)
        XCTAssertEqual(numeric.variance, (16.0 / 9.0) * variance, accuracy: 2e-3)
    }

    func testEachDistributionHasNetemsMeanAndStandardDeviation() {
        // The netem jitter model draws each frame's delay from the table (see OrderedJitterTests for the
        // ordered model, which centres the table on the delay).
        // Frames 1 s apart never wait for each other, so each latency is one sample of delay + jitter × v.
        let delay = 100 * ms
        let jitter = 10 * ms
        let count = 20_000
        for distribution in DelayDistribution.allCases {
            let harness = Harness(
                LinkConditions(delay: delay, jitter: jitter, distribution: distribution, jitterModel: .netem), seed: 42)
            for k in 0..<count { harness.offer(udp(UInt64(k)), at: t0 + UInt64(k) * second) }
            harness.drain()
            let samples = harness.departures.map { Double($0.time - (t0 + $0.id * second)) }
            XCTAssertEqual(samples.count, count)
            let expected = moments(distribution)
            let expectedMean = Double(delay) + Double(jitter) * expected.mean
            let expectedVariance = Double(jitter) * Double(jitter) * expected.variance
            let mean = samples.reduce(0, +) / Double(count)
            let variance = samples.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(count - 1)
            assertWithinBound(
                mean, expected: expectedMean, standardDeviation: (expectedVariance / Double(count)).squareRoot(),
                "\(distribution) mean")
            // The sample variance's standard error: √((μ₄ - σ⁴) / n).
            let fourth = pow(Double(jitter), 4) * expected.fourth
            assertWithinBound(
                variance, expected: expectedVariance,
                standardDeviation: ((fourth - expectedVariance * expectedVariance) / Double(count)).squareRoot(),
                "\(distribution) variance")
        }
        // The documented standard deviations, in units of jitter.
        XCTAssertEqual(moments(.uniform).variance.squareRoot(), 1 / 3.0.squareRoot(), accuracy: 1e-4)
        XCTAssertEqual(moments(.normal).variance.squareRoot(), 1, accuracy: 1e-3)
        XCTAssertEqual(moments(.pareto).variance.squareRoot(), 0.82, accuracy: 0.005)
    }

    func testCorrelationNarrowsTheDistributionAsDocumented() {
        // netem's correlated numbers average a fresh uniform with the previous output: their standard
        // deviation shrinks by √((1 - c)/(1 + c)). For uniform jitter J that is J/√3 × √(1/3) at c = 0.5.
        let jitter = 10 * ms
        let count = 50_000
        let harness = Harness(LinkConditions(delay: 100 * ms, jitter: jitter, delayCorrelation: 0.5, jitterModel: .netem), seed: 7)
        for k in 0..<count { harness.offer(udp(UInt64(k)), at: t0 + UInt64(k) * second) }
        harness.drain()
        let samples = harness.departures.map { Double($0.time - (t0 + $0.id * second)) }
        let mean = samples.reduce(0, +) / Double(count)
        let deviation = (samples.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(count - 1)).squareRoot()
        let expected = Double(jitter) / 3.0.squareRoot() * (1.0 / 3).squareRoot()
        XCTAssertEqual(deviation / expected, 1, accuracy: 0.03, "σ narrowed by √((1-c)/(1+c))")
        XCTAssertEqual(mean / Double(100 * ms), 1, accuracy: 0.002, "the mean stays the delay")
    }

    func testOrderIsKeptUnderHeavyJitterForEveryDistribution() {
        // Jitter of 40 ms on frames 100 µs apart: netem would reorder most of them; here none overtakes.
        for distribution in DelayDistribution.allCases {
            let harness = Harness(LinkConditions(delay: 50 * ms, jitter: 40 * ms, distribution: distribution), seed: 3)
            for k: UInt64 in 0..<5000 { harness.offer(udp(k), at: t0 + k * 100_000) }
            harness.drain()
            XCTAssertEqual(harness.departures.map(\.id), (0..<5000).map(UInt64.init), "\(distribution): order kept")
            let times = harness.departures.map(\.time)
            XCTAssertEqual(times, times.sorted(), "\(distribution): departures in time order")
            for departure in harness.departures {
                XCTAssertGreaterThanOrEqual(departure.time, t0 + departure.id * 100_000)
            }
        }
    }

    func testNegativeDelaysClampToZero() {
        // delay 1 ms ± 10 ms uniform: P(delay + jitter × v < 0) = P(v < -0.1) = 0.45; those frames go at once.
        let count = 20_000
        let harness = Harness(LinkConditions(delay: ms, jitter: 10 * ms), seed: 11)
        var immediate = 0
        for k in 0..<count where harness.offer(udp(UInt64(k)), at: t0 + UInt64(k) * second) == .forwardNow {
            immediate += 1
        }
        harness.drain()
        XCTAssertTrue(harness.departures.allSatisfy { $0.time >= t0 + $0.id * second }, "nothing leaves before it arrived")
        assertWithinBound(
            Double(immediate), expected: 0.45 * Double(count), standardDeviation: (Double(count) * 0.45 * 0.55).squareRoot(),
            "frames clamped to no delay")
    }

    // MARK: Reordering

    /// Offers `count` frames 1 ms apart into `delay 10ms reorder P gap G` and returns which were sent
    /// ahead, by the counter and by what left the wire.
    private func reorderRun(probability: Double, gap: UInt32, count: Int) -> (counted: Int, ahead: [Int], harness: Harness) {
        let harness = Harness(LinkConditions(delay: 10 * ms, reorder: Reorder(probability, gap: gap)), seed: 5)
        var ahead: [Int] = []
        for k in 0..<count where harness.offer(udp(UInt64(k)), at: t0 + UInt64(k) * ms) == .forwardNow { ahead.append(k) }
        harness.drain()
        return (Int(harness.emulator.counters.reorderedFrames), ahead, harness)
    }

    func testReorderWithAGapReordersAtTheRenewalRate() {
        // netem: after a reordered frame, gap - 1 frames take the delay; then each frame is sent ahead with
        // probability P. One reordering per cycle of (gap - 1) + Geometric(P) frames: rate P / (1 + (gap - 1)P).
        let probability = 0.25
        let gap: UInt32 = 5
        let count = 40_000
        let run = reorderRun(probability: probability, gap: gap, count: count)
        XCTAssertEqual(run.counted, run.ahead.count, "every reordered frame left at once")
        let cycleMean = Double(gap - 1) + 1 / probability
        let cycleVariance = (1 - probability) / (probability * probability)
        assertWithinBound(
            Double(run.counted), expected: Double(count) / cycleMean,
            standardDeviation: (Double(count) * cycleVariance / pow(cycleMean, 3)).squareRoot(), "reordered frames")
        XCTAssertGreaterThanOrEqual(run.ahead.first ?? 0, Int(gap) - 1, "the first gap - 1 frames are never eligible")
        for (previous, next) in zip(run.ahead, run.ahead.dropFirst()) {
            XCTAssertGreaterThanOrEqual(next - previous, Int(gap), "at least gap - 1 delayed frames between two reorders")
        }
        // Each reordered frame overtakes the frames of the last 10 ms still in the delay line.
        let position = Dictionary(uniqueKeysWithValues: run.harness.departures.enumerated().map { ($1.id, $0) })
        for k in run.ahead where k > 0 {
            XCTAssertLessThan(position[UInt64(k)]!, position[UInt64(k - 1)]!, "frame \(k) leaves before frame \(k - 1)")
        }
    }

    func testReorderWithoutAGapAppliesToEveryFrame() {
        let count = 20_000
        let run = reorderRun(probability: 0.1, gap: 1, count: count)
        assertWithinBound(
            Double(run.counted), expected: 0.1 * Double(count), standardDeviation: (Double(count) * 0.1 * 0.9).squareRoot(),
            "reordered frames")
    }
}

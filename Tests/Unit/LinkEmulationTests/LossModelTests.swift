import LinkEmulation
import Profiles
import XCTest

/// The loss models against their Markov chains: long-run loss within 3.29σ of the stationary loss
/// (with the chain's own variance, not the binomial one), and the burst structure each model implies.
final class LossModelTests: XCTestCase {
    /// Which of `count` frames the model drops.
    private func losses(_ loss: LossModel, count: Int, seed: UInt64) -> [Bool] {
        let emulator = DirectionEmulator(conditions: LinkConditions(loss: loss), options: DirectionOptions(direction: .uplink, seed: seed))
        var frame = FrameBuilder.frame(protocol: 17, payload: 32)
        var result: [Bool] = []
        result.reserveCapacity(count)
        frame.withUnsafeMutableBytes { buffer in
            for k in 0..<count { result.append(emulator.offer(buffer, at: t0 + UInt64(k) * 1000) == .dropped) }
        }
        let counters = emulator.counters
        XCTAssertEqual(counters.lostFrames, UInt64(result.filter { $0 }.count), "every loss counted")
        XCTAssertEqual(counters.passedFrames + counters.lostFrames, UInt64(count))
        return result
    }

    /// The lengths of the runs of consecutive losses.
    private func burstLengths(_ lost: [Bool]) -> [Int] {
        var bursts: [Int] = []
        var run = 0
        for isLost in lost {
            if isLost {
                run += 1
            } else if run > 0 {
                bursts.append(run)
                run = 0
            }
        }
        return bursts
    }

    /// A finite Markov chain whose state emits a loss with probability `emits[state]` (drawn afresh each
    /// step): its stationary distribution, mean loss and the asymptotic variance of the loss count per frame,
    /// σ² = Var(X) + 2 Σₖ Cov(e(S₀), e(Sₖ)), summed until the terms vanish.
    private struct Chain {
        var transitions: [[Double]]
        var emits: [Double]

        var stationary: [Double] {
            var distribution = [Double](repeating: 1 / Double(emits.count), count: emits.count)
            for _ in 0..<100_000 { distribution = step(distribution) }
            return distribution
        }

        func step(_ distribution: [Double]) -> [Double] {
            var next = [Double](repeating: 0, count: emits.count)
            for from in emits.indices { for to in emits.indices { next[to] += distribution[from] * transitions[from][to] } }
            return next
        }

        var meanLoss: Double { zip(stationary, emits).reduce(0) { $0 + $1.0 * $1.1 } }

        var varianceRate: Double {
            let pi = stationary
            let mean = meanLoss
            var total = mean * (1 - mean)
            // Cov(e(S₀), e(Sₖ)) = Σᵢ πᵢ eᵢ (Pᵏe)ᵢ - mean², with Pᵏe computed by repeated steps.
            var propagated = emits
            for _ in 1...5000 {
                propagated = emits.indices.map { from in emits.indices.reduce(0) { $0 + transitions[from][$1] * propagated[$1] } }
                let covariance = emits.indices.reduce(0) { $0 + pi[$1] * emits[$1] * propagated[$1] } - mean * mean
                total += 2 * covariance
            }
            return total
        }
    }

    func testRandomLossIsBinomial() {
        let count = 200_000
        let lost = losses(.random(probability: 0.1, correlation: 0), count: count, seed: 1)
        assertWithinBound(
            Double(lost.filter { $0 }.count), expected: 0.1 * Double(count),
            standardDeviation: (Double(count) * 0.1 * 0.9).squareRoot(), "losses")
        // Independent: a loss after a loss is no likelier than any loss.
        let afterLoss = zip(lost, lost.dropFirst()).filter { $0.0 }
        let repeated = afterLoss.filter { $0.1 }.count
        assertWithinBound(
            Double(repeated), expected: 0.1 * Double(afterLoss.count),
            standardDeviation: (Double(afterLoss.count) * 0.09).squareRoot(), "loss after loss")
    }

    func testCorrelatedRandomLossKeepsItsMeanAndMakesBursts() {
        // P = 10%, c = 50%: the simple Gilbert model p = (1-c)P = 0.05, r = (1-c)(1-P) = 0.45, all lost in
        // the bad state. Stationary loss p/(p+r) = P; bursts are geometric with mean 1/r.
        let (probability, correlation) = (0.1, 0.5)
        let p = (1 - correlation) * probability
        let r = (1 - correlation) * (1 - probability)
        let count = 300_000
        let lost = losses(.random(probability: probability, correlation: correlation), count: count, seed: 2)
        let chain = Chain(transitions: [[1 - p, p], [r, 1 - r]], emits: [0, 1])
        XCTAssertEqual(chain.meanLoss, probability, accuracy: 1e-9, "the model's stationary loss is P")
        assertWithinBound(
            Double(lost.filter { $0 }.count), expected: probability * Double(count),
            standardDeviation: (Double(count) * chain.varianceRate).squareRoot(), "losses")
        let bursts = burstLengths(lost)
        let meanBurst = Double(bursts.reduce(0, +)) / Double(bursts.count)
        assertWithinBound(
            meanBurst, expected: 1 / r, standardDeviation: ((1 - r) / (r * r) / Double(bursts.count)).squareRoot(),
            "mean burst length")
    }

    func testGilbertElliottLossAndBursts() {
        // netem's loss_gilb_ell: the frame's fate uses the state it arrived in (1-k in good, 1-h in bad),
        // then the state moves. Its losses are a Markov-modulated Bernoulli sequence.
        let (p, r, oneMinusH, oneMinusK) = (0.05, 0.3, 0.8, 0.01)
        let count = 300_000
        let lost = losses(.gilbertElliott(p: p, r: r, oneMinusH: oneMinusH, oneMinusK: oneMinusK), count: count, seed: 3)
        let chain = Chain(transitions: [[1 - p, p], [r, 1 - r]], emits: [oneMinusK, oneMinusH])
        let badShare = p / (p + r)
        XCTAssertEqual(chain.meanLoss, (1 - badShare) * oneMinusK + badShare * oneMinusH, accuracy: 1e-9)
        assertWithinBound(
            Double(lost.filter { $0 }.count), expected: chain.meanLoss * Double(count),
            standardDeviation: (Double(count) * chain.varianceRate).squareRoot(), "losses")
        // P(loss | previous loss) = Σₛ P(s | loss) Σₛ' P(s → s') e(s').
        let pi = chain.stationary
        let posterior = [pi[0] * oneMinusK, pi[1] * oneMinusH].map { $0 / chain.meanLoss }
        let next = chain.step(posterior)
        let expectedRepeat = next[0] * oneMinusK + next[1] * oneMinusH
        let afterLoss = zip(lost, lost.dropFirst()).filter { $0.0 }
        let repeated = Double(afterLoss.filter { $0.1 }.count)
        // The pairs overlap in bursts, so allow twice the binomial deviation.
        assertWithinBound(
            repeated / Double(afterLoss.count), expected: expectedRepeat,
            standardDeviation: 2 * (expectedRepeat * (1 - expectedRepeat) / Double(afterLoss.count)).squareRoot(),
            "loss after loss")
        XCTAssertGreaterThan(expectedRepeat, 3 * chain.meanLoss, "the parameters make losses bursty")
    }

    func testFourStateLossAndBursts() {
        // States: 1 received in a gap, 2 received in a burst, 3 lost in a burst, 4 isolated loss. A frame's
        // fate is the state it moves to (netem's loss_4state).
        let (p13, p31, p32, p23, p14) = (0.03, 0.5, 0.3, 0.2, 0.02)
        let count = 400_000
        let lost = losses(.fourState(p13: p13, p31: p31, p32: p32, p23: p23, p14: p14), count: count, seed: 4)
        let chain = Chain(
            transitions: [
                [1 - p13 - p14, 0, p13, p14], [0, 1 - p23, p23, 0], [p31, p32, 1 - p31 - p32, 0], [1, 0, 0, 0],
            ], emits: [0, 0, 1, 1])
        assertWithinBound(
            Double(lost.filter { $0 }.count), expected: chain.meanLoss * Double(count),
            standardDeviation: (Double(count) * chain.varianceRate).squareRoot(), "losses")
        // A run of losses is either one isolated loss (state 4, always followed by state 1) or a stay in
        // state 3, geometric with mean 1/(p31 + p32). Runs start in 4 with weight π1·p14 and in 3 with
        // π1·p13 + π2·p23.
        let pi = chain.stationary
        let fromIsolated = pi[0] * p14
        let fromBurst = pi[0] * p13 + pi[1] * p23
        let isolatedShare = fromIsolated / (fromIsolated + fromBurst)
        let leave = p31 + p32
        let expectedMean = isolatedShare + (1 - isolatedShare) / leave
        let expectedSquare = isolatedShare + (1 - isolatedShare) * (2 - leave) / (leave * leave)
        let bursts = burstLengths(lost)
        let meanBurst = Double(bursts.reduce(0, +)) / Double(bursts.count)
        assertWithinBound(
            meanBurst, expected: expectedMean,
            standardDeviation: ((expectedSquare - expectedMean * expectedMean) / Double(bursts.count)).squareRoot(),
            "mean burst length")
        let singles = Double(bursts.filter { $0 == 1 }.count)
        let expectedSingles = isolatedShare + (1 - isolatedShare) * leave
        assertWithinBound(
            singles / Double(bursts.count), expected: expectedSingles,
            standardDeviation: (expectedSingles * (1 - expectedSingles) / Double(bursts.count)).squareRoot(),
            "share of one-frame bursts")
    }

    func testFullLossDropsEverythingAndNoLossNothing() {
        XCTAssertTrue(losses(.random(probability: 1, correlation: 0), count: 10_000, seed: 5).allSatisfy { $0 })
        XCTAssertTrue(losses(.random(probability: 1, correlation: 0.5), count: 10_000, seed: 6).allSatisfy { $0 })
        XCTAssertFalse(losses(.gilbertElliott(p: 0, r: 1, oneMinusH: 1, oneMinusK: 0), count: 10_000, seed: 7).contains(true))
    }
}

import Profiles

/// Decides which frames are lost, with the semantics of netem's loss models (`loss random`,
/// `loss gemodel`, `loss state`; `loss_event`, `loss_gilb_ell` and `loss_4state` in `sch_netem.c`).
///
/// Probabilities are scaled to 32 bits and compared with 32-bit random numbers as the kernel does, so the
/// same profile gives the same long-run loss and the same burst structure on both backends.
struct LossGenerator {
    /// The model in force, with netem's scaled thresholds.
    enum Model: Equatable {
        /// Nothing is lost.
        case none
        /// Each frame is lost independently when `threshold` >= a random number (`loss random P`).
        case random(threshold: UInt32)
        /// Gilbert-Elliott: `p` good→bad, `r` bad→good, a frame in the bad state is lost when a random
        /// number exceeds `h` (so with 1-h), in the good state when it is below `oneMinusK`.
        case gilbertElliott(p: UInt32, r: UInt32, h: UInt32, oneMinusK: UInt32)
        /// The 4-state Markov model: 1 received in a gap, 2 received in a burst, 3 lost in a burst,
        /// 4 isolated loss; `pXY` moves from X to Y.
        case fourState(p13: UInt32, p31: UInt32, p32: UInt32, p23: UInt32, p14: UInt32)
    }

    /// The model in force.
    let model: Model
    /// A loss trace: each frame is lost independently with the trace's probability at its time (the
    /// ``model`` is then `.none`).
    let trace: StepTrace?
    /// The Markov state: Gilbert-Elliott 1 good, 2 bad; 4-state 1 to 4. Both start in 1, as in netem.
    private(set) var state: UInt8 = 1

    /// The generator for a profile's loss.
    ///
    /// `random` with a correlation c (and P < 1) becomes the simple Gilbert model p = (1-c)P,
    /// r = (1-c)(1-P), every frame lost in the bad state and none in the good one, exactly as
    /// `NetemMapping` gives the kernel: its stationary loss is P and each loss makes the next one likelier
    /// (netem's own correlated random loss would pull the rate far below P).
    init(_ loss: LossModel?, trace: StepTrace? = nil) {
        self.trace = trace
        guard let loss, !loss.dropsNothing else {
            model = .none
            return
        }
        let scaled = ScaledProbability.scaled
        switch loss {
        case let .random(probability, correlation) where correlation > 0 && probability < 1:
            model = .gilbertElliott(
                p: scaled((1 - correlation) * probability), r: scaled((1 - correlation) * (1 - probability)), h: 0,
                oneMinusK: 0)
        case let .random(probability, _):
            model = .random(threshold: scaled(probability))
        case let .gilbertElliott(p, r, oneMinusH, oneMinusK):
            // tc sends h = 1 - (1-h), computed from the top of the range.
            model = .gilbertElliott(p: scaled(p), r: scaled(r), h: UInt32.max - scaled(oneMinusH), oneMinusK: scaled(oneMinusK))
        case let .fourState(p13, p31, p32, p23, p14):
            model = .fourState(p13: scaled(p13), p31: scaled(p31), p32: scaled(p32), p23: scaled(p23), p14: scaled(p14))
        }
    }

    /// Whether the generator draws what `loss` and `trace` describe.
    func isConfigured(as loss: LossModel?, trace: StepTrace?) -> Bool {
        model == LossGenerator(loss).model && self.trace == trace
    }

    /// Whether the next frame, `elapsed` nanoseconds after the direction's first frame, is lost.
    @inline(__always)
    mutating func loses(_ random: inout EmulatorRandom, elapsed: UInt64) -> Bool {
        if let trace {
            let threshold = ScaledProbability.scaled(trace.value(at: elapsed))
            return threshold != 0 && threshold >= random.nextUInt32()
        }
        switch model {
        case .none:
            return false
        case let .random(threshold):
            return threshold != 0 && threshold >= random.nextUInt32()
        case let .gilbertElliott(p, r, h, oneMinusK):
            return gilbertElliott(p: p, r: r, h: h, oneMinusK: oneMinusK, &random)
        case let .fourState(p13, p31, p32, p23, p14):
            return fourState(p13: p13, p31: p31, p32: p32, p23: p23, p14: p14, &random)
        }
    }

    /// `loss_gilb_ell`: the transition is drawn first, but the frame's fate uses the state it arrived in.
    private mutating func gilbertElliott(p: UInt32, r: UInt32, h: UInt32, oneMinusK: UInt32, _ random: inout EmulatorRandom)
        -> Bool
    {
        if state == 1 {
            if random.nextUInt32() < p { state = 2 }
            return random.nextUInt32() < oneMinusK
        } else {
            if random.nextUInt32() < r { state = 1 }
            return random.nextUInt32() > h
        }
    }

    /// `loss_4state`: one random number picks the next state; the frame is lost when that state is 3 or 4.
    /// Comparisons are strict, as in the kernel; sums are taken in 64 bits (the kernel's 32-bit sums would
    /// wrap only for probabilities adding up to more than 1, which profiles refuse).
    private mutating func fourState(
        p13: UInt32, p31: UInt32, p32: UInt32, p23: UInt32, p14: UInt32, _ random: inout EmulatorRandom
    ) -> Bool {
        let number = UInt64(random.nextUInt32())
        switch state {
        case 1:
            if number < UInt64(p14) {
                state = 4
                return true
            } else if UInt64(p14) < number && number < UInt64(p13) + UInt64(p14) {
                state = 3
                return true
            }
            return false
        case 2:
            if number < UInt64(p23) {
                state = 3
                return true
            }
            return false
        case 3:
            if number < UInt64(p32) {
                state = 2
                return false
            } else if UInt64(p32) < number && number < UInt64(p31) + UInt64(p32) {
                state = 1
                return false
            } else if UInt64(p31) + UInt64(p32) < number {
                return true
            }
            return false
        default:
            state = 1
            return false
        }
    }
}

import JSONDocument

/// Checks a ``Profile`` against every range and combination rule of the format (`profiles/FORMAT.md`):
/// the one place each rule lives, whether the profile was read from a file or made in code. Errors name
/// the JSON path of the offending field and, for a profile read from a document, where it is written.
struct ProfileValidator {
    /// Places errors in the document the profile was read from (if any).
    let locator: DocumentLocator
    /// Where the profile sits in that document: the root for a profile file, a member for a profile
    /// carried inside another document (the engine's control requests).
    var base = JSONPath.root

    static let queueLimitExpectation = "a queue limit in packets: a whole number from 1 to \(UInt32.max)"
    static let gapExpectation =
        "a gap in packets: a whole number from 1 to \(UInt32.max) (every gap-th packet may be reordered)"
    /// The most packets or bytes one slot may carry (netem keeps them as signed 32-bit numbers).
    static let maximumSlotCount = UInt32(Int32.max)

    /// What a slot's `packets` or `bytes` must be.
    static func slotCountExpectation(_ what: String) -> String {
        "\(what) per slot: a whole number from 1 to \(maximumSlotCount)"
    }

    func check(_ profile: Profile) throws(DocumentError) {
        try locator.checkName(profile.name, of: "profile", at: base.appending("name"))
        try check(profile.downlink, at: base.appending("downlink"))
        try check(profile.uplink, at: base.appending("uplink"))
        try locator.checkTime(profile.dnsDelay, at: base.appending("dnsDelay"))
        if profile.targets.count > Self.maximumTargets {
            throw locator.error(
                .outOfRange, at: base.appending("targets"), problem: "\(profile.targets.count) targets",
                expected: "at most \(Self.maximumTargets) targets (each becomes classifier rules on every link)")
        }
    }

    /// The most targets a profile may have.
    static let maximumTargets = 64

    /// A probability from 0 to 1.
    func checkFraction(_ value: Double, at path: JSONPath) throws(DocumentError) {
        guard (0...1).contains(value) else {
            let written = value.isFinite && value >= 0 ? Quantity.formatPercentage(value) : "\(value * 100)%"
            throw locator.error(
                .outOfRange, at: path, problem: "\(locator.shown(at: path, otherwise: written)) is out of range",
                expected: Quantity.percentageRange)
        }
    }

    /// A probability with a correlation: both in range, and a correlation needs something to correlate.
    func checkCorrelation(_ correlation: Double, probability: Double, at path: JSONPath) throws(DocumentError) {
        try checkFraction(probability, at: path.appending("percent"))
        try checkFraction(correlation, at: path.appending("correlation"))
        if correlation > 0, probability == 0 {
            throw locator.error(
                .conflict, at: path.appending("correlation"), problem: "a correlation beside a probability of 0%",
                expected: "a \"percent\" above 0%, or no \"correlation\" (netem ignores it)")
        }
    }

    /// A whole number from `range`, `expected` saying so.
    func checkCount(_ value: UInt32, in range: ClosedRange<UInt32>, at path: JSONPath, expected: String)
        throws(DocumentError)
    {
        guard range.contains(value) else {
            throw locator.error(.outOfRange, at: path, problem: "\(value) is out of range", expected: expected)
        }
    }

    func check(_ conditions: LinkConditions, at base: JSONPath) throws(DocumentError) {
        if let rate = conditions.rate, rate < Quantity.minimumRate {
            let path = base.appending("rate")
            throw locator.error(
                .outOfRange, at: path, problem: "\(locator.shown(at: path, otherwise: "\(rate)bit")) is too low",
                expected: Quantity.rateRange)
        }
        try locator.checkTime(conditions.delay, at: base.appending("delay"))
        try checkJitter(conditions, in: base)
        try checkLoss(conditions.loss, at: base.appending("loss"))
        if let duplicate = conditions.duplicate {
            try checkCorrelation(
                duplicate.correlation, probability: duplicate.probability, at: base.appending("duplicate"))
        }
        if let corrupt = conditions.corrupt {
            try checkCorrelation(corrupt.correlation, probability: corrupt.probability, at: base.appending("corrupt"))
        }
        if let reorder = conditions.reorder {
            try check(reorder, delay: max(conditions.delay, conditions.delayTrace.map { UInt64($0.maximum) } ?? 0), at: base.appending("reorder"))
        }
        if let slot = conditions.slot { try check(slot, at: base.appending("slot")) }
        if conditions.trace != nil {
            for (key, present) in [("rate", conditions.rate != nil), ("slot", conditions.slot != nil)] where present {
                throw locator.error(
                    .conflict, at: base.appending(key), problem: "a \"\(key)\" beside a \"trace\"",
                    expected: "one of them: the trace's delivery opportunities are the link's rate and its bursts")
            }
        }
        try checkStepTraces(conditions, at: base)
        if let queue = conditions.queue { try check(queue: queue, of: conditions, at: base.appending("queue"), base: base) }
        if let queueLimit = conditions.queueLimit {
            try checkCount(
                queueLimit, in: 1...UInt32.max, at: base.appending("queueLimit"), expected: Self.queueLimitExpectation)
        }
        if conditions.ecn, conditions.loss?.dropsNothing ?? true, (conditions.lossTrace?.maximum ?? 0) == 0 {
            throw locator.error(
                .conflict, at: base.appending("ecn"), problem: "ecn without loss",
                expected: "a \"loss\" above 0% in the same direction (netem marks the packets it would drop)")
        }
    }

    func checkJitter(_ conditions: LinkConditions, in base: JSONPath) throws(DocumentError) {
        let jitter = base.appending("jitter")
        try locator.checkTime(conditions.jitter, at: jitter.appending("amount"))
        try checkFraction(conditions.delayCorrelation, at: jitter.appending("correlation"))
        if conditions.delayCorrelation > 0, conditions.jitter == 0 {
            throw locator.error(
                .conflict, at: jitter.appending("correlation"), problem: "a delay correlation without jitter",
                expected: "a jitter \"amount\" above 0 (the correlation ties each packet's jitter to the previous one)")
        }
        if conditions.jitterModel != nil, conditions.jitter == 0 {
            throw locator.error(
                .conflict, at: base.appending("jitterModel"), problem: "a jitter model without jitter",
                expected: "a jitter \"amount\" above 0 in the same direction (the model says how the jitter varies)")
        }
        if conditions.distribution != nil, conditions.jitter == 0 || (conditions.delay == 0 && conditions.delayTrace == nil) {
            throw locator.error(
                .conflict, at: jitter.appending("distribution"), problem: "a distribution needs a delay and a jitter",
                expected: "a \"delay\" (or a \"delayTrace\") and a jitter \"amount\" above 0 (netem spreads the delay by the jitter)")
        }
    }

    func checkLoss(_ loss: LossModel?, at path: JSONPath) throws(DocumentError) {
        switch loss {
        case nil: break
        case .random(let probability, let correlation)?:
            try checkCorrelation(correlation, probability: probability, at: path)
        case .gilbertElliott(let p, let r, let oneMinusH, let oneMinusK)?:
            let model = path.appending("gilbertElliott")
            for (key, value) in [("p", p), ("r", r), ("1-h", oneMinusH), ("1-k", oneMinusK)] {
                try checkFraction(value, at: model.appending(key))
            }
        case .fourState(let p13, let p31, let p32, let p23, let p14)?:
            let model = path.appending("fourState")
            for (key, value) in [("p13", p13), ("p31", p31), ("p32", p32), ("p23", p23), ("p14", p14)] {
                try checkFraction(value, at: model.appending(key))
            }
            for (first, second, a, b, state) in [("p13", "p14", p13, p14, 1), ("p31", "p32", p31, p32, 3)]
            where a + b > 1 + 1e-12 {
                throw locator.error(
                    .conflict, at: model,
                    problem: "\(first) + \(second) is \(Quantity.formatPercentage(a + b)), above 100%",
                    expected: "\(first) + \(second) at most 100% (both leave state \(state))")
            }
        }
    }

    func check(_ reorder: Reorder, delay: UInt64, at path: JSONPath) throws(DocumentError) {
        try checkCorrelation(reorder.correlation, probability: reorder.probability, at: path)
        try checkCount(reorder.gap, in: 1...UInt32.max, at: path.appending("gap"), expected: Self.gapExpectation)
        if reorder.probability == 0, reorder.gap != 1 {
            throw locator.error(
                .conflict, at: path.appending("gap"), problem: "a gap beside a reorder probability of 0%",
                expected: "a reorder \"percent\" above 0%")
        }
        if reorder.probability > 0, delay == 0 {
            throw locator.error(
                .conflict, at: path, problem: "reordering needs a delay",
                expected: "a \"delay\" above 0 in the same direction: netem reorders by sending some packets "
                    + "without the delay")
        }
    }

    func check(_ slot: Slot, at path: JSONPath) throws(DocumentError) {
        try locator.checkTime(slot.minDelay, at: path.appending("min"))
        try locator.checkTime(slot.maxDelay, at: path.appending("max"))
        if slot.maxDelay < slot.minDelay {
            throw locator.error(
                .conflict, at: path.appending("max"),
                problem: "\"max\" (\(Quantity.formatTime(slot.maxDelay))) is below \"min\" "
                    + "(\(Quantity.formatTime(slot.minDelay)))",
                expected: "a \"max\" of at least \"min\"")
        }
        if slot.maxDelay == 0 {
            throw locator.error(
                .outOfRange, at: path.appending("min"), problem: "slots that open 0 apart",
                expected: "a \"min\" or \"max\" above 0")
        }
        for (key, value) in [("packets", slot.packets), ("bytes", slot.bytes)] {
            guard let value else { continue }
            try checkCount(
                value, in: 1...Self.maximumSlotCount, at: path.appending(key),
                expected: Self.slotCountExpectation(key))
        }
    }
}

extension DocumentLocator {
    /// Refuses a name (at `path`, by default `$.name`) that cannot name a profile or a scenario (see ``Profile/isValidName(_:)``);
    /// `thing` says which: `"Edge 2" is not a usable profile name`.
    public func checkName(_ name: String, of thing: String, at path: JSONPath = JSONPath.root.appending("name"))
        throws(DocumentError)
    {
        guard Profile.isValidName(name) else {
            throw error(
                .invalidValue, at: path,
                problem: "\(JSONWriter.quoted(name)) is not a usable \(thing) name",
                expected: "1 to 64 lowercase letters, digits, '-', '_' or '.', starting with a letter or digit")
        }
    }

    /// Refuses a time above ``Quantity/maximumTime`` (4294 s, tc's 32-bit range) at `path`: the one
    /// range rule for every time of a profile or a scenario.
    public func checkTime(_ nanoseconds: UInt64, at path: JSONPath) throws(DocumentError) {
        guard nanoseconds <= Quantity.maximumTime else {
            let shown = shown(at: path, otherwise: Quantity.formatTime(nanoseconds))
            throw error(.outOfRange, at: path, problem: "\(shown) is out of range", expected: Quantity.timeRange)
        }
    }
}

import JSONDocument

/// Reads profile files (JSON) into ``Profile`` values, refusing anything doubtful before it can reach
/// the kernel, and writes profiles back as JSON.
///
/// The format (also in `profiles/FORMAT.md`):
///
/// ```json
/// {
///   "name": "edge",                       // required; the file name without .json
///   "description": "Edge (NLC preset)...", // optional
///   "downlink": { ... },                   // optional; towards the device; missing = no conditions
///   "uplink": { ... },                     // optional; from the device
///   "dnsDelay": "3000ms"                   // optional; extra delay for DNS queries from the device
/// }
/// ```
///
/// A direction has these keys, all optional:
///
/// - `rate`: `"240kbit"` (see ``Quantity`` for the units); absent = unlimited.
/// - `delay`: `"400ms"`.
/// - `jitter`: `"50ms"`, or `{"amount": "50ms", "correlation": "25%", "distribution": "normal"}`
///   (distribution: `uniform`, `normal`, `pareto`, `paretonormal`).
/// - `loss`: `"1%"`, or `{"percent": "1%", "correlation": "25%"}`, or
///   `{"gilbertElliott": {"p": "1%", "r": "10%", "1-h": "100%", "1-k": "0%"}}` (r, 1-h, 1-k default to
///   100%, 100%, 0% as in tc), or `{"fourState": {"p13": "1%", "p31": "10%", "p32": "0%", "p23": "100%",
///   "p14": "0%"}}` (defaults as in tc: p31 = 100% - p13, p32 0%, p23 100%, p14 0%).
/// - `duplicate`, `corrupt`: `"1%"` or `{"percent": "1%", "correlation": "25%"}`.
/// - `reorder`: `"25%"` or `{"percent": "25%", "correlation": "50%", "gap": 5}` (gap defaults to 1).
/// - `slot`: `{"min": "10ms", "max": "20ms", "packets": 10, "bytes": 1500}` (max defaults to min).
/// - `queueLimit`: packets, an integer from 1; absent = derived from the bandwidth-delay product.
/// - `ecn`: `true` to mark instead of drop.
///
/// Refused, each with a ``ProfileError`` naming the file, JSON path, line and column: invalid JSON,
/// duplicate keys, unknown keys (with a suggestion), wrong types, bad or ambiguous units, values out
/// of range, and combinations netem refuses or ignores: reorder without delay, a delay correlation
/// without jitter, a distribution without delay and jitter, a correlation or gap beside a 0%
/// probability, `ecn` without loss, a slot whose max is below its min, 4-state probabilities leaving
/// one state that add up to more than 100%. Jitter larger than the delay is allowed. `dnsDelay` goes
/// with anything.
public enum ProfileParser {
    /// Parses the UTF-8 JSON in `data`; `source` names it in errors and becomes ``Profile/source``.
    public static func parse(data: [UInt8], source: String) throws(ProfileError) -> Profile {
        let document: ParsedJSON
        do {
            document = try JSONParser.parse(data, maximumDepth: 16)
        } catch {
            throw ProfileError(file: source, parseError: error)
        }
        let reader = Reader(file: source, document: document)
        var profile = try reader.profile()
        profile.source = source
        try reader.check(profile)
        return profile
    }

    /// Parses `text`; `source` names it in errors and becomes ``Profile/source``.
    public static func parse(text: String, source: String) throws(ProfileError) -> Profile {
        try parse(data: Array(text.utf8), source: source)
    }

    /// Reads and parses the file at `path`.
    public static func load(path: String) throws(ProfileError) -> Profile {
        try parse(data: ProfileFiles.read(path), source: path)
    }

    /// Checks a profile made in code by the same rules as a file (errors name the JSON path the
    /// offending field would have, without a position).
    public static func validate(_ profile: Profile) throws(ProfileError) {
        try Reader(file: profile.source ?? "profile \(JSONWriter.quoted(profile.name))", document: nil).check(profile)
    }

    /// The profile as JSON text in the shortest form of each value; parsing it gives the profile back.
    public static func jsonText(of profile: Profile) -> String {
        var members: [(key: String, value: JSONValue)] = [("name", .string(profile.name))]
        if !profile.description.isEmpty { members.append(("description", .string(profile.description))) }
        if profile.downlink != .unconditioned { members.append(("downlink", json(profile.downlink))) }
        if profile.uplink != .unconditioned { members.append(("uplink", json(profile.uplink))) }
        if profile.dnsDelay > 0 { members.append(("dnsDelay", .string(Quantity.formatTime(profile.dnsDelay)))) }
        return JSONWriter.text(of: .object(members)) + "\n"
    }

    // MARK: Writing

    private static func percent(_ fraction: Double) -> JSONValue { .string(Quantity.formatPercentage(fraction)) }

    private static func chance(_ probability: Double, correlation: Double) -> JSONValue {
        if correlation == 0 { return percent(probability) }
        return .object([("percent", percent(probability)), ("correlation", percent(correlation))])
    }

    private static func json(_ conditions: LinkConditions) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = []
        if let rate = conditions.rate { members.append(("rate", .string(Quantity.formatRate(rate)))) }
        if conditions.delay > 0 { members.append(("delay", .string(Quantity.formatTime(conditions.delay)))) }
        let amount = JSONValue.string(Quantity.formatTime(conditions.jitter))
        if conditions.delayCorrelation == 0, conditions.distribution == nil {
            if conditions.jitter > 0 { members.append(("jitter", amount)) }
        } else {
            var jitter: [(key: String, value: JSONValue)] = [("amount", amount)]
            if conditions.delayCorrelation > 0 { jitter.append(("correlation", percent(conditions.delayCorrelation))) }
            if let distribution = conditions.distribution {
                jitter.append(("distribution", .string(distribution.rawValue)))
            }
            members.append(("jitter", .object(jitter)))
        }
        switch conditions.loss {
        case nil: break
        case .random(let probability, let correlation)?:
            members.append(("loss", chance(probability, correlation: correlation)))
        case .gilbertElliott(let p, let r, let oneMinusH, let oneMinusK)?:
            let model: JSONValue = .object([
                ("p", percent(p)), ("r", percent(r)), ("1-h", percent(oneMinusH)), ("1-k", percent(oneMinusK)),
            ])
            members.append(("loss", .object([("gilbertElliott", model)])))
        case .fourState(let p13, let p31, let p32, let p23, let p14)?:
            let model: JSONValue = .object([
                ("p13", percent(p13)), ("p31", percent(p31)), ("p32", percent(p32)), ("p23", percent(p23)),
                ("p14", percent(p14)),
            ])
            members.append(("loss", .object([("fourState", model)])))
        }
        if let duplicate = conditions.duplicate {
            members.append(("duplicate", chance(duplicate.probability, correlation: duplicate.correlation)))
        }
        if let corrupt = conditions.corrupt {
            members.append(("corrupt", chance(corrupt.probability, correlation: corrupt.correlation)))
        }
        if let reorder = conditions.reorder {
            if reorder.correlation == 0, reorder.gap == 1 {
                members.append(("reorder", percent(reorder.probability)))
            } else {
                var object: [(key: String, value: JSONValue)] = [("percent", percent(reorder.probability))]
                if reorder.correlation > 0 { object.append(("correlation", percent(reorder.correlation))) }
                if reorder.gap != 1 { object.append(("gap", .number(JSONNumber(Int(reorder.gap))))) }
                members.append(("reorder", .object(object)))
            }
        }
        if let slot = conditions.slot {
            var object: [(key: String, value: JSONValue)] = [("min", .string(Quantity.formatTime(slot.minDelay)))]
            if slot.maxDelay != slot.minDelay { object.append(("max", .string(Quantity.formatTime(slot.maxDelay)))) }
            if let packets = slot.packets { object.append(("packets", .number(JSONNumber(Int(packets))))) }
            if let bytes = slot.bytes { object.append(("bytes", .number(JSONNumber(Int(bytes))))) }
            members.append(("slot", .object(object)))
        }
        if let queueLimit = conditions.queueLimit {
            members.append(("queueLimit", .number(JSONNumber(Int(queueLimit)))))
        }
        if conditions.ecn { members.append(("ecn", .bool(true))) }
        return .object(members)
    }
}

// MARK: - Reading

/// Reads one document, with the file name for errors.
private struct Reader {
    let file: String
    let document: ParsedJSON?

    static let profileExpectation =
        "a profile: an object with \"name\" and optionally \"description\", \"downlink\", \"uplink\" and \"dnsDelay\""
    static let conditionsExpectation =
        "link conditions: an object such as {\"rate\": \"240kbit\", \"delay\": \"400ms\"}"
    static let jitterExpectation =
        "a jitter such as \"50ms\", or {\"amount\": \"50ms\", \"correlation\": \"25%\", \"distribution\": \"normal\"}"
    static let lossModels = "\"percent\" (with an optional \"correlation\"), \"gilbertElliott\" or \"fourState\""
    static let lossExpectation =
        "a loss such as \"1%\", or an object with " + lossModels
    static let geExpectation =
        "a Gilbert-Elliott model such as {\"p\": \"1%\", \"r\": \"10%\", \"1-h\": \"100%\", \"1-k\": \"0%\"}"
    static let fourStateExpectation =
        "a 4-state model such as {\"p13\": \"1%\", \"p31\": \"10%\", \"p32\": \"0%\", \"p23\": \"100%\", \"p14\": \"0%\"}"
    static let maximumSlotCount = UInt32(Int32.max)

    // MARK: Errors and positions

    func error(
        _ kind: ProfileError.Kind, _ element: JSONElement, problem: String, expected: String
    ) -> ProfileError {
        ProfileError(
            kind, file: file, path: element.path, position: element.position, problem: problem, expected: expected)
    }

    /// An error at `path`, placed at the nearest value the document has on the way there.
    func error(_ kind: ProfileError.Kind, at path: JSONPath, problem: String, expected: String) -> ProfileError {
        var probe = path
        var position: SourcePosition?
        while position == nil, let document {
            position = document.position(of: probe)
            if probe.components.isEmpty { break }
            probe.components.removeLast()
        }
        return ProfileError(kind, file: file, path: path, position: position, problem: problem, expected: expected)
    }

    func object(_ element: JSONElement, expected: String) throws(ProfileError) -> JSONObjectReader {
        do { return try element.object(expected: expected) } catch { throw ProfileError(file: file, readError: error) }
    }

    func finish(_ reader: JSONObjectReader) throws(ProfileError) {
        do { try reader.finish() } catch { throw ProfileError(file: file, readError: error) }
    }

    func missing(_ key: String, in element: JSONElement, expected: String) -> ProfileError {
        error(.missingKey, element, problem: "missing key \(JSONWriter.quoted(key))", expected: expected)
    }

    func string(_ element: JSONElement, expected: String) throws(ProfileError) -> String {
        do { return try element.string(expected: expected) } catch { throw ProfileError(file: file, readError: error) }
    }

    func bool(_ element: JSONElement, expected: String) throws(ProfileError) -> Bool {
        do { return try element.bool(expected: expected) } catch { throw ProfileError(file: file, readError: error) }
    }

    /// A whole number in `range`.
    func integer(_ element: JSONElement, in range: ClosedRange<UInt32>, expected: String) throws(ProfileError) -> UInt32
    {
        let value: Int64
        do { value = try element.integer(Int64.self, expected: expected) } catch {
            throw ProfileError(file: file, readError: error)
        }
        guard value >= Int64(range.lowerBound), value <= Int64(range.upperBound) else {
            throw self.error(.outOfRange, element, problem: "\(value) is out of range", expected: expected)
        }
        return UInt32(value)
    }

    func quantityError(_ error: QuantityError, _ element: JSONElement) -> ProfileError {
        let kind: ProfileError.Kind =
            switch error.kind {
            case .invalid: .invalidValue
            case .ambiguousUnit: .ambiguousUnit
            case .outOfRange: .outOfRange
            }
        return self.error(kind, element, problem: error.problem, expected: error.expected)
    }

    func time(_ element: JSONElement) throws(ProfileError) -> UInt64 {
        let text = try string(element, expected: "a time as a string, such as \"400ms\"")
        do { return try Quantity.time(text) } catch { throw quantityError(error, element) }
    }

    func rate(_ element: JSONElement) throws(ProfileError) -> UInt64 {
        let text = try string(element, expected: "a rate as a string, such as \"240kbit\"")
        do { return try Quantity.rate(text) } catch { throw quantityError(error, element) }
    }

    func percentage(_ element: JSONElement) throws(ProfileError) -> Double {
        let text = try string(element, expected: "a percentage as a string, such as \"1%\"")
        do { return try Quantity.percentage(text) } catch { throw quantityError(error, element) }
    }

    func percentage(_ element: JSONElement?, default value: Double) throws(ProfileError) -> Double {
        guard let element else { return value }
        return try percentage(element)
    }

    // MARK: The document

    func profile() throws(ProfileError) -> Profile {
        guard let root = document?.root else { preconditionFailure("reading needs a document") }
        var top = try object(root, expected: Self.profileExpectation)
        let name = top.take("name")
        let description = top.take("description")
        let downlink = top.take("downlink")
        let uplink = top.take("uplink")
        let dnsDelay = top.take("dnsDelay")
        try finish(top)
        guard let name else {
            throw missing("name", in: root, expected: "a \"name\" such as \"edge\" (the file name without .json)")
        }
        var profile = Profile(name: try string(name, expected: "a profile name as a string, such as \"edge\""))
        guard Profile.isValidName(profile.name) else {
            throw error(
                .invalidValue, name, problem: "\(JSONWriter.quoted(profile.name)) is not a usable profile name",
                expected: "1 to 64 lowercase letters, digits, '-', '_' or '.', starting with a letter or digit")
        }
        if let description {
            profile.description = try string(description, expected: "a description as a string")
        }
        profile.downlink = try conditions(downlink)
        profile.uplink = try conditions(uplink)
        if let dnsDelay { profile.dnsDelay = try time(dnsDelay) }
        return profile
    }

    func conditions(_ element: JSONElement?) throws(ProfileError) -> LinkConditions {
        guard let element else { return .unconditioned }
        var reader = try object(element, expected: Self.conditionsExpectation)
        let rate = reader.take("rate")
        let delay = reader.take("delay")
        let jitter = reader.take("jitter")
        let loss = reader.take("loss")
        let duplicate = reader.take("duplicate")
        let corrupt = reader.take("corrupt")
        let reorder = reader.take("reorder")
        let slot = reader.take("slot")
        let queueLimit = reader.take("queueLimit")
        let ecn = reader.take("ecn")
        try finish(reader)

        var conditions = LinkConditions()
        if let rate { conditions.rate = try self.rate(rate) }
        if let delay { conditions.delay = try time(delay) }
        if let jitter { try read(jitter: jitter, into: &conditions) }
        if let loss { conditions.loss = try lossModel(loss) }
        if let duplicate { conditions.duplicate = try chance(duplicate) }
        if let corrupt { conditions.corrupt = try chance(corrupt) }
        if let reorder { conditions.reorder = try self.reorder(reorder) }
        if let slot { conditions.slot = try self.slot(slot) }
        if let queueLimit {
            conditions.queueLimit = try integer(
                queueLimit, in: 1...UInt32.max,
                expected: "a queue limit in packets: a whole number from 1 to \(UInt32.max)")
        }
        if let ecn { conditions.ecn = try bool(ecn, expected: "true or false") }
        return conditions
    }

    func read(jitter element: JSONElement, into conditions: inout LinkConditions) throws(ProfileError) {
        switch element.value {
        case .string:
            conditions.jitter = try time(element)
        case .object:
            var reader = try object(element, expected: Self.jitterExpectation)
            let amount = reader.take("amount")
            let correlation = reader.take("correlation")
            let distribution = reader.take("distribution")
            try finish(reader)
            guard let amount else { throw missing("amount", in: element, expected: Self.jitterExpectation) }
            conditions.jitter = try time(amount)
            if let correlation { conditions.delayCorrelation = try percentage(correlation) }
            if let distribution {
                let name = try string(distribution, expected: "a distribution name as a string, such as \"normal\"")
                let names = DelayDistribution.allCases.map(\.rawValue)
                guard let value = DelayDistribution(rawValue: name) else {
                    var problem = "\(JSONWriter.quoted(name)) is not a distribution"
                    if let suggestion = Suggestions.closest(to: name, in: names) {
                        problem += " (did you mean \(JSONWriter.quoted(suggestion))?)"
                    }
                    throw error(
                        .invalidValue, distribution, problem: problem,
                        expected: "one of " + names.map(JSONWriter.quoted).joined(separator: ", "))
                }
                conditions.distribution = value
            }
        default:
            throw error(
                .wrongType, element, problem: "found \(element.value.summary)", expected: Self.jitterExpectation)
        }
    }

    func lossModel(_ element: JSONElement) throws(ProfileError) -> LossModel {
        switch element.value {
        case .string:
            return .random(probability: try percentage(element), correlation: 0)
        case .object:
            var reader = try object(element, expected: Self.lossExpectation)
            let percent = reader.take("percent")
            let correlation = reader.take("correlation")
            let gilbertElliott = reader.take("gilbertElliott")
            let fourState = reader.take("fourState")
            try finish(reader)
            let models = [("percent", percent), ("gilbertElliott", gilbertElliott), ("fourState", fourState)]
                .compactMap { name, element in element.map { (name, $0) } }
            guard let model = models.first else {
                throw error(.missingKey, element, problem: "no loss model", expected: Self.lossModels)
            }
            if models.count > 1 {
                throw error(
                    .conflict, models[1].1,
                    problem: "\(JSONWriter.quoted(models[1].0)) cannot be combined with \(JSONWriter.quoted(model.0))",
                    expected: "one loss model per direction: " + Self.lossModels)
            }
            if let percent {
                return .random(
                    probability: try percentage(percent), correlation: try percentage(correlation, default: 0))
            }
            if let correlation {
                throw error(
                    .conflict, correlation, problem: "\"correlation\" belongs to \"percent\"",
                    expected:
                        "\"correlation\" only beside \"percent\" (\(JSONWriter.quoted(model.0)) has its own state "
                        + "probabilities)")
            }
            if let gilbertElliott {
                var reader = try object(gilbertElliott, expected: Self.geExpectation)
                let p = reader.take("p")
                let r = reader.take("r")
                let oneMinusH = reader.take("1-h")
                let oneMinusK = reader.take("1-k")
                try finish(reader)
                guard let p else { throw missing("p", in: gilbertElliott, expected: Self.geExpectation) }
                return .gilbertElliott(
                    p: try percentage(p), r: try percentage(r, default: 1),
                    oneMinusH: try percentage(oneMinusH, default: 1), oneMinusK: try percentage(oneMinusK, default: 0))
            }
            guard let fourState else { preconditionFailure("one loss model is present") }
            var reader4 = try object(fourState, expected: Self.fourStateExpectation)
            let p13 = reader4.take("p13")
            let p31 = reader4.take("p31")
            let p32 = reader4.take("p32")
            let p23 = reader4.take("p23")
            let p14 = reader4.take("p14")
            try finish(reader4)
            guard let p13 else { throw missing("p13", in: fourState, expected: Self.fourStateExpectation) }
            let p13Value = try percentage(p13)
            return .fourState(
                p13: p13Value, p31: try percentage(p31, default: 1 - p13Value), p32: try percentage(p32, default: 0),
                p23: try percentage(p23, default: 1), p14: try percentage(p14, default: 0))
        default:
            throw error(.wrongType, element, problem: "found \(element.value.summary)", expected: Self.lossExpectation)
        }
    }

    func chance(_ element: JSONElement) throws(ProfileError) -> Chance {
        let expected = "a percentage such as \"1%\", or {\"percent\": \"1%\", \"correlation\": \"25%\"}"
        switch element.value {
        case .string:
            return Chance(try percentage(element))
        case .object:
            var reader = try object(element, expected: expected)
            let percent = reader.take("percent")
            let correlation = reader.take("correlation")
            try finish(reader)
            guard let percent else { throw missing("percent", in: element, expected: expected) }
            return Chance(try percentage(percent), correlation: try percentage(correlation, default: 0))
        default:
            throw error(.wrongType, element, problem: "found \(element.value.summary)", expected: expected)
        }
    }

    func reorder(_ element: JSONElement) throws(ProfileError) -> Reorder {
        let expected = "a percentage such as \"25%\", or {\"percent\": \"25%\", \"correlation\": \"50%\", \"gap\": 5}"
        switch element.value {
        case .string:
            return Reorder(try percentage(element))
        case .object:
            var reader = try object(element, expected: expected)
            let percent = reader.take("percent")
            let correlation = reader.take("correlation")
            let gap = reader.take("gap")
            try finish(reader)
            guard let percent else { throw missing("percent", in: element, expected: expected) }
            var reorder = Reorder(try percentage(percent), correlation: try percentage(correlation, default: 0))
            if let gap {
                reorder.gap = try integer(
                    gap, in: 1...UInt32.max,
                    expected:
                        "a gap in packets: a whole number from 1 to \(UInt32.max) (every gap-th packet may be reordered)"
                )
            }
            return reorder
        default:
            throw error(.wrongType, element, problem: "found \(element.value.summary)", expected: expected)
        }
    }

    func slot(_ element: JSONElement) throws(ProfileError) -> Slot {
        let expected = "a slot such as {\"min\": \"10ms\", \"max\": \"20ms\", \"packets\": 10, \"bytes\": 1500}"
        var reader = try object(element, expected: expected)
        let min = reader.take("min")
        let max = reader.take("max")
        let packets = reader.take("packets")
        let bytes = reader.take("bytes")
        try finish(reader)
        guard let min else { throw missing("min", in: element, expected: expected) }
        var slot = Slot(minDelay: try time(min))
        if let max { slot.maxDelay = try time(max) }
        if let packets {
            slot.packets = try integer(
                packets, in: 1...Self.maximumSlotCount,
                expected: "packets per slot: a whole number from 1 to \(Self.maximumSlotCount)")
        }
        if let bytes {
            slot.bytes = try integer(
                bytes, in: 1...Self.maximumSlotCount,
                expected: "bytes per slot: a whole number from 1 to \(Self.maximumSlotCount)")
        }
        return slot
    }

    // MARK: Checks on the model

    /// Checks ranges and combinations. Ranges repeat what reading enforces, for profiles made in code.
    func check(_ profile: Profile) throws(ProfileError) {
        guard Profile.isValidName(profile.name) else {
            throw error(
                .invalidValue, at: JSONPath.root.appending("name"),
                problem: "\(JSONWriter.quoted(profile.name)) is not a usable profile name",
                expected: "1 to 64 lowercase letters, digits, '-', '_' or '.', starting with a letter or digit")
        }
        try checkTime(profile.dnsDelay, at: JSONPath.root.appending("dnsDelay"))
        try check(profile.downlink, at: JSONPath.root.appending("downlink"))
        try check(profile.uplink, at: JSONPath.root.appending("uplink"))
    }

    func checkTime(_ value: UInt64, at path: JSONPath) throws(ProfileError) {
        guard value <= Quantity.maximumTime else {
            throw error(
                .outOfRange, at: path, problem: "\(Quantity.formatTime(value)) is out of range",
                expected: "a time from 0 to 4294s")
        }
    }

    func checkFraction(_ value: Double, at path: JSONPath) throws(ProfileError) {
        guard (0...1).contains(value) else {
            throw error(
                .outOfRange, at: path, problem: "\(value * 100)% is out of range",
                expected: "a percentage from 0% to 100%")
        }
    }

    /// A correlation needs something to correlate.
    func checkCorrelation(_ correlation: Double, probability: Double, at path: JSONPath) throws(ProfileError) {
        try checkFraction(probability, at: path.appending("percent"))
        try checkFraction(correlation, at: path.appending("correlation"))
        if correlation > 0, probability == 0 {
            throw error(
                .conflict, at: path.appending("correlation"), problem: "a correlation beside a probability of 0%",
                expected: "a \"percent\" above 0%, or no \"correlation\" (netem ignores it)")
        }
    }

    func check(_ conditions: LinkConditions, at base: JSONPath) throws(ProfileError) {
        if let rate = conditions.rate, rate < Quantity.minimumRate {
            throw error(
                .outOfRange, at: base.appending("rate"), problem: "\(rate)bit is too low",
                expected: "a rate of at least 8bit (one byte per second); leave \"rate\" out for an unlimited link")
        }
        try checkTime(conditions.delay, at: base.appending("delay"))
        let jitter = base.appending("jitter")
        try checkTime(conditions.jitter, at: jitter)
        try checkFraction(conditions.delayCorrelation, at: jitter.appending("correlation"))
        if conditions.delayCorrelation > 0, conditions.jitter == 0 {
            throw error(
                .conflict, at: jitter.appending("correlation"), problem: "a delay correlation without jitter",
                expected: "a jitter \"amount\" above 0 (the correlation ties each packet's jitter to the previous one)")
        }
        if conditions.distribution != nil, conditions.jitter == 0 || conditions.delay == 0 {
            throw error(
                .conflict, at: jitter.appending("distribution"),
                problem: "a distribution needs a delay and a jitter",
                expected: "a \"delay\" and a jitter \"amount\" above 0 (netem spreads the delay by the jitter)")
        }

        let loss = base.appending("loss")
        switch conditions.loss {
        case nil: break
        case .random(let probability, let correlation)?:
            try checkCorrelation(correlation, probability: probability, at: loss)
        case .gilbertElliott(let p, let r, let oneMinusH, let oneMinusK)?:
            let model = loss.appending("gilbertElliott")
            for (key, value) in [("p", p), ("r", r), ("1-h", oneMinusH), ("1-k", oneMinusK)] {
                try checkFraction(value, at: model.appending(key))
            }
        case .fourState(let p13, let p31, let p32, let p23, let p14)?:
            let model = loss.appending("fourState")
            for (key, value) in [("p13", p13), ("p31", p31), ("p32", p32), ("p23", p23), ("p14", p14)] {
                try checkFraction(value, at: model.appending(key))
            }
            for (first, second, a, b, state) in [("p13", "p14", p13, p14, 1), ("p31", "p32", p31, p32, 3)]
            where a + b > 1 + 1e-12 {
                throw error(
                    .conflict, at: model,
                    problem: "\(first) + \(second) is \(Quantity.formatPercentage(a + b)), above 100%",
                    expected: "\(first) + \(second) at most 100% (both leave state \(state))")
            }
        }
        if let duplicate = conditions.duplicate {
            try checkCorrelation(
                duplicate.correlation, probability: duplicate.probability, at: base.appending("duplicate"))
        }
        if let corrupt = conditions.corrupt {
            try checkCorrelation(corrupt.correlation, probability: corrupt.probability, at: base.appending("corrupt"))
        }
        if let reorder = conditions.reorder {
            let path = base.appending("reorder")
            try checkCorrelation(reorder.correlation, probability: reorder.probability, at: path)
            if reorder.gap == 0 {
                throw error(
                    .outOfRange, at: path.appending("gap"), problem: "a gap of 0",
                    expected: "a gap of at least 1 packet (netem reorders nothing with a gap of 0)")
            }
            if reorder.probability == 0, reorder.gap != 1 {
                throw error(
                    .conflict, at: path.appending("gap"), problem: "a gap beside a reorder probability of 0%",
                    expected: "a reorder \"percent\" above 0%")
            }
            if reorder.probability > 0, conditions.delay == 0 {
                throw error(
                    .conflict, at: path, problem: "reordering needs a delay",
                    expected: "a \"delay\" above 0 in the same direction: netem reorders by sending some packets "
                        + "without the delay")
            }
        }
        if let slot = conditions.slot {
            let path = base.appending("slot")
            try checkTime(slot.minDelay, at: path.appending("min"))
            try checkTime(slot.maxDelay, at: path.appending("max"))
            if slot.maxDelay < slot.minDelay {
                throw error(
                    .conflict, at: path.appending("max"),
                    problem:
                        "\"max\" (\(Quantity.formatTime(slot.maxDelay))) is below \"min\" (\(Quantity.formatTime(slot.minDelay)))",
                    expected: "a \"max\" of at least \"min\"")
            }
            if slot.maxDelay == 0 {
                throw error(
                    .outOfRange, at: path.appending("min"), problem: "slots that open 0 apart",
                    expected: "a \"min\" or \"max\" above 0")
            }
            for (key, value) in [("packets", slot.packets), ("bytes", slot.bytes)] {
                if let value, value == 0 || value > Self.maximumSlotCount {
                    throw error(
                        .outOfRange, at: path.appending(key), problem: "\(value) is out of range",
                        expected: "a whole number from 1 to \(Self.maximumSlotCount)")
                }
            }
        }
        if conditions.queueLimit == 0 {
            throw error(
                .outOfRange, at: base.appending("queueLimit"), problem: "a queue limit of 0",
                expected:
                    "a queue limit of at least 1 packet, or no \"queueLimit\" to derive it from the rate and delay")
        }
        if conditions.ecn, conditions.loss?.dropsNothing ?? true {
            throw error(
                .conflict, at: base.appending("ecn"), problem: "ecn without loss",
                expected: "a \"loss\" above 0% in the same direction (netem marks the packets it would drop)")
        }
    }
}

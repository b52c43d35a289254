import JSONDocument

/// Reads a profile document into a ``Profile``: its shape (keys, JSON types, the short and full forms of
/// a value) and its units. It refuses only what the model cannot hold; ranges and combinations are the
/// business of ``ProfileValidator``, which runs next.
struct ProfileReader {
    /// The document's value.
    let root: JSONElement
    /// The profile's file; a trace's path is resolved against its folder.
    var source: String? = nil
    /// Traces already in memory, by the path they were read from: a trace named by one of these paths is
    /// taken from here instead of being read again (see ``ProfileParser/read(_:in:source:knownTraces:)``).
    var knownTraces: [String: DeliveryTrace] = [:]

    /// The most bytes a delivery trace file may hold.
    static let maximumTraceSize = 64 << 20
    static let traceExpectation =
        "a delivery trace file in Mahimahi's format (one millisecond per line), such as \"lte-driving.trace\", "
        + "relative to the profile's folder"
    static let targetsExpectation =
        "a list of targets such as [{\"to\": \"198.19.0.0/24\", \"protocol\": \"tcp\", \"port\": 443}]"
    static let targetExpectation =
        "a target such as {\"to\": \"198.19.0.0/24\", \"protocol\": \"tcp\", \"port\": 443} (\"protocol\" tcp, udp "
        + "or icmp and \"port\" are optional)"

    static let profileExpectation =
        "a profile: an object with \"name\" and optionally \"description\", \"downlink\", \"uplink\", \"dnsDelay\" and \"targets\""
    static let conditionsExpectation =
        "link conditions: an object such as {\"rate\": \"240kbit\", \"delay\": \"400ms\"}"
    static let jitterExpectation =
        "a jitter such as \"50ms\", or {\"amount\": \"50ms\", \"correlation\": \"25%\", \"distribution\": \"normal\"}"
    static let lossModels = "\"percent\" (with an optional \"correlation\"), \"gilbertElliott\" or \"fourState\""
    static let lossExpectation = "a loss such as \"1%\", or an object with " + lossModels
    static let geExpectation =
        "a Gilbert-Elliott model such as {\"p\": \"1%\", \"r\": \"10%\", \"1-h\": \"100%\", \"1-k\": \"0%\"}"
    static let fourStateExpectation =
        "a 4-state model such as {\"p13\": \"1%\", \"p31\": \"10%\", \"p32\": \"0%\", \"p23\": \"100%\", \"p14\": \"0%\"}"
    static let chanceExpectation = "a percentage such as \"1%\", or {\"percent\": \"1%\", \"correlation\": \"25%\"}"
    static let reorderExpectation =
        "a percentage such as \"25%\", or {\"percent\": \"25%\", \"correlation\": \"50%\", \"gap\": 5}"
    static let slotExpectation =
        "a slot such as {\"min\": \"10ms\", \"max\": \"20ms\", \"packets\": 10, \"bytes\": 1500}"

    // MARK: Values

    func time(_ element: JSONElement) throws(DocumentError) -> UInt64 {
        try element.string(expected: "a time as a string, such as \"400ms\"", parse: Quantity.time)
    }

    func rate(_ element: JSONElement) throws(DocumentError) -> UInt64 {
        try element.string(expected: "a rate as a string, such as \"240kbit\"", parse: Quantity.rate)
    }

    func percentage(_ element: JSONElement) throws(DocumentError) -> Double {
        try element.string(expected: "a percentage as a string, such as \"1%\"", parse: Quantity.percentage)
    }

    func percentage(_ element: JSONElement?, default value: Double) throws(DocumentError) -> Double {
        guard let element else { return value }
        return try percentage(element)
    }

    /// A whole number the model keeps in a `UInt32`; whether it is in range is the validator's call.
    func count(_ element: JSONElement, expected: String) throws(DocumentError) -> UInt32 {
        let value = try element.integer(Int64.self, expected: expected)
        guard let count = UInt32(exactly: value) else {
            throw element.error("\(value) is out of range", expected: expected, kind: .outOfRange)
        }
        return count
    }

    // MARK: The document

    func profile() throws(DocumentError) -> Profile {
        let fields = try root.fields(
            ["name", "description", "downlink", "uplink", "dnsDelay", "targets"], expected: Self.profileExpectation)
        let name = try fields.require("name", expected: "a \"name\" such as \"edge\" (the file name without .json)")
        var profile = Profile(name: try name.string(expected: "a profile name as a string, such as \"edge\""))
        if let description = fields["description"] {
            profile.description = try description.string(expected: "a description as a string")
        }
        profile.downlink = try fields["downlink"].map(conditions) ?? .unconditioned
        profile.uplink = try fields["uplink"].map(conditions) ?? .unconditioned
        if let dnsDelay = fields["dnsDelay"] { profile.dnsDelay = try time(dnsDelay) }
        if let targets = fields["targets"] { profile.targets = try targets.array(expected: Self.targetsExpectation).map(target) }
        return profile
    }

    /// One traffic target: `{"to": PREFIX, "protocol": "tcp|udp|icmp", "port": N}`.
    func target(_ element: JSONElement) throws(DocumentError) -> TrafficTarget {
        let fields = try element.fields(["to", "protocol", "port"], expected: Self.targetExpectation)
        let to = try fields.require("to", expected: "\"to\": the far end's address or prefix, such as \"198.19.0.0/24\"")
        let prefix = try to.string(expected: "an address or prefix as a string, such as \"198.19.0.0/24\"")
        let protocolName = try fields["protocol"]?.string(expected: "\"tcp\", \"udp\" or \"icmp\"")
        let port = try fields["port"].map { element throws(DocumentError) in
            try element.integer(UInt16.self, expected: "a port from 1 to 65535")
        }
        do {
            return try TrafficTarget(to: prefix, protocol: protocolName, port: port)
        } catch {
            let culprit = error.problem.contains("port") ? fields["port"] ?? element
                : error.problem.contains("protocol") ? fields["protocol"] ?? element : to
            throw culprit.error(error.problem, expected: error.expected, kind: .invalidValue)
        }
    }

    /// The file a trace member names (`written`) and where it is: relative to the profile's folder.
    func traceFile(_ element: JSONElement, expected: String) throws(DocumentError) -> (written: String, path: String) {
        let written = try element.string(expected: expected)
        var folder = "."
        if let source, let slash = source.lastIndex(of: "/") { folder = String(source[..<slash]) }
        return (written, written.hasPrefix("/") ? written : "\(folder)/\(written)")
    }

    /// A direction's delay or loss trace, read from the file the profile names (relative to its folder).
    func stepTrace(_ element: JSONElement, kind: StepTrace.Kind) throws(DocumentError) -> StepTrace {
        let expected = "a \(kind.rawValue) trace file (lines \"MILLISECONDS \(kind == .delay ? "DELAY" : "LOSS")\"), relative to the profile's folder"
        let (written, path) = try traceFile(element, expected: expected)
        let bytes = try DocumentFile.read(path, maximumSize: Self.maximumTraceSize, expected: "a \(kind.rawValue) trace file")
        do {
            var trace = try StepTrace(parsing: String(decoding: bytes, as: UTF8.self), kind: kind, source: path)
            trace.file = written
            trace.path = path
            return trace
        } catch {
            throw element.error(error.description, expected: expected, kind: .invalidValue)
        }
    }

    /// A direction's delivery trace, read from the file the profile names (relative to its folder).
    func trace(_ element: JSONElement) throws(DocumentError) -> DeliveryTrace {
        let (written, path) = try traceFile(element, expected: Self.traceExpectation)
        if var known = knownTraces[path] {
            known.file = written
            return known
        }
        let bytes = try DocumentFile.read(path, maximumSize: Self.maximumTraceSize, expected: "a delivery trace file")
        do {
            var trace = try DeliveryTrace(parsing: String(decoding: bytes, as: UTF8.self), source: path)
            trace.file = written
            trace.path = path
            return trace
        } catch {
            throw element.error(error.description, expected: Self.traceExpectation, kind: .invalidValue)
        }
    }

    func conditions(_ element: JSONElement) throws(DocumentError) -> LinkConditions {
        let fields = try element.fields(
            ["rate", "delay", "jitter", "jitterModel", "loss", "duplicate", "corrupt", "reorder", "slot", "queueLimit", "queue", "ecn", "trace",
                "delayTrace", "lossTrace"],
            expected: Self.conditionsExpectation)
        var conditions = LinkConditions()
        if let rate = fields["rate"] { conditions.rate = try self.rate(rate) }
        if let delay = fields["delay"] { conditions.delay = try time(delay) }
        if let jitter = fields["jitter"] {
            (conditions.jitter, conditions.delayCorrelation, conditions.distribution) = try self.jitter(jitter)
        }
        if let model = fields["jitterModel"] {
            conditions.jitterModel = try model.choice(
                JitterModel.self, noun: "a jitter model", typeExpected: "a jitter model as a string: \"ordered\" or \"netem\"")
        }
        conditions.loss = try fields["loss"].map(lossModel)
        conditions.duplicate = try fields["duplicate"].map(chance)
        conditions.corrupt = try fields["corrupt"].map(chance)
        conditions.reorder = try fields["reorder"].map(reorder)
        conditions.slot = try fields["slot"].map(slot)
        if let queueLimit = fields["queueLimit"] {
            conditions.queueLimit = try count(queueLimit, expected: ProfileValidator.queueLimitExpectation)
        }
        conditions.queue = try fields["queue"].map(queue)
        if let ecn = fields["ecn"] { conditions.ecn = try ecn.bool(expected: "true or false") }
        conditions.trace = try fields["trace"].map(trace)
        conditions.delayTrace = try fields["delayTrace"].map { element throws(DocumentError) in try stepTrace(element, kind: .delay) }
        conditions.lossTrace = try fields["lossTrace"].map { element throws(DocumentError) in try stepTrace(element, kind: .loss) }
        return conditions
    }

    /// The jitter's amount, correlation and distribution.
    func jitter(_ element: JSONElement) throws(DocumentError) -> (UInt64, Double, DelayDistribution?) {
        try element.shortOrFull(
            expected: Self.jitterExpectation, keys: ["amount", "correlation", "distribution"],
            short: { element throws(DocumentError) in (try time(element), 0, nil) },
            full: { fields throws(DocumentError) in
                (
                    try time(fields.require("amount", expected: Self.jitterExpectation)),
                    try percentage(fields["correlation"], default: 0),
                    try fields["distribution"]?.choice(
                        DelayDistribution.self, noun: "a distribution",
                        typeExpected: "a distribution name as a string, such as \"normal\"")
                )
            })
    }

    func lossModel(_ element: JSONElement) throws(DocumentError) -> LossModel {
        try element.shortOrFull(
            expected: Self.lossExpectation, keys: ["percent", "correlation", "gilbertElliott", "fourState"],
            short: { element throws(DocumentError) in .random(probability: try percentage(element), correlation: 0) },
            full: { fields throws(DocumentError) in
                let models = fields.present(["percent", "gilbertElliott", "fourState"])
                guard
                    let model = try models.atMostOne(expected: "one loss model per direction: " + Self.lossModels)
                else {
                    throw element.error("no loss model", expected: Self.lossModels, kind: .missingKey)
                }
                let correlation = fields["correlation"]
                if model.key == "percent" {
                    return .random(
                        probability: try percentage(model.element), correlation: try percentage(correlation, default: 0))
                }
                if let correlation {
                    throw correlation.error(
                        "\"correlation\" belongs to \"percent\"",
                        expected: "\"correlation\" only beside \"percent\" (\(JSONWriter.quoted(model.key)) has its "
                            + "own state probabilities)",
                        kind: .conflict)
                }
                return model.key == "gilbertElliott" ? try gilbertElliott(model.element) : try fourState(model.element)
            })
    }

    func gilbertElliott(_ element: JSONElement) throws(DocumentError) -> LossModel {
        let fields = try element.fields(["p", "r", "1-h", "1-k"], expected: Self.geExpectation)
        return .gilbertElliott(
            p: try percentage(fields.require("p", expected: Self.geExpectation)),
            r: try percentage(fields["r"], default: 1), oneMinusH: try percentage(fields["1-h"], default: 1),
            oneMinusK: try percentage(fields["1-k"], default: 0))
    }

    func fourState(_ element: JSONElement) throws(DocumentError) -> LossModel {
        let fields = try element.fields(["p13", "p31", "p32", "p23", "p14"], expected: Self.fourStateExpectation)
        let p13 = try percentage(fields.require("p13", expected: Self.fourStateExpectation))
        return .fourState(
            p13: p13, p31: try percentage(fields["p31"], default: 1 - p13), p32: try percentage(fields["p32"], default: 0),
            p23: try percentage(fields["p23"], default: 1), p14: try percentage(fields["p14"], default: 0))
    }

    func chance(_ element: JSONElement) throws(DocumentError) -> Chance {
        try element.shortOrFull(
            expected: Self.chanceExpectation, keys: ["percent", "correlation"],
            short: { element throws(DocumentError) in Chance(try percentage(element)) },
            full: { fields throws(DocumentError) in
                Chance(
                    try percentage(fields.require("percent", expected: Self.chanceExpectation)),
                    correlation: try percentage(fields["correlation"], default: 0))
            })
    }

    func reorder(_ element: JSONElement) throws(DocumentError) -> Reorder {
        try element.shortOrFull(
            expected: Self.reorderExpectation, keys: ["percent", "correlation", "gap"],
            short: { element throws(DocumentError) in Reorder(try percentage(element)) },
            full: { fields throws(DocumentError) in
                Reorder(
                    try percentage(fields.require("percent", expected: Self.reorderExpectation)),
                    correlation: try percentage(fields["correlation"], default: 0),
                    gap: try fields["gap"].map { gap throws(DocumentError) in
                        try count(gap, expected: ProfileValidator.gapExpectation)
                    } ?? 1)
            })
    }

    func slot(_ element: JSONElement) throws(DocumentError) -> Slot {
        let fields = try element.fields(["min", "max", "packets", "bytes"], expected: Self.slotExpectation)
        var slot = Slot(minDelay: try time(fields.require("min", expected: Self.slotExpectation)))
        if let max = fields["max"] { slot.maxDelay = try time(max) }
        for member in fields.present(["packets", "bytes"]) {
            let count = try count(member.element, expected: ProfileValidator.slotCountExpectation(member.key))
            if member.key == "packets" { slot.packets = count } else { slot.bytes = count }
        }
        return slot
    }
}

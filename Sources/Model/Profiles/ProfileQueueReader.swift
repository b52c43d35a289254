import JSONDocument

/// Reading a direction's `"queue"`: a capacity alone (a DropTail queue), or an object naming the
/// discipline with its parameters.
extension ProfileReader {
    static let queueExpectation =
        "a queue such as \"250ms\", \"64KB\" or \"1000 packets\" (DropTail), or an object such as "
        + "{\"discipline\": \"codel\", \"target\": \"5ms\", \"interval\": \"100ms\", \"limit\": \"1000 packets\"}"

    /// The keys each discipline takes besides `"discipline"`.
    static let queueKeys: [String: [String]] = [
        "droptail": ["limit"], "drophead": ["limit"], "codel": ["limit", "target", "interval"],
        "pie": ["limit", "target", "tupdate", "alpha", "beta"], "red": ["limit", "min", "max", "probability", "adaptive", "burst"],
    ]

    static let allQueueKeys = ["discipline", "limit", "target", "interval", "tupdate", "alpha", "beta", "min", "max", "probability", "adaptive", "burst"]

    func capacity(_ element: JSONElement) throws(DocumentError) -> QueueCapacity {
        try element.string(expected: QueueCapacity.expectation, parse: QueueCapacity.parse)
    }

    func size(_ element: JSONElement) throws(DocumentError) -> UInt64 {
        try element.string(expected: Quantity.sizeExpectation, parse: Quantity.size)
    }

    func queue(_ element: JSONElement) throws(DocumentError) -> LinkQueue {
        try element.shortOrFull(
            expected: Self.queueExpectation, keys: Self.allQueueKeys,
            short: { element throws(DocumentError) in .dropTail(try capacity(element)) },
            full: { fields throws(DocumentError) in try queue(fields, in: element) })
    }

    private func queue(_ fields: JSONFields, in element: JSONElement) throws(DocumentError) -> LinkQueue {
        let named = try fields.require("discipline", expected: "\"discipline\": one of " + QueueDiscipline.names.map(JSONWriter.quoted).joined(separator: ", "))
        let name = try named.choice(
            QueueDiscipline.names, noun: "a queue discipline",
            aliases: ["pfifo": "droptail", "bfifo": "droptail", "fifo": "droptail", "tail": "droptail", "pfifo_head_drop": "drophead",
                "head": "drophead", "ared": "red", "fq_codel": "codel", "fq_pie": "pie"])
        let allowed = Self.queueKeys[name] ?? []
        for member in fields.present(Self.allQueueKeys) where member.key != "discipline" && !allowed.contains(member.key) {
            throw member.element.error(
                "\(JSONWriter.quoted(member.key)) is not a parameter of \(name)",
                expected: "for \(name): " + (["discipline"] + allowed).map(JSONWriter.quoted).joined(separator: ", "), kind: .conflict)
        }
        let limit = try fields["limit"].map(capacity)
        func time(_ key: String, default value: UInt64) throws(DocumentError) -> UInt64 {
            try fields[key].map(self.time) ?? value
        }
        func weight(_ key: String, default value: Double) throws(DocumentError) -> Double {
            guard let element = fields[key] else { return value }
            return try element.number(expected: "\(key) as a number per second, such as \(value)").value
        }
        switch name {
        case "droptail", "drophead":
            guard let limit else {
                throw element.missing("limit", expected: "\"limit\": " + QueueCapacity.expectation)
            }
            return LinkQueue(name == "droptail" ? .dropTail : .dropHead, limit: limit)
        case "codel":
            let defaults = CoDelSettings()
            return LinkQueue(
                .codel(CoDelSettings(target: try time("target", default: defaults.target), interval: try time("interval", default: defaults.interval))),
                limit: limit)
        case "pie":
            let defaults = PIESettings()
            return LinkQueue(
                .pie(
                    PIESettings(
                        target: try time("target", default: defaults.target), updateInterval: try time("tupdate", default: defaults.updateInterval),
                        alpha: try weight("alpha", default: defaults.alpha), beta: try weight("beta", default: defaults.beta))),
                limit: limit)
        default:
            let thresholds = "RED's thresholds in bytes, such as \"min\": \"30KB\", \"max\": \"90KB\""
            var settings = REDSettings(
                minimum: try size(fields.require("min", expected: thresholds)), maximum: try size(fields.require("max", expected: thresholds)))
            if let probability = fields["probability"] { settings.probability = try percentage(probability) }
            if let adaptive = fields["adaptive"] { settings.adaptive = try adaptive.bool(expected: "true or false") }
            if let burst = fields["burst"] { settings.burst = try count(burst, expected: ProfileValidator.burstExpectation) }
            return LinkQueue(.red(settings), limit: limit)
        }
    }
}

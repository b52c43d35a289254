import JSONDocument

/// Writes a ``Profile`` as JSON in the shortest form of each value (`"240kbit"`, `"25%"`, a string where
/// the full object would say nothing more), such that reading the text gives the profile back.
enum ProfileWriter {
    /// How a direction's delivery trace is named.
    enum TraceReference {
        /// As the profile names it (``DeliveryTrace/file``, relative to the profile's folder).
        case asWritten
        /// By the path it was read from (``DeliveryTrace/path``), for a reader in another folder.
        case resolved
    }

    /// The profile as a JSON object: `name`, then `description`, `downlink`, `uplink` and `dnsDelay` when
    /// they are not empty or neutral. ``Profile/source`` is not written.
    static func json(_ profile: Profile, traces: TraceReference = .asWritten) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [("name", .string(profile.name))]
        if !profile.description.isEmpty { members.append(("description", .string(profile.description))) }
        if profile.downlink != .unconditioned { members.append(("downlink", json(profile.downlink, traces: traces))) }
        if profile.uplink != .unconditioned { members.append(("uplink", json(profile.uplink, traces: traces))) }
        if profile.dnsDelay > 0 { members.append(("dnsDelay", .string(Quantity.formatTime(profile.dnsDelay)))) }
        if !profile.targets.isEmpty {
            members.append(("targets", .array(profile.targets.map { target in
                var object: [(key: String, value: JSONValue)] = [("to", .string(target.to.description))]
                if let name = target.protocol { object.append(("protocol", .string(name.rawValue))) }
                if let port = target.port { object.append(("port", .number(JSONNumber(Int(port))))) }
                return .object(object)
            })))
        }
        return .object(members)
    }

    static func percent(_ fraction: Double) -> JSONValue { .string(Quantity.formatPercentage(fraction)) }

    static func chance(_ probability: Double, correlation: Double) -> JSONValue {
        if correlation == 0 { return percent(probability) }
        return .object([("percent", percent(probability)), ("correlation", percent(correlation))])
    }

    static func json(_ conditions: LinkConditions, traces: TraceReference = .asWritten) -> JSONValue {
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
        if let model = conditions.jitterModel { members.append(("jitterModel", .string(model.rawValue))) }
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
        if let queue = conditions.queue { members.append(("queue", json(queue))) }
        if conditions.ecn { members.append(("ecn", .bool(true))) }
        if let trace = conditions.trace, let file = traces == .resolved ? trace.path ?? trace.file : trace.file {
            members.append(("trace", .string(file)))
        }
        for (key, trace) in [("delayTrace", conditions.delayTrace), ("lossTrace", conditions.lossTrace)] {
            if let trace, let file = traces == .resolved ? trace.path ?? trace.file : trace.file { members.append((key, .string(file))) }
        }
        return .object(members)
    }

    /// A queue in its shortest form: a DropTail queue as its limit alone, otherwise the discipline with the
    /// parameters and limit that differ from its defaults.
    static func json(_ queue: LinkQueue) -> JSONValue {
        if queue.discipline == .dropTail { return .string(queue.limit.description) }
        var members: [(key: String, value: JSONValue)] = [("discipline", .string(queue.discipline.name))]
        let time = { (nanoseconds: UInt64) in JSONValue.string(Quantity.formatTime(nanoseconds)) }
        switch queue.discipline {
        case .dropTail, .dropHead: break
        case .codel(let settings):
            let defaults = CoDelSettings()
            if settings.target != defaults.target { members.append(("target", time(settings.target))) }
            if settings.interval != defaults.interval { members.append(("interval", time(settings.interval))) }
        case .pie(let settings):
            let defaults = PIESettings()
            if settings.target != defaults.target { members.append(("target", time(settings.target))) }
            if settings.updateInterval != defaults.updateInterval { members.append(("tupdate", time(settings.updateInterval))) }
            if settings.alpha != defaults.alpha { members.append(("alpha", .number(JSONNumber(settings.alpha)))) }
            if settings.beta != defaults.beta { members.append(("beta", .number(JSONNumber(settings.beta)))) }
        case .red(let settings):
            members.append(("min", .string(Quantity.formatSize(settings.minimum))))
            members.append(("max", .string(Quantity.formatSize(settings.maximum))))
            if settings.probability != REDSettings(minimum: 0, maximum: 0).probability { members.append(("probability", percent(settings.probability))) }
            if settings.adaptive { members.append(("adaptive", .bool(true))) }
            if let burst = settings.burst { members.append(("burst", .number(JSONNumber(Int(burst))))) }
        }
        if queue.limit != queue.discipline.defaultLimit { members.append(("limit", .string(queue.limit.description))) }
        return .object(members)
    }
}

import JSONDocument

/// The rules of a direction's `"queue"` (`profiles/FORMAT.md`, "Queues").
extension ProfileValidator {
    static let burstExpectation = "a burst in average packets (1000 bytes): a whole number from 1"

    func check(queue: LinkQueue, of conditions: LinkConditions, at path: JSONPath, base: JSONPath) throws(DocumentError) {
        if conditions.queueLimit != nil {
            throw locator.error(
                .conflict, at: base.appending("queueLimit"), problem: "a \"queueLimit\" beside a \"queue\"",
                expected: "one of them: \"queue\": \"N packets\" is the same DropTail queue")
        }
        let transmitter = conditions.rate != nil || conditions.trace != nil
        if !transmitter && !(queue.discipline == .dropTail && conditions.slot != nil) {
            throw locator.error(
                .conflict, at: path, problem: "a queue without a rate or a trace",
                expected: "a \"rate\" or a \"trace\" in the same direction (a DropTail queue may also serve a \"slot\"): "
                    + "without one nothing ever waits in the queue")
        }
        let limit = path.appending("limit")
        switch queue.limit {
        case .packets(let count) where count == 0:
            throw locator.error(.outOfRange, at: limit, problem: "a limit of 0 packets", expected: "at least 1 packet")
        case .bytes(let bytes) where bytes == 0:
            throw locator.error(.outOfRange, at: limit, problem: "a limit of 0 bytes", expected: "at least 1B")
        case .time(let nanoseconds):
            try locator.checkTime(nanoseconds, at: limit)
            if nanoseconds == 0 {
                throw locator.error(.outOfRange, at: limit, problem: "a limit of no time", expected: "a time above 0")
            }
            if queue.discipline != .dropTail {
                throw locator.error(
                    .conflict, at: limit, problem: "a time limit for \(queue.discipline.name)",
                    expected: "a limit in packets or bytes (only DropTail drops by the time a frame would wait)")
            }
        default: break
        }
        switch queue.discipline {
        case .dropTail, .dropHead: break
        case .codel(let settings):
            try checkPositiveTime(settings.target, at: path.appending("target"))
            try checkPositiveTime(settings.interval, at: path.appending("interval"))
        case .pie(let settings):
            try checkPositiveTime(settings.target, at: path.appending("target"))
            try checkPositiveTime(settings.updateInterval, at: path.appending("tupdate"))
            for (key, value) in [("alpha", settings.alpha), ("beta", settings.beta)] where !(0...2).contains(value) {
                throw locator.error(
                    .outOfRange, at: path.appending(key), problem: "\(value) is out of range",
                    expected: "a weight from 0 to 2 per second (RFC 8033: alpha 0.125, beta 1.25)")
            }
        case .red(let settings):
            try check(red: settings, limit: queue.limit, at: path)
        }
    }

    private func checkPositiveTime(_ nanoseconds: UInt64, at path: JSONPath) throws(DocumentError) {
        try locator.checkTime(nanoseconds, at: path)
        if nanoseconds == 0 {
            throw locator.error(.outOfRange, at: path, problem: "no time", expected: "a time above 0")
        }
    }

    private func check(red settings: REDSettings, limit: QueueCapacity, at path: JSONPath) throws(DocumentError) {
        if settings.minimum == 0 || settings.minimum >= settings.maximum {
            throw locator.error(
                .conflict, at: path.appending(settings.minimum == 0 ? "min" : "max"),
                problem: "thresholds \(Quantity.formatSize(settings.minimum)) to \(Quantity.formatSize(settings.maximum))",
                expected: "a \"min\" above 0 and a \"max\" above \"min\"")
        }
        guard case .bytes(let bytes) = limit else {
            throw locator.error(
                .conflict, at: path.appending("limit"), problem: "a RED limit in \(limit)",
                expected: "a limit in bytes, such as \"400KB\" (RED's thresholds are bytes)")
        }
        if bytes < settings.maximum {
            throw locator.error(
                .conflict, at: path.appending("limit"), problem: "a limit of \(Quantity.formatSize(bytes)) below \"max\"",
                expected: "a limit of at least \(Quantity.formatSize(settings.maximum)) (tc-red suggests several times \"max\")")
        }
        if !(settings.probability > 0 && settings.probability <= 1) {
            try checkFraction(settings.probability, at: path.appending("probability"))
            throw locator.error(.outOfRange, at: path.appending("probability"), problem: "a probability of 0%", expected: "a probability above 0%")
        }
        if let burst = settings.burst, burst == 0 {
            throw locator.error(.outOfRange, at: path.appending("burst"), problem: "a burst of 0", expected: Self.burstExpectation)
        }
        if settings.weightLog == nil {
            let least = (settings.minimum + REDSettings.averagePacket - 1) / REDSettings.averagePacket
            throw locator.error(
                .conflict, at: path.appending(settings.burst == nil ? "min" : "burst"),
                problem: "a burst of \(settings.effectiveBurst) packets is below min / avpkt (\(least))",
                expected: "a \"burst\" of at least \(least) (tc refuses a smaller one: the average could never reach \"min\")")
        }
    }
}

/// The rules of a direction's delay and loss traces.
extension ProfileValidator {
    func checkStepTraces(_ conditions: LinkConditions, at base: JSONPath) throws(DocumentError) {
        for (trace, key, beside, present) in [
            (conditions.delayTrace, "delayTrace", "delay", conditions.delay > 0),
            (conditions.lossTrace, "lossTrace", "loss", conditions.loss != nil),
        ] where trace != nil && present {
            throw locator.error(
                .conflict, at: base.appending(beside), problem: "a \"\(beside)\" beside a \"\(key)\"",
                expected: "one of them: the trace is the \(beside), step by step")
        }
        if let trace = conditions.delayTrace, trace.maximum > Double(Quantity.maximumTime) {
            throw locator.error(
                .outOfRange, at: base.appending("delayTrace"), problem: "a delay of \(Quantity.formatTime(UInt64(trace.maximum)))",
                expected: Quantity.timeRange)
        }
    }
}

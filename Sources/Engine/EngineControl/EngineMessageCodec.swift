import JSONDocument
import LinkEmulation
import Profiles

/// The control protocol's one codec, used by both ends: the client (`linkcond apply`, `show`) and the
/// engine write and read the same JSON with JSONDocument, and the conditions inside it are a profile
/// document read by ``ProfileParser`` — the reader and validator every profile file goes through, so the
/// engine refuses exactly what `linkcond apply` would, with the same words.
///
/// A request is one line:
///
/// ```json
/// {"operation":"apply","links":["wifi"],"profile":{"name":"edge","downlink":{"rate":"240kbit","delay":"400ms"}}}
/// ```
///
/// and so is the answer: `{"pid":812,"links":[{"link":"wifi","clientSide":"cl-wl0","routerSide":"rt-wl0",
/// "profile":{…held…},"uplink":{"counters":{…},"sendFailures":0,"receiveOverruns":0,"truncated":0,"oversized":0},"downlink":{…}}]}`,
/// with `"error"` when the request was refused. Unknown keys are refused, as in every linkcond document.
public enum EngineMessageCodec {
    /// The most bytes a message may have. Conditions are small (a delivery trace travels by its path), so
    /// a longer message is refused rather than read.
    public static let maximumMessage = 1 << 20
    /// How deep a message may nest (a profile inside a link inside the answer).
    static let maximumDepth = 24

    // MARK: Writing

    /// The request as one line of JSON (no newline).
    public static func text(of request: EngineRequest) -> String {
        var members: [(key: String, value: JSONValue)] = [("operation", .string(request.operation.rawValue))]
        if let links = request.links { members.append(("links", .array(links.map { .string($0.rawValue) }))) }
        if let generation = request.generation { members.append(("generation", number(generation))) }
        if let deadline = request.deadline { members.append(("deadline", number(deadline))) }
        if let profile = request.profile { members.append(("profile", ProfileParser.json(of: profile, tracesByPath: true))) }
        return JSONWriter.text(of: .object(members), indent: nil)
    }

    /// The answer as one line of JSON (no newline).
    public static func text(of response: EngineResponse) -> String {
        var members: [(key: String, value: JSONValue)] = [("pid", number(UInt64(max(0, response.pid))))]
        if let error = response.error { members.append(("error", .string(error))) }
        members.append(("links", .array(response.links.map(json))))
        return JSONWriter.text(of: .object(members), indent: nil)
    }

    static func json(_ link: EngineLinkState) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [
            ("link", .string(link.link.rawValue)), ("clientSide", .string(link.clientSide)), ("routerSide", .string(link.routerSide)),
        ]
        if let profile = link.profile { members.append(("profile", ProfileParser.json(of: profile, tracesByPath: true))) }
        members.append(("generation", number(link.generation)))
        members.append(("uplink", json(link.uplink)))
        members.append(("downlink", json(link.downlink)))
        return .object(members)
    }

    static func json(_ state: EngineDirectionState) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [
            ("counters", json(state.counters)),
            ("sendFailures", number(state.sendFailures)), ("receiveOverruns", number(state.receiveOverruns)),
            ("truncated", number(state.truncated)), ("oversized", number(state.oversized)),
        ]
        if let totals = state.totals { members.append(("totals", json(totals))) }
        for (key, summary) in [("lateness", state.lateness), ("sojourn", state.sojourn)] {
            guard let summary else { continue }
            members.append((
                key,
                .object([
                    ("count", number(summary.count)), ("median", number(summary.median)), ("p99", number(summary.p99)),
                    ("maximum", number(summary.maximum)),
                ])
            ))
        }
        return .object(members)
    }

    static func json(_ counters: DirectionCounters) -> JSONValue {
        .object((counterFields + laterCounterFields).map { ($0.key, number(counters[keyPath: $0.field])) })
    }

    /// A whole number written exactly (a `Double` would round counters above 2^53).
    static func number(_ value: UInt64) -> JSONValue {
        .number(JSONNumber(value: Double(value), literal: String(value)))
    }

    /// The model's counters by their names on the wire. (Key paths are immutable values; they are not
    /// declared Sendable.)
    nonisolated(unsafe) static let counterFields: [(key: String, field: WritableKeyPath<DirectionCounters, UInt64>)] = [
        ("offeredFrames", \.offeredFrames), ("offeredBytes", \.offeredBytes), ("passedFrames", \.passedFrames),
        ("passedBytes", \.passedBytes), ("untouchedFrames", \.untouchedFrames), ("lostFrames", \.lostFrames),
        ("lostBytes", \.lostBytes), ("queueDroppedFrames", \.queueDroppedFrames), ("queueDroppedBytes", \.queueDroppedBytes),
        ("heldLimitDroppedFrames", \.heldLimitDroppedFrames), ("duplicatedFrames", \.duplicatedFrames),
        ("corruptedFrames", \.corruptedFrames), ("reorderedFrames", \.reorderedFrames), ("ecnMarkedFrames", \.ecnMarkedFrames),
        ("dnsFrames", \.dnsFrames), ("backlogFrames", \.backlogFrames), ("backlogBytes", \.backlogBytes),
        ("transmitQueueFrames", \.transmitQueueFrames), ("transmitQueueBytes", \.transmitQueueBytes),
    ]

    /// Counters an engine of an older linkcond does not report: read as 0 when absent.
    nonisolated(unsafe) static let laterCounterFields: [(key: String, field: WritableKeyPath<DirectionCounters, UInt64>)] = [
        ("orderHolds", \.orderHolds), ("jitterReorderedFrames", \.jitterReorderedFrames), ("tailDroppedFrames", \.tailDroppedFrames),
        ("headDroppedFrames", \.headDroppedFrames), ("codelDroppedFrames", \.codelDroppedFrames), ("pieDroppedFrames", \.pieDroppedFrames),
        ("redDroppedFrames", \.redDroppedFrames), ("redForcedDroppedFrames", \.redForcedDroppedFrames),
    ]

    // MARK: Reading

    /// Reads a request line (without its newline). `source` names the message in errors (`the request`).
    /// The profile is read and checked as a profile file is; a refusal says where, in the profile's words.
    public static func request(_ bytes: [UInt8], source: String = "the request") throws(DocumentError) -> EngineRequest {
        let document = try parse(bytes, source: source)
        let fields = try document.root.fields(["operation", "links", "generation", "deadline", "profile"], expected: requestExpectation)
        let operation = try fields.require("operation", expected: "\"operation\": \"apply\", \"clear\" or \"show\"")
            .choice(EngineRequest.Operation.self, noun: "an operation")
        var request = EngineRequest(operation: operation)
        request.links = try fields["links"].map(links)
        for (key, field) in [("generation", \EngineRequest.generation), ("deadline", \EngineRequest.deadline)] {
            guard let element = fields[key] else { continue }
            guard operation != .show else {
                throw element.error("a \(key) beside \"show\"", expected: "a \(key) only with \"apply\" or \"clear\"", kind: .conflict)
            }
            request[keyPath: field] = try element.integer(UInt64.self, expected: "a whole number from 0")
        }
        if let profile = fields["profile"] {
            guard operation == .apply else {
                throw profile.error("a profile beside \"\(operation.rawValue)\"", expected: "a profile only with \"apply\"", kind: .conflict)
            }
            request.profile = try ProfileParser.read(profile, in: document, source: source)
        } else if operation == .apply {
            throw document.root.missing("profile", expected: "the profile to apply")
        }
        return request
    }

    /// Reads an answer line (without its newline). A delivery trace named by a path in `knownTraces` is
    /// taken from there rather than read again (the client passes the traces it sent).
    ///
    /// With `directions` false each link's two direction states (counters, totals, lateness, sojourn) are
    /// skipped, not read: what a change needs to check what a link holds, read in half the time.
    public static func response(
        _ bytes: [UInt8], source: String = "the engine's answer", knownTraces: [String: DeliveryTrace] = [:], directions: Bool = true
    ) throws(DocumentError) -> EngineResponse {
        let document = try parse(bytes, source: source)
        let fields = try document.root.fields(["pid", "error", "links"], expected: "an answer: {\"pid\": …, \"links\": […]}")
        let pid = try fields.require("pid", expected: "the engine's process id").integer(Int32.self, expected: "a process id")
        let error = try fields["error"]?.string(expected: "what went wrong, as a string")
        let links = try fields.require("links", expected: "every link's state").array(expected: "a list of links").map {
            (element: JSONElement) throws(DocumentError) in try link(element, in: document, source: source, knownTraces: knownTraces, directions: directions)
        }
        return EngineResponse(error: error, links: links, pid: pid)
    }

    static let requestExpectation =
        "a request: {\"operation\": \"apply\", \"links\": [\"wifi\"], \"generation\": 7, \"deadline\": 123456789, \"profile\": {…}} "
        + "(\"links\", \"generation\" and \"deadline\" optional, \"profile\" with apply only)"

    static func parse(_ bytes: [UInt8], source: String) throws(DocumentError) -> ParsedJSON {
        guard bytes.count <= maximumMessage else {
            throw DocumentError(
                .outOfRange, file: source, problem: "a message of \(bytes.count) bytes",
                expected: "at most \(maximumMessage) bytes (a delivery trace travels by its path, not its content)")
        }
        return try JSONParser.document(bytes, file: source, maximumDepth: maximumDepth)
    }

    static func links(_ element: JSONElement) throws(DocumentError) -> [EngineLink] {
        try element.array(expected: "a list of links such as [\"wifi\", \"cellular\"]").map { (link: JSONElement) throws(DocumentError) in
            try link.choice(EngineLink.self, noun: "a link of the engine")
        }
    }

    static func link(
        _ element: JSONElement, in document: ParsedJSON, source: String, knownTraces: [String: DeliveryTrace], directions: Bool = true
    ) throws(DocumentError) -> EngineLinkState {
        let fields = try element.fields(
            ["link", "clientSide", "routerSide", "profile", "generation", "uplink", "downlink"], expected: "a link's state")
        func direction(_ key: String, _ expected: String) throws(DocumentError) -> EngineDirectionState {
            let element = try fields.require(key, expected: expected)
            return directions ? try Self.direction(element) : EngineDirectionState(counters: DirectionCounters())
        }
        var state = EngineLinkState(
            link: try fields.require("link", expected: "which link").choice(EngineLink.self, noun: "a link of the engine"),
            clientSide: try fields.require("clientSide", expected: "the wire end facing the client").string(expected: "an interface name"),
            routerSide: try fields.require("routerSide", expected: "the wire end facing the router").string(expected: "an interface name"),
            profile: try fields["profile"].map { (profile: JSONElement) throws(DocumentError) in
                try ProfileParser.read(profile, in: document, source: source, knownTraces: knownTraces)
            },
            generation: try fields.require("generation", expected: "the generation of the link's last change").integer(UInt64.self, expected: "a whole number"),
            uplink: try direction("uplink", "the uplink's state"),
            downlink: try direction("downlink", "the downlink's state"))
        state.directionsRead = directions
        return state
    }

    static func direction(_ element: JSONElement) throws(DocumentError) -> EngineDirectionState {
        let fields = try element.fields(
            ["counters", "totals", "sendFailures", "receiveOverruns", "truncated", "oversized", "lateness", "sojourn"], expected: "a direction's state")
        var state = EngineDirectionState(
            counters: try counters(fields.require("counters", expected: "the model's counters")),
            sendFailures: try fields.require("sendFailures", expected: "a count").integer(UInt64.self, expected: "a count"),
            receiveOverruns: try fields.require("receiveOverruns", expected: "a count").integer(UInt64.self, expected: "a count"),
            // Absent from an engine started by an older linkcond, which did not report them.
            truncated: try fields["truncated"]?.integer(UInt64.self, expected: "a count") ?? 0,
            oversized: try fields["oversized"]?.integer(UInt64.self, expected: "a count") ?? 0)
        state.totals = try fields["totals"].map(counters)
        for (key, field) in [("lateness", \EngineDirectionState.lateness), ("sojourn", \EngineDirectionState.sojourn)] {
            guard let summary = fields[key] else { continue }
            let values = try summary.fields(["count", "median", "p99", "maximum"], expected: key == "sojourn" ? "queue sojourn" : "departure lateness")
            func value(_ key: String) throws(DocumentError) -> UInt64 {
                try values.require(key, expected: "\"\(key)\" in nanoseconds").integer(UInt64.self, expected: "nanoseconds")
            }
            state[keyPath: field] = EngineLateness(
                count: try value("count"), median: try value("median"), p99: try value("p99"), maximum: try value("maximum"))
        }
        return state
    }

    static func counters(_ element: JSONElement) throws(DocumentError) -> DirectionCounters {
        let values = try element.fields((counterFields + laterCounterFields).map(\.key), expected: "the model's counters")
        var counters = DirectionCounters()
        for (key, field) in counterFields {
            counters[keyPath: field] = try values.require(key, expected: "\"\(key)\": a count").integer(UInt64.self, expected: "a count")
        }
        for (key, field) in laterCounterFields {
            counters[keyPath: field] = try values[key]?.integer(UInt64.self, expected: "a count") ?? 0
        }
        return counters
    }
}

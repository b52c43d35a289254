import JSONDocument
import LinkEmulation
import LinkcondBase
import Profiles

// The client's side of the control protocol without Codable: the request written and the response read by
// hand, in exactly the JSON that the synthesized Codable conformances write and read (the engine keeps
// using those; EngineMessagesJSONTests checks both directions). In a fresh `linkcond apply`, Codable's first
// use of these nested types costs dozens of runtime conformance look-ups, each a scan of every conformance
// record in the executable: a third of the whole process's instructions (callgrind).

extension EngineRequest {
    /// The request as one line of JSON, as `JSONEncoder` writes it (members in any order).
    public var jsonText: String {
        var out = JSONOut()
        out.object {
            $0.member("operation") { $0.string(operation.rawValue) }
            if let conditions { $0.member("conditions") { $0.conditions(conditions) } }
            if let links { $0.member("links") { out in out.array(links) { $0.string($1.rawValue) } } }
        }
        return out.text
    }
}

extension EngineResponse {
    /// Reads a response line as `JSONDecoder` reads it; throws what does not fit, naming where.
    public init(jsonBytes bytes: [UInt8]) throws(EngineJSONError) {
        do {
            try self.init(parsing: bytes)
        } catch let error as EngineJSONError {
            throw error
        } catch {
            throw EngineJSONError(detail: "\(error)")
        }
    }

    private init(parsing bytes: [UInt8]) throws {
        let object = try JSONFields(try JSONParser.value(of: bytes), "")
        self.init(
            error: try object.optional("error") { try $0.string() }, links: try object.required("links") { try $0.array { try EngineLinkState(json: $0) } },
            pid: try object.required("pid") { try $0.integer() })
    }
}

/// A response or request that does not read as the protocol says.
public struct EngineJSONError: Error, Sendable, CustomStringConvertible {
    public var detail: String
    public var description: String { detail }
}

extension EngineLinkState {
    init(json value: JSONField) throws {
        let object = try value.object()
        guard let link = EngineLink(rawValue: try object.required("link") { try $0.string() }) else { throw value.bad("link") }
        self.init(
            link: link, clientSide: try object.required("clientSide") { try $0.string() },
            routerSide: try object.required("routerSide") { try $0.string() }, profile: try object.optional("profile") { try $0.string() },
            uplink: try object.required("uplink") { try EngineDirectionState(json: $0) },
            downlink: try object.required("downlink") { try EngineDirectionState(json: $0) })
    }
}

extension EngineDirectionState {
    init(json value: JSONField) throws {
        let object = try value.object()
        self.init(
            conditions: try object.required("conditions") { try LinkConditions(json: $0) }, dnsDelay: try object.required("dnsDelay") { try $0.integer() },
            targets: try object.required("targets") { try $0.array { try TrafficTarget(json: $0) } },
            counters: try object.required("counters") { try DirectionCounters(json: $0) },
            sendFailures: try object.required("sendFailures") { try $0.integer() },
            receiveOverruns: try object.optional("receiveOverruns") { try $0.integer() } ?? 0,
            lateness: try object.optional("lateness") { field throws in
                let lateness = try field.object()
                return EngineLateness(
                    count: try lateness.required("count") { try $0.integer() }, median: try lateness.required("median") { try $0.integer() },
                    p99: try lateness.required("p99") { try $0.integer() }, maximum: try lateness.required("maximum") { try $0.integer() })
            })
    }
}

extension LinkConditions {
    init(json value: JSONField) throws {
        let object = try value.object()
        self.init(
            rate: try object.optional("rate") { try $0.integer() }, delay: try object.required("delay") { try $0.integer() },
            jitter: try object.required("jitter") { try $0.integer() },
            delayCorrelation: try object.required("delayCorrelation") { try $0.double() },
            distribution: try object.optional("distribution") { field throws in
                guard let distribution = DelayDistribution(rawValue: try field.string()) else { throw field.bad() }
                return distribution
            },
            loss: try object.optional("loss") { try LossModel(json: $0) }, duplicate: try object.optional("duplicate") { try Chance(json: $0) },
            corrupt: try object.optional("corrupt") { try Chance(json: $0) },
            reorder: try object.optional("reorder") { field throws in
                let reorder = try field.object()
                return Reorder(
                    try reorder.required("probability") { try $0.double() }, correlation: try reorder.required("correlation") { try $0.double() },
                    gap: try reorder.required("gap") { try $0.integer() })
            },
            slot: try object.optional("slot") { field throws in
                let slot = try field.object()
                return Slot(
                    minDelay: try slot.required("minDelay") { try $0.integer() }, maxDelay: try slot.required("maxDelay") { try $0.integer() },
                    packets: try slot.optional("packets") { try $0.integer() }, bytes: try slot.optional("bytes") { try $0.integer() })
            },
            queueLimit: try object.optional("queueLimit") { try $0.integer() }, ecn: try object.required("ecn") { try $0.bool() },
            trace: try object.optional("trace") { field throws in
                let milliseconds: [UInt32] = try field.array { try $0.integer() }
                guard let trace = try? DeliveryTrace(milliseconds: milliseconds) else { throw field.bad() }
                return trace
            })
    }
}

extension Chance {
    init(json value: JSONField) throws {
        let object = try value.object()
        self.init(try object.required("probability") { try $0.double() }, correlation: try object.required("correlation") { try $0.double() })
    }
}

extension LossModel {
    /// The synthesized form of an enum with associated values: one member named after the case, holding
    /// the values by label.
    init(json value: JSONField) throws {
        let object = try value.object()
        guard object.members.count == 1, let (name, inner) = object.members.first.map({ ($0.key, $0.value) }) else { throw value.bad() }
        let values = try JSONField(inner, object.path + name + ".").object()
        switch name {
        case "random":
            self = .random(probability: try values.required("probability") { try $0.double() }, correlation: try values.required("correlation") { try $0.double() })
        case "gilbertElliott":
            self = .gilbertElliott(
                p: try values.required("p") { try $0.double() }, r: try values.required("r") { try $0.double() },
                oneMinusH: try values.required("oneMinusH") { try $0.double() }, oneMinusK: try values.required("oneMinusK") { try $0.double() })
        case "fourState":
            self = .fourState(
                p13: try values.required("p13") { try $0.double() }, p31: try values.required("p31") { try $0.double() },
                p32: try values.required("p32") { try $0.double() }, p23: try values.required("p23") { try $0.double() },
                p14: try values.required("p14") { try $0.double() })
        default:
            throw value.bad()
        }
    }
}

extension TrafficTarget {
    init(json value: JSONField) throws {
        let object = try value.object()
        let to: String = try object.required("to") { try $0.string() }
        let kind: String? = try object.optional("protocol") { try $0.string() }
        let port: UInt16? = try object.optional("port") { try $0.integer() }
        do {
            try self.init(to: to, protocol: kind, port: port)
        } catch {
            throw value.bad()
        }
    }
}

extension DirectionCounters {
    /// Every counter is a required key, as the synthesized decoder has them.
    init(json value: JSONField) throws {
        let keyPaths: [(String, WritableKeyPath<DirectionCounters, UInt64>)] = [
        ("offeredFrames", \.offeredFrames), ("offeredBytes", \.offeredBytes), ("passedFrames", \.passedFrames), ("passedBytes", \.passedBytes),
        ("untouchedFrames", \.untouchedFrames), ("lostFrames", \.lostFrames), ("lostBytes", \.lostBytes),
        ("queueDroppedFrames", \.queueDroppedFrames), ("queueDroppedBytes", \.queueDroppedBytes),
        ("heldLimitDroppedFrames", \.heldLimitDroppedFrames), ("duplicatedFrames", \.duplicatedFrames), ("corruptedFrames", \.corruptedFrames),
        ("reorderedFrames", \.reorderedFrames), ("ecnMarkedFrames", \.ecnMarkedFrames), ("dnsFrames", \.dnsFrames),
        ("backlogFrames", \.backlogFrames), ("backlogBytes", \.backlogBytes), ("transmitQueueFrames", \.transmitQueueFrames),
        ("transmitQueueBytes", \.transmitQueueBytes),
        ]
        let object = try value.object()
        self.init()
        for (key, path) in keyPaths { self[keyPath: path] = try object.required(key) { try $0.integer() } }
    }
}

// MARK: Reading

/// A value at a place in the document, for errors that say where (`links.0.uplink.conditions.delay`).
struct JSONField {
    let value: JSONValue
    let path: String

    init(_ value: JSONValue, _ path: String) {
        self.value = value
        self.path = path
    }

    func bad(_ key: String = "") -> EngineJSONError {
        let place = (path + key).hasSuffix(".") ? String((path + key).dropLast()) : path + key
        return EngineJSONError(detail: "bad '\(place)'")
    }

    func object() throws -> JSONFields { try JSONFields(value, path) }

    func string() throws -> String {
        guard case let .string(text) = value else { throw bad() }
        return text
    }

    func bool() throws -> Bool {
        guard case let .bool(flag) = value else { throw bad() }
        return flag
    }

    func integer<T: FixedWidthInteger>() throws -> T {
        guard case let .number(number) = value else { throw bad() }
        if let exact = number.integer(as: T.self) { return exact }
        // JSONEncoder writes whole numbers plainly; accept an integral value written otherwise, as JSONDecoder does.
        guard number.value.rounded() == number.value, let converted = T(exactly: number.value) else { throw bad() }
        return converted
    }

    func double() throws -> Double {
        guard case let .number(number) = value else { throw bad() }
        return number.value
    }

    func array<T>(_ element: (JSONField) throws -> T) throws -> [T] {
        guard case let .array(elements) = value else { throw bad() }
        var out: [T] = []
        out.reserveCapacity(elements.count)
        for (index, item) in elements.enumerated() { out.append(try element(JSONField(item, path + "\(index)."))) }
        return out
    }
}

/// An object's members with look-ups that name the key in errors.
struct JSONFields {
    let members: [(key: String, value: JSONValue)]
    let path: String

    init(_ value: JSONValue, _ path: String) throws {
        guard case let .object(members) = value else { throw JSONField(value, path).bad() }
        self.members = members
        self.path = path
    }

    private func field(_ key: String) -> JSONField? {
        guard let value = members.first(where: { $0.key == key })?.value, value != .null else { return nil }
        return JSONField(value, path + key + ".")
    }

    func required<T>(_ key: String, _ read: (JSONField) throws -> T) throws -> T {
        guard let field = field(key) else { throw EngineJSONError(detail: "no '\(path)\(key)'") }
        return try read(field)
    }

    func optional<T>(_ key: String, _ read: (JSONField) throws -> T) throws -> T? {
        guard let field = field(key) else { return nil }
        return try read(field)
    }
}

// MARK: Writing

/// Compact JSON text, written straight into a string.
struct JSONOut {
    var text = ""

    mutating func string(_ value: String) { text += JSONWriter.quoted(value) }
    mutating func bool(_ value: Bool) { text += value ? "true" : "false" }
    mutating func integer<T: FixedWidthInteger>(_ value: T) { text += String(value) }

    /// A double as Swift writes it, the shortest text that reads back as the same value (JSON has no
    /// infinities or NaN; conditions never hold them).
    mutating func double(_ value: Double) {
        precondition(value.isFinite, "JSON has no infinities or NaN")
        text += value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : "\(value)"
    }

    /// An object; `body` writes its members with ``member(_:_:)``.
    mutating func object(_ body: (inout JSONOut) -> Void) {
        text += "{"
        body(&self)
        text += "}"
    }

    /// A member of the object being written (a comma before all but the first).
    mutating func member(_ key: String, _ value: (inout JSONOut) -> Void) {
        if text.utf8.last != UInt8(ascii: "{") { text += "," }
        text += JSONWriter.quoted(key) + ":"
        value(&self)
    }

    mutating func array<S: Sequence>(_ elements: S, _ element: (inout JSONOut, S.Element) -> Void) {
        text += "["
        var first = true
        for item in elements {
            if !first { text += "," }
            first = false
            element(&self, item)
        }
        text += "]"
    }

    mutating func conditions(_ conditions: EngineConditions) {
        object {
            $0.member("profile") { $0.string(conditions.profile) }
            $0.member("uplink") { $0.link(conditions.uplink) }
            $0.member("downlink") { $0.link(conditions.downlink) }
            $0.member("dnsDelay") { $0.integer(conditions.dnsDelay) }
            $0.member("targets") { out in out.array(conditions.targets) { $0.target($1) } }
        }
    }

    mutating func link(_ conditions: LinkConditions) {
        object { members in
            if let rate = conditions.rate { members.member("rate") { $0.integer(rate) } }
            members.member("delay") { $0.integer(conditions.delay) }
            members.member("jitter") { $0.integer(conditions.jitter) }
            members.member("delayCorrelation") { $0.double(conditions.delayCorrelation) }
            if let distribution = conditions.distribution { members.member("distribution") { $0.string(distribution.rawValue) } }
            if let loss = conditions.loss { members.member("loss") { $0.loss(loss) } }
            if let duplicate = conditions.duplicate { members.member("duplicate") { $0.chance(duplicate) } }
            if let corrupt = conditions.corrupt { members.member("corrupt") { $0.chance(corrupt) } }
            if let reorder = conditions.reorder {
                members.member("reorder") { out in
                    out.object {
                        $0.member("probability") { $0.double(reorder.probability) }
                        $0.member("correlation") { $0.double(reorder.correlation) }
                        $0.member("gap") { $0.integer(reorder.gap) }
                    }
                }
            }
            if let slot = conditions.slot {
                members.member("slot") { out in
                    out.object {
                        $0.member("minDelay") { $0.integer(slot.minDelay) }
                        $0.member("maxDelay") { $0.integer(slot.maxDelay) }
                        if let packets = slot.packets { $0.member("packets") { $0.integer(packets) } }
                        if let bytes = slot.bytes { $0.member("bytes") { $0.integer(bytes) } }
                    }
                }
            }
            if let queueLimit = conditions.queueLimit { members.member("queueLimit") { $0.integer(queueLimit) } }
            members.member("ecn") { $0.bool(conditions.ecn) }
            if let trace = conditions.trace { members.member("trace") { out in out.array(trace.milliseconds) { $0.integer($1) } } }
        }
    }

    mutating func chance(_ chance: Chance) {
        object {
            $0.member("probability") { $0.double(chance.probability) }
            $0.member("correlation") { $0.double(chance.correlation) }
        }
    }

    mutating func loss(_ loss: LossModel) {
        let (name, values): (String, [(String, Double)]) = switch loss {
        case let .random(probability, correlation): ("random", [("probability", probability), ("correlation", correlation)])
        case let .gilbertElliott(p, r, oneMinusH, oneMinusK): ("gilbertElliott", [("p", p), ("r", r), ("oneMinusH", oneMinusH), ("oneMinusK", oneMinusK)])
        case let .fourState(p13, p31, p32, p23, p14): ("fourState", [("p13", p13), ("p31", p31), ("p32", p32), ("p23", p23), ("p14", p14)])
        }
        object { outer in
            outer.member(name) { out in
                out.object { inner in
                    for (label, value) in values { inner.member(label) { $0.double(value) } }
                }
            }
        }
    }

    mutating func target(_ target: TrafficTarget) {
        object {
            $0.member("to") { $0.string(target.to.description) }
            if let kind = target.protocol { $0.member("protocol") { $0.string(kind.rawValue) } }
            if let port = target.port { $0.member("port") { $0.integer(port) } }
        }
    }
}

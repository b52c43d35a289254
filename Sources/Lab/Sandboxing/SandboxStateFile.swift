import JSONDocument

/// The text of a state file, written and read with JSONDocument (keys sorted, two-space indent): in a fresh
/// process Codable's first use of each type would cost more (runtime type look-ups, metadata) than the whole
/// file takes to parse.
extension SandboxState {
    /// A state file's content that cannot be read as a state, in words for ``SandboxStore/Record/unreadable(detail:)``.
    struct FileProblem: Error {
        var reason: String
    }

    /// The file's text: the keys sorted, indented.
    var fileText: String {
        JSONWriter.text(of: jsonValue, indent: 2) + "\n"
    }

    var jsonValue: JSONValue {
        var members: [(key: String, value: JSONValue)] = [
            ("cellular", .bool(cellular)), ("complete", .bool(complete)), ("createdAt", .string(createdAt)), ("name", .string(name)),
            ("namespaces", .array(namespaces.map(JSONValue.string))), ("processes", .array(processes.map(\.jsonValue))),
            // Written in the current format whatever version it was read in.
            ("version", .number(JSONNumber(SandboxState.currentVersion))), ("wire", .bool(wire)),
        ]
        if let backend { members.append(("backend", .string(backend))) }
        if !conditions.isEmpty {
            members.append(("conditions", .object(conditions.sorted { $0.key < $1.key }.map { ($0.key, $0.value.jsonValue) })))
        }
        if let attachment { members.append(("attachment", attachment.jsonValue)) }
        if generation > 0 { members.append(("generation", .number(JSONNumber(value: Double(generation), literal: String(generation))))) }
        if let pending {
            var change: [(key: String, value: JSONValue)] = [
                ("generation", .number(JSONNumber(value: Double(pending.generation), literal: String(pending.generation)))),
                ("links", .array(pending.links.map(JSONValue.string))), ("operation", .string(pending.operation)),
                ("startedAt", .string(pending.startedAt)),
            ]
            if let applied = pending.conditions { change.append(("conditions", applied.jsonValue)) }
            members.append(("pending", .object(change.sorted { $0.key < $1.key })))
        }
        if !timedChanges.isEmpty { members.append(("timed", .array(timedChanges.map(\.jsonValue)))) }
        return .object(members.sorted { $0.key < $1.key })
    }

    /// Reads a state file's bytes; throws what is wrong as ``FileProblem``.
    static func decode(file bytes: [UInt8]) throws(FileProblem) -> SandboxState {
        let root: JSONValue
        do {
            root = try JSONParser.value(of: bytes)
        } catch {
            throw FileProblem(reason: "\(error)")
        }
        let object = try FileObject(root, path: "")
        var state = SandboxState(name: try object.string("name"), cellular: try object.bool("cellular"))
        state.version = try object.integer("version")
        state.wire = try object.bool("wire")
        state.backend = try object.optionalString("backend")
        state.namespaces = try object.array("namespaces").enumerated().map { (index, element) throws(FileProblem) in
            guard case let .string(name) = element else { throw FileProblem(reason: "bad 'namespaces.\(index)'") }
            return name
        }
        state.processes = try object.array("processes").enumerated().map { (index, element) throws(FileProblem) in
            try RecordedProcess(file: FileObject(element, path: "processes.\(index)."))
        }
        state.complete = try object.bool("complete")
        state.createdAt = try object.string("createdAt")
        if let conditions = object.member("conditions"), conditions != .null {
            if state.version == 2 {
                // One profile for the links it names (all of them without a list).
                let record = try FileObject(conditions, path: "conditions.")
                let applied = try AppliedConditions(file: record)
                let links = try record.optionalStrings("links") ?? (state.cellular ? ["wifi", "cellular"] : ["wifi"])
                for link in links { state.conditions[link] = applied }
            } else {
                for (link, value) in try FileObject(conditions, path: "conditions.").members {
                    state.conditions[link] = try AppliedConditions(file: FileObject(value, path: "conditions.\(link)."))
                }
            }
        }
        if object.member("generation") != nil { state.generation = try object.integer("generation") }
        if let attachment = object.member("attachment"), attachment != .null {
            state.attachment = try AttachmentRecord(file: FileObject(attachment, path: "attachment."))
        }
        if let pending = object.member("pending"), pending != .null {
            let change = try FileObject(pending, path: "pending.")
            state.pending = PendingChange(
                operation: try change.string("operation"), links: try change.optionalStrings("links") ?? [], generation: try change.integer("generation"),
                conditions: try change.member("conditions").flatMap { (value) throws(FileProblem) in
                    value == .null ? nil : try AppliedConditions(file: FileObject(value, path: "pending.conditions."))
                },
                startedAt: try change.string("startedAt"))
        }
        if let timed = object.member("timed"), timed != .null {
            guard case let .array(changes) = timed else { throw object.bad("timed") }
            state.timedChanges = try changes.enumerated().map { (index, change) throws(FileProblem) in
                try TimedChange(file: FileObject(change, path: "timed.\(index)."))
            }
        }
        return state
    }
}

extension SandboxState.AppliedConditions {
    var jsonValue: JSONValue {
        var members: [(key: String, value: JSONValue)] = [("appliedAt", .string(appliedAt)), ("profile", .string(profile))]
        if let document { members.append(("document", document)) }
        if let source { members.append(("source", .string(source))) }
        if let targets { members.append(("targets", .array(targets.map(JSONValue.string)))) }
        return .object(members.sorted { $0.key < $1.key })
    }

    init(file object: FileObject) throws(SandboxState.FileProblem) {
        self.init(profile: try object.string("profile"), source: try object.optionalString("source"), appliedAt: try object.string("appliedAt"))
        targets = try object.optionalStrings("targets")
        if let document = object.member("document"), document != .null {
            guard case .object = document else { throw object.bad("document") }
            self.document = document
        }
    }
}

extension RecordedProcess {
    var jsonValue: JSONValue {
        .object([
            ("executable", .string(executable)), ("marker", .string(marker)), ("pid", .number(JSONNumber(Int(pid)))),
            ("role", .string(role.rawValue)), ("startTime", .number(JSONNumber(value: Double(startTime), literal: String(startTime)))),
        ])
    }

    init(file object: FileObject) throws(SandboxState.FileProblem) {
        guard let role = Role(rawValue: try object.string("role")) else { throw object.bad("role") }
        self.init(
            role: role, pid: try object.integer("pid"), startTime: try object.integer("startTime"), executable: try object.string("executable"),
            marker: try object.string("marker"))
    }
}

/// An object of a state file with typed look-ups whose errors name the key as Codable's did (`no 'name'`,
/// `bad 'processes.0.pid'`).
struct FileObject {
    let members: [(key: String, value: JSONValue)]
    let path: String

    init(_ value: JSONValue, path: String) throws(SandboxState.FileProblem) {
        guard case let .object(members) = value else {
            throw SandboxState.FileProblem(reason: path.isEmpty ? "not an object" : "bad '\(path.dropLast())'")
        }
        self.members = members
        self.path = path
    }

    func member(_ key: String) -> JSONValue? {
        members.first { $0.key == key }?.value
    }

    func bad(_ key: String) -> SandboxState.FileProblem { SandboxState.FileProblem(reason: "bad '\(path)\(key)'") }

    private func required(_ key: String) throws(SandboxState.FileProblem) -> JSONValue {
        guard let value = member(key), value != .null else { throw SandboxState.FileProblem(reason: "no '\(path)\(key)'") }
        return value
    }

    func string(_ key: String) throws(SandboxState.FileProblem) -> String {
        guard case let .string(text) = try required(key) else { throw bad(key) }
        return text
    }

    func optionalString(_ key: String) throws(SandboxState.FileProblem) -> String? {
        guard let value = member(key), value != .null else { return nil }
        guard case let .string(text) = value else { throw bad(key) }
        return text
    }

    func bool(_ key: String) throws(SandboxState.FileProblem) -> Bool {
        guard case let .bool(flag) = try required(key) else { throw bad(key) }
        return flag
    }

    func integer<T: FixedWidthInteger>(_ key: String) throws(SandboxState.FileProblem) -> T {
        guard case let .number(number) = try required(key), let value = number.integer(as: T.self) else { throw bad(key) }
        return value
    }

    func optionalStrings(_ key: String) throws(SandboxState.FileProblem) -> [String]? {
        guard let value = member(key), value != .null else { return nil }
        guard case let .array(elements) = value else { throw bad(key) }
        return try elements.map { (element) throws(SandboxState.FileProblem) in
            guard case let .string(text) = element else { throw bad(key) }
            return text
        }
    }

    func array(_ key: String) throws(SandboxState.FileProblem) -> [JSONValue] {
        guard case let .array(elements) = try required(key) else { throw bad(key) }
        return elements
    }
}

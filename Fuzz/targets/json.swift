// libFuzzer target: the strict JSON parser (JSONDocument). Any input must either parse or be refused
// with an error whose message can be written; what parses must survive writing and reading back, with a
// position for the root and for every member.
import JSONDocument

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let parsed: ParsedJSON
    do {
        parsed = try JSONParser.parse(bytes, file: "fuzz.json", maximumDepth: 64)
    } catch {
        _ = DocumentError(file: "fuzz.json", parseError: error).description
        return 0
    }
    guard parsed.position(of: .root) != nil else { fatalError("no position for the root") }
    walk(parsed.root, depth: 0)
    for indent in [nil, 2] as [Int?] {
        let text = JSONWriter.text(of: parsed.value, indent: indent)
        guard let again = try? JSONParser.parse(text, maximumDepth: 64) else {
            fatalError("the written text does not parse: \(text)")
        }
        guard again.value == parsed.value else { fatalError("read back differently: \(text)") }
    }
    return 0
}

/// Reads every member and element through the strict reader, as profile and scenario readers do.
func walk(_ element: JSONElement, depth: Int) {
    switch element.value {
    case .object(let members):
        guard var reader = try? element.object(expected: "an object") else { fatalError("not an object") }
        for member in members.prefix(64) {
            guard let child = reader.take(member.key) else { fatalError("member \(member.key) not found") }
            if depth < 8 { walk(child, depth: depth + 1) }
        }
        if (try? reader.finish()) == nil, members.count <= 64 { fatalError("finish refused known keys") }
    case .array:
        guard let elements = try? element.array(expected: "an array") else { fatalError("not an array") }
        if depth < 8 { for child in elements.prefix(64) { walk(child, depth: depth + 1) } }
    case .number:
        _ = try? element.integer(Int64.self, expected: "an integer")
    case .string(let text):
        _ = try? element.choice(["a", "b", "c"], noun: "a letter", aliases: ["x": "a"])
        _ = Suggestions.closest(to: String(text.prefix(32)), in: ["delay", "rate", "jitter"])
    case .bool, .null:
        _ = (try? element.string(expected: "a string")).map { _ in fatalError("a non-string read as a string") }
    }
}

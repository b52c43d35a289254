import Conditioning
import JSONDocument
import Profiles
import Sandboxing
import Scenarios

/// The bodies the API takes, read as strictly as the CLI reads its files: unknown keys refused with the nearest
/// known one, wrong types and values named by their JSON path in `the request`.
enum APIBodies {
    /// How errors name the body.
    static let source = "the request"

    /// The body as a JSON object (an empty body is an empty object).
    static func object(_ request: APIRequest) throws(DocumentError) -> ParsedJSON {
        let bytes = request.body.allSatisfy({ $0 == 0x20 || $0 == 0x0a || $0 == 0x0d || $0 == 0x09 }) ? Array("{}".utf8) : request.body
        return try JSONParser.document(bytes, file: source, maximumDepth: 32)
    }

    static func backend(_ element: JSONElement?) throws(DocumentError) -> BackendChoice {
        try element?.choice(BackendChoice.self, noun: "a backend") ?? .auto
    }

    /// `"link"`: `wl0` or `ww0` (`wifi`, `cellular` too).
    static func link(_ element: JSONElement?) throws(DocumentError) -> Set<Sandbox.ClientLink>? {
        guard let element else { return nil }
        let name = try element.choice(
            ["wl0", "ww0", "wifi", "cellular"], noun: "a client link", aliases: ["wlan0": "wl0", "wwan0": "ww0"])
        return [name == "wl0" || name == "wifi" ? .wifi : .cellular]
    }

    /// `"for"`: a time above 0 as profiles write them, in seconds.
    static func duration(_ element: JSONElement?) throws(DocumentError) -> Double? {
        guard let element else { return nil }
        let nanoseconds = try element.string(expected: "a duration such as \"30s\"", parse: Quantity.time)
        guard nanoseconds > 0 else { throw element.error("a duration of 0 ends before it starts", expected: "a duration above 0, such as \"30s\"", kind: .outOfRange) }
        return Double(nanoseconds) / 1e9
    }

    /// What `POST /v1/sandboxes/NAME/apply` asks for.
    struct Apply {
        var profile: Profile
        var links: Set<Sandbox.ClientLink>?
        var seconds: Double?
        var backend: BackendChoice
    }

    static let profileKeys = ["name", "description", "downlink", "uplink", "dnsDelay", "targets"]
    static let applyExpectation =
        "{\"profile\": \"edge\"}, {\"profile\": {…a profile document…}}, or conditions such as {\"downlink\": {\"delay\": \"100ms\"}, "
        + "\"uplink\": {\"delay\": \"100ms\"}}, each with \"link\", \"for\" and \"backend\" if wanted"

    /// `{"profile": "edge"}` (a catalog name or a path on this machine), `{"profile": {…}}` (a profile document),
    /// or the conditions inline (`{"downlink": {…}, "uplink": {…}}`, a profile named `inline` unless it has a
    /// `name`); each with an optional `"link"`, `"for"` and `"backend"`. The profile is read and checked as a
    /// profile file is.
    static func apply(_ request: APIRequest, catalog: String?) throws(DocumentError) -> Apply {
        let document = try object(request)
        let fields = try document.root.fields(["profile", "link", "for", "backend"] + profileKeys, expected: applyExpectation)
        let links = try link(fields["link"])
        let seconds = try duration(fields["for"])
        let backend = try backend(fields["backend"])
        let inline = fields.present(profileKeys)
        if let given = fields["profile"] {
            if let other = inline.first {
                throw other.element.error(
                    "\(JSONWriter.quoted(other.key)) cannot be combined with \"profile\"", expected: "a profile, or conditions inline, not both",
                    kind: .conflict)
            }
            if case .string(let reference) = given.value {
                return Apply(profile: try ProfileCatalog.find(reference, directory: catalog), links: links, seconds: seconds, backend: backend)
            }
            guard case .object = given.value else {
                throw given.wrongType(expected: "a catalog name such as \"edge\", a path to a profile file, or a profile document")
            }
            return Apply(profile: try ProfileParser.read(given, in: document, source: source), links: links, seconds: seconds, backend: backend)
        }
        guard !inline.isEmpty else {
            throw document.root.error("the request names no profile and no conditions", expected: applyExpectation, kind: .missingKey)
        }
        // The conditions form a profile document of their own (named "inline" unless they say), read by the
        // profile reader; its errors keep their paths, which are the request's.
        var members = inline.map { (key: $0.key, value: $0.element.value) }
        if fields["name"] == nil { members.insert(("name", .string(InlineConditions.profileName)), at: 0) }
        do {
            var profile = try ProfileParser.parse(text: JSONWriter.text(of: .object(members)), source: source)
            profile.source = nil
            return Apply(profile: profile, links: links, seconds: seconds, backend: backend)
        } catch {
            var placed = error
            placed.position = error.path.flatMap { document.position(of: $0) }
            throw placed
        }
    }

    /// What `POST /v1/sandboxes` asks for: `{"name": "lab", "cellular": true, "backend": "userspace"}`.
    static func create(_ request: APIRequest) throws(DocumentError) -> (name: String, cellular: Bool, backend: BackendChoice) {
        let document = try object(request)
        let fields = try document.root.fields(["name", "cellular", "backend"], expected: "{\"name\": \"lab\", \"cellular\": false, \"backend\": \"auto\"}")
        let name = try fields["name"]?.string(expected: "a sandbox name such as \"lab\"") ?? SandboxTopology.defaultName
        return (name, try fields["cellular"]?.bool(expected: "true or false") ?? false, try backend(fields["backend"]))
    }

    /// What `POST …/clear` asks for: nothing, or `{"link": "wl0"}`.
    static func clear(_ request: APIRequest) throws(DocumentError) -> Set<Sandbox.ClientLink>? {
        let document = try object(request)
        return try link(try document.root.fields(["link"], expected: "{} or {\"link\": \"wl0\"}")["link"])
    }

    /// What `POST …/run` asks for.
    struct Run {
        var scenario: Scenario
        var report: String?
        var observe: String?
        var backend: BackendChoice
    }

    /// `{"scenario": "tunnel"}` (a shipped scenario or a path on this machine) or `{"scenario": {…a scenario
    /// document…}}`, with an optional `"report"` folder, `"observe"` command and `"backend"`.
    static func run(_ request: APIRequest, profiles: ProfileCatalog) throws(DocumentError) -> Run {
        let document = try object(request)
        let fields = try document.root.fields(
            ["scenario", "report", "observe", "backend"], expected: "{\"scenario\": \"tunnel\", \"report\": \"/path/to/reports\"}")
        let given = try fields.require("scenario", expected: "\"scenario\": a shipped scenario's name such as \"tunnel\", a path, or a scenario document")
        let scenario: Scenario
        switch given.value {
        case .string(let reference): scenario = try ScenarioCatalog.beside(profiles).scenario(reference, profiles: profiles)
        case .object:
            do {
                scenario = try ScenarioParser.parse(text: JSONWriter.text(of: given.value), source: source, catalog: profiles)
            } catch {
                // The scenario's paths are the request's under "$.scenario".
                var placed = error
                placed.path = error.path.map { JSONPath([.key("scenario")] + $0.components) }
                placed.position = placed.path.flatMap { document.position(of: $0) }
                throw placed
            }
        default: throw given.wrongType(expected: "a shipped scenario's name such as \"tunnel\", a path, or a scenario document")
        }
        return Run(
            scenario: scenario, report: try fields["report"]?.string(expected: "a folder for the reports"),
            observe: try fields["observe"]?.string(expected: "a command to run as the device"), backend: try backend(fields["backend"]))
    }
}

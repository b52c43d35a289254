/// The API's endpoints: a method and a path pattern each (`{name}` matches one segment). `api/openapi.yaml`
/// describes the same list; a unit test keeps the two in step.
enum APIRoute: String, CaseIterable, Sendable {
    case listSandboxes = "GET /v1/sandboxes"
    case createSandbox = "POST /v1/sandboxes"
    case status = "GET /v1/sandboxes/{name}"
    case deleteSandbox = "DELETE /v1/sandboxes/{name}"
    case apply = "POST /v1/sandboxes/{name}/apply"
    case clear = "POST /v1/sandboxes/{name}/clear"
    case show = "GET /v1/sandboxes/{name}/show"
    case statusAlias = "GET /v1/sandboxes/{name}/status"
    case events = "GET /v1/sandboxes/{name}/events"
    case run = "POST /v1/sandboxes/{name}/run"
    case listAttachments = "GET /v1/attachments"
    case attach = "POST /v1/attachments"
    case attachmentStatus = "GET /v1/attachments/{name}"
    case detach = "DELETE /v1/attachments/{name}"
    case attachmentApply = "POST /v1/attachments/{name}/apply"
    case attachmentClear = "POST /v1/attachments/{name}/clear"
    case attachmentShow = "GET /v1/attachments/{name}/show"
    case attachmentStatusAlias = "GET /v1/attachments/{name}/status"
    case attachmentEvents = "GET /v1/attachments/{name}/events"
    case attachmentRun = "POST /v1/attachments/{name}/run"
    case profiles = "GET /v1/profiles"
    case profile = "GET /v1/profiles/{name}"
    case scenarios = "GET /v1/scenarios"

    var method: String { String(rawValue.prefix { $0 != " " }) }
    var pattern: [String] { rawValue.split(separator: " ")[1].split(separator: "/").map(String.init) }

    /// The `{name}` of `segments` when they fit the pattern.
    func match(_ segments: [String]) -> String?? {
        guard segments.count == pattern.count else { return nil }
        var name: String?
        for (segment, part) in zip(segments, pattern) {
            if part == "{name}" { name = segment } else if part != segment { return nil }
        }
        return .some(name)
    }

    /// The route for `method` and `path`, with its `{name}`; a 404 (no such path) or 405 (the path takes
    /// other methods, named in `Allow`) otherwise.
    static func find(method: String, path: String) throws(APIError) -> (route: APIRoute, name: String?) {
        let segments = path.split(separator: "/").map(String.init)
        let fitting = allCases.compactMap { route in route.match(segments).map { (route, $0) } }
        if let found = fitting.first(where: { $0.0.method == method }) { return (found.0, found.1) }
        guard !fitting.isEmpty else {
            throw APIError(404, "no endpoint \(method) \(path): the endpoints are " + allCases.map(\.rawValue).joined(separator: ", ") + " (api/openapi.yaml)")
        }
        let allowed = Array(Set(fitting.map(\.0.method))).sorted()
        throw APIError(405, "\(path) takes \(allowed.joined(separator: ", ")), not \(method)", headers: [APIHeader("Allow", allowed.joined(separator: ", "))])
    }
}

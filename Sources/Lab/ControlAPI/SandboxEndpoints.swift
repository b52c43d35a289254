import Conditioning
import Foundation
import JSONDocument
import Profiles
import Sandboxing
import Scenarios
import Timeline

/// What each endpoint does, with the same library calls the CLI makes (``SandboxConditioning``,
/// ``ScenarioRunner``): the answers are the CLI's `--json` documents, the refusals its sentences.
struct SandboxEndpoints: Sendable {
    let configuration: APIConfiguration
    let timers: TimedChanges
    let isStopping: @Sendable () -> Bool

    func sandbox(_ name: String) throws(APIError) -> Sandbox {
        guard let topology = try? SandboxTopology(name: name) else { throw APIError.from(SandboxError.invalidName(name)) }
        return Sandbox(topology: topology, store: configuration.store)
    }

    /// Refuses to make a sandbox of an attachment's name, as `linkcond up --name` does.
    func refuseAttachmentName(_ name: String) throws(APIError) {
        if let attachment = try? Attachment(name: name, store: configuration.store), attachment.exists {
            throw APIError(409, "'\(name)' is an attachment, not a sandbox: use /v1/attachments/\(name), or detach it first (DELETE /v1/attachments/\(name))")
        }
    }

    func conditioning(_ sandbox: Sandbox) -> SandboxConditioning {
        SandboxConditioning(sandbox: sandbox, engineExecutable: configuration.executable)
    }

    /// `linkcond serve` for `sandbox`, as `up` starts it.
    func serveLaunch(_ sandbox: Sandbox) -> Sandbox.ServerLaunch {
        .process(executable: configuration.executable, arguments: ["serve", "--name", sandbox.topology.name, "--portal-flag", sandbox.portalFlagPath])
    }

    /// `GET /v1/sandboxes`: `status --json`: the sandboxes, then the attachments (`"kind": "attachment"`).
    func list() throws -> APIResponse {
        let sandboxes = try SandboxConditioning.listings(store: configuration.store).map { try JSONCoding.value($0) }
        let attachments = try AttachmentConditioning.statuses(store: configuration.store).map { try JSONCoding.value($0) }
        return .json(.array(sandboxes + attachments))
    }

    /// `GET /v1/sandboxes/NAME/status`: the sandbox's entry of `status --json`; 404 when nothing of it exists.
    func status(_ name: String) throws -> APIResponse {
        _ = try sandbox(name)
        guard let listing = SandboxConditioning.listings(store: configuration.store, named: name).first else {
            throw APIError.from(SandboxError.notUp(name: name))
        }
        return try .json(encoding: listing)
    }

    /// `POST /v1/sandboxes`: `linkcond up [--cellular] [--backend …]` (a sandbox that is up without cellular
    /// gets the link); 201 with its status when it was made, 200 when it was up.
    func create(_ request: APIRequest) throws -> APIResponse {
        let body = try APIBodies.create(request)
        let sandbox = try sandbox(body.name)
        try refuseAttachmentName(body.name)
        let (_, outcome) = try conditioning(sandbox).prepare(
            body.backend, cellular: body.cellular, server: serveLaunch(sandbox), addingCellular: true,
            isCancelled: isStopping)
        guard let listing = SandboxConditioning.listings(store: configuration.store, named: body.name).first else {
            throw APIError.from(SandboxError.notUp(name: body.name))
        }
        return try .json(encoding: listing, status: outcome == .created || outcome == .rebuilt ? 201 : 200)
    }

    /// `DELETE /v1/sandboxes/NAME`: `linkcond down --name NAME`; 404 when there was nothing to remove.
    func delete(_ name: String) throws -> APIResponse {
        let report = try sandbox(name).remove()
        guard !report.isEmpty else { throw APIError(404, "sandbox '\(name)' is not up; nothing to remove") }
        return .json(.object([
            ("removed", .string(name)), ("stoppedProcesses", .array(report.stoppedProcesses.map(JSONValue.string))),
            ("removedNamespaces", .array(report.removedNamespaces.map(JSONValue.string))), ("notes", .array(report.notes.map(JSONValue.string))),
        ]))
    }

    /// `POST /v1/sandboxes/NAME/apply`: `linkcond apply` (bringing the sandbox up when it is not); the answer is
    /// `apply --json`'s report with the profile, `notes`, `created`, and for `"for"` `until` and `then`.
    func apply(_ name: String, _ request: APIRequest) throws -> APIResponse {
        let body = try APIBodies.apply(request, catalog: configuration.catalogDirectory)
        let sandbox = try sandbox(name)
        try refuseAttachmentName(name)
        let transaction = try sandbox.transaction(for: "apply \(body.profile.name) (api)")
        defer { transaction.end() }
        let change = try conditioning(sandbox).apply(
            body.profile, links: body.links, for: body.seconds, choice: body.backend, server: serveLaunch(sandbox), in: transaction,
            isCancelled: isStopping)
        transaction.end()
        if let timed = change.timed {
            timers.schedule(timed, on: sandbox, backend: change.backend, catalogDirectory: configuration.catalogDirectory)
        }
        guard case .object(var members) = try JSONCoding.value(change.report) else { throw APIError(500, "the apply report did not encode as an object") }
        members.append(("document", ProfileParser.json(of: body.profile)))
        members.append(("notes", .array(change.notes.map(JSONValue.string))))
        members.append(("created", .bool(change.outcome == .created || change.outcome == .rebuilt)))
        if let timed = change.timed {
            members.append(("until", .string(timed.endsAt)))
            members.append(("then", .object(timed.links.sorted().map { ($0, timed.restore[$0].map { .string($0.profile) } ?? .null) })))
        }
        return .json(.object(members))
    }

    /// `POST /v1/sandboxes/NAME/clear`: `linkcond clear [--link …]`: `{"cleared": [sites], "notes": […]}`.
    func clear(_ name: String, _ request: APIRequest) throws -> APIResponse {
        let links = try APIBodies.clear(request)
        let sandbox = try sandbox(name)
        let transaction = try sandbox.transaction(for: "clear (api)")
        defer { transaction.end() }
        let backend = try conditioning(sandbox).backend(in: transaction)
        let notes = try backend.reconcile(in: transaction)
        let cleared = try backend.clear(links: links, in: transaction)
        return .json(.object([("cleared", try JSONCoding.value(cleared)), ("notes", .array(notes.map(JSONValue.string)))]))
    }

    /// `GET /v1/sandboxes/NAME/show`: `show --json`.
    func show(_ name: String) throws -> APIResponse {
        .json(try conditioning(try sandbox(name)).report().json)
    }

    /// `POST /v1/sandboxes/NAME/run`: `linkcond run SCENARIO --name NAME` (the sandbox brought up when it is
    /// not, and left up); answers when the run is over, with its verdicts and the folder of its reports.
    func run(_ name: String, _ request: APIRequest) throws -> APIResponse {
        let profiles = try ProfileCatalog.locate(directory: configuration.catalogDirectory)
        let body = try APIBodies.run(request, profiles: profiles)
        let sandbox = try sandbox(name)
        let healthy = sandbox.look(for: "run").state.map(sandbox.isHealthy) ?? false
        let directory = body.report ?? "\(configuration.reportRoot)/\(name)/\(body.scenario.name)-\(Self.stamp())"
        let options = ScenarioRunOptions(
            sandboxName: name, reportDirectory: directory, observeCommand: body.observe, catalogDirectory: profiles.directory,
            store: configuration.store, isCancelled: isStopping, backend: body.backend, bringUp: healthy ? nil : serveLaunch(sandbox))
        return try Self.answer(try ScenarioRunner.run(body.scenario, options: options), of: body.scenario, on: ("sandbox", name), directory: directory)
    }

    /// A run's answer: its verdicts, and the folder of its reports; `place` is `("sandbox", NAME)` or
    /// `("attachment", NAME)`.
    static func answer(_ outcome: ScenarioOutcome, of scenario: Scenario, on place: (key: String, name: String), directory: String) throws -> APIResponse {
        .json(.object([
            ("scenario", .string(scenario.name)), (place.key, .string(place.name)), ("passed", .bool(outcome.passed)),
            ("interrupted", .bool(outcome.interrupted)), ("reportDirectory", .string(directory)),
            ("files", .array(outcome.files.map(JSONValue.string))),
            ("expectations", try JSONCoding.value(outcome.report.expectations)), ("errors", try JSONCoding.value(outcome.report.errors)),
        ]))
    }

    /// `GET /v1/profiles`: the catalog, each profile as its document.
    func profiles() throws -> APIResponse {
        let catalog = try ProfileCatalog.locate(directory: configuration.catalogDirectory)
        return .json(.array(try catalog.all().map { ProfileParser.json(of: $0) }))
    }

    /// `GET /v1/profiles/NAME`: `linkcond profiles show NAME`.
    func profile(_ name: String) throws -> APIResponse {
        let catalog = try ProfileCatalog.locate(directory: configuration.catalogDirectory)
        do {
            return .json(ProfileParser.json(of: try catalog.profile(named: name)))
        } catch where error.kind == .notFound {
            throw APIError(404, error.description)
        }
    }

    /// `GET /v1/scenarios`: the shipped scenarios, each as its document.
    func scenarios() throws -> APIResponse {
        let profiles = try ProfileCatalog.locate(directory: configuration.catalogDirectory)
        return .json(.array(try ScenarioCatalog.beside(profiles).all(profiles: profiles).map { try JSONParser.value(of: Array(ScenarioParser.jsonText(of: $0).utf8)) }))
    }

    /// `20261202T041500Z`, for report folders.
    static func stamp() -> String {
        SandboxState.timestamp().replacingOccurrences(of: "-", with: "").replacingOccurrences(of: ":", with: "")
    }
}

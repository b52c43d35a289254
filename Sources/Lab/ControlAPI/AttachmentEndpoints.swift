import Conditioning
import JSONDocument
import NetNamespace
import Profiles
import Sandboxing
import Scenarios

/// What the attachment endpoints do (`/v1/attachments…`), with the library calls `linkcond attach`, `detach`
/// and the commands taking `--name ATTACHMENT` make (``AttachmentConditioning``, ``Attachment``,
/// ``ScenarioRunner``): the answers are the CLI's `--json` documents, the refusals its sentences.
struct AttachmentEndpoints: Sendable {
    let configuration: APIConfiguration
    /// The server's timed conditions (`"for"`), shared with the sandboxes' endpoints.
    let timers: TimedChanges
    let isStopping: @Sendable () -> Bool

    /// The attachments' store.
    var store: SandboxStore { configuration.store.attachments }

    /// The attachment `name` names; 400 for a name no attachment can have, 404 when nothing of it exists.
    func attachment(_ name: String) throws(APIError) -> Attachment {
        guard let attachment = try? Attachment(name: name, store: configuration.store) else {
            throw APIError(400, "'\(name)' is not a usable attachment name: use 1 to 20 lowercase letters, digits and '-'")
        }
        guard attachment.exists else {
            throw APIError(404, "there is no attachment '\(name)': see GET /v1/attachments ('linkcond status'), or attach one with POST /v1/attachments")
        }
        return attachment
    }

    func conditioning(_ attachment: Attachment) -> AttachmentConditioning {
        AttachmentConditioning(attachment: attachment, engineExecutable: configuration.executable)
    }

    /// `GET /v1/attachments`: the attachments of `status --json` (each with `"kind": "attachment"`).
    func list() throws -> APIResponse {
        try .json(encoding: AttachmentConditioning.statuses(store: configuration.store))
    }

    /// `GET /v1/attachments/NAME`: the attachment's entry of `status --json`.
    func status(_ name: String) throws -> APIResponse {
        _ = try attachment(name)
        guard let status = AttachmentConditioning.statuses(store: configuration.store, named: name).first else {
            throw APIError(404, "there is no attachment '\(name)': see GET /v1/attachments")
        }
        return try .json(encoding: status)
    }

    /// `POST /v1/attachments`: `linkcond attach --netns|--netns-path|--pid|--container … [--name] [--dev]
    /// [--backend]`; 201 with its status.
    func attach(_ request: APIRequest) throws -> APIResponse {
        let body = try AttachmentBodies.attach(request)
        let found = try body.target.resolve()
        guard let name = body.name ?? found.defaultName else {
            throw APIError(422, "no name can be derived from \(body.target): give one with \"name\"")
        }
        guard let attachment = try? Attachment(name: name, store: configuration.store) else {
            throw APIError(422, "'\(name)' is not a usable attachment name: use 1 to 20 lowercase letters, digits and '-'")
        }
        try conditioning(attachment).attach(found, interface: body.interface, backend: body.backend, isCancelled: isStopping)
        guard let status = AttachmentConditioning.statuses(store: configuration.store, named: name).first else {
            throw APIError(500, "attachment '\(name)' was attached but has no status")
        }
        return try .json(encoding: status, status: 201)
    }

    /// `DELETE /v1/attachments/NAME`: `linkcond detach --name NAME`: the target as it was.
    func detach(_ name: String) throws -> APIResponse {
        let report = try attachment(name).detach()
        return .json(.object([
            ("detached", .string(name)), ("movedHome", .bool(report.movedHome)),
            ("stoppedProcesses", .array(report.stoppedProcesses.map(JSONValue.string))),
            ("removedNamespaces", .array(report.removedNamespaces.map(JSONValue.string))), ("notes", .array(report.notes.map(JSONValue.string))),
        ]))
    }

    /// Refuses `"link"`: an attachment has one link.
    private func refuse(link: Bool, _ name: String) throws(APIError) {
        if link { throw APIError(422, "attachment '\(name)' has one link, its spliced interface: leave \"link\" out") }
    }

    /// `POST /v1/attachments/NAME/apply`: `linkcond apply … --name NAME --json`, with the profile's document
    /// and `notes`; with `"for"`, the conditions hold for that long (the server puts back what was there) and
    /// the answer adds `until` and `then`, as for a sandbox.
    func apply(_ name: String, _ request: APIRequest) throws -> APIResponse {
        let body = try APIBodies.apply(request, catalog: configuration.catalogDirectory)
        let attachment = try attachment(name)
        try refuse(link: body.links != nil, name)
        let transaction = try attachment.sandbox.transaction(for: "apply \(body.profile.name) (api)")
        defer { transaction.end() }
        let change = try conditioning(attachment).apply(body.profile, backend: body.backend, for: body.seconds, in: transaction)
        transaction.end()
        if let timed = change.timed {
            timers.schedule(timed, on: attachment.sandbox, backend: change.backend, catalogDirectory: configuration.catalogDirectory)
        }
        guard case .object(var members) = try JSONCoding.value(change.report) else { throw APIError(500, "the apply report did not encode as an object") }
        members.append(("document", ProfileParser.json(of: body.profile)))
        members.append(("notes", .array(change.notes.map(JSONValue.string))))
        if let timed = change.timed {
            members.append(("until", .string(timed.endsAt)))
            members.append(("then", timed.restore.values.first.map { .string($0.profile) } ?? .null))
        }
        return .json(.object(members))
    }

    /// `POST /v1/attachments/NAME/clear`: `linkcond clear --name NAME`: `{"cleared": [sites], "notes": […]}`.
    func clear(_ name: String, _ request: APIRequest) throws -> APIResponse {
        let links = try APIBodies.clear(request)
        let attachment = try attachment(name)
        try refuse(link: links != nil, name)
        let transaction = try attachment.sandbox.transaction(for: "clear (api)")
        defer { transaction.end() }
        let (cleared, notes) = try conditioning(attachment).clear(in: transaction)
        return .json(.object([("cleared", try JSONCoding.value(cleared)), ("notes", .array(notes.map(JSONValue.string)))]))
    }

    /// `GET /v1/attachments/NAME/show`: `show --name NAME --json`.
    func show(_ name: String) throws -> APIResponse {
        .json(try conditioning(try attachment(name)).report().json)
    }

    /// The target namespace the events of `name` are watched in; refuses the prober, as `monitor --probe` does.
    func targetNamespace(_ name: String, probe: Bool) throws -> NamedNamespace {
        let attachment = try attachment(name)
        if probe {
            throw APIError(
                409, "the prober probes a sandbox's server (server.linkcond.test), which attachment '\(name)' does not have: watch its path without probe=true")
        }
        guard let record = attachment.record, let target = try? NamedNamespace(existing: record.targetNamespace) else {
            throw APIError(409, "attachment '\(name)' is not attached: see 'linkcond status --name \(name)'")
        }
        return target
    }

    /// `POST /v1/attachments/NAME/run`: `linkcond run SCENARIO --name NAME` on the attachment (left attached,
    /// its conditions put back); a scenario that needs a sandbox is refused before anything is made.
    func run(_ name: String, _ request: APIRequest) throws -> APIResponse {
        let profiles = try ProfileCatalog.locate(directory: configuration.catalogDirectory)
        let body = try APIBodies.run(request, profiles: profiles)
        _ = try attachment(name)
        if let need = body.scenario.needsOfASandbox.first {
            throw LabError.scenarioNeedsSandbox(scenario: body.scenario.name, need: need, attachment: name)
        }
        let directory = body.report ?? "\(configuration.reportRoot)/\(name)/\(body.scenario.name)-\(SandboxEndpoints.stamp())"
        let options = ScenarioRunOptions(
            reportDirectory: directory, observeCommand: body.observe, catalogDirectory: profiles.directory, store: configuration.store,
            isCancelled: isStopping, backend: body.backend, attachmentName: name)
        return try SandboxEndpoints.answer(
            try ScenarioRunner.run(body.scenario, options: options), of: body.scenario, on: ("attachment", name), directory: directory)
    }
}

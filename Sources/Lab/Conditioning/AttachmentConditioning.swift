import Sandboxing

/// Conditions on an attachment (linkcond spliced into a namespace it does not own, see ``Attachment``):
/// choosing the backend, attaching with the wire that backend needs — the engine for the userspace backend,
/// netem with `mirred` redirects for netem — and opening the backend of an attachment that is attached.
/// What `linkcond attach`, `apply --name`, `show`, `clear`, `run` and ``LinkLab`` build on.
public struct AttachmentConditioning: Sendable {
    /// The attachment.
    public let attachment: Attachment
    /// The `linkcond` executable that runs the engine (nil: found with ``EngineExecutable/locate()``).
    public let engineExecutable: String?

    /// Conditioning for `attachment`.
    public init(attachment: Attachment, engineExecutable: String? = nil) {
        self.attachment = attachment
        self.engineExecutable = engineExecutable ?? EngineExecutable.locate()
    }

    /// `linkcond engine --name NAME --store DIR --attached`: the engine reads its two ends from the
    /// attachment's state, and reads them with `PACKET_VNET_HDR`, cutting the super-frames the target's peer
    /// sends (its offloads are left as they are).
    public static func engineLaunch(executable: String, attachment: Attachment) -> Sandbox.ProcessLaunch {
        Sandbox.ProcessLaunch(
            executable: executable, arguments: ["engine", "--name", attachment.name, "--store", attachment.store.directory, "--attached"])
    }

    /// Finds `target`, then splices the wire `choice` needs into its link (`interface`, or the one of its
    /// default route). Refuses, changing nothing, what ``Attachment/attach(_:_:isCancelled:progress:)``
    /// refuses; a target that cannot be found says what was looked for.
    @discardableResult
    public func attach(
        _ target: AttachmentTarget, interface: String? = nil, backend choice: BackendChoice = .auto, isCancelled: @Sendable () -> Bool = { false },
        progress: (String) -> Void = { _ in }
    ) throws(SandboxError) -> (record: AttachmentRecord, backend: BackendKind) {
        try attach(try target.resolve(), interface: interface, backend: choice, isCancelled: isCancelled, progress: progress)
    }

    /// ``attach(_:interface:backend:isCancelled:progress:)`` for a target found already.
    @discardableResult
    public func attach(
        _ found: FoundTarget, interface: String? = nil, backend choice: BackendChoice = .auto, isCancelled: @Sendable () -> Bool = { false },
        progress: (String) -> Void = { _ in }
    ) throws(SandboxError) -> (record: AttachmentRecord, backend: BackendKind) {
        progress("found \(found.record.description)")
        let kind = try SandboxConditioning.resolve(choice)
        var configuration = Attachment.Configuration(interface: interface, join: kind == .netem ? .redirect : .engine, backend: kind.rawValue)
        if kind == .userspace, let engineExecutable {
            configuration.engine = Self.engineLaunch(executable: engineExecutable, attachment: attachment)
        }
        let record = try attachment.attach(found, configuration, isCancelled: isCancelled, progress: progress)
        return (record, kind)
    }

    /// The backend that holds the attachment's conditions (from its state: read now, or the transaction's).
    public func backend(in transaction: SandboxTransaction? = nil) throws(SandboxError) -> any ConditioningBackend {
        try SandboxConditioning(sandbox: attachment.sandbox, engineExecutable: engineExecutable).backend(in: transaction)
    }
}

extension AttachmentConditioning {
    /// The attachments `linkcond status` lists: the one named `name` (none when no attachment has that
    /// name), or every one in `store`; each with what only the conditioning layer sees (an engine that does
    /// not answer, a change that never finished) among its problems.
    public static func statuses(store: SandboxStore = .standard, named name: String? = nil) -> [AttachmentStatus] {
        let names = name.map { [$0] } ?? Attachment.names(store: store)
        return names.compactMap { name in
            guard let attachment = try? Attachment(name: name, store: store), var status = attachment.status() else { return nil }
            guard status.complete else { return status }
            status.problems += SandboxConditioning(sandbox: attachment.sandbox, engineExecutable: nil).problems(in: attachment.sandbox.look(for: "status"))
            status.healthy = status.problems.isEmpty
            return status
        }
    }
}

import Conditioning
import Foundation
import NetNamespace
import Sandboxing
import Timeline

extension LinkLab {

    /// ``open(_:isCancelled:)`` on an attachment: attaches to ``Options/attach`` (named
    /// ``Options/attachmentName``, or after the target) or takes the attachment named
    /// ``Options/attachmentName``, holds its lock, and runs the monitor and the prober in its target.
    /// What the lab changed is put back at close; an attachment the lab made is detached.
    static func openAttached(_ options: Options, isCancelled: @escaping @Sendable () -> Bool) throws -> LinkLab {
        var attachment: Attachment
        if let target = options.attach {
            let found = try target.resolve()
            guard let name = options.attachmentName ?? found.defaultName else {
                throw SandboxError.unsupported(detail: "no attachment name can be derived from \(target): set Options.attachmentName")
            }
            attachment = try Attachment(name: name, store: options.store)
            try AttachmentConditioning(attachment: attachment).attach(found, backend: options.backend, isCancelled: isCancelled)
        } else {
            attachment = try Attachment(name: options.attachmentName!, store: options.store)
        }
        let owns = options.attach != nil
        let transaction: SandboxTransaction
        do {
            transaction = try attachment.sandbox.transaction(for: "run")
        } catch {
            if owns { _ = try? attachment.detach() }
            throw error
        }
        var succeeded = false
        defer {
            if !succeeded {
                transaction.end()
                if owns { _ = try? attachment.detach() }
            }
        }
        guard case let .state(state) = transaction.record, let record = state.attachment, state.complete, !record.detaching else {
            throw SandboxError.unsupported(detail: "attachment '\(attachment.name)' is not attached: see 'linkcond status --name \(attachment.name)'")
        }
        let conditions = try AttachmentConditioning(attachment: attachment).backend(in: transaction)
        _ = try conditions.reconcile(in: transaction)
        // A cable an earlier lab left pulled (it was killed during a link step) is plugged back: a run starts connected.
        let replugged = try attachment.restoreLink(in: transaction)
        let directory = try makeReportDirectory(options)
        let lab = LinkLab(
            sandbox: attachment.sandbox, recorder: try TimelineRecorder(path: "\(directory)/events.jsonl"), reportDirectory: directory,
            temporaryReports: options.reportDirectory == nil, client: try NamedNamespace(existing: record.targetNamespace), options: options, ownsSandbox: false, server: nil,
            conditions: conditions, transaction: transaction, initialConditions: try transaction.upState().conditions,
            attachment: attachment, ownsAttachment: owns)
        succeeded = true
        try lab.started()
        if replugged {
            try lab.recorder.record(.conditions, "restored", "plugged back the cable of \(record.interface), which an earlier lab left pulled", state: "restored")
        }
        return lab
    }
}

import Glibc
import LinkcondSystem
import NetNamespace
import RouteNetlink

/// What a detach did.
public struct DetachReport: Sendable, Equatable {
    /// Processes stopped (`engine pid 123`).
    public var stoppedProcesses: [String] = []
    /// True when the original interface went home to the target.
    public var movedHome = false
    /// Namespace names removed (the wire, the target's name).
    public var removedNamespaces: [String] = []
    /// What is worth saying: an interface that was gone, a configuration that still differs, a stand-in that
    /// was not linkcond's and was left alone.
    public var notes: [String] = []

    /// True when nothing of the attachment was there.
    public var isEmpty: Bool { stoppedProcesses.isEmpty && !movedHome && removedNamespaces.isEmpty }
}

extension Attachment {
    /// Undoes the attachment, taking its lock: plugs back a cable a lab left pulled, stops its engine,
    /// deletes the stand-in (only one provably linkcond's: a veth whose peer is the wire's end), moves the
    /// original interface home and makes its
    /// configuration what it was — or, for an attachment that completed, what the target had made the
    /// stand-in's meanwhile (its addresses, routes, up or down) — then removes the wire, the target's name,
    /// the claim and the state. Each step is written to the state first and works from what the kernel
    /// holds, so it finishes whatever an earlier attach or detach left half done. Throws
    /// ``SandboxError/notUp(name:)`` when no such attachment exists.
    @discardableResult
    public func detach(progress: (String) -> Void = { _ in }) throws(SandboxError) -> DetachReport {
        let transaction = try sandbox.transaction(for: "detach", progress: progress)
        guard transaction.record != .missing || !leftovers().isEmpty else {
            transaction.endRemovingLockFile()
            throw .unsupported(detail: "no attachment '\(name)' (see 'linkcond status'); nothing to detach")
        }
        return try unsplice(in: transaction, progress: progress)
    }

    /// ``detach(progress:)`` within `transaction`, which it ends (removing the lock file) when the attachment
    /// is gone.
    func unsplice(in transaction: SandboxTransaction, progress: (String) -> Void) throws(SandboxError) -> DetachReport {
        var report = DetachReport()
        var state: SandboxState
        switch transaction.record {
        case let .state(recorded) where recorded.attachment != nil: state = recorded
        case .state, .missing, .unreadable:
            return try unspliceWithoutState(transaction, progress: progress)
        }
        var record = state.attachment!
        func step(_ text: String) throws(SandboxError) {
            record.step = text
            state.attachment = record
            try transaction.save(state)
            progress(text)
        }
        // A wire by the name that is not this attachment's (another store's attachment of the same name, made
        // since this one's was deleted by hand) is not touched, and nothing else either.
        let wireOwner = NamespaceMark.owner(of: record.wireNamespace, marker: marker)
        guard wireOwner.isRemovable else {
            throw .unsupported(
                detail: "attachment '\(name)': its wire \(record.wireNamespace) is \(NamespaceMark.whose(wireOwner)), not this attachment's; nothing was changed")
        }
        let target = reachTarget(record, &report)
        // A plain file where the wire's namespace should be (a crash while it was made) is a leftover, not a wire.
        let wire = (try? NamedNamespace(existing: record.wireNamespace)).flatMap { $0.isMounted ? $0 : nil }
        let targetLinks = try target.map { (namespace) throws(SandboxError) in try sandbox.netlink(namespace) }
        let wireLinks = try wire.map { (namespace) throws(SandboxError) in try sandbox.netlink(namespace) }

        if !record.detaching {
            record.detaching = true
            if record.linkDown, let wireLinks {
                // A cable a lab left pulled (killed during a link step) is plugged back before the stand-in is read.
                _ = try? wireLinks.setLink(record.wireEnd, up: true)
                record.linkDown = false
            }
            // A complete attachment goes home as the target left the stand-in (its own changes stay).
            if state.complete, let target, let targetLinks, let snapshot = record.snapshot,
                isStandIn(record, in: targetLinks, wire: wireLinks),
                var now = try? InterfaceConfiguration.read(record.interface, from: targetLinks, namespace: target)
            {
                // The original keeps its own link (index, address, MTU); only whether it is up follows the stand-in.
                let up = now.link.isUp
                now.link = snapshot.link
                now.link.flags = snapshot.link.flags.subtracting(.up).union(up ? .up : [])
                record.restore = now
            }
            try step("detach: stopping the wire")
        }
        for process in RecordedProcess.discover(marker: marker) + state.processes where process.terminate() {
            report.stoppedProcesses.append("\(process.role.rawValue) pid \(process.pid)")
        }
        state.processes = []

        if let snapshot = record.snapshot {
            let inWire = wireLinks.flatMap { try? $0.links() }?.first { $0.index == snapshot.link.index && $0.hardwareAddress == snapshot.link.hardwareAddress }
            if let original = inWire, let target, let targetLinks, let wireLinks {
                try step("detach: removing the stand-in")
                if let present = try? targetLinks.link(named: record.interface) {
                    guard isStandIn(record, in: targetLinks, wire: wireLinks) else {
                        throw .unsupported(
                            detail: "\(record.interface) in \(record.target.description) is not linkcond's stand-in (index \(present.index), \(present.kind ?? "no kind")): "
                                + "it was left alone, and the original \(record.interface) stays in \(record.wireNamespace); remove or rename it, then detach again")
                    }
                    try netlink { () throws(RouteNetlinkError) in try targetLinks.deleteLink(record.interface) }
                }
                try step("detach: moving \(record.interface) home")
                try withNamespaceDescriptor(target) { (descriptor) throws(SandboxError) in
                    try netlink { () throws(RouteNetlinkError) in try wireLinks.moveLink(original.name, to: descriptor) }
                }
            }
            if let target, let targetLinks, let home = try? targetLinks.link(named: record.interface),
                home.index == snapshot.link.index, home.hardwareAddress == snapshot.link.hardwareAddress, !isStandIn(record, in: targetLinks, wire: wireLinks)
            {
                try step("detach: configuring \(record.interface)")
                let differences = try (record.restore ?? snapshot).apply(to: record.interface, client: targetLinks, namespace: target)
                report.movedHome = inWire != nil
                if !differences.isEmpty { report.notes.append("\(record.interface) differs from what it was: it has \(differences.joined(separator: ", "))") }
            } else if inWire == nil {
                report.notes.append("\(record.interface) is gone from \(record.target.description) (its peer was deleted, or the namespace ended, while it was attached)")
            } else if target == nil {
                throw .unsupported(
                    detail: "\(record.target.description) cannot be reached any more (\(record.targetNamespace) is gone): its \(record.interface) stays in \(record.wireNamespace); "
                        + "move it home by hand (ip -n \(record.wireNamespace) link set \(record.interface) netns …), then detach again")
            }
        }

        try step("detach: removing the wire")
        if (try? NamedNamespace.removeLeftovers(of: record.wireNamespace)) == true { report.removedNamespaces.append(record.wireNamespace) }
        if isTargetName(record) {
            if (try? NamedNamespace.removeLeftovers(of: record.targetNamespace)) == true { report.removedNamespaces.append(record.targetNamespace) }
        } else {
            report.notes.append("left \(record.targetNamespace): it names a namespace other than \(record.target.description)")
        }
        TargetClaim.release(record.target.identity, for: name, store: store)
        store.remove(name)
        transaction.reload()
        transaction.endRemovingLockFile()
        return report
    }

    /// The target namespace by the name linkcond gave it; when that name is gone (deleted by hand) but the
    /// namespace still exists under the path it was found as, it is named again.
    private func reachTarget(_ record: AttachmentRecord, _ report: inout DetachReport) -> NamedNamespace? {
        if let named = try? NamedNamespace(existing: record.targetNamespace), named.isMounted,
            NamespaceIdentity(path: named.path) == record.target.identity
        {
            return named
        }
        guard isTargetName(record) else { return nil }
        guard NamespaceIdentity(path: record.target.path) == record.target.identity,
            let file = try? FileDescriptor.open(record.target.path, .readOnly)
        else { return nil }
        defer { try? file.close() }
        report.notes.append("\(record.targetNamespace) was gone: reached the target again through \(record.target.path)")
        // A plain file in its place (a crash while naming it) goes first.
        if NamedNamespace.exists(record.targetNamespace) { _ = try? NamedNamespace.removeLeftovers(of: record.targetNamespace) }
        return try? NamedNamespace.bind(record.targetNamespace, to: file)
    }

    /// True when the target's name may be removed or named again: nothing is there, a plain file (a crash
    /// while naming it), or a name of the very namespace the record found as the target.
    private func isTargetName(_ record: AttachmentRecord) -> Bool {
        guard let named = try? NamedNamespace(existing: record.targetNamespace), named.isMounted else { return true }
        return NamespaceIdentity(path: named.path) == record.target.identity
    }

    /// True when the target's `interface` is linkcond's stand-in: a veth whose peer is the wire's end, in the
    /// wire namespace.
    func isStandIn(_ record: AttachmentRecord, in targetLinks: RouteNetlinkClient, wire wireLinks: RouteNetlinkClient?) -> Bool {
        guard let wireLinks, let link = try? targetLinks.link(named: record.interface), link.kind == "veth", link.linkNamespaceID != nil,
            let end = try? wireLinks.link(named: record.wireEnd)
        else { return false }
        return link.linkIndex == end.index && (record.wireEndIndex == nil || record.wireEndIndex == end.index)
    }

    /// A detach with no state to go by (removed or damaged): what exists by name is removed only when that
    /// touches nothing of the user's — a wire that holds an interface of theirs is left, with what to do.
    private func unspliceWithoutState(_ transaction: SandboxTransaction, progress: (String) -> Void) throws(SandboxError) -> DetachReport {
        var report = DetachReport()
        if case let .unreadable(detail) = transaction.record { report.notes.append("the state file \(detail)") }
        for process in RecordedProcess.discover(marker: marker) where process.terminate() {
            report.stoppedProcesses.append("\(process.role.rawValue) pid \(process.pid)")
        }
        let wireOwner = NamespaceMark.owner(of: wireNamespace, marker: marker)
        guard wireOwner.isRemovable else {
            throw .unsupported(
                detail: "attachment '\(name)' has no readable state, and \(wireNamespace) is \(NamespaceMark.whose(wireOwner)): nothing was changed")
        }
        if let wire = try? NamedNamespace(existing: wireNamespace), wire.isMounted, let links = try? sandbox.netlink(wire).links() {
            let foreign = links.filter { !$0.isLoopback && !$0.name.hasPrefix("lcw-target") }
            if !foreign.isEmpty {
                throw .unsupported(
                    detail: "attachment '\(name)' has no readable state, and \(wireNamespace) holds \(foreign.map(\.name).joined(separator: ", ")), which is not linkcond's: "
                        + "move it home by hand (ip -n \(wireNamespace) link set NAME netns TARGET), then detach again")
            }
        }
        // The target's name is this attachment's only with its wire beside it (made together, the wire
        // marked), or when it is no namespace's name (a plain file a crash left).
        let targetNamed = (try? NamedNamespace(existing: targetNamespace))?.isMounted == true
        if wireOwner == .ours || !targetNamed {
            if (try? NamedNamespace.removeLeftovers(of: targetNamespace)) == true { report.removedNamespaces.append(targetNamespace) }
        } else {
            report.notes.append("left \(targetNamespace): with no state and no wire of this attachment's, nothing proves it is its own (ip netns del \(targetNamespace) removes the name; the namespace it names stays)")
        }
        if (try? NamedNamespace.removeLeftovers(of: wireNamespace)) == true { report.removedNamespaces.append(wireNamespace) }
        store.remove(name)
        transaction.reload()
        transaction.endRemovingLockFile()
        return report
    }
}

import NetNamespace
import RouteNetlink

/// The cable of an attachment: the wire's end facing the stand-in (`lcw-target` in `lca-NAME-wire`), whose
/// state is the carrier the stand-in sees. Down, the target's interface has no carrier — as if its cable
/// were pulled — while its own configuration (up, addresses, routes) is left exactly as the target has it;
/// nothing in the target is touched.
extension Attachment {
    /// Pulls (`up: false`) or plugs back (`up: true`) the target's cable: `ip -n lca-NAME-wire link set
    /// lcw-target down|up` (`RTM_NEWLINK` clearing or setting `IFF_UP` on the wire's end), so the stand-in
    /// loses or regains its carrier. The change is journalled (``AttachmentRecord/linkDown``) before the end
    /// goes down and cleared once it is up, within `transaction` (which holds the attachment's lock).
    public func setLink(up: Bool, in transaction: SandboxTransaction) throws(SandboxError) {
        var state = try transaction.upState()
        guard var record = state.attachment, !record.detaching else { throw .notUp(name: name) }
        let wire = try sandboxing { () throws(NamespaceError) in try NamedNamespace(existing: record.wireNamespace) }
        let wireLinks = try sandbox.netlink(wire)
        if !up {
            record.linkDown = true
            state.attachment = record
            try transaction.save(state)
        }
        try netlink { () throws(RouteNetlinkError) in try wireLinks.setLink(record.wireEnd, up: up) }
        if up, record.linkDown {
            record.linkDown = false
            state.attachment = record
            try transaction.save(state)
        }
    }

    /// Plugs the cable back when the journal says it was left pulled (a lab killed while a link step had it
    /// down): the wire's end up, the journal cleared. Returns true when it did.
    @discardableResult
    public func restoreLink(in transaction: SandboxTransaction) throws(SandboxError) -> Bool {
        guard transaction.state?.attachment?.linkDown == true else { return false }
        try setLink(up: true, in: transaction)
        return true
    }
}

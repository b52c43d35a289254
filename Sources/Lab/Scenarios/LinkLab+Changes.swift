import Conditioning
import Foundation
import LinkcondBase
import Profiles
import Sandboxing
import Timeline

/// What a lab changes — conditions, links, addresses, routes, the portal, a handover — each recorded on the
/// conditions lane and, on a sandbox the lab did not make, noted to be put back at close; and the user's app.
extension LinkLab {
    // MARK: Conditions

    private func recordConditions(
        _ state: String, action: String, profile: Profile? = nil, links: Set<Sandbox.ClientLink>? = nil, _ body: () throws -> Int
    ) throws {
        let started = MonotonicClock.nanoseconds()
        let requests = try body()
        let milliseconds = Double(MonotonicClock.nanoseconds() - started) / 1e6
        var details: [String: TimelineValue] = ["action": .string(action), "netlinkMs": .number(milliseconds), "requests": .number(Double(requests))]
        if let profile { details.merge(Self.details(of: profile), uniquingKeysWith: { _, new in new }) }
        if let links { details[TimelineDetail.links] = .string(links.map(\.rawValue).sorted().joined(separator: ",")) }
        details[TimelineDetail.backend] = .string(conditions.kind.rawValue)
        try recorder.record(TimelineEvent(
            t: recorder.runTime(ofMonotonic: started), lane: .conditions, kind: TimelineKind.conditionsChanged,
            summary: "\(action) (\(String(format: "%.1f", milliseconds)) ms)", state: state, details: details))
    }

    /// Applies a profile (catalog name or path) to some of the client's links (nil: every link) and records
    /// it on the conditions lane.
    public func apply(_ reference: String, links: Set<Sandbox.ClientLink>? = nil) throws {
        try apply(try ProfileCatalog.find(reference, directory: options.catalogDirectory), links: links)
    }

    /// Applies a profile and records it on the conditions lane, with the transaction's duration.
    public func apply(_ profile: Profile) throws {
        try apply(profile, links: nil)
    }

    /// Applies a profile to some of the client's links (nil: every link) and records it on the conditions
    /// lane, with the transaction's duration, the links, the targets and the backend.
    public func apply(_ profile: Profile, links: Set<Sandbox.ClientLink>?) throws {
        remember("conditions") { [transaction, initialConditions, conditions, options] in
            try Self.restore(initialConditions, on: conditions, in: transaction, catalogDirectory: options.catalogDirectory)
        }
        let scope = links.map { " on " + $0.map(\.rawValue).sorted().joined(separator: ", ") } ?? ""
        try recordConditions(profile.name, action: "apply \(profile.name)\(scope)", profile: profile, links: links) {
            try conditions.apply(profile, links: links, in: transaction).requests
        }
    }

    /// Removes the conditions from some of the client's links (nil: every link).
    public func clear(links: Set<Sandbox.ClientLink>? = nil) throws {
        remember("conditions") { [transaction, initialConditions, conditions, options] in
            try Self.restore(initialConditions, on: conditions, in: transaction, catalogDirectory: options.catalogDirectory)
        }
        let scope = links.map { " on " + $0.map(\.rawValue).sorted().joined(separator: ", ") } ?? ""
        try recordConditions("clear", action: "clear\(scope)", links: links) { try conditions.clear(links: links, in: transaction).count }
    }

    /// Puts back the conditions each link had when the lab opened (as the state recorded them): a link's
    /// recorded profile, or nothing.
    private static func restore(
        _ initial: [String: SandboxState.AppliedConditions], on backend: any ConditioningBackend, in transaction: SandboxTransaction,
        catalogDirectory: String?
    ) throws {
        try backend.restore(initial, in: transaction, catalogDirectory: catalogDirectory)
    }

    /// Notes how to undo a kind of change, once (the first time it is made), for ``close()``.
    private func remember(_ key: String, _ action: @escaping () throws -> Void) {
        lock.lock()
        defer { lock.unlock() }
        guard !ownsSandbox, !undo.contains(where: { $0.key == key }) else { return }
        undo.append((key, action))
    }

    /// Takes a client link down or up (see `Sandbox.setLink`). On an attachment, the wifi link's router
    /// side is the target's cable (``Attachment/setLink(up:in:)``: the wire's end facing the stand-in, so the
    /// target's interface loses its carrier and nothing in the target is touched); its client side (the
    /// target's own interface) and a cellular link are refused.
    public func setLink(_ link: Sandbox.ClientLink, side: Sandbox.LinkSide, up: Bool) throws {
        let word = up ? "up" : "down"
        if let attachment {
            guard link == .wifi else { throw LabError.notOnAttachment(what: "taking the cellular link \(word)", attachment: attachment.name) }
            guard side == .router else {
                throw LabError.notOnAttachment(
                    what: "taking the client side of a link \(word) (the target's own interface; on an attachment a link step pulls the cable: the router side)",
                    attachment: attachment.name)
            }
            let interface = attachment.record?.interface ?? "its interface"
            remember("link \(link.rawValue) \(side.rawValue)") { [attachment, transaction] in try attachment.setLink(up: true, in: transaction) }
            try recordConditions("\(link.rawValue) \(word)", action: "\(link.rawValue) link \(word) (the cable of the target's \(interface))") {
                try attachment.setLink(up: up, in: transaction)
                return 1
            }
            return
        }
        remember("link \(link.rawValue) \(side.rawValue)") { [sandbox] in try sandbox.setLink(link, side: side, up: true) }
        try recordConditions("\(link.rawValue) \(word)", action: "\(link.rawValue) link \(word) (\(side.rawValue) side)") {
            try sandbox.setLink(link, side: side, up: up)
            return 1
        }
    }

    /// Removes or restores the client link's addresses of `family` (nil: both).
    public func setAddresses(_ link: Sandbox.ClientLink, present: Bool, family: AddressFamily? = nil) throws {
        try refuseOnAttachment("removing or restoring addresses")
        remember("addresses \(link.rawValue)") { [sandbox] in try sandbox.restoreAddresses(link) }
        let which = family.map { "\($0) " } ?? ""
        try recordConditions(
            present ? "addresses restored" : "no \(which)address", action: "\(present ? "restore" : "remove") \(link.rawValue) \(which)addresses"
        ) {
            if present { try sandbox.restoreAddresses(link, family: family) } else { try sandbox.removeAddresses(link, family: family) }
            return family == nil ? 2 : 1
        }
    }

    /// Removes or restores the client link's default routes of `family` (nil: both).
    public func setDefaultRoutes(_ link: Sandbox.ClientLink, present: Bool, family: AddressFamily? = nil) throws {
        try refuseOnAttachment("removing or restoring default routes")
        remember("routes \(link.rawValue)") { [sandbox] in try sandbox.restoreDefaultRoutes(link) }
        let which = family.map { "\($0) " } ?? ""
        try recordConditions(
            present ? "routes restored" : "no \(which)default route",
            action: "\(present ? "restore" : "remove") \(link.rawValue) \(which)default routes"
        ) {
            if present { try sandbox.restoreDefaultRoutes(link, family: family) } else { try sandbox.removeDefaultRoutes(link, family: family) }
            return family == nil ? 2 : 1
        }
    }

    /// Switches the server's captive portal on or off.
    public func setPortal(on: Bool) throws {
        try refuseOnAttachment("the captive portal")
        remember("portal") { [sandbox] in try sandbox.setPortal(on: false) }
        try recordConditions(on ? "portal" : "no portal", action: "captive portal \(on ? "on" : "off")") {
            try sandbox.setPortal(on: on)
            return 0
        }
    }

    /// Hands the device over to a link.
    public func handOver(to link: Sandbox.ClientLink) throws {
        try refuseOnAttachment("a hand-over")
        for side in [Sandbox.LinkSide.router] {
            for affected in [Sandbox.ClientLink.wifi, .cellular] {
                remember("link \(affected.rawValue) \(side.rawValue)") { [sandbox] in try sandbox.setLink(affected, side: side, up: true) }
            }
        }
        try recordConditions("on \(link.rawValue)", action: "hand over to \(link.rawValue)") {
            try sandbox.handOver(to: link)
            return 2
        }
    }

    /// Throws ``LabError/notOnAttachment(what:attachment:)`` on a lab on an attachment.
    private func refuseOnAttachment(_ what: String) throws {
        if let attachment { throw LabError.notOnAttachment(what: what, attachment: attachment.name) }
    }

    // MARK: The user's app

    /// Runs `command` (through `/bin/sh -c`) in the client namespace (an attachment's target), replacing an
    /// earlier one, and records each line it prints on the app lane: a JSON object's scalar fields become
    /// details, its `state` field the lane's state.
    public func observe(command: String) throws {
        let process = try ObservedProcess(command: command, namespace: client, recorder: recorder)
        lock.lock()
        let previous = observed
        observed = process
        observedCommand = command
        lock.unlock()
        previous?.stop()  // one observed app at a time; the earlier one is stopped and reaped
    }

}

import Profiles
import Conditioning
import Dispatch
import Foundation
import Glibc
import LinkcondBase
import NetNamespace
import PathMonitor
import Responders
import RouteNetlink
import Sandboxing
import Timeline

/// A conditioned sandbox with everything watching it, for scenarios and for users' own tests:
/// the sandbox and its server, the path monitor and the reachability prober running in the client
/// namespace, an optional observed app, and a timeline that records all of it.
///
/// ```swift
/// try await LinkLab.with(.init(profile: "3g")) { lab in
///     try lab.apply("100-loss")
///     let update = try await lab.waitForReachability(.offline, within: 15)
///     print(update.state, try lab.events().count)
/// }   // the sandbox is always removed, even when the body throws
/// ```
public final class LinkLab: @unchecked Sendable {
    /// How a lab is set up.
    public struct Options: Sendable {
        /// An existing sandbox to use (left up afterwards); nil makes a fresh one that is removed at close.
        public var sandboxName: String?
        /// Profile to apply at the start, if any.
        public var profile: String?
        /// Give the client a cellular link too.
        public var cellular: Bool
        /// Where `events.jsonl` and the reports go; nil makes a temporary directory.
        public var reportDirectory: String?
        /// The prober's settings.
        public var probe: ReachabilitySettings
        /// Where sandbox state files live.
        public var store: SandboxStore
        /// Where the profile catalog is (nil: the usual lookup).
        public var catalogDirectory: String?
        /// Which backend conditions a sandbox (or an attachment) the lab makes (`auto`: netem when the kernel
        /// has it, else the userspace engine). An existing one keeps the backend it was built with.
        public var backend: BackendChoice
        /// An attachment to watch and condition instead of a sandbox (``Attachment``): the name of one that
        /// is attached already (left attached at close), or of the one ``attach`` makes.
        public var attachmentName: String?
        /// A namespace to attach to for the lab's length — a path such as `/proc/PID/ns/net`, a pid, a
        /// container — detached again at close; the monitor and the prober run in it, conditions go on its
        /// link (both directions). Set ``probe`` to hosts it reaches: it has no sandbox server.
        public var attach: AttachmentTarget?

        /// Options for a lab; by default a fresh sandbox with wifi only, no profile, the default prober.
        public init(
            sandboxName: String? = nil, profile: String? = nil, cellular: Bool = false, reportDirectory: String? = nil,
            probe: ReachabilitySettings = ReachabilitySettings(), store: SandboxStore = .standard, catalogDirectory: String? = nil,
            backend: BackendChoice = .auto, attachmentName: String? = nil, attach: AttachmentTarget? = nil
        ) {
            self.backend = backend
            self.attachmentName = attachmentName
            self.attach = attach
            self.sandboxName = sandboxName
            self.profile = profile
            self.cellular = cellular
            self.reportDirectory = reportDirectory
            self.probe = probe
            self.store = store
            self.catalogDirectory = catalogDirectory
        }
    }

    public let sandbox: Sandbox
    public let recorder: TimelineRecorder
    public let reportDirectory: String
    public let monitor: PathMonitor
    public let prober: ReachabilityProber
    public let options: Options
    /// The backend that holds the sandbox's conditions.
    public let conditions: any ConditioningBackend
    /// The attachment the lab works on instead of a sandbox (``sandbox`` is then its state's handle).
    public let attachment: Attachment?
    /// The namespace the monitor, the prober and an observed app run in: the client's, or the attached target's.
    let client: NamedNamespace
    private let ownsAttachment: Bool
    private let ownsSandbox: Bool
    private let server: ResponderServer?
    /// The lab's hold on the sandbox, from ``open(_:isCancelled:)`` to ``close()``: its lock, and its state.
    private let transaction: SandboxTransaction
    private let lock = NSLock()
    private var observed: ObservedProcess?
    private var closed = false
    /// How to put back what the lab changed on a sandbox it did not make, by what was changed (each kind of
    /// change once, however often it was made).
    private var undo: [(key: String, action: () throws -> Void)] = []
    private let initialConditions: [String: SandboxState.AppliedConditions]
    private let queue = DispatchQueue(label: "linkcond.lab")

    init(
        sandbox: Sandbox, recorder: TimelineRecorder, reportDirectory: String, client: NamedNamespace, options: Options,
        ownsSandbox: Bool, server: ResponderServer?, conditions: any ConditioningBackend, transaction: SandboxTransaction,
        initialConditions: [String: SandboxState.AppliedConditions], attachment: Attachment? = nil, ownsAttachment: Bool = false
    ) {
        self.client = client
        monitor = PathMonitor(namespace: client)
        prober = ReachabilityProber(namespace: client, settings: options.probe)
        self.attachment = attachment
        self.ownsAttachment = ownsAttachment
        self.conditions = conditions
        self.transaction = transaction
        self.initialConditions = initialConditions
        self.sandbox = sandbox
        self.recorder = recorder
        self.reportDirectory = reportDirectory
        self.options = options
        self.ownsSandbox = ownsSandbox
        self.server = server
    }

    /// Opens a lab: makes (or finds) the sandbox, starts its server, the recorder, the path monitor and
    /// the prober. On failure everything made so far is removed again.
    ///
    /// The lab holds the sandbox's lock until ``close()``: no other command changes the sandbox meanwhile.
    /// On a sandbox it did not make, ``close()`` puts back what the lab changed (links, addresses, routes,
    /// the portal, the conditions), however the lab ends.
    public static func open(_ options: Options, isCancelled: @escaping @Sendable () -> Bool = { false }) throws -> LinkLab {
        if options.attach != nil || options.attachmentName != nil { return try openAttached(options, isCancelled: isCancelled) }
        let name = options.sandboxName ?? "lab\(getpid() % 100_000)x\(Int.random(in: 0..<1000))"
        let sandbox = Sandbox(topology: try SandboxTopology(name: name), store: options.store)
        let ownsSandbox = options.sandboxName == nil
        let transaction = try sandbox.transaction(for: "run")
        var server: ResponderServer?
        var succeeded = false
        defer { if !succeeded { transaction.end() } }
        do {
            let conditioning = SandboxConditioning(sandbox: sandbox)
            let conditions: any ConditioningBackend
            var initialConditions: [String: SandboxState.AppliedConditions] = [:]
            if ownsSandbox {
                conditions = try conditioning.prepare(
                    options.backend, cellular: options.cellular, server: .none, in: transaction, isCancelled: isCancelled).backend
                server = try startServer(for: sandbox)
                try sandbox.waitForServer(timeout: 10, isCancelled: isCancelled)
            } else {
                guard let state = transaction.state, sandbox.isHealthy(state) else { throw SandboxError.notUp(name: name) }
                if options.cellular && !state.cellular {
                    throw LabError.needsCellular(sandbox: name)
                }
                conditions = try conditioning.backend(in: transaction)
                // A change an earlier command left unconfirmed is settled first, so what is put back at the
                // end is what the links really held.
                _ = try conditions.reconcile(in: transaction)
                initialConditions = try transaction.upState().conditions
            }
            let directory = try makeReportDirectory(options)
            let recorder = try TimelineRecorder(path: "\(directory)/events.jsonl")
            let lab = LinkLab(
                sandbox: sandbox, recorder: recorder, reportDirectory: directory, client: try sandbox.clientNamespace(), options: options,
                ownsSandbox: ownsSandbox, server: server, conditions: conditions, transaction: transaction,
                initialConditions: initialConditions)
            succeeded = true
            try lab.started()
            return lab
        } catch {
            server?.stop()
            if ownsSandbox { _ = sandbox.remove(in: transaction) }
            throw error
        }
    }

    static func startServer(for sandbox: Sandbox) throws -> ResponderServer {
        let configuration = ResponderConfiguration(
            zone: SandboxPlan.zone, ipv4Address: SandboxPlan.serverIPv4.description,
            ipv6Address: SandboxPlan.serverIPv6.description, httpPort: SandboxPlan.httpPort,
            echoPort: SandboxPlan.echoPort, dnsPort: SandboxPlan.dnsPort, portalFlagPath: sandbox.portalFlagPath)
        let server = ResponderServer(configuration: configuration)
        let serverNamespace = try NamedNamespace(existing: sandbox.topology.serverNamespace)
        // The socket factory opens the listeners in the server namespace; the server's threads serve them.
        try server.start(in: serverNamespace)
        return server
    }

    static func makeTemporaryDirectory() throws -> String {
        var template = Array("/tmp/linkcond-run.XXXXXX".utf8CString)
        guard let pointer = mkdtemp(&template) else {
            throw SandboxError.state(path: "/tmp", detail: "cannot create a temporary report directory")
        }
        return String(cString: pointer)
    }

    func start() throws {
        let place = attachment.map { "attachment '\($0.name)'" } ?? "sandbox '\(sandbox.topology.name)'"
        try recorder.record(.scenario, TimelineKind.runStarted, "run started in \(place)")
        let recorder = self.recorder
        try monitor.start(queue: queue) { update in
            let path = update.path
            var details: [String: TimelineValue] = [
                "interfaces": .string(path.availableInterfaces.map(\.name).joined(separator: ",")),
                "expensive": .bool(path.isExpensive), "constrained": .bool(path.isConstrained),
                "ipv4": .bool(path.supportsIPv4), "ipv6": .bool(path.supportsIPv6), "dns": .bool(path.supportsDNS),
                "baseline": .bool(update.isBaseline),
                "latencyMs": .number(Double(update.time &- update.eventTime) / 1e6),
            ]
            if let reason = path.unsatisfiedReason { details["reason"] = .string(reason.rawValue) }
            _ = try? recorder.record(TimelineEvent(
                t: recorder.runTime(ofMonotonic: update.eventTime), lane: .path, kind: TimelineKind.pathUpdate,
                summary: (update.isBaseline ? "baseline: " : "") + path.summary, state: path.status.rawValue, details: details))
        }
        prober.start(queue: queue) { update in
            for result in update.results {
                _ = try? recorder.record(TimelineEvent(
                    t: recorder.runTime(ofMonotonic: result.time), lane: .reachability, kind: TimelineKind.sample,
                    summary: "\(result.kind) probe \(result.success ? "succeeded" : "failed")"
                        + (result.rtt.map { String(format: " in %.1f ms", $0 * 1000) } ?? "") + (result.error.map { ": \($0)" } ?? ""),
                    details: [
                        "probe": .string(result.kind.rawValue), "success": .bool(result.success),
                        "rttMs": result.rtt.map { .number($0 * 1000) } ?? .null,
                    ]))
            }
            var details: [String: TimelineValue] = [
                "previous": .string(update.previousState.rawValue), "quality": .string(update.quality.rawValue),
                "rttMs": update.medianRTT.map { .number($0 * 1000) } ?? .null,
                "loss": .number(update.lossFraction),
            ]
            details["generation"] = .number(Double(update.generation))
            details["family"] = .string(update.family.rawValue)
            if let ipv4 = update.ipv4 { details[TimelineDetail.ipv4] = .string(ipv4.state.rawValue) }
            if let ipv6 = update.ipv6 { details[TimelineDetail.ipv6] = .string(ipv6.state.rawValue) }
            details[TimelineDetail.singleFamily] = .bool(update.isSingleFamily)
            _ = try? recorder.record(TimelineEvent(
                t: recorder.runTime(ofMonotonic: update.time), lane: .reachability, kind: TimelineKind.reachabilityUpdate,
                summary: "\(update.state) (quality \(update.quality))", state: update.state.rawValue, details: details))
        }
    }

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

    /// Takes a client link down or up (see `Sandbox.setLink`).
    public func setLink(_ link: Sandbox.ClientLink, side: Sandbox.LinkSide, up: Bool) throws {
        try refuseOnAttachment("taking a link down or up")
        let word = up ? "up" : "down"
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

    /// Runs `command` (through `/bin/sh -c`) in the client namespace (an attachment's target), replacing an earlier one, and records
    /// each line it prints on the app lane: a JSON object's scalar fields become details, its `state` field the lane's state.
    public func observe(command: String) throws {
        let process = try ObservedProcess(command: command, namespace: client, recorder: recorder)
        lock.lock()
        let previous = observed
        observed = process
        lock.unlock()
        previous?.stop()  // one observed app at a time; the earlier one is stopped and reaped
    }

    // MARK: Results

    /// The events recorded so far, read back from `events.jsonl`.
    public func events() throws -> [TimelineEvent] {
        try TimelineReader.read(path: recorder.path).events
    }

    /// Stops everything; removes the sandbox when the lab made it, and otherwise puts back what the lab
    /// changed (recorded on the conditions lane). Releases the sandbox's lock. Safe to call twice.
    public func close() {
        lock.lock()
        let alreadyClosed = closed
        closed = true
        let observed = self.observed
        let undo = self.undo
        lock.unlock()
        guard !alreadyClosed else { return }
        observed?.stop()
        if !undo.isEmpty {
            // Links first: addresses and routes can only be restored on a link that is up.
            let ordered = undo.filter { $0.key.hasPrefix("link") } + undo.filter { !$0.key.hasPrefix("link") }
            var failures: [String] = []
            for (key, action) in ordered {
                do { try action() } catch { failures.append("\(key): \(error)") }
            }
            _ = try? recorder.record(
                .conditions, "restored",
                "put back what the run changed (\(ordered.map(\.key).joined(separator: ", ")))" + (failures.isEmpty ? "" : "; failed: \(failures.joined(separator: "; "))"),
                state: "restored")
        }
        prober.cancel()
        monitor.cancel()
        _ = try? recorder.record(.scenario, TimelineKind.runFinished, "run finished")
        server?.stop()
        if ownsSandbox { _ = sandbox.remove(in: transaction) }
        transaction.end()
        if ownsAttachment, let attachment {
            do {
                try attachment.detach()
            } catch {
                _ = try? recorder.record(.scenario, "detach failed", "\(error); 'linkcond detach --name \(attachment.name)' finishes it", state: "error")
            }
        }
    }
}

import Conditioning
import Dispatch
import Foundation
import Glibc
import LinkcondBase
import NetNamespace
import PathMonitor
import Responders
import Sandboxing
import Timeline

/// A conditioned sandbox with everything watching it, for scenarios and for users' own tests:
/// the sandbox and its server, the path monitor and the reachability prober running in the client
/// namespace, an optional observed app, and a timeline that records all of it — written at close as the
/// same reports `linkcond run` writes (`timeline.html`, `junit.xml`, `timeline.json`, `summary.md`).
///
/// ```swift
/// try await LinkLab.with(.init(profile: "3g")) { lab in
///     try await lab.waitForReachability(.online, within: 10, everyFamily: true)
///     try lab.apply("100-loss")
///     try await lab.waitForReachability(.offline, within: 15)
///     print(lab.prober.currentState, try lab.events().count)
/// }   // the sandbox is always removed, even when the body throws; the reports are kept when it threw
/// ```
public final class LinkLab: @unchecked Sendable {
    /// The sandbox the lab works on.
    public let sandbox: Sandbox
    /// The timeline: every event, appended to `events.jsonl` as it happens.
    public let recorder: TimelineRecorder
    /// Where `events.jsonl` and the reports go (``Options/reportDirectory``, or a temporary folder).
    public let reportDirectory: String
    /// The path monitor in the client namespace.
    public let monitor: PathMonitor
    /// The reachability prober in the client namespace.
    public let prober: ReachabilityProber
    /// How the lab was set up.
    public let options: Options
    /// The backend that holds the sandbox's conditions.
    public let conditions: any ConditioningBackend
    /// The attachment the lab works on instead of a sandbox (``sandbox`` is then its state's handle).
    public let attachment: Attachment?
    /// The namespace the monitor, the prober and an observed app run in: the client's, or the attached target's.
    let client: NamedNamespace
    private let ownsAttachment: Bool
    let ownsSandbox: Bool
    private let server: ResponderServer?
    /// The lab's hold on the sandbox, from ``open(_:isCancelled:)`` to ``close()``: its lock, and its state.
    let transaction: SandboxTransaction
    let lock = NSLock()
    var observed: ObservedProcess?
    var observedCommand: String?
    private var closed = false
    /// How to put back what the lab changed on a sandbox it did not make, by what was changed (each kind of
    /// change once, however often it was made).
    var undo: [(key: String, action: () throws -> Void)] = []
    let initialConditions: [String: SandboxState.AppliedConditions]
    let queue = DispatchQueue(label: "linkcond.lab")
    /// True when ``reportDirectory`` is the lab's own temporary folder (removed at close unless it failed).
    let temporaryReports: Bool
    /// What made the lab fail (its body threw, ``recordFailure(_:)``): kept in the reports, which then stay.
    var failures: [RunError] = []
    let startedAt = ISO8601DateFormatter().string(from: Date())

    init(
        sandbox: Sandbox, recorder: TimelineRecorder, reportDirectory: String, temporaryReports: Bool, client: NamedNamespace,
        options: Options, ownsSandbox: Bool, server: ResponderServer?, conditions: any ConditioningBackend,
        transaction: SandboxTransaction, initialConditions: [String: SandboxState.AppliedConditions],
        attachment: Attachment? = nil, ownsAttachment: Bool = false
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
        self.temporaryReports = temporaryReports
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
        if let existing = options.sandboxName, let new = options.newSandboxName {
            throw LabError.conflictingSandboxes(existing: existing, new: new)
        }
        let name = options.sandboxName ?? options.newSandboxName ?? "lab\(getpid() % 100_000)x\(Int.random(in: 0..<1000))"
        let sandbox = Sandbox(topology: try SandboxTopology(name: name), store: options.store)
        let ownsSandbox = options.sandboxName == nil
        let transaction = try sandbox.transaction(for: "run")
        var server: ResponderServer?
        var succeeded = false
        var made = false
        defer { if !succeeded { transaction.end() } }
        do {
            let conditioning = SandboxConditioning(sandbox: sandbox)
            let conditions: any ConditioningBackend
            var initialConditions: [String: SandboxState.AppliedConditions] = [:]
            let cellular = options.cellular || options.links?.contains(.cellular) == true
            if ownsSandbox {
                // A name given for a new sandbox must not be one that exists: the lab removes what it makes.
                if options.newSandboxName != nil, transaction.record != .missing || !sandbox.leftovers().isEmpty {
                    throw LabError.sandboxExists(sandbox: name)
                }
                made = true
                conditions = try conditioning.prepare(
                    options.backend, cellular: cellular, server: .none, in: transaction, isCancelled: isCancelled).backend
                server = try startServer(for: sandbox)
                try sandbox.waitForServer(timeout: 10, isCancelled: isCancelled)
            } else {
                if let launch = options.bringUp {
                    _ = try conditioning.prepare(
                        options.backend, cellular: cellular, server: launch, in: transaction, verify: .quick, isCancelled: isCancelled)
                }
                guard let state = transaction.state, sandbox.isHealthy(state) else { throw SandboxError.notUp(name: name) }
                if let links = options.links, Set(state.clientLinks) != links {
                    let order: [Sandbox.ClientLink] = [.wifi, .cellular]
                    throw LabError.wrongShape(
                        sandbox: name, has: state.clientLinks.map(\.rawValue), needs: order.filter(links.contains).map(\.rawValue),
                        scenario: options.name == "lab" ? nil : options.name)
                }
                if cellular && !state.cellular { throw LabError.needsCellular(sandbox: name) }
                conditions = try conditioning.backend(in: transaction)
                // A change an earlier command left unconfirmed is settled first, so what is put back at the
                // end is what the links really held.
                _ = try conditions.reconcile(in: transaction)
                initialConditions = try transaction.upState().conditions
            }
            let directory = try makeReportDirectory(options)
            let recorder = try TimelineRecorder(path: "\(directory)/events.jsonl")
            let lab = LinkLab(
                sandbox: sandbox, recorder: recorder, reportDirectory: directory, temporaryReports: options.reportDirectory == nil,
                client: try sandbox.clientNamespace(), options: options, ownsSandbox: ownsSandbox, server: server,
                conditions: conditions, transaction: transaction, initialConditions: initialConditions)
            succeeded = true
            try lab.started()
            return lab
        } catch {
            server?.stop()
            if made { _ = sandbox.remove(in: transaction) }
            throw error
        }
    }

    /// Runs `body` with a lab and always closes it (removing a sandbox it made), even when `body` throws.
    /// When it throws, the error goes into the reports (a red box in `timeline.html`, an error in
    /// `junit.xml`), a temporary report folder is kept, and stderr says where; the error comes out unchanged.
    public static func with<T>(_ options: Options = Options(), _ body: (LinkLab) async throws -> T) async throws -> T {
        let lab = try open(options)
        do {
            let result = try await body(lab)
            lab.close()
            return result
        } catch {
            lab.recordFailure(error)
            lab.close()
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
        var template = Array("/tmp/linkcond-lab.XXXXXX".utf8CString)
        guard let pointer = mkdtemp(&template) else {
            throw SandboxError.state(path: "/tmp", detail: "cannot create a temporary report directory")
        }
        return String(cString: pointer)
    }

    /// The events recorded so far, read back from `events.jsonl` (until a temporary report folder is removed
    /// at close).
    public func events() throws -> [TimelineEvent] {
        try TimelineReader.read(path: recorder.path).events
    }

    /// Stops everything; removes the sandbox when the lab made it, and otherwise puts back what the lab
    /// changed (recorded on the conditions lane). Releases the sandbox's lock, then writes the reports.
    /// Safe to call twice.
    public func close() {
        close(writingReports: true)
    }

    /// ``close()``; without `writingReports` the caller writes the reports (a scenario run, with its verdicts).
    func close(writingReports: Bool) {
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
        if writingReports { finishReports() }
    }
}

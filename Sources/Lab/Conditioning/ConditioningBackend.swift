import Profiles
import Sandboxing

/// Which implementation puts a sandbox's conditions on the wire.
public enum BackendKind: String, Sendable, Codable, CaseIterable {
    /// netem qdiscs installed through netlink, on the veth ends of the client's links.
    case netem
    /// linkcond's userspace impairment engine, in a wire namespace in each client link: for kernels built
    /// without `sch_netem`.
    case userspace
}

/// The backend a user asks for (`--backend`).
public enum BackendChoice: String, Sendable, Codable, CaseIterable {
    /// netem when the running kernel has it, the userspace engine otherwise.
    case auto
    /// netem, and an error when the kernel lacks it.
    case netem
    /// The userspace engine, on any kernel.
    case userspace
}

/// What an apply did.
public struct ApplyReport: Sendable, Codable, Equatable {
    /// The profile's name.
    public var profile: String
    /// The backend that holds the conditions now.
    public var backend: BackendKind
    /// Where the conditions were put.
    public var sites: [ConditionSite]
    /// Wall time of the whole transaction (requests and read-back), in seconds.
    public var duration: Double
    /// Requests sent (netlink requests for netem, control messages for the engine), counted.
    public var requests: Int
    /// Datagrams or messages sent: round trips.
    public var roundTrips: Int

    /// A report of `profile` put on `sites` by `backend`.
    public init(profile: String, backend: BackendKind, sites: [ConditionSite], duration: Double, requests: Int, roundTrips: Int) {
        self.profile = profile
        self.backend = backend
        self.sites = sites
        self.duration = duration
        self.requests = requests
        self.roundTrips = roundTrips
    }
}

/// Puts profiles on a sandbox's wire and reads them back. Both backends — netem through netlink and the
/// userspace engine — implement it, and nothing above this layer knows which one runs.
///
/// Each operation works within a ``SandboxTransaction``: the command's lock and state, taken and read once
/// (apply and clear need one that holds the lock). The forms without a transaction open their own.
public protocol ConditioningBackend: Sendable {
    /// Which backend this is.
    var kind: BackendKind { get }
    /// The sandbox whose conditions it holds.
    var sandbox: Sandbox { get }

    /// Puts `profile` on the sites of `links` (nil: every client link): installs the first time, replaces
    /// atomically afterwards (never a moment without conditions), reads back what is held and compares it
    /// with what was sent — a mismatch is an error —, and records it in the transaction's state. The profile
    /// must have been validated (reading does that).
    func apply(_ profile: Profile, links: Set<Sandbox.ClientLink>?, in transaction: SandboxTransaction) throws(SandboxError) -> ApplyReport

    /// Removes the conditions from the sites of `links` (nil: every link); returns the sites that had any.
    func clear(links: Set<Sandbox.ClientLink>?, in transaction: SandboxTransaction) throws(SandboxError) -> [ConditionSite]

    /// What every site holds now, in profile terms, with counters.
    func installed(in transaction: SandboxTransaction) throws(SandboxError) -> [InstalledSite]

    /// Whether each link of `pending` (a change the state journalled and never confirmed) holds it now:
    /// true when the link holds what the change puts on it, false when it still holds what the state
    /// recorded before the change, nil when neither (part of the change, or something else).
    func outcome(of pending: SandboxState.PendingChange, in transaction: SandboxTransaction) throws(SandboxError) -> [String: Bool?]
}

extension ConditioningBackend {
    /// ``apply(_:links:in:)`` in a transaction of its own (the sandbox's lock for the while).
    @discardableResult
    public func apply(_ profile: Profile, links: Set<Sandbox.ClientLink>? = nil) throws(SandboxError) -> ApplyReport {
        let transaction = try sandbox.transaction(for: "apply \(profile.name)")
        defer { transaction.end() }
        return try apply(profile, links: links, in: transaction)
    }

    /// ``clear(links:in:)`` in a transaction of its own.
    @discardableResult
    public func clear(links: Set<Sandbox.ClientLink>? = nil) throws(SandboxError) -> [ConditionSite] {
        let transaction = try sandbox.transaction(for: "clear")
        defer { transaction.end() }
        return try clear(links: links, in: transaction)
    }

    /// ``installed(in:)`` with the state read now (no lock: it only looks).
    public func installed() throws(SandboxError) -> [InstalledSite] {
        try installed(in: sandbox.look())
    }
}

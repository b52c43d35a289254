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

/// What one site holds, read back from where the conditions live (the kernel's qdiscs, or the engine).
public struct InstalledSite: Sendable, Codable, Equatable {
    /// One stage of the site: a qdisc (netem, prio) or one of the engine's classes (`main`, `dns`).
    public struct Entry: Sendable, Codable, Equatable {
        /// `netem`, `prio`, `engine`.
        public var kind: String
        /// The qdisc's handle, or the engine class's name.
        public var handle: String
        /// The qdisc's parent, or `-` for the engine.
        public var parent: String
        /// The conditions in profile terms (netem's words, whichever backend).
        public var conditions: NetemDescription?
        /// Frames sent on.
        public var sentPackets: UInt64
        /// Bytes sent on.
        public var sentBytes: UInt64
        /// Frames dropped (lost and queue-dropped together, as netem counts them).
        public var dropped: UInt64
        /// Frames the shaper held back (netem's overlimits); 0 for the engine.
        public var overlimits: UInt64
        /// Bytes waiting now.
        public var backlogBytes: UInt64
        /// Frames waiting now.
        public var backlogPackets: UInt64
        /// The engine's own counters, which netem does not keep apart; nil for qdiscs.
        public var engine: EngineCounters?

        /// An entry with its counters.
        public init(
            kind: String, handle: String, parent: String, conditions: NetemDescription?, sentPackets: UInt64, sentBytes: UInt64,
            dropped: UInt64, overlimits: UInt64, backlogBytes: UInt64, backlogPackets: UInt64, engine: EngineCounters? = nil
        ) {
            self.kind = kind
            self.handle = handle
            self.parent = parent
            self.conditions = conditions
            self.sentPackets = sentPackets
            self.sentBytes = sentBytes
            self.dropped = dropped
            self.overlimits = overlimits
            self.backlogBytes = backlogBytes
            self.backlogPackets = backlogPackets
            self.engine = engine
        }
    }

    /// Counters the userspace engine keeps per direction beyond netem's.
    public struct EngineCounters: Sendable, Codable, Equatable {
        /// Frames the loss model dropped.
        public var lost: UInt64
        /// Frames tail-dropped by a full queue.
        public var queueDropped: UInt64
        /// Extra copies sent.
        public var duplicated: UInt64
        /// Frames with a flipped bit.
        public var corrupted: UInt64
        /// Frames sent ahead of earlier ones.
        public var reordered: UInt64
        /// Frames marked ECN Congestion Experienced instead of dropped.
        public var ecnMarked: UInt64
        /// Frames the kernel dropped before the engine read them (its receive ring was full: the engine
        /// fell behind the arrivals). Zero on a link the engine keeps up with.
        public var receiveOverruns: UInt64
        /// Frames the kernel refused to send on (the far end was down).
        public var sendFailures: UInt64

        /// The engine's extra counters.
        public init(
            lost: UInt64, queueDropped: UInt64, duplicated: UInt64, corrupted: UInt64, reordered: UInt64, ecnMarked: UInt64,
            receiveOverruns: UInt64 = 0, sendFailures: UInt64 = 0
        ) {
            self.lost = lost
            self.queueDropped = queueDropped
            self.duplicated = duplicated
            self.corrupted = corrupted
            self.reordered = reordered
            self.ecnMarked = ecnMarked
            self.receiveOverruns = receiveOverruns
            self.sendFailures = sendFailures
        }
    }

    /// The site.
    public var site: ConditionSite
    /// Its stages, in order.
    public var qdiscs: [Entry]

    /// What `site` holds.
    public init(site: ConditionSite, qdiscs: [Entry]) {
        self.site = site
        self.qdiscs = qdiscs
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

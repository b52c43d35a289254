import NetNamespace

/// What `linkcond attach` did to a namespace it does not own, recorded in the attachment's state before each
/// step is taken: the journal `detach` reads to put everything back, however far the attach (or an earlier
/// detach) got before it was killed.
///
/// An attachment's state is a ``SandboxState`` with this section (in the attachments' own store, see
/// ``SandboxStore/attachments``), so the lock, the transaction, the conditioning backends and their
/// journal of changes work on it as on a sandbox.
public struct AttachmentRecord: Sendable, Equatable {
    /// How the wire joins its two ends.
    public enum Join: String, Sendable {
        /// linkcond's engine (`linkcond engine --attached`) forwards between them: the userspace backend.
        case engine
        /// A match-all u32 filter with `mirred egress redirect` on each end's ingress, netem on each end's
        /// egress: the netem backend.
        case redirect
    }

    /// The namespace attached to, as it was found.
    public struct Target: Sendable, Equatable {
        /// What the user asked for (`--container web`, `--pid 4242`).
        public var request: String
        /// What was found, in words: `container 'web' (podman): pid 4242, network namespace /run/netns/netns-1a2b`.
        public var description: String
        /// The namespace file it was found as (`/run/netns/NAME`, `/proc/PID/ns/net`, a runtime's netns file).
        public var path: String
        /// Which namespace it is.
        public var identity: NamespaceIdentity
        /// The process it was found through (`--pid`, a container's), with its start time: while attaching,
        /// a process that exits makes linkcond stop and put everything back.
        public var pid: Int32?
        public var pidStartTime: UInt64?
        /// The container runtime that answered, and the container's id.
        public var runtime: String?
        public var container: String?

        /// A target found as `description`.
        public init(
            request: String, description: String, path: String, identity: NamespaceIdentity, pid: Int32? = nil, pidStartTime: UInt64? = nil,
            runtime: String? = nil, container: String? = nil
        ) {
            self.request = request
            self.description = description
            self.path = path
            self.identity = identity
            self.pid = pid
            self.pidStartTime = pidStartTime
            self.runtime = runtime
            self.container = container
        }
    }

    /// The target.
    public var target: Target
    /// The interface spliced, by its name in the target (`eth0`).
    public var interface: String
    /// The name linkcond gave the target namespace (`lca-NAME-target` in `/run/netns`), so it can be reached
    /// (and `ip netns exec` works) while attached.
    public var targetNamespace: String
    /// The wire namespace (`lca-NAME-wire`): the original interface and the end facing the stand-in.
    public var wireNamespace: String
    /// The wire's end whose peer is the stand-in in the target.
    public var wireEnd: String
    /// Its index, once made.
    public var wireEndIndex: Int32?
    /// How the wire joins the original interface and the stand-in.
    public var join: Join
    /// The interface as it was before the attach: what the stand-in copies, and what detach puts back; nil
    /// until it is read (before anything in the target changes).
    public var snapshot: InterfaceConfiguration?
    /// The stand-in as `detach` found it (its addresses and routes as the target last set them), put on the
    /// original interface when it goes home; nil until a detach of a complete attachment starts.
    public var restore: InterfaceConfiguration?
    /// The step being taken (written before it is taken): `claimed`, `naming the target`, `making the wire`,
    /// `moving eth0 out`, `making the stand-in`, `configuring the stand-in`, `joining the wire`, `attached`,
    /// then `detach: …` for the steps of a detach.
    public var step: String
    /// True once a detach has started: the attachment only goes away from here on.
    public var detaching = false
    /// True while the wire's end facing the stand-in is down — the target sees its cable pulled (a scenario's
    /// `link down` step, ``Attachment/setLink(up:in:)``). Written before the end goes down and cleared once it
    /// is up again, so a lab killed meanwhile leaves a journal that `detach` (and the next lab) go by.
    public var linkDown = false

    /// A record of an attachment about to start.
    public init(
        target: Target, interface: String, targetNamespace: String, wireNamespace: String, wireEnd: String, join: Join,
        snapshot: InterfaceConfiguration? = nil, step: String
    ) {
        self.target = target
        self.interface = interface
        self.targetNamespace = targetNamespace
        self.wireNamespace = wireNamespace
        self.wireEnd = wireEnd
        self.join = join
        self.snapshot = snapshot
        self.step = step
    }

    /// The original interface's index (kept through every move: the stand-in takes it in the target while
    /// the original is away); nil before the snapshot.
    public var originalIndex: Int32? { snapshot?.link.index }
}

import Conditioning
import PathMonitor
import Sandboxing

extension LinkLab {
    /// How a lab is set up.
    public struct Options: Sendable {
        /// An existing sandbox to use (left up afterwards, with what the lab changed put back); nil makes a
        /// fresh one that is removed at close.
        public var sandboxName: String?
        /// A name for the fresh sandbox the lab makes (and removes at close), instead of a generated one; not
        /// with ``sandboxName``.
        public var newSandboxName: String?
        /// When ``sandboxName`` names a sandbox that is not up: bring it up with this server (as `linkcond apply`
        /// does) and leave it up afterwards; nil refuses such a sandbox.
        public var bringUp: Sandbox.ServerLaunch?
        /// Profile to apply at the start, if any.
        public var profile: String?
        /// Give the client a cellular link too.
        public var cellular: Bool
        /// The links an existing sandbox must have, exactly (a scenario's `"links"`); nil takes a sandbox with
        /// more than the lab needs.
        public var links: Set<Sandbox.ClientLink>?
        /// Where `events.jsonl` and the reports (`timeline.html`, `junit.xml`, `timeline.json`, `summary.md`)
        /// go, kept; nil makes a temporary folder, removed at close unless the lab failed (its body threw, a
        /// wait ran out, or ``LinkLab/recordFailure(_:)`` was called).
        public var reportDirectory: String?
        /// The run's name in the reports.
        public var name: String
        /// The prober's settings.
        public var probe: ReachabilitySettings
        /// Where sandbox state files live.
        public var store: SandboxStore
        /// Where the profile catalog is (nil: the usual lookup, ending with the catalog built into the library).
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

        /// Options for a lab; by default a fresh sandbox with wifi only, no profile, the default prober, reports
        /// in a temporary folder kept only when the lab fails.
        public init(
            sandboxName: String? = nil, profile: String? = nil, cellular: Bool = false, reportDirectory: String? = nil,
            probe: ReachabilitySettings = ReachabilitySettings(), store: SandboxStore = .standard, catalogDirectory: String? = nil,
            backend: BackendChoice = .auto, newSandboxName: String? = nil, links: Set<Sandbox.ClientLink>? = nil,
            bringUp: Sandbox.ServerLaunch? = nil, name: String = "lab", attachmentName: String? = nil, attach: AttachmentTarget? = nil
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
            self.newSandboxName = newSandboxName
            self.links = links
            self.bringUp = bringUp
            self.name = name
        }
    }
}

import Glibc
import LinkcondSystem
import NetNamespace
import RouteNetlink

extension Attachment {
    /// How to attach.
    public struct Configuration: Sendable {
        /// The interface to splice (`--dev`); nil: the one of the target's default route.
        public var interface: String?
        /// How the wire joins the original and the stand-in.
        public var join: AttachmentRecord.Join
        /// The conditioning backend, as the layer above names it (`userspace`, `netem`), recorded.
        public var backend: String
        /// The engine to start in the wire namespace (for ``AttachmentRecord/Join/engine``): `linkcond engine
        /// --name NAME --store DIR --attached`, which reads its ends from the attachment's state.
        public var engine: Sandbox.ProcessLaunch?

        /// A configuration.
        public init(interface: String? = nil, join: AttachmentRecord.Join, backend: String, engine: Sandbox.ProcessLaunch? = nil) {
            self.interface = interface
            self.join = join
            self.backend = backend
            self.engine = engine
        }
    }

    /// The wire's end facing the stand-in, unless the target's interface has that name.
    static func wireEndName(avoiding interface: String) -> String {
        interface == "lcw-target" ? "lcw-target1" : "lcw-target"
    }

    /// Splices a wire into `target`'s link (see ``Attachment``), taking the attachment's lock for the while.
    /// Refuses — changing nothing — a name in use, the host's namespace, linkcond's own namespaces, a target
    /// attached already, and an interface that cannot be spliced exactly. When a step fails, when the
    /// target's process exits, or when `isCancelled` turns true between steps (Ctrl-C), everything done is
    /// undone (as by ``detach(progress:)``) and the error — or ``SandboxError/interrupted`` — thrown.
    @discardableResult
    public func attach(
        _ target: FoundTarget, _ configuration: Configuration, isCancelled: @Sendable () -> Bool = { false }, progress: (String) -> Void = { _ in }
    ) throws(SandboxError) -> AttachmentRecord {
        let transaction = try sandbox.transaction(for: "attach", progress: progress)
        defer { transaction.end() }
        return try attach(target, configuration, in: transaction, isCancelled: isCancelled, progress: progress)
    }

    /// ``attach(_:_:isCancelled:progress:)`` within `transaction` (the attachment's, holding its lock).
    @discardableResult
    public func attach(
        _ target: FoundTarget, _ configuration: Configuration, in transaction: SandboxTransaction, isCancelled: @Sendable () -> Bool = { false },
        progress: (String) -> Void = { _ in }
    ) throws(SandboxError) -> AttachmentRecord {
        if transaction.record != .missing || !leftovers().isEmpty {
            throw .unsupported(detail: "attachment '\(name)' exists already (\(record?.target.description ?? leftovers().joined(separator: ", "))): 'linkcond detach --name \(name)' first, or choose another --name. Nothing was changed")
        }
        let namesake = Sandbox(topology: sandbox.topology, store: sandboxStore)
        if sandboxStore.record(name) != .missing || !namesake.leftovers().isEmpty {
            throw .unsupported(detail: "'\(name)' is the name of a sandbox: choose another --name for the attachment. Nothing was changed")
        }
        try Self.refuseForbidden(target)
        if configuration.join == .engine && configuration.engine == nil {
            throw .unsupported(detail: "the userspace backend needs the linkcond executable to run its engine: set LINKCOND_EXECUTABLE to its path")
        }
        try TargetClaim.take(target.record.identity, for: name, store: store)
        var state = SandboxState(name: name, cellular: false, wire: true, backend: configuration.backend)
        state.attachment = AttachmentRecord(
            target: target.record, interface: configuration.interface ?? "", targetNamespace: targetNamespace, wireNamespace: wireNamespace,
            wireEnd: Self.wireEndName(avoiding: configuration.interface ?? ""), join: configuration.join, step: "naming the target")
        do {
            try transaction.save(state)
        } catch {
            TargetClaim.release(target.record.identity, for: name, store: store)
            throw error
        }
        var done: AttachmentRecord?
        var failure: SandboxError?
        withoutActuallyEscaping(isCancelled) { isCancelled in
            withoutActuallyEscaping(progress) { progress in
                var splice = Splice(attachment: self, transaction: transaction, state: state, target: target, isCancelled: isCancelled, progress: progress)
                do throws(SandboxError) {
                    try splice.run(configuration)
                    done = splice.state.attachment
                } catch {
                    failure = error
                }
            }
        }
        if let done { return done }
        let error = failure ?? .interrupted
        progress("putting everything back")
        let undone = (try? unsplice(in: transaction, progress: progress)).map { $0.notes } ?? ["putting everything back failed: run 'linkcond detach --name \(name)'"]
        if undone.isEmpty || error.isInterrupted { throw error }
        throw .unsupported(detail: "\(error); while putting everything back: \(undone.joined(separator: "; "))")
    }
}

/// The steps of an attach, each written to the state before it is taken.
struct Splice {
    let attachment: Attachment
    let transaction: SandboxTransaction
    var state: SandboxState
    let target: FoundTarget
    let isCancelled: () -> Bool
    let progress: (String) -> Void

    var record: AttachmentRecord {
        get { state.attachment! }
        set { state.attachment = newValue }
    }

    /// Writes `step` as the one being taken, after checking that the user did not interrupt and that the
    /// target's process still runs.
    mutating func begin(_ step: String) throws(SandboxError) {
        if isCancelled() { throw .interrupted }
        if let pid = record.target.pid, ProcessInspector.startTime(pid) != record.target.pidStartTime {
            throw .unsupported(detail: "\(record.target.description) exited while linkcond was attaching: everything was put back, nothing is attached")
        }
        record.step = step
        try transaction.save(state)
        progress(step)
    }

    mutating func run(_ configuration: Attachment.Configuration) throws(SandboxError) {
        // The target gets a name, so every tool (linkcond's, `ip netns exec`) reaches it while attached.
        let targetNamespace = try sandboxing { () throws(NamespaceError) in try NamedNamespace.bind(record.targetNamespace, to: target.namespace.descriptor) }
        let targetLinks = try attachment.sandbox.netlink(targetNamespace)
        let (links, routes, qdiscs) = try netlink { () throws(RouteNetlinkError) in (try targetLinks.links(), try targetLinks.routes(), try targetLinks.qdiscs()) }
        let link = try Attachment.chooseInterface(configuration.interface, links: links, routes: routes, target: record.target.description)
        try Attachment.checkSpliceable(link, qdiscs: qdiscs, routes: routes, target: record.target.description)
        let snapshot = try InterfaceConfiguration.read(link.name, from: targetLinks, namespace: targetNamespace)
        record.interface = link.name
        record.wireEnd = Attachment.wireEndName(avoiding: link.name)
        record.snapshot = snapshot
        try begin("making the wire")

        let wire = try sandboxing { () throws(NamespaceError) in try NamespaceMark.create(record.wireNamespace, marker: attachment.marker) }
        // The wire is a cable: nothing of its own goes out of it (no IPv6 addresses, no router solicitations).
        try sandboxing { () throws(NamespaceError) in
            try wire.writeSysctls([("net/ipv6/conf/all/disable_ipv6", "1"), ("net/ipv6/conf/default/disable_ipv6", "1")])
        }
        let wireLinks = try attachment.sandbox.netlink(wire)
        try netlink { () throws(RouteNetlinkError) in try wireLinks.setLink("lo", up: true) }

        try begin("moving \(link.name) out")
        try withNamespaceDescriptor(wire) { (descriptor) throws(SandboxError) in
            do throws(RouteNetlinkError) {
                try targetLinks.moveLink(link.name, to: descriptor)
            } catch where error.errno == EINVAL {
                throw .unsupported(detail: "the kernel refuses to move \(link.name) out of \(record.target.description) (\(error)): it is a device that cannot change namespace")
            } catch {
                throw .netlink(error)
            }
        }

        try begin("making the stand-in")
        // The stand-in takes the original's index (free in the target now), hardware address, MTU and queue
        // length; the wire's end takes the index of the original's peer where it can, so `ip link` in the
        // target reads as before but for the peer's namespace.
        // (The kernel gives a veth's peer the index asked for only when the first end's is asked for too.)
        var wireIndex = snapshot.link.linkIndex ?? 0
        if wireIndex <= 1 || wireIndex == snapshot.link.index { wireIndex = snapshot.link.index == Int32.max ? 2 : snapshot.link.index + 1 }
        try withNamespaceDescriptor(targetNamespace) { (descriptor) throws(SandboxError) in
            try netlink { () throws(RouteNetlinkError) in
                try wireLinks.createVeth(
                    name: record.wireEnd, index: wireIndex, peerName: link.name, peerIndex: snapshot.link.index, peerIn: descriptor,
                    peer: VethPeerSettings(hardwareAddress: snapshot.link.hardwareAddress, mtu: snapshot.link.mtu, transmitQueueLength: snapshot.link.transmitQueueLength))
            }
        }
        record.wireEndIndex = try netlink { () throws(RouteNetlinkError) in
            // Up at once: the stand-in then has carrier as it comes up, as the original had, and the kernel
            // configures its IPv6 (link-local address, multicast route) as it did the original's.
            try wireLinks.setLink(record.wireEnd, up: true)
            return try wireLinks.link(named: record.wireEnd).index
        }

        try begin("configuring the stand-in")
        let differences = try snapshot.apply(to: link.name, client: targetLinks, namespace: targetNamespace)
        guard differences.isEmpty else {
            throw .unsupported(detail: "the stand-in cannot be made like \(link.name): it has \(differences.joined(separator: ", "))")
        }

        try begin("joining the wire")
        switch record.join {
        case .engine:
            let builder = SandboxBuilder(sandbox: attachment.sandbox, isCancelled: isCancelled, progress: progress)
            try builder.startEngine(configuration.engine!, in: wire, state: &state)
        case .redirect:
            try netlink { () throws(RouteNetlinkError) in
                if snapshot.link.isUp { try wireLinks.setLink(link.name, up: true) }
                for (from, to) in [(link.name, record.wireEnd), (record.wireEnd, link.name)] {
                    try wireLinks.addIngressQdisc(on: from)
                    try wireLinks.addRedirect(from: from, to: to)
                }
            }
        }

        try begin("attached")
        state.complete = true
        try transaction.save(state)
    }
}

/// Opens `namespace` for the duration of `body`, as the target of a request (`IFLA_NET_NS_FD`).
func withNamespaceDescriptor(_ namespace: NamedNamespace, _ body: (NamespaceDescriptor) throws(SandboxError) -> Void) throws(SandboxError) {
    let file: FileDescriptor
    do {
        file = try FileDescriptor.open(namespace.path, .readOnly)
    } catch {
        throw .namespace(.system(operation: "open \(namespace.path)", errno: error.errno.rawValue))
    }
    defer { try? file.close() }
    try body(NamespaceDescriptor(fileDescriptor: file.rawValue, name: namespace.name))
}

import Foundation
import Glibc
import LinkcondSystem
import NetNamespace
import RouteNetlink

/// linkcond conditioning a namespace it does not own — a container's, a pod's, one a test harness made —
/// by splicing a wire into that namespace's link:
///
/// ```
///  before:  target: eth0 ════════ peer (host veth, bridge port, CNI)
///  after:   target: eth0 (stand-in) ══ lcw-target [engine, or netem + mirred] eth0 (the original) ══ peer
///                                      └──────────── lca-NAME-wire ──────────────┘
/// ```
///
/// The target's interface moves into a wire namespace of its own; a new veth takes its place in the target
/// with the same name, index, hardware address, MTU, queue length, addresses, routes (every table), own
/// sysctls and up or down state, and the wire joins the two at layer 2 — through linkcond's engine, or
/// through netem on the wire's two egress sides with `mirred` redirects between them. The peer sees a
/// carrier blip and nothing else; established connections keep going. ``detach(progress:)`` deletes the
/// stand-in, moves the original home and puts its addresses and routes back.
///
/// Every step is written to the attachment's state before it is taken (``AttachmentRecord/step``), and
/// detach works by looking at the kernel, not at the step: it finds the original (in the wire or in the
/// target), removes only a stand-in it can prove is linkcond's, and makes the original's configuration
/// what it was by difference — so `detach` after `kill -9` at any instant of attach, apply or detach puts
/// the target back as it was. One attachment per target: a claim on the target namespace's inode.
///
/// An attachment's state, lock, logs and engine socket live in the attachments' store
/// (``SandboxStore/attachments``, `/run/linkcond/attached`), named after it as a sandbox's are; its state is
/// a ``SandboxState`` with an ``AttachmentRecord``, so ``sandbox`` (a handle on that store) is what the
/// conditioning backends work on.
public struct Attachment: Sendable {
    /// The attachment's name (`--name`).
    public let name: String
    /// The store of sandboxes; the attachments' is inside it.
    public let sandboxStore: SandboxStore

    /// A handle on attachment `name` (nothing is done until ``attach(_:_:isCancelled:progress:)``).
    public init(name: String, store: SandboxStore = .standard) throws(SandboxError) {
        guard SandboxTopology.isValidName(name) else { throw .invalidName(name) }
        self.name = name
        sandboxStore = store
    }

    /// Where the attachment's state, lock, logs and engine socket are.
    public var store: SandboxStore { sandboxStore.attachments }

    /// The handle the conditioning backends and the transaction work on: a "sandbox" of this name in the
    /// attachments' store, whose state carries the attachment's record.
    public var sandbox: Sandbox { Sandbox(topology: try! SandboxTopology(name: name), store: store) }

    /// The wire namespace's name: `lca-NAME-wire`.
    public var wireNamespace: String { "lca-\(name)-wire" }
    /// The name given to the target namespace while attached: `lca-NAME-target`.
    public var targetNamespace: String { "lca-\(name)-target" }
    /// The marker in the environment of the attachment's engine.
    public var marker: String { sandbox.marker }

    /// The attachment's record, as its state file says (no lock); nil when there is none.
    public var record: AttachmentRecord? { sandbox.look(for: "status").state?.attachment }

    /// True when anything of the attachment exists: its state file, its namespaces, its engine.
    public var exists: Bool {
        store.record(name) != .missing || !leftovers().isEmpty
    }

    /// True when the attachment has a state file or a namespace by its name: ``exists`` without reading every
    /// process's environment (what deciding whether a `--name` is an attachment or a sandbox costs every
    /// command). Its engine never runs without a state file: attach writes each step before taking it, and
    /// detach removes the file last.
    public var isRecordedOrNamed: Bool {
        store.record(name) != .missing || [wireNamespace, targetNamespace].contains(where: NamedNamespace.exists)
    }

    /// The names of things of this attachment that exist by name: its namespaces, and marked processes.
    public func leftovers() -> [String] {
        [wireNamespace, targetNamespace].filter(NamedNamespace.exists)
            + RecordedProcess.discover(marker: marker).map { "\($0.role.rawValue) pid \($0.pid)" }
    }

    /// The names of every attachment in `store` (by state file, and by namespaces named `lca-NAME-…`), sorted.
    public static func names(store: SandboxStore = .standard) -> [String] {
        var names = Set(store.attachments.names())
        for namespace in NamedNamespace.list() where namespace.hasPrefix("lca-") {
            for suffix in ["-wire", "-target"] where namespace.hasSuffix(suffix) {
                let name = String(namespace.dropFirst(4).dropLast(suffix.count))
                if SandboxTopology.isValidName(name) { names.insert(name) }
            }
        }
        return names.sorted()
    }

    /// The attachment a namespace name belongs to (`lca-web-wire` → `web`), nil for any other name.
    public static func owner(ofNamespace namespace: String) -> String? {
        guard namespace.hasPrefix("lca-") else { return nil }
        for suffix in ["-wire", "-target"] where namespace.hasSuffix(suffix) {
            let name = String(namespace.dropFirst(4).dropLast(suffix.count))
            return SandboxTopology.isValidName(name) ? name : nil
        }
        return nil
    }
}

extension SandboxStore {
    /// The attachments' store: `DIRECTORY/attached` (state, lock, logs and engine socket of each attachment,
    /// and the claims on their targets).
    public var attachments: SandboxStore { SandboxStore(directory: "\(directory)/attached") }

    /// `DIRECTORY/target-DEVICE-INODE.claim`: the claim on a target namespace (it holds the attachment's name).
    func claimPath(for identity: NamespaceIdentity) -> String { "\(directory)/target-\(identity.device)-\(identity.inode).claim" }
}

/// One attachment per target: a file named after the target namespace's device and inode, created
/// exclusively (`O_EXCL`) and holding the attachment's name. A claim whose attachment has no state any more
/// (removed by hand) is stale and taken over.
enum TargetClaim {
    /// Claims `identity` for attachment `name`; throws naming the attachment that holds it.
    static func take(_ identity: NamespaceIdentity, for name: String, store: SandboxStore) throws(SandboxError) {
        let path = store.claimPath(for: identity)
        for _ in 0..<2 {
            do {
                let file = try FileDescriptor.open(path, .writeOnly, options: [.create, .exclusiveCreate, .noFollow], permissions: 0o644)
                try file.closeAfter { () throws(SystemError) in _ = try file.writeAll("\(name)\n".utf8) }
                return
            } catch where error.errno == .fileExists {
                let holder = self.holder(identity, store: store)
                if let holder, holder != name, store.record(holder) != .missing {
                    throw .unsupported(detail: "that namespace (\(identity)) is attached already, as '\(holder)': 'linkcond detach --name \(holder)' first; nothing was changed")
                }
                unlink(path)  // stale: its attachment is gone, or it is this one's own
            } catch {
                throw .state(path: path, detail: "cannot be created (\(error.errno))")
            }
        }
        throw .state(path: path, detail: "cannot be claimed")
    }

    /// The attachment that holds the claim on `identity`, nil when none does.
    static func holder(_ identity: NamespaceIdentity, store: SandboxStore) -> String? {
        guard let text = try? String(contentsOfFile: store.claimPath(for: identity), encoding: .utf8) else { return nil }
        let name = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return name.isEmpty ? nil : name
    }

    /// Gives up the claim on `identity` if attachment `name` holds it.
    static func release(_ identity: NamespaceIdentity, for name: String, store: SandboxStore) {
        if holder(identity, store: store) == name { unlink(store.claimPath(for: identity)) }
    }
}

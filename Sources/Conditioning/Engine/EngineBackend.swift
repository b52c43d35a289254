import Profiles
import Sandboxing

/// Puts profiles on the wire with linkcond's userspace engine, over its control socket.
public struct EngineBackend: ConditioningBackend {
    /// The sandbox whose engine this talks to.
    public let sandbox: Sandbox

    /// The engine backend of `sandbox`.
    public init(sandbox: Sandbox) {
        self.sandbox = sandbox
    }

    /// ``BackendKind/userspace``.
    public var kind: BackendKind { .userspace }

    public func apply(_ profile: Profile, links: Set<Sandbox.ClientLink>?) throws(SandboxError) -> ApplyReport {
        throw .unsupported(detail: "the userspace engine is not available in this build")
    }

    public func clear(links: Set<Sandbox.ClientLink>?) throws(SandboxError) -> [ConditionSite] {
        throw .unsupported(detail: "the userspace engine is not available in this build")
    }

    public func installed() throws(SandboxError) -> [InstalledSite] {
        throw .unsupported(detail: "the userspace engine is not available in this build")
    }
}

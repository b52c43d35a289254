import LinkcondBase

/// The names of one sandbox's namespaces. The interface names and addresses inside them are the same in
/// every sandbox (``SandboxPlan``).
public struct SandboxTopology: Sendable, Equatable {
    /// The sandbox's name (`default` unless `--name` says otherwise).
    public let name: String

    /// The default sandbox's name.
    public static let defaultName = "default"

    /// A topology for a sandbox called `name`; throws when the name cannot be used.
    public init(name: String = SandboxTopology.defaultName) throws(SandboxError) {
        guard Self.isValidName(name) else { throw .invalidName(name) }
        self.name = name
    }

    /// Names are 1 to 20 characters of lowercase letters, digits and '-', starting with a letter or digit.
    public static func isValidName(_ name: String) -> Bool {
        guard let first = name.first, first != "-", name.count <= 20 else { return false }
        return name.allSatisfy { ($0.isASCII && ($0.isLowercase || $0.isNumber)) || $0 == "-" }
    }

    /// Prefix of the namespace names: `lc` for the default sandbox, `lc-NAME` for others.
    public var prefix: String { name == Self.defaultName ? "lc" : "lc-\(name)" }
    /// The emulated device's namespace (`lc-client`).
    public var clientNamespace: String { "\(prefix)-client" }
    /// The router's namespace (`lc-router`), where downlink conditions sit.
    public var routerNamespace: String { "\(prefix)-router" }
    /// The server's namespace (`lc-server`).
    public var serverNamespace: String { "\(prefix)-server" }
    /// All three, in the order they are created.
    public var namespaces: [String] { [clientNamespace, routerNamespace, serverNamespace] }
}

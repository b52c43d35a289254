import LinkcondBase

/// The names of one sandbox's namespaces and files. The interface names and addresses inside the
/// namespaces are the same in every sandbox (``SandboxPlan``).
///
/// Every name is derived from the sandbox's name alone, so whatever a crash left behind can be found and
/// removed without a state file: `lc-client`, `lc-router`, `lc-server`, `lc-wire` for the default sandbox,
/// `lc-NAME-client`… for the others.
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

    /// The roles of a sandbox's namespaces; each namespace is named `PREFIX-ROLE`.
    public enum Role: String, Sendable, CaseIterable, Codable {
        /// The emulated device.
        case client
        /// Forwards between the client's links and the server.
        case router
        /// The server: HTTP probe endpoint, echo, DNS.
        case server
        /// Between the client and the router, where the userspace engine forwards frames (only with the
        /// userspace backend).
        case wire
    }

    /// Prefix of the namespace names: `lc` for the default sandbox, `lc-NAME` for others.
    public var prefix: String { name == Self.defaultName ? "lc" : "lc-\(name)" }
    /// The namespace of `role`.
    public func namespace(_ role: Role) -> String { "\(prefix)-\(role.rawValue)" }
    /// The emulated device's namespace (`lc-client`).
    public var clientNamespace: String { namespace(.client) }
    /// The router's namespace (`lc-router`), where downlink conditions sit with netem.
    public var routerNamespace: String { namespace(.router) }
    /// The server's namespace (`lc-server`).
    public var serverNamespace: String { namespace(.server) }
    /// The wire's namespace (`lc-wire`), with the userspace engine.
    public var wireNamespace: String { namespace(.wire) }
    /// Client, router and server, in the order they are created.
    public var namespaces: [String] { [clientNamespace, routerNamespace, serverNamespace] }
    /// Every namespace this sandbox can have, wire included: what a cleanup looks for.
    public var allNamespaces: [String] { Role.allCases.map(namespace) }

    /// The sandbox a namespace name belongs to, when it is one of linkcond's (`lc-client` → `default`,
    /// `lc-lab1-wire` → `lab1`); nil for any other name.
    public static func owner(ofNamespace namespace: String) -> (sandbox: String, role: Role)? {
        guard namespace.hasPrefix("lc-"), let dash = namespace.lastIndex(of: "-"),
            let role = Role(rawValue: String(namespace[namespace.index(after: dash)...]))
        else { return nil }
        let middle = namespace.dropFirst(3)
        if middle == Substring(role.rawValue) { return (defaultName, role) }
        let name = String(namespace[namespace.index(namespace.startIndex, offsetBy: 3)..<dash])
        guard isValidName(name), name != defaultName else { return nil }
        return (name, role)
    }
}

import LinkcondBase

/// What the sandbox's server responders answer and where they listen.
///
/// The defaults match the sandbox's server namespace (`lc-server`): zone `linkcond.test`, addresses from the
/// benchmarking ranges, the well-known ports, and listening on every address of both families.
public struct ResponderConfiguration: Sendable, Equatable {
    /// The DNS zone answered authoritatively. The apex and every name under it resolve to
    /// ``ipv4Address`` / ``ipv6Address``; names outside it are REFUSED. Default `linkcond.test`.
    public var zone: String
    /// The address returned for A queries. Default `198.19.0.2`.
    public var ipv4Address: String
    /// The address returned for AAAA queries. Default `2001:2:0:100::2`.
    public var ipv6Address: String
    /// TCP port of the HTTP probe endpoint (`/generate_204`). Default 80.
    public var httpPort: UInt16
    /// TCP and UDP port of the echo service. Default 7.
    public var echoPort: UInt16
    /// UDP and TCP port of the DNS server. Default 53.
    public var dnsPort: UInt16
    /// Addresses every service listens on, IPv4 or IPv6 literals. Default `["0.0.0.0", "::"]`: all addresses
    /// of both families (the IPv6 sockets are IPv6-only, so each family has its own socket).
    public var bindAddresses: [String]
    /// When a file exists at this path, `/generate_204` answers `200 OK` with a login page, as a captive
    /// portal does. Checked on every request, so creating or removing the file switches the portal at run
    /// time. Default nil (never a portal).
    public var portalFlagPath: String?
    /// TTL of the A and AAAA answers, in seconds. Default 5.
    public var dnsTTL: UInt32
    /// Most TCP connections served at once, over all services; further connections are closed at once.
    /// Default 256.
    public var maxConnections: Int

    /// The default zone, the sandbox's (`linkcond.test`).
    public static let defaultZone = SandboxPlan.zone
    /// The default listening addresses: every IPv4 and every IPv6 address.
    public static let allAddresses = ["0.0.0.0", "::"]

    public init(
        zone: String = ResponderConfiguration.defaultZone,
        ipv4Address: String = SandboxPlan.serverIPv4.description,
        ipv6Address: String = SandboxPlan.serverIPv6.description,
        httpPort: UInt16 = SandboxPlan.httpPort,
        echoPort: UInt16 = SandboxPlan.echoPort,
        dnsPort: UInt16 = SandboxPlan.dnsPort,
        bindAddresses: [String] = ResponderConfiguration.allAddresses,
        portalFlagPath: String? = nil,
        dnsTTL: UInt32 = 5,
        maxConnections: Int = 256
    ) {
        self.zone = zone
        self.ipv4Address = ipv4Address
        self.ipv6Address = ipv6Address
        self.httpPort = httpPort
        self.echoPort = echoPort
        self.dnsPort = dnsPort
        self.bindAddresses = bindAddresses
        self.portalFlagPath = portalFlagPath
        self.dnsTTL = dnsTTL
        self.maxConnections = maxConnections
    }
}

/// The fixed names and addresses every sandbox uses. Each sandbox lives in namespaces of its own, so all
/// of them use the same interface names and the same addresses: 198.18.0.0/15 and 2001:2::/48 (the
/// benchmarking ranges), which no real network routes.
///
/// ```
///  client                    router                       server
///  wl0 (wifi) ====veth==== c-wl0      s0 ====veth==== eth0
///  [ww0 (cellular) ==veth== c-ww0]    (forwards)         HTTP 204 probe, echo, DNS
/// ```
///
/// With the userspace backend a wire namespace sits in each client link, the client and router keeping
/// their interface names, indexes and addresses: `wl0 ==veth== cl-wl0 [engine] rt-wl0 ==veth== c-wl0`.
public enum SandboxPlan {
    /// The client's wifi interface.
    public static let wifiInterface = "wl0"
    /// The client's cellular interface (with `--cellular`).
    public static let cellularInterface = "ww0"
    /// The router's end of the wifi link.
    public static let routerWifiInterface = "c-wl0"
    /// The router's end of the cellular link.
    public static let routerCellularInterface = "c-ww0"
    /// The router's end of the server link.
    public static let routerServerInterface = "s0"
    /// The server's interface.
    public static let serverInterface = "eth0"

    /// The wire namespace's end facing the client's wifi interface (userspace backend).
    public static let wireClientWifiInterface = "cl-wl0"
    /// The wire namespace's end facing the router's wifi interface.
    public static let wireRouterWifiInterface = "rt-wl0"
    /// The wire namespace's end facing the client's cellular interface.
    public static let wireClientCellularInterface = "cl-ww0"
    /// The wire namespace's end facing the router's cellular interface.
    public static let wireRouterCellularInterface = "rt-ww0"

    /// Interface indexes: each veth end gets its own, different from its peer's, so the kernel reports
    /// carrier changes at once instead of batching them for up to a second (see
    /// `RouteNetlinkClient.createVeth`).
    public static let interfaceIndexes: [String: Int32] = [
        wifiInterface: 20, routerWifiInterface: 21, wireClientWifiInterface: 22, wireRouterWifiInterface: 23,
        cellularInterface: 30, routerCellularInterface: 31, wireClientCellularInterface: 32, wireRouterCellularInterface: 33,
        serverInterface: 40, routerServerInterface: 41,
    ]

    /// One point-to-point link: the two ends' addresses, both families.
    public struct Subnet: Sendable, Equatable {
        /// The router's IPv4 address and prefix.
        public let routerIPv4: IPPrefix
        /// The far end's (client's or server's) IPv4 address and prefix.
        public let peerIPv4: IPPrefix
        /// The router's IPv6 address and prefix.
        public let routerIPv6: IPPrefix
        /// The far end's IPv6 address and prefix.
        public let peerIPv6: IPPrefix
    }

    private static func subnet(_ v4: String, _ v6: String) -> Subnet {
        Subnet(
            routerIPv4: IPPrefix("198.\(v4).1/24")!, peerIPv4: IPPrefix("198.\(v4).2/24")!,
            routerIPv6: IPPrefix("2001:2:0:\(v6)::1/64")!, peerIPv6: IPPrefix("2001:2:0:\(v6)::2/64")!)
    }

    /// wl0 ↔ c-wl0: 198.18.1.0/24, 2001:2:0:1::/64.
    public static let wifiSubnet = subnet("18.1", "1")
    /// ww0 ↔ c-ww0: 198.18.2.0/24, 2001:2:0:2::/64.
    public static let cellularSubnet = subnet("18.2", "2")
    /// s0 ↔ eth0: 198.19.0.0/24, 2001:2:0:100::/64.
    public static let serverSubnet = subnet("19.0", "100")

    /// The server's IPv4 address (what `server.linkcond.test` resolves to).
    public static var serverIPv4: IPAddress { serverSubnet.peerIPv4.address }
    /// The server's IPv6 address.
    public static var serverIPv6: IPAddress { serverSubnet.peerIPv6.address }

    /// Route metric of the client's wifi default routes.
    public static let wifiMetric: UInt32 = 100
    /// Route metric of the client's cellular default routes (higher: wifi is preferred while it works).
    public static let cellularMetric: UInt32 = 200

    /// The DNS zone the server answers for.
    public static let zone = "linkcond.test"
    /// The server's name, what the prober looks up and sends as `Host:`.
    public static var serverName: String { "server.\(zone)" }
    /// The server's HTTP port (probe endpoint `/generate_204`).
    public static let httpPort: UInt16 = 80
    /// The server's TCP/UDP echo port.
    public static let echoPort: UInt16 = 7
    /// The server's DNS port.
    public static let dnsPort: UInt16 = 53

    /// The client's `/etc/resolv.conf`, kept in `/etc/netns/CLIENT/resolv.conf`.
    public static var clientResolvConf: String {
        """
        # Written by linkcond: the sandbox's DNS server answers for *.\(zone).
        nameserver \(serverIPv4)
        nameserver \(serverIPv6)
        search \(zone)

        """
    }
}

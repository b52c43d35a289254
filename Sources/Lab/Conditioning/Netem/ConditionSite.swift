import LinkcondBase
import RouteNetlink
import Sandboxing

/// Where one direction of one client link is conditioned: the egress of a veth end.
///
/// Uplink conditions sit on the client's end (packets leaving the device), downlink conditions on the
/// router's end (packets heading for the device): each direction is a plain egress qdisc, no IFB needed.
public struct ConditionSite: Sendable, Codable, Equatable, CustomStringConvertible {
    /// `uplink` or `downlink`.
    public var direction: LinkMeasurement.Direction
    /// `wifi` or `cellular`.
    public var link: String
    /// The namespace holding the veth end.
    public var namespace: String
    /// The veth end whose egress carries the conditions.
    public var interface: String

    public var description: String { "\(direction.rawValue) \(link) (\(interface) in \(namespace))" }

    /// The sites of a sandbox's or an attachment's state: a sandbox's (below), or an attachment's two in its
    /// wire namespace — the uplink on the egress of the original interface (towards its peer), the downlink
    /// on the egress of the wire's end facing the stand-in — as its one link, `wifi`.
    public static func sites(of topology: SandboxTopology, state: SandboxState) -> [ConditionSite] {
        guard let attachment = state.attachment else { return sites(of: topology, cellular: state.cellular) }
        return [
            ConditionSite(direction: .uplink, link: Sandbox.ClientLink.wifi.rawValue, namespace: attachment.wireNamespace, interface: attachment.interface),
            ConditionSite(direction: .downlink, link: Sandbox.ClientLink.wifi.rawValue, namespace: attachment.wireNamespace, interface: attachment.wireEnd),
        ]
    }

    /// The sites of a sandbox: uplink and downlink of wl0, and of ww0 when it has a cellular link.
    public static func sites(of topology: SandboxTopology, cellular: Bool) -> [ConditionSite] {
        typealias T = SandboxPlan
        var links = [("wifi", T.wifiInterface, T.routerWifiInterface)]
        if cellular { links.append(("cellular", T.cellularInterface, T.routerCellularInterface)) }
        return links.flatMap { name, clientEnd, routerEnd in
            [
                ConditionSite(direction: .uplink, link: name, namespace: topology.clientNamespace, interface: clientEnd),
                ConditionSite(direction: .downlink, link: name, namespace: topology.routerNamespace, interface: routerEnd),
            ]
        }
    }
}

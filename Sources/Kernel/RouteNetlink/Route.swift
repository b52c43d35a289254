import CMnl
import LinkcondBase
import Netlink

/// A route, as `ip route show` reports it, decoded from `RTM_NEWROUTE`.
public struct Route: Sendable, Equatable {
    /// IPv4 or IPv6 (`rtm_family`).
    public var family: AddressFamily
    /// The destination (`RTA_DST` with `rtm_dst_len`); nil for the default route.
    public var destination: IPPrefix?
    /// `RTA_GATEWAY`.
    public var gateway: IPAddress?
    /// `RTA_OIF`: the outgoing interface index.
    public var outputInterface: Int32?
    /// `RTA_PRIORITY`: the metric.
    public var metric: UInt32?
    /// The table (`RTA_TABLE`, or `rtm_table`).
    public var table: RouteTable
    /// `rtm_type`.
    public var type: RouteType
    /// `rtm_scope`.
    public var scope: RouteScope
    /// `rtm_protocol`.
    public var routingProtocol: RouteProtocol

    /// A value with these fields.
    public init(
        family: AddressFamily, destination: IPPrefix? = nil, gateway: IPAddress? = nil, outputInterface: Int32? = nil,
        metric: UInt32? = nil, table: RouteTable = .main, type: RouteType = .unicast,
        scope: RouteScope = .universe, routingProtocol: RouteProtocol = .boot
    ) {
        self.family = family
        self.destination = destination
        self.gateway = gateway
        self.outputInterface = outputInterface
        self.metric = metric
        self.table = table
        self.type = type
        self.scope = scope
        self.routingProtocol = routingProtocol
    }

    /// True for a default route (no destination, or a /0 one).
    public var isDefault: Bool { destination == nil || destination?.length == 0 }

    /// Decodes an `RTM_NEWROUTE` (or `RTM_DELROUTE`) message.
    public static func decode(_ message: NetlinkMessage) throws(RouteNetlinkError) -> Route {
        let payload = message.payload
        guard let header = payload.load(rtmsg.self, at: 0) else {
            throw .malformed(what: "route", detail: "\(payload.count) bytes, an rtmsg needs 12")
        }
        var route = Route(
            family: AddressFamily(rawValue: header.rtm_family), table: RouteTable(rawValue: UInt32(header.rtm_table)),
            type: RouteType(rawValue: header.rtm_type), scope: RouteScope(rawValue: header.rtm_scope),
            routingProtocol: RouteProtocol(rawValue: header.rtm_protocol))
        var attributes = AttributeDecoder(payload[MemoryLayout<rtmsg>.size...], operation: "decode route")
        while attributes.next() {
            switch UInt32(attributes.type) {
            case RTA_DST.rawValue:
                if let address = IPAddress(bytes: attributes.payload) {
                    route.destination = IPPrefix(address: address, length: header.rtm_dst_len)
                }
            case RTA_GATEWAY.rawValue: route.gateway = IPAddress(bytes: attributes.payload)
            case RTA_OIF.rawValue: route.outputInterface = attributes.int32()
            case RTA_PRIORITY.rawValue: route.metric = attributes.uint32()
            case RTA_TABLE.rawValue: route.table = RouteTable(rawValue: attributes.uint32())
            default: break
            }
        }
        if let error = attributes.error { throw .malformed(what: "route", detail: error.description) }
        return route
    }
}

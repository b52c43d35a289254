import CMnl
import Netlink

/// A route, as `ip route show` reports it, decoded from `RTM_NEWROUTE`.
public struct Route: Sendable, Equatable {
    /// `AF_INET` or `AF_INET6`.
    public var family: UInt8
    /// The destination (`RTA_DST` with `rtm_dst_len`); nil for the default route.
    public var destination: IPPrefix?
    /// `RTA_GATEWAY`.
    public var gateway: IPAddress?
    /// `RTA_OIF`: the outgoing interface index.
    public var outputInterface: Int32?
    /// `RTA_PRIORITY`: the metric.
    public var metric: UInt32?
    /// The table (`RTA_TABLE`, or `rtm_table`); 254 is `main`.
    public var table: UInt32
    /// `rtm_type`: `RTN_UNICAST` 1, `RTN_LOCAL` 2, `RTN_BROADCAST` 3, `RTN_UNREACHABLE` 7…
    public var type: UInt8
    /// `rtm_scope`.
    public var scope: UInt8
    /// `rtm_protocol`: `RTPROT_KERNEL` 2, `RTPROT_BOOT` 3, `RTPROT_STATIC` 4…
    public var routingProtocol: UInt8

    public init(
        family: UInt8, destination: IPPrefix? = nil, gateway: IPAddress? = nil, outputInterface: Int32? = nil,
        metric: UInt32? = nil, table: UInt32 = UInt32(RT_TABLE_MAIN.rawValue), type: UInt8 = UInt8(RTN_UNICAST),
        scope: UInt8 = 0, routingProtocol: UInt8 = UInt8(RTPROT_BOOT)
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
            family: header.rtm_family, table: UInt32(header.rtm_table), type: header.rtm_type,
            scope: header.rtm_scope, routingProtocol: header.rtm_protocol)
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
            case RTA_TABLE.rawValue: route.table = attributes.uint32()
            default: break
            }
        }
        if let error = attributes.error { throw .malformed(what: "route", detail: error.description) }
        return route
    }
}

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
    /// The source prefix of an IPv6 source-specific route (`RTA_SRC` with `rtm_src_len`; `from` in `ip route`).
    public var source: IPPrefix?
    /// `rtm_tos` (`tos`/`dsfield`).
    public var typeOfService: UInt8 = 0
    /// `rtm_flags`: `RTNH_F_ONLINK` (``isOnLink``) and the kernel's own marks (`RTNH_F_DEAD`, `RTM_F_CLONED`…).
    public var flags: UInt32 = 0
    /// `RTA_PREFSRC`: the source address the route prefers (`src` in `ip route`).
    public var preferredSource: IPAddress?
    /// `RTA_METRICS`, as the kernel sent it: the nested `RTAX_*` attributes (`mtu`, `advmss`, `hoplimit`…),
    /// kept as bytes so a route can be made again exactly.
    public var metrics: [UInt8]?
    /// `RTA_PREF`: an IPv6 route's router preference (`pref low|medium|high`: 3, 0, 1).
    public var preference: UInt8?
    /// Seconds until an expiring route (an IPv6 route learnt from a router advertisement) goes, as
    /// `RTA_CACHEINFO`'s `rta_expires` says (rounded up to a second); nil for one that does not expire.
    public var expires: UInt32?
    /// Attributes of the route that make it more than one interface's: `RTA_MULTIPATH`, `RTA_NH_ID`,
    /// `RTA_ENCAP`, `RTA_VIA` (names as iproute2's words: `nexthop`, `nhid`, `encap`, `via inet6`).
    public var compound: [String] = []
    /// The interfaces of the next hops of a route through several (`RTA_MULTIPATH`'s `rtnh_ifindex`).
    public var nextHopInterfaces: [Int32] = []

    /// True when the route sends anything through interface `index`: as its output interface or as one of
    /// its next hops.
    public func uses(interface index: Int32) -> Bool {
        outputInterface == index || nextHopInterfaces.contains(index)
    }

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

    /// True when the gateway is taken to be on the link whatever the addresses say (`onlink`, `RTNH_F_ONLINK`).
    public var isOnLink: Bool { flags & UInt32(RTNH_F_ONLINK) != 0 }

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
        route.typeOfService = header.rtm_tos
        route.flags = header.rtm_flags
        var attributes = AttributeDecoder(payload[MemoryLayout<rtmsg>.size...], operation: "decode route")
        while attributes.next() {
            switch UInt32(attributes.type) {
            case RTA_DST.rawValue:
                if let address = IPAddress(bytes: attributes.payload) {
                    route.destination = IPPrefix(address: address, length: header.rtm_dst_len)
                }
            case RTA_SRC.rawValue:
                if let address = IPAddress(bytes: attributes.payload) {
                    route.source = IPPrefix(address: address, length: header.rtm_src_len)
                }
            case RTA_GATEWAY.rawValue: route.gateway = IPAddress(bytes: attributes.payload)
            case RTA_OIF.rawValue: route.outputInterface = attributes.int32()
            case RTA_PRIORITY.rawValue: route.metric = attributes.uint32()
            case RTA_TABLE.rawValue: route.table = RouteTable(rawValue: attributes.uint32())
            case RTA_PREFSRC.rawValue: route.preferredSource = IPAddress(bytes: attributes.payload)
            case RTA_METRICS.rawValue: route.metrics = Array(attributes.payload)
            case RTA_PREF.rawValue: route.preference = attributes.uint8()
            case RTA_CACHEINFO.rawValue:
                // struct rta_cacheinfo: rta_expires (clock ticks, USER_HZ = 100 a second) is the third u32.
                if let ticks = attributes.payload.load(UInt32.self, at: 8), ticks > 0 { route.expires = ticks / 100 + (ticks % 100 == 0 ? 0 : 1) }  // rounded up, without overflow
            case RTA_MULTIPATH.rawValue:
                route.compound.append("nexthop")
                // struct rtnexthop { u16 rtnh_len; u8 flags; u8 hops; s32 rtnh_ifindex } + attributes, aligned.
                let hops = attributes.payload
                var offset = 0
                while let length = hops.load(UInt16.self, at: offset), length >= 8, let index = hops.load(Int32.self, at: offset + 4) {
                    route.nextHopInterfaces.append(index)
                    offset += netlinkAlign(Int(length))
                }
            case RTA_NH_ID.rawValue: route.compound.append("nhid")
            case RTA_ENCAP.rawValue: route.compound.append("encap")
            case RTA_VIA.rawValue: route.compound.append("via inet6")
            default: break
            }
        }
        if let error = attributes.error { throw .malformed(what: "route", detail: error.description) }
        return route
    }
}

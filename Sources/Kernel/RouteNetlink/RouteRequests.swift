import CMnl
import LinkcondBase
import Netlink

/// The rtnetlink route requests linkcond sends, laid out as `ip route` lays them out.
public enum RouteRequest {
    /// `ip route add {default | PREFIX} [via GATEWAY] dev IFINDEX [metric METRIC]` in table main,
    /// protocol boot: `RTM_NEWROUTE` with `NLM_F_CREATE | NLM_F_EXCL`.
    ///
    /// Without a gateway the route is scope link (the destination is on the link), as iproute2 does.
    public static func add(
        destination: IPPrefix?, gateway: IPAddress?, interfaceIndex: Int32, metric: UInt32?, family: AddressFamily
    ) -> NetlinkMessageBuilder {
        let message = NetlinkMessageBuilder(type: UInt16(RTM_NEWROUTE), flags: UInt16(NLM_F_CREATE | NLM_F_EXCL))
        var header = rtmsg()
        header.rtm_family = family.rawValue
        header.rtm_dst_len = destination?.length ?? 0
        header.rtm_table = UInt8(RT_TABLE_MAIN.rawValue)
        header.rtm_protocol = UInt8(RTPROT_BOOT)
        header.rtm_scope = UInt8(gateway == nil ? RT_SCOPE_LINK.rawValue : RT_SCOPE_UNIVERSE.rawValue)
        header.rtm_type = UInt8(RTN_UNICAST)
        message.putStruct(header)
        putAttributes(message, family: family, destination: destination, gateway: gateway, interfaceIndex: interfaceIndex, metric: metric)
        return message
    }

    /// `ip [-6] route add PREFIX [from SRC] [tos TOS] [via GATEWAY] dev IFINDEX table TABLE proto PROTO scope SCOPE
    /// type TYPE [metric M] [src PREFSRC] [pref P] [expires S] [onlink] [METRICS…]`: the route `route`
    /// describes (as a dump decoded it), made again through `interfaceIndex` — its table, protocol, scope,
    /// type, metric, preferred source, router preference, `onlink`, what is left of its lifetime and its
    /// `RTA_METRICS` as they were. `RTM_NEWROUTE` with `NLM_F_CREATE | NLM_F_EXCL`, laid out as iproute2 lays
    /// out that command with its arguments in this order: a table above 255 in `RTA_TABLE` (else in
    /// `rtm_table`), the metrics last. Routes through several next hops (``Route/compound``) cannot be made
    /// so; the caller refuses them.
    public static func add(_ route: Route, interfaceIndex: Int32) -> NetlinkMessageBuilder {
        let message = NetlinkMessageBuilder(type: UInt16(RTM_NEWROUTE), flags: UInt16(NLM_F_CREATE | NLM_F_EXCL))
        var header = rtmsg()
        header.rtm_family = route.family.rawValue
        header.rtm_dst_len = route.destination?.length ?? 0
        header.rtm_src_len = route.source?.length ?? 0
        header.rtm_tos = route.typeOfService
        header.rtm_table = route.table.rawValue <= 255 ? UInt8(route.table.rawValue) : UInt8(RT_TABLE_UNSPEC.rawValue)
        header.rtm_protocol = route.routingProtocol.rawValue
        header.rtm_scope = route.scope.rawValue
        header.rtm_type = route.type.rawValue
        header.rtm_flags = route.flags & UInt32(RTNH_F_ONLINK)
        message.putStruct(header)
        if let destination = route.destination, destination.length > 0 {
            message.put(UInt16(RTA_DST.rawValue), bytes: destination.address.bytes)
        } else if route.family == .inet6 {
            message.put(UInt16(RTA_DST.rawValue), bytes: [UInt8](repeating: 0, count: 16))
        }
        if let source = route.source, source.length > 0 { message.put(UInt16(RTA_SRC.rawValue), bytes: source.address.bytes) }
        if let gateway = route.gateway { message.put(UInt16(RTA_GATEWAY.rawValue), bytes: gateway.bytes) }
        if route.table.rawValue > 255 { message.put(UInt16(RTA_TABLE.rawValue), uint32: route.table.rawValue) }
        if let metric = route.metric { message.put(UInt16(RTA_PRIORITY.rawValue), uint32: metric) }
        if let source = route.preferredSource { message.put(UInt16(RTA_PREFSRC.rawValue), bytes: source.bytes) }
        if let preference = route.preference { message.put(UInt16(RTA_PREF.rawValue), uint8: preference) }
        if let expires = route.expires { message.put(UInt16(RTA_EXPIRES.rawValue), uint32: expires) }
        message.put(UInt16(RTA_OIF.rawValue), uint32: UInt32(bitPattern: interfaceIndex))
        if let metrics = route.metrics, !metrics.isEmpty { message.put(UInt16(RTA_METRICS.rawValue), bytes: metrics) }
        return message
    }

    /// `ip route del {default | PREFIX} [via GATEWAY] dev IFINDEX [metric METRIC]` in table main:
    /// `RTM_DELROUTE` with scope nowhere, matching any protocol and type.
    public static func delete(
        destination: IPPrefix?, gateway: IPAddress?, interfaceIndex: Int32, metric: UInt32?, family: AddressFamily
    ) -> NetlinkMessageBuilder {
        let message = NetlinkMessageBuilder(type: UInt16(RTM_DELROUTE), flags: 0)
        var header = rtmsg()
        header.rtm_family = family.rawValue
        header.rtm_dst_len = destination?.length ?? 0
        header.rtm_table = UInt8(RT_TABLE_MAIN.rawValue)
        header.rtm_scope = UInt8(RT_SCOPE_NOWHERE.rawValue)
        message.putStruct(header)
        putAttributes(message, family: family, destination: destination, gateway: gateway, interfaceIndex: interfaceIndex, metric: metric)
        return message
    }

    /// `ip route show table all`: a dump of every route of `family` (nil: both).
    public static func dump(family: AddressFamily? = nil) -> NetlinkMessageBuilder {
        let message = NetlinkMessageBuilder(type: UInt16(RTM_GETROUTE), flags: 0)
        var header = rtmsg()
        header.rtm_family = family?.rawValue ?? UInt8(AF_UNSPEC)
        message.putStruct(header)
        return message
    }

    private static func putAttributes(
        _ message: NetlinkMessageBuilder, family: AddressFamily, destination: IPPrefix?, gateway: IPAddress?, interfaceIndex: Int32,
        metric: UInt32?
    ) {
        if let destination, destination.length > 0 {
            message.put(UInt16(RTA_DST.rawValue), bytes: destination.address.bytes)
        } else if family == .inet6 {
            // `ip -6 route add default` spells the default destination out as ::/0.
            message.put(UInt16(RTA_DST.rawValue), bytes: [UInt8](repeating: 0, count: 16))
        }
        if let gateway { message.put(UInt16(RTA_GATEWAY.rawValue), bytes: gateway.bytes) }
        if let metric { message.put(UInt16(RTA_PRIORITY.rawValue), uint32: metric) }
        message.put(UInt16(RTA_OIF.rawValue), uint32: UInt32(bitPattern: interfaceIndex))
    }
}

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

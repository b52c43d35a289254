import CMnl
import Netlink

/// An rtnetlink multicast group (`RTNLGRP_*`), for `NetlinkListener(groups:)`; what `ip monitor` joins.
public struct RouteNetlinkGroup: RawRepresentable, Hashable, Sendable {
    /// The value as the kernel sends it.
    public var rawValue: UInt32
    /// A value with these fields.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// Link changes. `RTNLGRP_LINK`.
    public static let link = RouteNetlinkGroup(rawValue: UInt32(RTNLGRP_LINK.rawValue))
    /// IPv4 address changes. `RTNLGRP_IPV4_IFADDR`.
    public static let ipv4Address = RouteNetlinkGroup(rawValue: UInt32(RTNLGRP_IPV4_IFADDR.rawValue))
    /// IPv6 address changes. `RTNLGRP_IPV6_IFADDR`.
    public static let ipv6Address = RouteNetlinkGroup(rawValue: UInt32(RTNLGRP_IPV6_IFADDR.rawValue))
    /// IPv4 route changes. `RTNLGRP_IPV4_ROUTE`.
    public static let ipv4Route = RouteNetlinkGroup(rawValue: UInt32(RTNLGRP_IPV4_ROUTE.rawValue))
    /// IPv6 route changes. `RTNLGRP_IPV6_ROUTE`.
    public static let ipv6Route = RouteNetlinkGroup(rawValue: UInt32(RTNLGRP_IPV6_ROUTE.rawValue))
}

extension NetlinkListener {
    /// A listener joined to rtnetlink `groups`, in the calling thread's namespace.
    /// Equivalent to what `ip monitor link address route` listens to.
    public convenience init(groups: [RouteNetlinkGroup]) throws(NetlinkError) {
        try self.init(groups: groups.map(\.rawValue))
    }
}

/// One rtnetlink notification (or dump entry), decoded: what `ip monitor` prints one line for.
public enum RouteNotification: Sendable, Equatable {
    /// `RTM_NEWLINK`: a link appeared or changed.
    case newLink(Link)
    /// `RTM_DELLINK`: a link went away.
    case deletedLink(Link)
    /// `RTM_NEWADDR`.
    case newAddress(InterfaceAddress)
    /// `RTM_DELADDR`.
    case deletedAddress(InterfaceAddress)
    /// `RTM_NEWROUTE`.
    case newRoute(Route)
    /// `RTM_DELROUTE`.
    case deletedRoute(Route)

    /// Decodes `message`; nil for message types other than links, addresses and routes.
    public static func decode(_ message: NetlinkMessage) throws(RouteNetlinkError) -> RouteNotification? {
        switch Int(message.type) {
        case Int(RTM_NEWLINK): .newLink(try Link.decode(message))
        case Int(RTM_DELLINK): .deletedLink(try Link.decode(message))
        case Int(RTM_NEWADDR): .newAddress(try InterfaceAddress.decode(message))
        case Int(RTM_DELADDR): .deletedAddress(try InterfaceAddress.decode(message))
        case Int(RTM_NEWROUTE): .newRoute(try Route.decode(message))
        case Int(RTM_DELROUTE): .deletedRoute(try Route.decode(message))
        default: nil
        }
    }
}

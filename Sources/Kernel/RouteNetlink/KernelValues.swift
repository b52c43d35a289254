import CMnl

// Typed kernel values, so that nothing above RouteNetlink needs the C headers: each wraps the raw value
// as the kernel sends it and names the constants linkcond uses (the C name closes each doc comment).

/// A route's type (`rtm_type`).
public struct RouteType: RawRepresentable, Hashable, Sendable, Codable {
    /// The value as the kernel sends it.
    public var rawValue: UInt8
    /// A value with these fields.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// A gateway or direct route. `RTN_UNICAST`.
    public static let unicast = RouteType(rawValue: UInt8(RTN_UNICAST))
    /// A route to a local address. `RTN_LOCAL`.
    public static let local = RouteType(rawValue: UInt8(RTN_LOCAL))
    /// A broadcast route. `RTN_BROADCAST`.
    public static let broadcast = RouteType(rawValue: UInt8(RTN_BROADCAST))
    /// A destination that is unreachable. `RTN_UNREACHABLE`.
    public static let unreachable = RouteType(rawValue: UInt8(RTN_UNREACHABLE))
}

/// How far an address or route reaches (`rtm_scope`, `ifa_scope`).
public struct RouteScope: RawRepresentable, Hashable, Sendable, Codable {
    /// The value as the kernel sends it.
    public var rawValue: UInt8
    /// A value with these fields.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Everywhere. `RT_SCOPE_UNIVERSE`.
    public static let universe = RouteScope(rawValue: UInt8(RT_SCOPE_UNIVERSE.rawValue))
    /// This link only. `RT_SCOPE_LINK`.
    public static let link = RouteScope(rawValue: UInt8(RT_SCOPE_LINK.rawValue))
    /// This host only. `RT_SCOPE_HOST`.
    public static let host = RouteScope(rawValue: UInt8(RT_SCOPE_HOST.rawValue))
    /// No scope (used to match any in deletions). `RT_SCOPE_NOWHERE`.
    public static let nowhere = RouteScope(rawValue: UInt8(RT_SCOPE_NOWHERE.rawValue))
}

/// A routing table's number (`RTA_TABLE`).
public struct RouteTable: RawRepresentable, Hashable, Sendable, Codable {
    /// The value as the kernel sends it.
    public var rawValue: UInt32
    /// A value with these fields.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// The table `ip route` shows by default. `RT_TABLE_MAIN`.
    public static let main = RouteTable(rawValue: UInt32(RT_TABLE_MAIN.rawValue))
    /// The table of local and broadcast routes. `RT_TABLE_LOCAL`.
    public static let local = RouteTable(rawValue: UInt32(RT_TABLE_LOCAL.rawValue))
}

/// Who installed a route (`rtm_protocol`).
public struct RouteProtocol: RawRepresentable, Hashable, Sendable, Codable {
    /// The value as the kernel sends it.
    public var rawValue: UInt8
    /// A value with these fields.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// The kernel itself (prefix routes). `RTPROT_KERNEL`.
    public static let kernel = RouteProtocol(rawValue: UInt8(RTPROT_KERNEL))
    /// An administrator, as `ip route add` sets it. `RTPROT_BOOT`.
    public static let boot = RouteProtocol(rawValue: UInt8(RTPROT_BOOT))
    /// A static route. `RTPROT_STATIC`.
    public static let `static` = RouteProtocol(rawValue: UInt8(RTPROT_STATIC))
}

/// Interface flags (`ifi_flags`).
public struct LinkFlags: OptionSet, Hashable, Sendable, Codable {
    /// The value as the kernel sends it.
    public var rawValue: UInt32
    /// A value with these fields.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// Set up by the administrator. `IFF_UP`.
    public static let up = LinkFlags(rawValue: UInt32(IFF_UP.rawValue))
    /// The loopback device. `IFF_LOOPBACK`.
    public static let loopback = LinkFlags(rawValue: UInt32(IFF_LOOPBACK.rawValue))
    /// The driver signals the physical layer up (carrier). `IFF_LOWER_UP`.
    public static let lowerUp = LinkFlags(rawValue: 1 << 16)
}

/// Address flags (`IFA_FLAGS`).
public struct AddressFlags: OptionSet, Hashable, Sendable, Codable {
    /// The value as the kernel sends it.
    public var rawValue: UInt32
    /// A value with these fields.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// IPv6 duplicate address detection has not finished. `IFA_F_TENTATIVE`.
    public static let tentative = AddressFlags(rawValue: UInt32(IFA_F_TENTATIVE))
    /// Usable while DAD runs (optimistic DAD). `IFA_F_OPTIMISTIC`.
    public static let optimistic = AddressFlags(rawValue: UInt32(IFA_F_OPTIMISTIC))
    /// DAD found a duplicate. `IFA_F_DADFAILED`.
    public static let dadFailed = AddressFlags(rawValue: UInt32(IFA_F_DADFAILED))
    /// A configured (not autoconfigured) address. `IFA_F_PERMANENT`.
    public static let permanent = AddressFlags(rawValue: UInt32(IFA_F_PERMANENT))
    /// No DAD for this address. `IFA_F_NODAD`.
    public static let noDAD = AddressFlags(rawValue: UInt32(IFA_F_NODAD))
    /// A secondary IPv4 address of its subnet (the kernel decides). `IFA_F_SECONDARY`.
    public static let secondary = AddressFlags(rawValue: UInt32(IFA_F_SECONDARY))
    /// No prefix route for the address. `IFA_F_NOPREFIXROUTE`.
    public static let noPrefixRoute = AddressFlags(rawValue: UInt32(IFA_F_NOPREFIXROUTE))
    /// Temporary (privacy) addresses are made from this one. `IFA_F_MANAGETEMPADDR`.
    public static let manageTemporaryAddresses = AddressFlags(rawValue: UInt32(IFA_F_MANAGETEMPADDR))
    /// The multicast group of the address is joined for it. `IFA_F_MCAUTOJOIN`.
    public static let multicastAutoJoin = AddressFlags(rawValue: UInt32(IFA_F_MCAUTOJOIN))
    /// A Mobile IPv6 home address. `IFA_F_HOMEADDRESS`.
    public static let homeAddress = AddressFlags(rawValue: UInt32(IFA_F_HOMEADDRESS))
    /// The flags a request may set when an address is added (`ip addr add … nodad noprefixroute
    /// mngtmpaddr autojoin home`); the others are the kernel's to decide.
    public static let settable: AddressFlags = [.noDAD, .noPrefixRoute, .manageTemporaryAddresses, .multicastAutoJoin, .homeAddress]
}

/// An interface's hardware type (`ifi_type`, the ARP hardware type).
public struct HardwareType: RawRepresentable, Hashable, Sendable, Codable {
    /// The value as the kernel sends it.
    public var rawValue: UInt16
    /// A value with these fields.
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// Ethernet (veth, wired and wifi devices). `ARPHRD_ETHER`.
    public static let ether = HardwareType(rawValue: UInt16(ARPHRD_ETHER))
    /// The loopback device. `ARPHRD_LOOPBACK`.
    public static let loopback = HardwareType(rawValue: UInt16(ARPHRD_LOOPBACK))
    /// Raw IP, as cellular modems present themselves. `ARPHRD_RAWIP`.
    public static let rawIP = HardwareType(rawValue: UInt16(ARPHRD_RAWIP))
    /// Point-to-point protocol. `ARPHRD_PPP`.
    public static let ppp = HardwareType(rawValue: UInt16(ARPHRD_PPP))
    /// None (tun devices and the like). `ARPHRD_NONE`.
    public static let none = HardwareType(rawValue: UInt16(ARPHRD_NONE))
}

/// An Ethernet protocol number (what `tc filter … protocol` takes, in host byte order).
public struct EtherType: RawRepresentable, Hashable, Sendable, Codable {
    /// The value as the kernel sends it.
    public var rawValue: UInt16
    /// A value with these fields.
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// IPv4. `ETH_P_IP`.
    public static let ipv4 = EtherType(rawValue: 0x0800)
    /// IPv6. `ETH_P_IPV6`.
    public static let ipv6 = EtherType(rawValue: 0x86DD)
    /// Every protocol. `ETH_P_ALL`.
    public static let all = EtherType(rawValue: 0x0003)
}

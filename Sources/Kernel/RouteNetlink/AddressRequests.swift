import CMnl
import LinkcondBase
import Netlink

/// The rtnetlink address requests linkcond sends, laid out as `ip addr` lays them out.
public enum AddressRequest {
    /// `ip addr add PREFIX dev IFINDEX [nodad]`: `RTM_NEWADDR` with `NLM_F_CREATE | NLM_F_EXCL`,
    /// `IFA_LOCAL` and `IFA_ADDRESS` both set to the address (no peer).
    ///
    /// `noDAD` skips IPv6 duplicate address detection (`IFA_F_NODAD`), so the address is usable at once
    /// instead of being tentative for a second or two.
    public static func add(_ prefix: IPPrefix, interfaceIndex: Int32, noDAD: Bool = false) -> NetlinkMessageBuilder {
        build(type: UInt16(RTM_NEWADDR), flags: UInt16(NLM_F_CREATE | NLM_F_EXCL), prefix, interfaceIndex, noDAD: noDAD)
    }

    /// `ip addr add LOCAL/LEN [peer PEER] [broadcast BRD] dev IFINDEX [label LABEL] [scope SCOPE] [metric M]
    /// [valid_lft V preferred_lft P] [nodad] [noprefixroute] …`: the address `address` describes (as a dump
    /// decoded it), made again on `interfaceIndex` with every property a request can set — its scope, label,
    /// broadcast, peer, prefix-route metric, lifetimes and settable flags (``AddressFlags/settable``) — plus
    /// `extraFlags`. Laid out as iproute2 lays out that command: the flags in `ifa_flags` while they fit a
    /// byte, in `IFA_FLAGS` beyond; `IFA_CACHEINFO` only for an address that expires.
    public static func add(_ address: InterfaceAddress, interfaceIndex: Int32, extraFlags: AddressFlags = []) -> NetlinkMessageBuilder {
        let message = NetlinkMessageBuilder(type: UInt16(RTM_NEWADDR), flags: UInt16(NLM_F_CREATE | NLM_F_EXCL))
        let flags = address.flags.intersection(.settable).union(extraFlags).rawValue
        var header = ifaddrmsg()
        header.ifa_family = address.prefix.address.family.rawValue
        header.ifa_prefixlen = address.prefix.length
        header.ifa_flags = flags <= 0xff ? UInt8(flags) : 0
        header.ifa_scope = address.scope.rawValue
        header.ifa_index = UInt32(bitPattern: interfaceIndex)
        message.putStruct(header)
        message.put(UInt16(IFA_LOCAL), bytes: address.prefix.address.bytes)
        if let broadcast = address.broadcast { message.put(UInt16(IFA_BROADCAST), bytes: broadcast.bytes) }
        if let label = address.label { message.put(UInt16(IFA_LABEL), string: label) }
        if let metric = address.metric { message.put(UInt16(IFA_RT_PRIORITY), uint32: metric) }
        if flags > 0xff { message.put(UInt16(IFA_FLAGS), uint32: flags) }
        message.put(UInt16(IFA_ADDRESS), bytes: (address.peer ?? address.prefix.address).bytes)
        if address.validLifetime != InterfaceAddress.forever || address.preferredLifetime != InterfaceAddress.forever {
            var lifetimes = ifa_cacheinfo()
            lifetimes.ifa_prefered = address.preferredLifetime
            lifetimes.ifa_valid = address.validLifetime
            message.put(UInt16(IFA_CACHEINFO), structure: lifetimes)
        }
        return message
    }

    /// `ip addr del PREFIX dev IFINDEX`.
    public static func delete(_ prefix: IPPrefix, interfaceIndex: Int32) -> NetlinkMessageBuilder {
        build(type: UInt16(RTM_DELADDR), flags: 0, prefix, interfaceIndex, noDAD: false)
    }

    /// `ip addr show`: a dump of every address of `family` (nil: both).
    public static func dump(family: AddressFamily? = nil) -> NetlinkMessageBuilder {
        let message = NetlinkMessageBuilder(type: UInt16(RTM_GETADDR), flags: 0)
        var header = ifaddrmsg()
        header.ifa_family = family?.rawValue ?? UInt8(AF_UNSPEC)
        message.putStruct(header)
        return message
    }

    private static func build(
        type: UInt16, flags: UInt16, _ prefix: IPPrefix, _ interfaceIndex: Int32, noDAD: Bool
    ) -> NetlinkMessageBuilder {
        let message = NetlinkMessageBuilder(type: type, flags: flags)
        var header = ifaddrmsg()
        header.ifa_family = prefix.address.family.rawValue
        header.ifa_prefixlen = prefix.length
        header.ifa_flags = noDAD ? UInt8(IFA_F_NODAD) : 0
        header.ifa_index = UInt32(bitPattern: interfaceIndex)
        message.putStruct(header)
        message.put(UInt16(IFA_LOCAL), bytes: prefix.address.bytes)
        message.put(UInt16(IFA_ADDRESS), bytes: prefix.address.bytes)
        return message
    }
}

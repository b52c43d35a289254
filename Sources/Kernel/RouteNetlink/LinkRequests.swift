import CMnl
import Netlink

/// What a veth's peer is given when the pair is made (nil: the kernel's choice: a random address, the
/// default MTU and queue length).
public struct VethPeerSettings: Sendable, Equatable {
    /// `address MAC`: `IFLA_ADDRESS`.
    public var hardwareAddress: [UInt8]?
    /// `mtu MTU`: `IFLA_MTU`.
    public var mtu: UInt32?
    /// `txqueuelen LEN`: `IFLA_TXQLEN`.
    public var transmitQueueLength: UInt32?

    /// Settings for a veth's peer.
    public init(hardwareAddress: [UInt8]? = nil, mtu: UInt32? = nil, transmitQueueLength: UInt32? = nil) {
        self.hardwareAddress = hardwareAddress
        self.mtu = mtu
        self.transmitQueueLength = transmitQueueLength
    }
}

/// The rtnetlink link requests linkcond sends, as messages (no socket), laid out exactly as iproute2's
/// `ip link` lays them out, so unit tests compare them byte for byte with captured `ip` requests.
public enum LinkRequest {
    static let createFlags = UInt16(NLM_F_CREATE | NLM_F_EXCL)

    /// `ip link add NAME [netns NS] type veth peer name PEER [netns PEERNS]`.
    ///
    /// `namespaceFD`/`peerNamespaceFD` are open descriptors of `/run/netns/NS` (`IFLA_NET_NS_FD`); nil
    /// means the namespace of the socket the request is sent on. Flags: `NLM_F_CREATE | NLM_F_EXCL`, so an
    /// existing interface of that name is an error (`EEXIST`) rather than silently reused.
    ///
    /// `index`/`peerIndex` ask for specific interface indexes (`ifi_index`); 0 lets the kernel choose.
    ///
    /// `peer` sets the peer's hardware address, MTU and transmit queue length at creation
    /// (`… peer name PEER address MAC mtu MTU txqueuelen LEN`), so it never exists with other values.
    public static func createVeth(
        name: String, index: Int32 = 0, namespaceFD: Int32? = nil, peerName: String, peerIndex: Int32 = 0,
        peerNamespaceFD: Int32? = nil, peer: VethPeerSettings = VethPeerSettings()
    ) -> NetlinkMessageBuilder {
        let message = NetlinkMessageBuilder(type: UInt16(RTM_NEWLINK), flags: createFlags)
        message.putStruct(ifinfo(index: index))
        if let namespaceFD { message.put(UInt16(IFLA_NET_NS_FD), uint32: UInt32(bitPattern: namespaceFD)) }
        message.put(UInt16(IFLA_IFNAME), string: name)
        let linkInfo = message.beginNest(UInt16(IFLA_LINKINFO))
        message.put(UInt16(IFLA_INFO_KIND), bytes: Array("veth".utf8))  // iproute2 sends the kind without its NUL
        let data = message.beginNest(UInt16(IFLA_INFO_DATA))
        let peerNest = message.beginNest(UInt16(VETH_INFO_PEER))
        message.putStruct(ifinfo(index: peerIndex))
        if let address = peer.hardwareAddress { message.put(UInt16(IFLA_ADDRESS), bytes: address) }
        if let mtu = peer.mtu { message.put(UInt16(IFLA_MTU), uint32: mtu) }
        if let length = peer.transmitQueueLength { message.put(UInt16(IFLA_TXQLEN), uint32: length) }
        if let peerNamespaceFD { message.put(UInt16(IFLA_NET_NS_FD), uint32: UInt32(bitPattern: peerNamespaceFD)) }
        message.put(UInt16(IFLA_IFNAME), string: peerName)
        message.endNest(peerNest)
        message.endNest(data)
        message.endNest(linkInfo)
        return message
    }

    /// `ip link add NAME type KIND` for kinds that need no further data (`ifb`, `dummy`).
    public static func create(name: String, kind: String) -> NetlinkMessageBuilder {
        let message = NetlinkMessageBuilder(type: UInt16(RTM_NEWLINK), flags: createFlags)
        message.putStruct(ifinfomsg())
        message.put(UInt16(IFLA_IFNAME), string: name)
        let linkInfo = message.beginNest(UInt16(IFLA_LINKINFO))
        message.put(UInt16(IFLA_INFO_KIND), bytes: Array(kind.utf8))
        message.endNest(linkInfo)
        return message
    }

    /// `ip link set dev NAME up` (or `down`): `RTM_NEWLINK` with `ifi_change = IFF_UP`.
    public static func setUp(index: Int32, _ up: Bool) -> NetlinkMessageBuilder {
        let message = NetlinkMessageBuilder(type: UInt16(RTM_NEWLINK), flags: 0)
        var info = ifinfomsg()
        info.ifi_index = index
        info.ifi_flags = up ? UInt32(IFF_UP.rawValue) : 0
        info.ifi_change = UInt32(IFF_UP.rawValue)
        message.putStruct(info)
        return message
    }

    /// `ip link set dev NAME name NEWNAME`.
    public static func rename(index: Int32, to newName: String) -> NetlinkMessageBuilder {
        let message = NetlinkMessageBuilder(type: UInt16(RTM_NEWLINK), flags: 0)
        message.putStruct(ifinfo(index: index))
        message.put(UInt16(IFLA_IFNAME), string: newName)
        return message
    }

    /// `ip link set dev NAME alias ALIAS`: `IFLA_IFALIAS`, sent as iproute2 sends it (the text without its
    /// terminating NUL; the kernel stores up to 255 bytes).
    public static func setAlias(index: Int32, _ alias: String) -> NetlinkMessageBuilder {
        let message = NetlinkMessageBuilder(type: UInt16(RTM_NEWLINK), flags: 0)
        message.putStruct(ifinfo(index: index))
        message.put(UInt16(IFLA_IFALIAS), bytes: Array(alias.utf8))
        return message
    }

    /// `ip link set dev NAME netns NS`, with `namespaceFD` an open descriptor of `/run/netns/NS`.
    public static func move(index: Int32, toNamespaceFD namespaceFD: Int32) -> NetlinkMessageBuilder {
        let message = NetlinkMessageBuilder(type: UInt16(RTM_NEWLINK), flags: 0)
        message.putStruct(ifinfo(index: index))
        message.put(UInt16(IFLA_NET_NS_FD), uint32: UInt32(bitPattern: namespaceFD))
        return message
    }

    /// `ip link del dev NAME`. Deleting one end of a veth pair deletes both.
    public static func delete(index: Int32) -> NetlinkMessageBuilder {
        let message = NetlinkMessageBuilder(type: UInt16(RTM_DELLINK), flags: 0)
        message.putStruct(ifinfo(index: index))
        return message
    }

    /// `ip link show dev NAME` as iproute2 asks it: `RTM_GETLINK` by `IFLA_IFNAME`, with stats skipped
    /// (`IFLA_EXT_MASK = RTEXT_FILTER_VF | RTEXT_FILTER_SKIP_STATS`).
    public static func get(name: String) -> NetlinkMessageBuilder {
        let message = NetlinkMessageBuilder(type: UInt16(RTM_GETLINK), flags: 0)
        message.putStruct(ifinfomsg())
        message.put(UInt16(IFLA_EXT_MASK), uint32: UInt32(RTEXT_FILTER_VF | RTEXT_FILTER_SKIP_STATS))
        message.put(UInt16(IFLA_IFNAME), string: name)
        return message
    }

    /// `ip link show`: a dump of every link (the connection adds `NLM_F_DUMP`).
    public static func dump() -> NetlinkMessageBuilder {
        let message = NetlinkMessageBuilder(type: UInt16(RTM_GETLINK), flags: 0)
        message.putStruct(ifinfomsg())
        message.put(UInt16(IFLA_EXT_MASK), uint32: UInt32(RTEXT_FILTER_SKIP_STATS))
        return message
    }

    private static func ifinfo(index: Int32) -> ifinfomsg {
        var info = ifinfomsg()
        info.ifi_index = index
        return info
    }
}

import CMnl
import Netlink

/// `IF_OPER_*`: RFC 2863 operational state as the kernel reports it in `IFLA_OPERSTATE`.
public enum OperationalState: UInt8, Sendable, Codable, CustomStringConvertible {
    case unknown = 0, notPresent = 1, down = 2, lowerLayerDown = 3, testing = 4, dormant = 5, up = 6

    /// The text `ip`/`tc` would show for it.
    public var description: String {
        switch self {
        case .unknown: "UNKNOWN"
        case .notPresent: "NOTPRESENT"
        case .down: "DOWN"
        case .lowerLayerDown: "LOWERLAYERDOWN"
        case .testing: "TESTING"
        case .dormant: "DORMANT"
        case .up: "UP"
        }
    }
}

/// A network interface as `ip link show` reports it, decoded from an `RTM_NEWLINK` message.
public struct Link: Sendable, Equatable {
    /// `ifi_index`.
    public var index: Int32
    /// `IFLA_IFNAME`.
    public var name: String
    /// `IFLA_INFO_KIND` inside `IFLA_LINKINFO` (`veth`, `ifb`…), nil for devices without one (loopback, hardware).
    public var kind: String?
    /// `ifi_flags`.
    public var flags: LinkFlags
    /// `ifi_type`: the ARP hardware type.
    public var hardwareType: HardwareType
    /// `IFLA_OPERSTATE`.
    public var operationalState: OperationalState
    /// `IFLA_CARRIER`: true when the link has carrier (for a veth: the peer is up).
    public var carrier: Bool
    /// `IFLA_MTU`.
    public var mtu: UInt32
    /// `IFLA_ADDRESS`: the hardware address, empty when there is none.
    public var hardwareAddress: [UInt8]
    /// `IFLA_LINK`: for a veth, the peer's index (in the peer's namespace).
    public var linkIndex: Int32?
    /// `IFLA_LINK_NETNSID`: for a veth whose peer lives in another namespace, that namespace's id as this
    /// namespace numbers it (`link-netnsid` in `ip link`); nil when the peer is in the same namespace.
    public var linkNamespaceID: Int32?
    /// `IFLA_TXQLEN`: the transmit queue length (`qlen`/`txqlen` in `ip link`).
    public var transmitQueueLength: UInt32?
    /// `IFLA_IFALIAS`: the link's alias (`alias` in `ip link`), nil when it has none.
    public var alias: String?

    /// A value with these fields.
    public init(
        index: Int32, name: String, kind: String? = nil, flags: LinkFlags = [], hardwareType: HardwareType = .ether,
        operationalState: OperationalState = .unknown, carrier: Bool = false, mtu: UInt32 = 0,
        hardwareAddress: [UInt8] = [], linkIndex: Int32? = nil, linkNamespaceID: Int32? = nil, transmitQueueLength: UInt32? = nil
    ) {
        self.index = index
        self.name = name
        self.kind = kind
        self.flags = flags
        self.hardwareType = hardwareType
        self.operationalState = operationalState
        self.carrier = carrier
        self.mtu = mtu
        self.hardwareAddress = hardwareAddress
        self.linkIndex = linkIndex
        self.linkNamespaceID = linkNamespaceID
        self.transmitQueueLength = transmitQueueLength
    }

    /// True when the administrator set the link up (`IFF_UP`).
    public var isUp: Bool { flags.contains(.up) }
    /// True for the loopback device (`IFF_LOOPBACK`).
    public var isLoopback: Bool { flags.contains(.loopback) }

    /// The hardware address as `02:fc:00:00:00:01`.
    public var hardwareAddressText: String {
        hardwareAddress.map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined(separator: ":")
    }

    /// Decodes an `RTM_NEWLINK` message (a dump reply or a notification).
    public static func decode(_ message: NetlinkMessage) throws(RouteNetlinkError) -> Link {
        let payload = message.payload
        guard let info = payload.load(ifinfomsg.self, at: 0) else {
            throw .malformed(what: "link", detail: "\(payload.count) bytes, an ifinfomsg needs 16")
        }
        var link = Link(
            index: info.ifi_index, name: "", flags: LinkFlags(rawValue: info.ifi_flags), hardwareType: HardwareType(rawValue: info.ifi_type))
        var attributes = AttributeDecoder(payload[MemoryLayout<ifinfomsg>.size...], operation: "decode link")
        while attributes.next() {
            switch Int(attributes.type) {
            case IFLA_IFNAME: link.name = attributes.string()
            case IFLA_MTU: link.mtu = attributes.uint32()
            case IFLA_ADDRESS: link.hardwareAddress = Array(attributes.payload)
            case IFLA_OPERSTATE:
                link.operationalState = OperationalState(rawValue: attributes.uint8()) ?? .unknown
            case IFLA_CARRIER: link.carrier = attributes.uint8() != 0
            case IFLA_LINK: link.linkIndex = attributes.int32()
            case IFLA_LINK_NETNSID: link.linkNamespaceID = attributes.int32()
            case IFLA_TXQLEN: link.transmitQueueLength = attributes.uint32()
            case IFLA_IFALIAS: link.alias = attributes.string()
            case IFLA_LINKINFO:
                var info = attributes.nested()
                while info.next() {
                    if Int(info.type) == IFLA_INFO_KIND { link.kind = info.string() }
                }
                if let error = info.error { throw .malformed(what: "link", detail: error.description) }
            default: break
            }
        }
        if let error = attributes.error { throw .malformed(what: "link", detail: error.description) }
        guard !link.name.isEmpty else {
            throw .malformed(what: "link", detail: "link \(info.ifi_index) has no IFLA_IFNAME")
        }
        return link
    }
}

import CMnl
import LinkcondBase
import Netlink

/// An address on an interface, as `ip addr show` reports it, decoded from `RTM_NEWADDR`.
public struct InterfaceAddress: Sendable, Equatable {
    /// The interface index (`ifa_index`).
    public var interfaceIndex: Int32
    /// The address and prefix length (`IFA_LOCAL`, or `IFA_ADDRESS` when there is no local address).
    public var prefix: IPPrefix
    /// `ifa_scope`.
    public var scope: RouteScope
    /// `IFA_FLAGS` (or `ifa_flags`).
    public var flags: AddressFlags
    /// The far end of a point-to-point address (`IFA_ADDRESS` when it differs from `IFA_LOCAL`; `peer` in
    /// `ip addr`); nil for an ordinary address.
    public var peer: IPAddress?
    /// `IFA_BROADCAST` (`brd`), IPv4 only.
    public var broadcast: IPAddress?
    /// `IFA_LABEL` (`label`), IPv4 only: the interface's name, or an alias such as `eth0:1`.
    public var label: String?
    /// Seconds the address stays valid and preferred (`IFA_CACHEINFO`: `valid_lft`, `preferred_lft`);
    /// ``forever`` for an address that does not expire.
    public var validLifetime: UInt32 = InterfaceAddress.forever
    public var preferredLifetime: UInt32 = InterfaceAddress.forever
    /// `IFA_RT_PRIORITY`: the metric of the prefix route the address makes (`metric` in `ip addr`).
    public var metric: UInt32?

    /// A lifetime that does not end (`INFINITY_LIFE_TIME`, `forever` in `ip addr`).
    public static let forever = UInt32.max

    /// An address as a decoded `RTM_NEWADDR` carries it.
    public init(interfaceIndex: Int32, prefix: IPPrefix, scope: RouteScope = .universe, flags: AddressFlags = []) {
        self.interfaceIndex = interfaceIndex
        self.prefix = prefix
        self.scope = scope
        self.flags = flags
    }

    /// True while IPv6 duplicate address detection has not finished (the address cannot be used yet).
    public var isTentative: Bool { flags.contains(.tentative) }

    /// Decodes an `RTM_NEWADDR` (or `RTM_DELADDR`) message.
    public static func decode(_ message: NetlinkMessage) throws(RouteNetlinkError) -> InterfaceAddress {
        let payload = message.payload
        guard let header = payload.load(ifaddrmsg.self, at: 0) else {
            throw .malformed(what: "address", detail: "\(payload.count) bytes, an ifaddrmsg needs 8")
        }
        var local: IPAddress?
        var address: IPAddress?
        var flags = UInt32(header.ifa_flags)
        var broadcast: IPAddress?
        var label: String?
        var lifetimes: (preferred: UInt32, valid: UInt32)?
        var metric: UInt32?
        var attributes = AttributeDecoder(payload[MemoryLayout<ifaddrmsg>.size...], operation: "decode address")
        while attributes.next() {
            switch Int(attributes.type) {
            case IFA_LOCAL: local = IPAddress(bytes: attributes.payload)
            case IFA_ADDRESS: address = IPAddress(bytes: attributes.payload)
            case IFA_FLAGS: flags = attributes.uint32()
            case IFA_BROADCAST: broadcast = IPAddress(bytes: attributes.payload)
            case IFA_LABEL: label = attributes.string()
            case IFA_RT_PRIORITY: metric = attributes.uint32()
            case IFA_CACHEINFO:
                // struct ifa_cacheinfo: ifa_prefered, ifa_valid, cstamp, tstamp.
                if let preferred = attributes.payload.load(UInt32.self, at: 0), let valid = attributes.payload.load(UInt32.self, at: 4) {
                    lifetimes = (preferred, valid)
                }
            default: break
            }
        }
        if let error = attributes.error { throw .malformed(what: "address", detail: error.description) }
        guard let chosen = local ?? address, chosen.family.rawValue == header.ifa_family,
            let prefix = IPPrefix(address: chosen, length: header.ifa_prefixlen)
        else {
            throw .malformed(what: "address", detail: "no usable IFA_LOCAL/IFA_ADDRESS for family \(header.ifa_family)")
        }
        var decoded = InterfaceAddress(
            interfaceIndex: Int32(bitPattern: header.ifa_index), prefix: prefix, scope: RouteScope(rawValue: header.ifa_scope),
            flags: AddressFlags(rawValue: flags))
        if let local, let address, address != local { decoded.peer = address }
        decoded.broadcast = broadcast
        decoded.label = label
        decoded.metric = metric
        if let lifetimes {
            decoded.preferredLifetime = lifetimes.preferred
            decoded.validLifetime = lifetimes.valid
        }
        return decoded
    }
}

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
        var attributes = AttributeDecoder(payload[MemoryLayout<ifaddrmsg>.size...], operation: "decode address")
        while attributes.next() {
            switch Int(attributes.type) {
            case IFA_LOCAL: local = IPAddress(bytes: attributes.payload)
            case IFA_ADDRESS: address = IPAddress(bytes: attributes.payload)
            case IFA_FLAGS: flags = attributes.uint32()
            default: break
            }
        }
        if let error = attributes.error { throw .malformed(what: "address", detail: error.description) }
        guard let chosen = local ?? address, chosen.family.rawValue == header.ifa_family,
            let prefix = IPPrefix(address: chosen, length: header.ifa_prefixlen)
        else {
            throw .malformed(what: "address", detail: "no usable IFA_LOCAL/IFA_ADDRESS for family \(header.ifa_family)")
        }
        return InterfaceAddress(
            interfaceIndex: Int32(bitPattern: header.ifa_index), prefix: prefix, scope: RouteScope(rawValue: header.ifa_scope),
            flags: AddressFlags(rawValue: flags))
    }
}

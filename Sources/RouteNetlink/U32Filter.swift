import CMnl
import Netlink

/// One 32-bit match of a u32 filter: `(packet word at offset & mask) == value`, in network byte order.
public struct U32Key: Sendable, Equatable {
    /// Mask, as the value of the 32-bit big-endian word.
    public var mask: UInt32
    /// The value the masked word must have, as the value of the big-endian word.
    public var value: UInt32
    /// Byte offset from the network header.
    public var offset: Int32

    /// A value with these fields.
    public init(mask: UInt32, value: UInt32, offset: Int32) {
        self.mask = mask
        self.value = value & mask
        self.offset = offset
    }

    /// `match ip protocol P 0xff`: the IPv4 protocol byte (offset 9).
    public static func ipProtocol(_ protocolNumber: UInt8) -> U32Key {
        U32Key(mask: 0x00ff_0000, value: UInt32(protocolNumber) << 16, offset: 8)
    }

    /// `match ip dport PORT 0xffff`: the destination port of a header-option-free IPv4 packet (offset 22).
    public static func ipDestinationPort(_ port: UInt16) -> U32Key {
        U32Key(mask: 0x0000_ffff, value: UInt32(port), offset: 20)
    }

    /// `match ip6 protocol P 0xff`: the IPv6 next-header byte (offset 6).
    public static func ip6Protocol(_ protocolNumber: UInt8) -> U32Key {
        U32Key(mask: 0x0000_ff00, value: UInt32(protocolNumber) << 8, offset: 4)
    }

    /// `match ip6 dport PORT 0xffff`: the destination port right after the fixed IPv6 header (offset 42).
    public static func ip6DestinationPort(_ port: UInt16) -> U32Key {
        U32Key(mask: 0x0000_ffff, value: UInt32(port), offset: 40)
    }
}

/// A u32 classifier that sends matching packets to a class: `tc filter add … u32 match … flowid CLASS`.
public struct U32Filter: Sendable, Equatable, CustomStringConvertible {
    /// The packets it looks at: ``EtherType/ipv4`` or ``EtherType/ipv6`` (`protocol ip|ipv6`).
    public var protocolNumber: EtherType
    /// The filter's priority (`prio`); each protocol needs a priority of its own.
    public var priority: UInt16
    /// All keys must match (`TC_U32_TERMINAL`).
    public var keys: [U32Key]
    /// Where matching packets go (`flowid`).
    public var classID: TrafficControlHandle

    /// `tc filter add … protocol PROTOCOL prio PRIORITY u32 match KEYS… flowid CLASS`.
    public init(protocolNumber: EtherType, priority: UInt16, keys: [U32Key], classID: TrafficControlHandle) {
        self.protocolNumber = protocolNumber
        self.priority = priority
        self.keys = keys
        self.classID = classID
    }

    /// The filter as `tc filter add` arguments, written from the encoded values:
    /// `protocol ip prio 1 u32 match u32 0x00110000 0x00ff0000 at 8 … flowid 1:2`.
    public var description: String {
        let protocolName: String
        switch protocolNumber {
        case .ipv4: protocolName = "ip"
        case .ipv6: protocolName = "ipv6"
        case .all: protocolName = "all"
        default: protocolName = "0x" + String(protocolNumber.rawValue, radix: 16)
        }
        func hex(_ value: UInt32) -> String {
            let digits = String(value, radix: 16)
            return "0x" + String(repeating: "0", count: 8 - digits.count) + digits
        }
        let matches = keys.map { "match u32 \(hex($0.value)) \(hex($0.mask)) at \($0.offset)" }
        return (["protocol \(protocolName) prio \(priority) u32"] + matches + ["flowid \(classID)"]).joined(separator: " ")
    }

    /// Appends `TCA_KIND` "u32" and `TCA_OPTIONS` (`TCA_U32_CLASSID`, then `TCA_U32_SEL`: a
    /// `tc_u32_sel` followed by its keys), as `tc filter add … u32` lays them out.
    public func encode(into message: NetlinkMessageBuilder) {
        message.put(UInt16(TCA_KIND), string: "u32")
        let nest = message.beginNest(UInt16(TCA_OPTIONS))
        message.put(UInt16(TCA_U32_CLASSID), uint32: classID.rawValue)
        // struct tc_u32_sel (16 bytes, ends in a flexible array): flags, offshift, nkeys, padding,
        // offmask, off, offoff, hoff, hmask — all zero but flags and nkeys.
        var bytes = [UInt8(TC_U32_TERMINAL), 0, UInt8(keys.count)] + [UInt8](repeating: 0, count: 13)
        for key in keys {
            var wire = tc_u32_key()
            wire.mask = key.mask.bigEndian
            wire.val = key.value.bigEndian
            wire.off = key.offset
            bytes += rawBytes(of: wire)
        }
        message.put(UInt16(TCA_U32_SEL), bytes: bytes)
        message.endNest(nest)
    }
}

/// A classifier as `tc filter show` reports it, decoded from `RTM_NEWTFILTER`.
public struct TrafficFilter: Sendable, Equatable {
    /// `tcm_ifindex`: the interface.
    public var interfaceIndex: Int32
    /// `tcm_parent`.
    public var parent: TrafficControlHandle
    /// `tcm_handle`.
    public var handle: UInt32
    /// `prio`.
    public var priority: UInt16
    /// `protocol`, in host byte order.
    public var protocolNumber: UInt16
    /// `TCA_KIND` (`u32`…).
    public var kind: String
    /// `TCA_U32_CLASSID` for u32 filters with a target.
    public var classID: TrafficControlHandle?

    /// Decodes an `RTM_NEWTFILTER` message.
    public static func decode(_ message: NetlinkMessage) throws(RouteNetlinkError) -> TrafficFilter {
        let payload = message.payload
        guard let header = payload.load(tcmsg.self, at: 0) else {
            throw .malformed(what: "filter", detail: "\(payload.count) bytes, a tcmsg needs 20")
        }
        var filter = TrafficFilter(
            interfaceIndex: header.tcm_ifindex, parent: TrafficControlHandle(rawValue: header.tcm_parent),
            handle: header.tcm_handle, priority: UInt16(header.tcm_info >> 16),
            protocolNumber: UInt16(header.tcm_info & 0xffff).bigEndian, kind: "", classID: nil)
        var attributes = AttributeDecoder(payload[MemoryLayout<tcmsg>.size...], operation: "decode filter")
        while attributes.next() {
            switch Int(attributes.type) {
            case TCA_KIND: filter.kind = attributes.string()
            case TCA_OPTIONS:
                var options = attributes.nested()
                while options.next() {
                    if Int(options.type) == TCA_U32_CLASSID { filter.classID = TrafficControlHandle(rawValue: options.uint32()) }
                }
            default: break
            }
        }
        if let error = attributes.error { throw .malformed(what: "filter", detail: error.description) }
        return filter
    }
}

/// The rtnetlink filter requests linkcond sends.
public enum FilterRequest {
    /// `tc filter add dev IFINDEX parent PARENT protocol P prio N u32 match … flowid CLASS`:
    /// `RTM_NEWTFILTER` with `NLM_F_CREATE | NLM_F_EXCL`.
    public static func add(_ filter: U32Filter, interfaceIndex: Int32, parent: TrafficControlHandle) -> NetlinkMessageBuilder {
        let message = NetlinkMessageBuilder(type: UInt16(RTM_NEWTFILTER), flags: UInt16(NLM_F_CREATE | NLM_F_EXCL))
        var header = tcmsg()
        header.tcm_ifindex = interfaceIndex
        header.tcm_parent = parent.rawValue
        header.tcm_info = UInt32(filter.priority) << 16 | UInt32(filter.protocolNumber.rawValue.bigEndian)
        message.putStruct(header)
        filter.encode(into: message)
        return message
    }

    /// `tc filter show dev IFINDEX parent PARENT`: a dump of the filters attached to `parent`.
    public static func dump(interfaceIndex: Int32, parent: TrafficControlHandle) -> NetlinkMessageBuilder {
        let message = NetlinkMessageBuilder(type: UInt16(RTM_GETTFILTER), flags: 0)
        var header = tcmsg()
        header.tcm_ifindex = interfaceIndex
        header.tcm_parent = parent.rawValue
        message.putStruct(header)
        return message
    }
}

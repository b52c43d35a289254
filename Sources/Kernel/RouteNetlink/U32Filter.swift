import CMnl
import LinkcondBase
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

    /// `match ip sport PORT 0xffff`: the source port of a header-option-free IPv4 packet (offset 20, the
    /// upper half of the word that also holds the destination port).
    ///
    /// Like iproute2's `match ip sport`/`dport`, the port keys assume a 20-byte IPv4 header (no options) and
    /// a transport header right after the fixed IPv6 header (no extension headers); a non-first IPv4
    /// fragment carries payload where they look. u32 can follow the header length only with hash tables
    /// and `nexthdr+` offsets, which linkcond does not use.
    public static func ipSourcePort(_ port: UInt16) -> U32Key {
        U32Key(mask: 0xffff_0000, value: UInt32(port) << 16, offset: 20)
    }

    /// `match ip6 sport PORT 0xffff`: the source port right after the fixed IPv6 header (offset 40); the
    /// same assumption as ``ipSourcePort(_:)``.
    public static func ip6SourcePort(_ port: UInt16) -> U32Key {
        U32Key(mask: 0xffff_0000, value: UInt32(port) << 16, offset: 40)
    }

    /// `match ip src PREFIX`: the IPv4 source address (offset 12) under the prefix's mask. `prefix` must be
    /// IPv4. A /0 gives a key with mask 0, which matches every packet, as tc sends it.
    public static func ipSource(_ prefix: IPPrefix) -> U32Key { ipv4Address(prefix, offset: 12) }

    /// `match ip dst PREFIX`: the IPv4 destination address (offset 16) under the prefix's mask. `prefix`
    /// must be IPv4.
    public static func ipDestination(_ prefix: IPPrefix) -> U32Key { ipv4Address(prefix, offset: 16) }

    /// `match ip6 src PREFIX`: the IPv6 source address (offsets 8 to 20), one key for each 32-bit word the
    /// prefix reaches into — all bits for the words it covers, the leading bits for the last — and none for
    /// `::/0`, as tc splits it. `prefix` must be IPv6.
    public static func ip6Source(_ prefix: IPPrefix) -> [U32Key] { ipv6Address(prefix, offset: 8) }

    /// `match ip6 dst PREFIX`: the IPv6 destination address (offsets 24 to 36), split as ``ip6Source(_:)``.
    /// `prefix` must be IPv6.
    public static func ip6Destination(_ prefix: IPPrefix) -> [U32Key] { ipv6Address(prefix, offset: 24) }

    /// The keys that match `prefix` (either family) as the source or the destination address:
    /// `match ip src|dst PREFIX` or `match ip6 src|dst PREFIX`.
    public static func address(_ prefix: IPPrefix, source: Bool) -> [U32Key] {
        if prefix.address.isIPv4 { return [source ? ipSource(prefix) : ipDestination(prefix)] }
        return source ? ip6Source(prefix) : ip6Destination(prefix)
    }

    private static func word(_ bytes: ArraySlice<UInt8>) -> UInt32 { bytes.reduce(0) { $0 << 8 | UInt32($1) } }

    private static func ipv4Address(_ prefix: IPPrefix, offset: Int32) -> U32Key {
        precondition(prefix.address.isIPv4, "\(prefix) is not an IPv4 prefix")
        let length = Int(prefix.length)
        let mask: UInt32 = length == 0 ? 0 : ~UInt32(0) << (32 - length)
        return U32Key(mask: mask, value: word(prefix.address.bytes[0..<4]), offset: offset)
    }

    private static func ipv6Address(_ prefix: IPPrefix, offset: Int32) -> [U32Key] {
        precondition(!prefix.address.isIPv4, "\(prefix) is not an IPv6 prefix")
        let bytes = prefix.address.bytes
        let length = Int(prefix.length)
        var keys: [U32Key] = []
        for index in 0..<4 where index * 32 < length {
            let bits = min(32, length - index * 32)
            let mask: UInt32 = bits == 32 ? ~0 : ~UInt32(0) << (32 - bits)
            keys.append(U32Key(mask: mask, value: word(bytes[(index * 4)..<(index * 4 + 4)]), offset: offset + Int32(index * 4)))
        }
        return keys
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
    /// The keys of a u32 filter's selector (`TCA_U32_SEL`), in the order the kernel holds them; empty for
    /// other kinds (and for a u32 hash table, which has no selector).
    public var keys: [U32Key] = []
    /// Whether the u32 selector has `TC_U32_TERMINAL` (a match ends classification): what
    /// `tc filter add … u32 match … flowid` sets.
    public var isTerminal = false

    /// The node id of a u32 filter's handle (`HTID:HASH:NODE`, the low 12 bits): 0x800 for the first filter
    /// the kernel numbers in a priority of its own.
    public var u32Node: UInt32 { handle & 0xfff }

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
                    switch Int(options.type) {
                    case TCA_U32_CLASSID: filter.classID = TrafficControlHandle(rawValue: options.uint32())
                    case TCA_U32_SEL: try filter.decodeSelector(Array(options.payload))
                    default: break
                    }
                }
            default: break
            }
        }
        if let error = attributes.error { throw .malformed(what: "filter", detail: error.description) }
        return filter
    }

    /// Reads a `struct tc_u32_sel` and the `tc_u32_key`s after it.
    private mutating func decodeSelector(_ bytes: [UInt8]) throws(RouteNetlinkError) {
        let header = 16
        let keySize = MemoryLayout<tc_u32_key>.size
        guard bytes.count >= header else {
            throw .malformed(what: "filter", detail: "a u32 selector of \(bytes.count) bytes, tc_u32_sel needs \(header)")
        }
        let count = Int(bytes[2])
        guard bytes.count >= header + count * keySize else {
            throw .malformed(what: "filter", detail: "a u32 selector of \(bytes.count) bytes cannot hold its \(count) keys")
        }
        isTerminal = bytes[0] & UInt8(TC_U32_TERMINAL) != 0
        keys = (0..<count).compactMap { index in
            bytes.load(tc_u32_key.self, at: header + index * keySize).map { key in
                U32Key(mask: UInt32(bigEndian: key.mask), value: UInt32(bigEndian: key.val), offset: key.off)
            }
        }
    }
}

/// The rtnetlink filter requests linkcond sends.
public enum FilterRequest {
    /// `tc filter add dev IFINDEX parent PARENT protocol P prio N u32 match … flowid CLASS`:
    /// `RTM_NEWTFILTER` with `NLM_F_CREATE | NLM_F_EXCL`.
    public static func add(_ filter: U32Filter, interfaceIndex: Int32, parent: TrafficControlHandle) -> NetlinkMessageBuilder {
        add(filter, interfaceIndex: interfaceIndex, parent: parent, echo: false)
    }

    /// `tc filter add dev IFINDEX parent PARENT protocol P prio N u32 match … flowid CLASS`, with `echo`
    /// also `NLM_F_ECHO` (iproute2 6.1's tc has no spelling for it; later ones have `tc -echo`): the kernel
    /// then sends the filter it made back to the sender, before the ack — its handle, priority, protocol,
    /// class and selector as a dump would show them. That is how a batch reads its filters back in the
    /// same datagram, where a second dump cannot go (one dump per socket at a time).
    public static func add(_ filter: U32Filter, interfaceIndex: Int32, parent: TrafficControlHandle, echo: Bool) -> NetlinkMessageBuilder {
        let message = NetlinkMessageBuilder(type: UInt16(RTM_NEWTFILTER), flags: UInt16(NLM_F_CREATE | NLM_F_EXCL | (echo ? NLM_F_ECHO : 0)))
        var header = tcmsg()
        header.tcm_ifindex = interfaceIndex
        header.tcm_parent = parent.rawValue
        header.tcm_info = UInt32(filter.priority) << 16 | UInt32(filter.protocolNumber.rawValue.bigEndian)
        message.putStruct(header)
        filter.encode(into: message)
        return message
    }

    /// `tc filter del dev IFINDEX parent PARENT prio N`: `RTM_DELTFILTER` with the priority and no protocol,
    /// handle or kind, which removes the whole classifier instance of that priority (every filter in it,
    /// whatever its protocol). The kernel refuses with `ENOENT` when nothing has that priority.
    public static func delete(interfaceIndex: Int32, parent: TrafficControlHandle, priority: UInt16) -> NetlinkMessageBuilder {
        let message = NetlinkMessageBuilder(type: UInt16(RTM_DELTFILTER), flags: 0)
        var header = tcmsg()
        header.tcm_ifindex = interfaceIndex
        header.tcm_parent = parent.rawValue
        header.tcm_info = UInt32(priority) << 16
        message.putStruct(header)
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

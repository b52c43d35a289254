import CMnl
import Netlink

/// A traffic-control handle `MAJOR:MINOR`, as `tc` writes it (`1:`, `1:10`, `root`).
public struct TrafficControlHandle: Hashable, Sendable, CustomStringConvertible {
    /// The value as the kernel sends it.
    public var rawValue: UInt32

    /// A value with these fields.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// `MAJOR:MINOR`.
    public init(major: UInt16, minor: UInt16) { rawValue = UInt32(major) << 16 | UInt32(minor) }

    /// `TC_H_ROOT`: the egress root of a device.
    public static let root = TrafficControlHandle(rawValue: cmnl_tc_h_root())
    /// `TC_H_UNSPEC`: let the kernel choose.
    public static let unspecified = TrafficControlHandle(rawValue: 0)

    /// The major number (`1` of `1:2`).
    public var major: UInt16 { UInt16(rawValue >> 16) }
    /// The minor number (`2` of `1:2`).
    public var minor: UInt16 { UInt16(rawValue & 0xffff) }

    /// The text `ip`/`tc` would show for it.
    public var description: String {
        if self == .root { return "root" }
        let majorText = String(major, radix: 16)
        return minor == 0 ? "\(majorText):" : "\(majorText):\(String(minor, radix: 16))"
    }
}

/// Counters the kernel keeps for a qdisc (`TCA_STATS2`: basic and queue statistics).
public struct QdiscStatistics: Sendable, Equatable {
    /// Bytes sent.
    public var bytes: UInt64 = 0
    /// Packets sent.
    public var packets: UInt32 = 0
    /// Packets dropped.
    public var drops: UInt32 = 0
    /// Times a packet was held back by a limit.
    public var overlimits: UInt32 = 0
    /// Bytes queued.
    public var backlogBytes: UInt32 = 0
    /// Packets queued.
    public var queueLength: UInt32 = 0
    /// Values that change nothing (netem's defaults; no counters yet).
    public init() {}
}

/// A qdisc as `tc -s qdisc show` reports it, decoded from `RTM_NEWQDISC`.
public struct Qdisc: Sendable, Equatable {
    /// `tcm_ifindex`: the interface.
    public var interfaceIndex: Int32
    /// `tcm_handle`.
    public var handle: TrafficControlHandle
    /// `tcm_parent`.
    public var parent: TrafficControlHandle
    /// `TCA_KIND`: `netem`, `tbf`, `htb`, `pfifo_fast`, `noqueue`…
    public var kind: String
    /// The raw `TCA_OPTIONS` payload; kind-specific decoders read it.
    public var options: [UInt8]
    /// `TCA_STATS2`: the counters.
    public var statistics: QdiscStatistics
    /// `TCA_STATS_APP` within `TCA_STATS2` (or the older `TCA_XSTATS`): the kind's own counters, raw
    /// (`struct tc_codel_xstats`, `tc_pie_xstats`, `tc_red_xstats`…); ``dropReasons`` reads them.
    public var applicationStatistics: [UInt8] = []

    /// Decodes an `RTM_NEWQDISC` message.
    public static func decode(_ message: NetlinkMessage) throws(RouteNetlinkError) -> Qdisc {
        let payload = message.payload
        guard let header = payload.load(tcmsg.self, at: 0) else {
            throw .malformed(what: "qdisc", detail: "\(payload.count) bytes, a tcmsg needs 20")
        }
        var qdisc = Qdisc(
            interfaceIndex: header.tcm_ifindex, handle: TrafficControlHandle(rawValue: header.tcm_handle),
            parent: TrafficControlHandle(rawValue: header.tcm_parent), kind: "", options: [],
            statistics: QdiscStatistics())
        var attributes = AttributeDecoder(payload[MemoryLayout<tcmsg>.size...], operation: "decode qdisc")
        while attributes.next() {
            switch Int(attributes.type) {
            case TCA_KIND: qdisc.kind = attributes.string()
            case TCA_OPTIONS: qdisc.options = Array(attributes.payload)
            case TCA_XSTATS where qdisc.applicationStatistics.isEmpty: qdisc.applicationStatistics = Array(attributes.payload)
            case TCA_STATS2:
                var stats = attributes.nested()
                while stats.next() {
                    switch Int(stats.type) {
                    case TCA_STATS_BASIC:
                        if let basic = stats.structure(gnet_stats_basic.self) {
                            qdisc.statistics.bytes = basic.bytes
                            qdisc.statistics.packets = basic.packets
                        }
                    case TCA_STATS_QUEUE:
                        if let queue = stats.structure(gnet_stats_queue.self) {
                            qdisc.statistics.drops = queue.drops
                            qdisc.statistics.overlimits = queue.overlimits
                            qdisc.statistics.backlogBytes = queue.backlog
                            qdisc.statistics.queueLength = queue.qlen
                        }
                    case TCA_STATS_APP: qdisc.applicationStatistics = Array(stats.payload)
                    default: break
                    }
                }
                if let error = stats.error { throw .malformed(what: "qdisc", detail: error.description) }
            default: break
            }
        }
        if let error = attributes.error { throw .malformed(what: "qdisc", detail: error.description) }
        return qdisc
    }
}

/// The rtnetlink qdisc requests linkcond sends, laid out as `tc qdisc` lays them out.
public enum QdiscRequest {
    /// `tc qdisc replace dev IFINDEX {root | parent PARENT} handle HANDLE KIND [options]`:
    /// `RTM_NEWQDISC` with `NLM_F_CREATE | NLM_F_REPLACE`, so conditions change with no moment without a
    /// qdisc. `options` appends `TCA_KIND` and the kind's `TCA_OPTIONS`.
    ///
    /// With `graft: true` the request also carries `NLM_F_EXCL` (tc has no spelling for it): the kernel then
    /// creates a new qdisc and grafts it in place of the one at `parent`, but refuses with `EEXIST`
    /// ("Exclusivity flag on, cannot modify") to change a qdisc that has `handle` already. A graft therefore
    /// never keeps attributes of an earlier qdisc, and a wrong guess of the current handle changes nothing.
    public static func replace(
        interfaceIndex: Int32, handle: TrafficControlHandle, parent: TrafficControlHandle, options: QdiscOptions, graft: Bool = false
    ) -> NetlinkMessageBuilder {
        let flags = NLM_F_CREATE | NLM_F_REPLACE | (graft ? NLM_F_EXCL : 0)
        let message = NetlinkMessageBuilder(type: UInt16(RTM_NEWQDISC), flags: UInt16(flags))
        message.putStruct(header(interfaceIndex: interfaceIndex, handle: handle, parent: parent))
        options.encode(into: message)
        return message
    }

    /// `tc qdisc del dev IFINDEX {root | parent PARENT} [handle HANDLE]`.
    public static func delete(
        interfaceIndex: Int32, handle: TrafficControlHandle = .unspecified, parent: TrafficControlHandle = .root
    ) -> NetlinkMessageBuilder {
        let message = NetlinkMessageBuilder(type: UInt16(RTM_DELQDISC), flags: 0)
        message.putStruct(header(interfaceIndex: interfaceIndex, handle: handle, parent: parent))
        return message
    }

    /// `tc -s qdisc show`: a dump of every qdisc.
    public static func dump() -> NetlinkMessageBuilder {
        let message = NetlinkMessageBuilder(type: UInt16(RTM_GETQDISC), flags: 0)
        message.putStruct(tcmsg())
        return message
    }

    static func header(interfaceIndex: Int32, handle: TrafficControlHandle, parent: TrafficControlHandle) -> tcmsg {
        var header = tcmsg()
        header.tcm_family = UInt8(AF_UNSPEC)
        header.tcm_ifindex = interfaceIndex
        header.tcm_handle = handle.rawValue
        header.tcm_parent = parent.rawValue
        return header
    }
}

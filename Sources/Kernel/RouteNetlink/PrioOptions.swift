import CMnl
import Netlink

/// Options of a `prio` qdisc: `tc qdisc … prio bands N priomap P0 … P15`.
public struct PrioOptions: Sendable, Equatable {
    /// Number of bands (classes `MAJOR:1` … `MAJOR:N`).
    public var bands: Int32
    /// Band for each of the 16 skb priorities.
    public var priorityMap: [UInt8]

    /// `bands` bands with every priority mapped to band 0 (class `MAJOR:1`), so only filters steer
    /// traffic elsewhere.
    public init(bands: Int32, priorityMap: [UInt8]? = nil) {
        self.bands = bands
        self.priorityMap = priorityMap ?? [UInt8](repeating: 0, count: 16)
    }

    /// Appends `TCA_OPTIONS` as tc does (`addattr_nest_compat`): the `tc_prio_qopt` struct followed by an
    /// empty nest of type `TCA_OPTIONS` for optional attributes.
    public func encode(into message: NetlinkMessageBuilder) {
        var options = tc_prio_qopt()
        options.bands = bands
        withUnsafeMutableBytes(of: &options.priomap) { raw in
            for (index, band) in priorityMap.prefix(raw.count).enumerated() { raw[index] = band }
        }
        let nest = message.beginNest(UInt16(TCA_OPTIONS))
        message.putStruct(options)
        let compat = message.beginNest(UInt16(TCA_OPTIONS))
        message.endNest(compat)
        message.endNest(nest)
    }

    /// Decodes a prio qdisc's `TCA_OPTIONS` payload.
    public static func decode(options: [UInt8]) throws(RouteNetlinkError) -> PrioOptions {
        guard let value = options.load(tc_prio_qopt.self, at: 0) else {
            throw .malformed(what: "prio options", detail: "\(options.count) bytes, tc_prio_qopt needs \(MemoryLayout<tc_prio_qopt>.size)")
        }
        let map = withUnsafeBytes(of: value.priomap) { Array($0) }
        return PrioOptions(bands: value.bands, priorityMap: map)
    }
}

import CMnl
import Netlink

/// Joining two interfaces at layer 2 with tc alone: an `ingress` qdisc on one, and on it a u32 filter that
/// matches every frame and hands it to the other's egress with `mirred egress redirect`. Done both ways,
/// whatever arrives on either leaves through the other, through its root qdisc (netem, when conditions are
/// on): a cable through tc, for kernels and hosts without a bridge.
extension RouteNetlinkClient {
    /// The handle of the `ingress` qdisc (`ffff:`).
    public static let ingressHandle = TrafficControlHandle(major: 0xffff, minor: 0)

    /// Adds the ingress qdisc. Equivalent to `tc qdisc add dev NAME ingress` (handle `ffff:`, parent
    /// `ffff:fff1`); refused with `EEXIST` when the interface has one.
    public func addIngressQdisc(on name: String) throws(RouteNetlinkError) {
        try send(on: name, "\(tcPrefix) qdisc add dev \(name) ingress") { QdiscRequest.addIngress(interfaceIndex: $0) }
    }

    /// Sends every frame that arrives on `name` out of `target` (both in this namespace). Equivalent to
    /// `tc filter add dev NAME parent ffff: protocol all prio PRIORITY u32 match u32 0 0 action mirred
    /// egress redirect dev TARGET`; needs the ingress qdisc (``addIngressQdisc(on:)``).
    public func addRedirect(from name: String, to target: String, priority: UInt16 = 1) throws(RouteNetlinkError) {
        let targetIndex = try index(of: target)
        let operation = "\(tcPrefix) filter add dev \(name) parent ffff: protocol all prio \(priority) u32 match u32 0 0 action mirred egress redirect dev \(target)"
        try send(on: name, operation) {
            FilterRequest.redirectAll(interfaceIndex: $0, parent: Self.ingressHandle, priority: priority, to: targetIndex)
        }
    }
}

extension QdiscRequest {
    /// `tc qdisc add dev IFINDEX ingress`: `RTM_NEWQDISC` with `NLM_F_CREATE | NLM_F_EXCL`, handle `ffff:`,
    /// parent `TC_H_INGRESS`.
    public static func addIngress(interfaceIndex: Int32) -> NetlinkMessageBuilder {
        let message = NetlinkMessageBuilder(type: UInt16(RTM_NEWQDISC), flags: UInt16(NLM_F_CREATE | NLM_F_EXCL))
        message.putStruct(header(
            interfaceIndex: interfaceIndex, handle: RouteNetlinkClient.ingressHandle, parent: TrafficControlHandle(rawValue: TC_H_INGRESS)))
        message.put(UInt16(TCA_KIND), string: "ingress")
        return message
    }
}

extension FilterRequest {
    /// `tc filter add dev IFINDEX parent PARENT protocol all prio PRIORITY u32 match u32 0 0 action mirred
    /// egress redirect dev TARGET`: a u32 filter whose one key (mask 0) matches every frame, with one action
    /// (`TCA_U32_ACT`, order 1): `mirred` (`struct tc_mirred`: `TC_ACT_STOLEN`, `TCA_EGRESS_REDIR`, the
    /// target's index). Laid out as tc lays it out: the actions before the selector, no class.
    public static func redirectAll(interfaceIndex: Int32, parent: TrafficControlHandle, priority: UInt16, to target: Int32) -> NetlinkMessageBuilder {
        let message = NetlinkMessageBuilder(type: UInt16(RTM_NEWTFILTER), flags: UInt16(NLM_F_CREATE | NLM_F_EXCL))
        var header = tcmsg()
        header.tcm_ifindex = interfaceIndex
        header.tcm_parent = parent.rawValue
        header.tcm_info = UInt32(priority) << 16 | UInt32(EtherType.all.rawValue.bigEndian)
        message.putStruct(header)
        message.put(UInt16(TCA_KIND), string: "u32")
        let options = message.beginNest(UInt16(TCA_OPTIONS))
        let actions = message.beginNest(UInt16(TCA_U32_ACT))
        let first = message.beginNest(1)
        message.put(UInt16(TCA_ACT_KIND), string: "mirred")
        let parameters = message.beginNest(UInt16(TCA_ACT_OPTIONS), nestedFlag: true)
        var mirred = tc_mirred()
        mirred.action = TC_ACT_STOLEN
        mirred.eaction = TCA_EGRESS_REDIR
        mirred.ifindex = UInt32(bitPattern: target)
        message.put(UInt16(TCA_MIRRED_PARMS), structure: mirred)
        message.endNest(parameters)
        message.endNest(first)
        message.endNest(actions)
        // struct tc_u32_sel with one key that matches everything (mask 0, value 0, offset 0).
        let selector = [UInt8(TC_U32_TERMINAL), 0, 1] + [UInt8](repeating: 0, count: 13) + [UInt8](repeating: 0, count: MemoryLayout<tc_u32_key>.size)
        message.put(UInt16(TCA_U32_SEL), bytes: selector)
        message.endNest(options)
        return message
    }
}

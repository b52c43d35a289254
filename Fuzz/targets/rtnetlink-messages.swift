// libFuzzer target: rtnetlink replies (RouteNetlink). The input is one datagram as the kernel sends it;
// every message it holds goes through every decoder (links, addresses, routes, qdiscs with their netem
// and prio options, u32 filters, notifications, error messages). Decoders may refuse, never crash.
import Netlink
import RouteNetlink

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRouteNetlink(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let messages = try? NetlinkMessage.parse(datagram: bytes) else { return 0 }
    for message in messages {
        _ = try? Link.decode(message)
        _ = try? InterfaceAddress.decode(message)
        _ = try? Route.decode(message)
        _ = try? TrafficFilter.decode(message)
        _ = try? RouteNotification.decode(message)
        _ = try? message.decodeError(operation: "fuzz")
        _ = message.bytes
        if let qdisc = try? Qdisc.decode(message) {
            _ = try? NetemParameters.decode(options: qdisc.options, clock: .standard)
            _ = try? PrioOptions.decode(options: qdisc.options)
        }
        _ = try? NetemParameters.decode(options: message.payload, clock: .standard)
        _ = try? PrioOptions.decode(options: message.payload)
    }
    return 0
}

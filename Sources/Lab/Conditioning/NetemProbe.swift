import Glibc
import NetNamespace
import RouteNetlink

extension KernelDoctor {
    /// True when the running kernel has netem. Asked in a brand-new, unnamed network namespace that goes
    /// away with the socket that asks: `tc qdisc replace dev lo root netem` without options there. A
    /// kernel with netem refuses the empty request in netem's own words; one without answers ENOENT
    /// ("Specified qdisc kind is unknown"). Nothing outside that namespace is touched.
    public static func hasNetem() -> Bool {
        guard let socket = try? NamedNamespace.openSocketInNewNamespace(.routeNetlink),
            let client = try? RouteNetlinkClient(adopting: socket, namespace: nil)
        else { return false }
        do {
            try client.replaceQdisc(on: "lo", handle: TrafficControlHandle(major: 1, minor: 0), kind: "netem")
            return true
        } catch {
            return error.errno != ENOENT
        }
    }
}

extension KernelDoctor {
    /// True when the kernel gives raw packet sockets (`socket(AF_PACKET, SOCK_RAW, 0)`), which the userspace
    /// engine forwards frames with. Asked in a brand-new, unnamed namespace, like ``hasNetem()``.
    public static func hasPacketSockets() -> Bool {
        (try? NamedNamespace.openSocketInNewNamespace(.packet)) != nil
    }

    /// Which backend each choice gets on this kernel, or why it cannot work.
    public static func backends(from features: [KernelFeature]) -> [(choice: BackendChoice, works: Bool, detail: String)] {
        let present = Set(features.filter(\.present).map(\.name))
        let veth = present.contains("veth") && present.contains("namespaces")
        let netem = veth && present.contains("netem") && present.contains("prio") && present.contains("u32")
        let packet = hasPacketSockets()
        let userspace = veth && packet
        let missingNetem = ["netem", "prio", "u32", "veth"].filter { !present.contains($0) }
        return [
            (.netem, netem, netem ? "netem qdiscs through netlink" : "needs \(missingNetem.joined(separator: ", ")), which this kernel lacks"),
            (.userspace, userspace, userspace ? "linkcond's engine with AF_PACKET in a wire namespace" : (packet ? "needs veth" : "needs AF_PACKET sockets (CONFIG_PACKET)")),
            (.auto, netem || userspace, netem ? "picks netem" : (userspace ? "picks the userspace engine (no netem here)" : "no backend can work on this kernel")),
        ]
    }
}

import Glibc
import LinkcondSystem
import NetNamespace
import RouteNetlink

/// Readies the interfaces around the engine: the wire's two ends (no IPv6, up, offloads off) and the
/// peers in the client and router namespaces (offloads off, so what they send into the wire is plain
/// MTU-sized frames with complete checksums; see ``InterfaceOffloads``).
public enum WirePreparation {
    /// Prepares the wire namespace: IPv6 off for the namespace (`all` and `default`) and for both ends, so
    /// the ends get no link-local address and send nothing of their own (no router or neighbour
    /// solicitations, no MLD reports); the wire offloads off on both ends; both ends up. The ends get no
    /// addresses. Equivalent to `sysctl -w net.ipv6.conf.{all,default,END}.disable_ipv6=1`,
    /// `ethtool -K END …` and `ip link set END up`. With `offloads` false the ends' offloads are left as they
    /// are (an attached wire, whose end facing the target's peer is the target's own interface).
    public static func prepare(_ wire: WireEnds, offloads: Bool = true) throws(PacketEngineError) {
        for key in ["all", "default", wire.clientSide, wire.routerSide] {
            try disableIPv6(key, in: wire.namespace)
        }
        for end in [wire.clientSide, wire.routerSide] where offloads {
            try InterfaceOffloads.disable(on: end, in: wire.namespace)
        }
        let links = try linkClient(wire.namespace)
        for end in [wire.clientSide, wire.routerSide] {
            do {
                try links.setLink(end, up: true)
            } catch {
                throw .netlink("ip -n \(namespaceText(wire.namespace)) link set \(end) up", error)
            }
        }
    }

    /// Readies a wire end's peer (the client's `wl0`, the router's `c-wl0`) for `mode`: with
    /// ``OffloadMode/disabled`` every wire offload goes off (``InterfaceOffloads/isWireOffload(_:)``); with
    /// ``OffloadMode/segmentInEngine`` only the segmentation the engine cannot do itself (UDP, tunnels,
    /// fraglists) goes off, and TCP segmentation and checksum offload stay on. Returns what was switched off.
    @discardableResult
    public static func preparePeer(
        _ interface: String, in namespace: NamedNamespace?, mode: OffloadMode = .disabled
    ) throws(PacketEngineError) -> [String] {
        switch mode {
        case .disabled:
            return try InterfaceOffloads.disable(on: interface, in: namespace)
        case .segmentInEngine:
            return try InterfaceOffloads.disable(on: interface, in: namespace, selecting: isSegmentationTheEngineCannotDo)
        }
    }

    /// Segmentation offloads other than TCP's (and the fraglist and partial forms of TCP's): the engine
    /// cuts only plain TCP super-frames.
    static func isSegmentationTheEngineCannotDo(_ name: String) -> Bool {
        let tcp = ["tx-tcp-segmentation", "tx-tcp6-segmentation", "tx-tcp-ecn-segmentation", "tx-tcp-mangleid-segmentation"]
        return (name.hasSuffix("-segmentation") && !tcp.contains(name)) || name.hasPrefix("tx-gso-") || name == "tx-scatter-gather-fraglist"
    }

    /// Writes `net.ipv6.conf.KEY.disable_ipv6 = 1`; does nothing on a kernel without IPv6.
    static func disableIPv6(_ key: String, in namespace: NamedNamespace?) throws(PacketEngineError) {
        let path = "/proc/sys/net/ipv6/conf/\(key)/disable_ipv6"
        try inNamespace(namespace, "sysctl -w net.ipv6.conf.\(key).disable_ipv6=1 in \(namespaceText(namespace))") { () throws in
            // /proc/sys/net resolves to the namespace of the thread that opens it.
            let file: FileDescriptor
            do throws(SystemError) {
                file = try FileDescriptor.open(path, .writeOnly)
            } catch {
                if error.errno == .noSuchFileOrDirectory && access("/proc/sys/net/ipv6", F_OK) != 0 { return }
                throw PacketEngineError(operation: "open \(path) in \(namespaceText(namespace))", errno: error.errno.rawValue)
            }
            do throws(SystemError) {
                try file.closeAfter { () throws(SystemError) in try file.writeAll("1".utf8) }
            } catch {
                throw PacketEngineError(operation: "write \(path) in \(namespaceText(namespace))", errno: error.errno.rawValue)
            }
        }
    }

    /// A typed rtnetlink client whose socket lives in `namespace`.
    static func linkClient(_ namespace: NamedNamespace?) throws(PacketEngineError) -> RouteNetlinkClient {
        do {
            return try RouteNetlinkClient(adopting: NamedNamespace.openSocket(.routeNetlink, in: namespace), namespace: namespace?.name)
        } catch {
            throw .wrapping("open a netlink socket in \(namespaceText(namespace))", error)
        }
    }
}

import Glibc
import LinkcondBase
import NetNamespace
import RouteNetlink

/// Everything of one interface that moving it to another namespace loses or that a stand-in must copy,
/// read back from the kernel: its link (name, index, hardware address, MTU, queue length, up or down), its
/// addresses (both families, with label, broadcast, metric, lifetimes and flags), every route through it
/// in every table, and its own sysctls (`net/ipv4/conf/IFACE`, `net/ipv6/conf/IFACE`, and the neighbour
/// settings of both).
///
/// ``apply(to:in:namespace:)`` makes an interface match it by difference — what is missing is added,
/// what is extra is removed, what matches is left alone — so applying a configuration to the interface it
/// was read from changes nothing, and applying it twice does nothing the second time: what makes
/// `linkcond detach` safe to run again after a crash at any instant.
public struct InterfaceConfiguration: Sendable, Equatable {
    /// The interface as it was.
    public var link: Link
    /// Its addresses, in the order the kernel listed them.
    public var addresses: [InterfaceAddress]
    /// Every route that uses it, in every table, in the order the kernel listed them.
    public var routes: [Route]
    /// Its own sysctls, by path below `/proc/sys` (`net/ipv6/conf/eth0/accept_dad`), as text.
    public var sysctls: [String: String]

    /// A configuration with these parts.
    public init(link: Link, addresses: [InterfaceAddress], routes: [Route], sysctls: [String: String]) {
        self.link = link
        self.addresses = addresses
        self.routes = routes
        self.sysctls = sysctls
    }

    /// The sysctl directories of interface `name`.
    static func sysctlDirectories(of name: String) -> [String] {
        ["net/ipv4/conf/\(name)", "net/ipv6/conf/\(name)", "net/ipv4/neigh/\(name)", "net/ipv6/neigh/\(name)"]
    }

    /// Reads interface `name` through `client` (a connection in `namespace`). Equivalent to `ip link show dev
    /// NAME`, `ip addr show dev NAME`, `ip route show table all` and `ip -6 route show table all` filtered to
    /// the interface, and `sysctl net.ipv4.conf.NAME …`.
    public static func read(_ name: String, from client: RouteNetlinkClient, namespace: NamedNamespace) throws(SandboxError) -> InterfaceConfiguration {
        do {
            let link = try client.link(named: name)
            let addresses = try client.addresses().filter { $0.interfaceIndex == link.index }
            let routes = try client.routes().filter { $0.uses(interface: link.index) }
            let sysctls = try namespace.readSysctls(under: sysctlDirectories(of: name))
            return InterfaceConfiguration(link: link, addresses: addresses, routes: routes, sysctls: sysctls)
        } catch let error as RouteNetlinkError {
            throw .netlink(error)
        } catch let error as NamespaceError {
            throw .namespace(error)
        } catch {
            throw .unsupported(detail: "\(error)")
        }
    }

    /// True for an address `apply` makes again (not the kernel's to make: IPv6 addresses it derives from a
    /// router's advertisement carry a lifetime and come back with the next advertisement; they are made again
    /// all the same, with what was left of their lifetime).
    static func sameAddress(_ a: InterfaceAddress, _ b: InterfaceAddress) -> Bool {
        a.prefix == b.prefix && a.peer == b.peer
    }

    /// The kernel's identity of a route: family, table, destination, source, type of service, metric, type
    /// and gateway (IPv6 keeps routes that differ only in their gateway side by side).
    static func sameRoute(_ a: Route, _ b: Route) -> Bool {
        a.family == b.family && a.table == b.table && a.destination == b.destination && a.source == b.source
            && a.typeOfService == b.typeOfService && (a.metric ?? 0) == (b.metric ?? 0) && a.type == b.type && a.gateway == b.gateway
    }

    /// What of this configuration interface `name` does not have, one phrase each; empty when it matches
    /// (the timers of addresses and routes, which run on, are not compared).
    public func differences(from other: InterfaceConfiguration) -> [String] {
        var differences: [String] = []
        if link.hardwareAddress != other.link.hardwareAddress { differences.append("hardware address \(other.link.hardwareAddressText), not \(link.hardwareAddressText)") }
        if link.mtu != other.link.mtu { differences.append("MTU \(other.link.mtu), not \(link.mtu)") }
        if link.isUp != other.link.isUp { differences.append(other.link.isUp ? "up, not down" : "down, not up") }
        if link.transmitQueueLength != other.link.transmitQueueLength {
            differences.append("queue length \(other.link.transmitQueueLength ?? 0), not \(link.transmitQueueLength ?? 0)")
        }
        for address in addresses where !other.addresses.contains(where: { Self.sameAddress($0, address) }) {
            differences.append("no address \(address.prefix)")
        }
        for address in other.addresses where !addresses.contains(where: { Self.sameAddress($0, address) }) {
            differences.append("an address \(address.prefix) it did not have")
        }
        for route in routes where !other.routes.contains(where: { Self.sameRoute($0, route) }) {
            differences.append("no route \(Self.describe(route))")
        }
        // An address still in duplicate address detection when this was read has no local route yet; the
        // kernel makes that route when DAD ends (for the stand-in at once: it has no DAD), so it is no difference.
        let tentative = Set(addresses.filter(\.isTentative).map(\.prefix.address))
        for route in other.routes where !routes.contains(where: { Self.sameRoute($0, route) }) {
            if route.routingProtocol == .kernel, let destination = route.destination?.address, tentative.contains(destination) { continue }
            // The IPv6 multicast route (ff00::/8, table local) is the kernel's for every up interface with IPv6:
            // an interface made just before it was read may not have it yet, and gets it all the same.
            if route.routingProtocol == .kernel, route.family == .inet6, route.destination?.description == "ff00::/8" { continue }
            differences.append("a route \(Self.describe(route)) it did not have")
        }
        for (key, value) in sysctls.sorted(by: { $0.key < $1.key }) {
            let name = key.split(separator: "/").suffix(2).joined(separator: "/")
            let otherKey = Self.rename(key, from: link.name, to: other.link.name)
            if let held = other.sysctls[otherKey], held != value, !Self.volatileSysctls.contains(String(key.split(separator: "/").last ?? "")) {
                differences.append("\(name) = \(held), not \(value)")
            }
        }
        return differences
    }

    /// Per-interface sysctls that are counters or the kernel's own bookkeeping, not settings.
    static let volatileSysctls: Set<String> = ["mc_forwarding", "stable_secret", "base_reachable_time", "retrans_time"]

    static func rename(_ key: String, from old: String, to new: String) -> String {
        guard old != new else { return key }
        var parts = key.split(separator: "/").map(String.init)
        if parts.count >= 4, parts[3] == old { parts[3] = new }
        return parts.joined(separator: "/")
    }

    static func describe(_ route: Route) -> String {
        var text = route.destination.map { $0.length == 0 ? "default" : "\($0)" } ?? "default"
        if let gateway = route.gateway { text += " via \(gateway)" }
        if route.table != .main { text += " table \(route.table.rawValue)" }
        if let metric = route.metric { text += " metric \(metric)" }
        return text
    }
}

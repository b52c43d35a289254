import Glibc
import LinkcondBase
import NetNamespace
import RouteNetlink

extension InterfaceConfiguration {
    /// Makes interface `name` (in `namespace`, reached through `client`) match this configuration, by
    /// difference, and reads it back: its own sysctls, then its addresses, its up or down state, then the
    /// routes it lacks (link-scope routes before those through a gateway). Its link properties (hardware
    /// address, MTU, queue length) are not changed: a stand-in gets them when it is made, and an interface
    /// moved home kept its own. Returns what still differs afterwards, one phrase each (empty: it matches).
    ///
    /// No new duplicate address detection: DAD is off for the interface while its addresses are added and
    /// it comes up (`accept_dad` 0, then its own value again), so its IPv6 addresses, link-local included,
    /// are usable at once, without the `nodad` flag — unless the namespace has DAD on for all interfaces
    /// (`net.ipv6.conf.all.accept_dad` ≥ 1), where addresses are added with `nodad` and the kernel's own
    /// link-local address is held back (`addr_gen_mode` none) while the interface comes up.
    @discardableResult
    public func apply(to name: String, client: RouteNetlinkClient, namespace: NamedNamespace) throws(SandboxError) -> [String] {
        let current = try Self.read(name, from: client, namespace: namespace)
        let ipv6 = current.sysctls["net/ipv6/conf/\(name)/disable_ipv6"] != nil
        let all = ipv6 ? try sandboxing { () throws(NamespaceError) in try namespace.readSysctls(under: ["net/ipv6/conf/all"]) } : [:]
        let holdLinkLocal = ipv6 && (all["net/ipv6/conf/all/accept_dad"].flatMap { Int($0) } ?? 0) >= 1
        let extra: AddressFlags = holdLinkLocal ? .noDAD : []

        // 1. The interface's own settings (disable_ipv6 first), DAD off.
        let mine = sysctls.map { (key: Self.rename($0.key, from: link.name, to: name), value: $0.value) }.sorted { $0.key < $1.key }
        var writes = (mine.filter { $0.key.hasSuffix("/disable_ipv6") } + mine.filter { !$0.key.hasSuffix("/disable_ipv6") }).filter { key, value in
            current.sysctls[key] != value && !Self.volatileSysctls.contains(String(key.split(separator: "/").last ?? ""))
        }
        if ipv6 {
            writes.append(("net/ipv6/conf/\(name)/accept_dad", "0"))
            if holdLinkLocal { writes.append(("net/ipv6/conf/\(name)/addr_gen_mode", "1")) }
        }
        try sandboxing { () throws(NamespaceError) in try namespace.writeSysctls(writes) }

        try netlink { () throws(RouteNetlinkError) in
            // 2. Addresses: the extra ones go, the missing ones come, in the kernel's order.
            try reconcileAddresses(name, client: client, extraFlags: extra)
            // 3. Up or down; coming up may make a link-local address of the kernel's other than the one it had.
            if try client.link(named: name).isUp != link.isUp { try client.setLink(name, up: link.isUp) }
            try reconcileAddresses(name, client: client, extraFlags: extra)
            // 4. The routes it lacks: those on the link first, so a gateway is reachable before a route uses it.
            // The kernel's own (prefix and local routes of addresses, the link-local prefix) it makes itself, as
            // the addresses come and the interface comes up: made by hand, they would not be the kernel's.
            let index = try client.index(of: name)
            let present = try client.routes().filter { $0.uses(interface: index) }
            let missing = routes.filter { route in route.routingProtocol != .kernel && !present.contains { Self.sameRoute($0, route) } }
            for route in missing.filter({ $0.gateway == nil }) + missing.filter({ $0.gateway != nil }) {
                do throws(RouteNetlinkError) {
                    try client.addRoute(route, interface: name)
                } catch where error.errno == EEXIST {
                    continue  // the kernel made it meanwhile (a prefix route of an address)
                }
            }
        }

        // 5. DAD and address generation as they were — once no address is tentative: the kernel decides on DAD
        // in a work item of its own, which must not find DAD on again.
        for _ in 0..<100 {
            let index = try netlink { () throws(RouteNetlinkError) in try client.index(of: name) }
            let addresses = try netlink { () throws(RouteNetlinkError) in try client.addresses() }
            if !addresses.contains(where: { $0.interfaceIndex == index && $0.isTentative }) { break }
            usleep(20_000)
        }
        var after: [(key: String, value: String)] = []
        for suffix in ["accept_dad", "addr_gen_mode"] where ipv6 {
            let key = "net/ipv6/conf/\(name)/\(suffix)"
            if let value = sysctls[Self.rename(key, from: name, to: link.name)] ?? current.sysctls[key] { after.append((key, value)) }
        }
        try sandboxing { () throws(NamespaceError) in try namespace.writeSysctls(after) }
        // The kernel makes an address's routes as it takes the address up: give it a moment to.
        var differences = differences(from: try Self.read(name, from: client, namespace: namespace))
        for _ in 0..<50 where !differences.isEmpty {
            usleep(20_000)
            differences = self.differences(from: try Self.read(name, from: client, namespace: namespace))
        }
        return differences
    }

    /// Removes the addresses of `name` this configuration lacks and adds those it has and `name` lacks:
    /// IPv4 in the kernel's order (primaries before the secondaries of their subnet), IPv6 the other way
    /// round (the kernel puts a new address before the older ones of its scope).
    private func reconcileAddresses(_ name: String, client: RouteNetlinkClient, extraFlags: AddressFlags) throws(RouteNetlinkError) {
        let index = try client.index(of: name)
        let present = try client.addresses().filter { $0.interfaceIndex == index }
        for address in present where !addresses.contains(where: { Self.sameAddress($0, address) }) {
            try client.deleteAddress(address.prefix, from: name)
        }
        let missing = addresses.filter { address in !present.contains { Self.sameAddress($0, address) } }
        for address in missing.filter({ $0.prefix.address.isIPv4 }) + missing.filter({ !$0.prefix.address.isIPv4 }).reversed() {
            var made = address
            made.label = address.label.map { Self.relabel($0, from: link.name, to: name) }
            do throws(RouteNetlinkError) {
                try client.addAddress(made, to: name, extraFlags: address.prefix.address.isIPv4 ? [] : extraFlags)
            } catch where error.errno == EEXIST {
                continue
            }
        }
    }

    /// An IPv4 label names its interface (`eth0`, or `eth0:1` for an alias): under another name it follows.
    static func relabel(_ label: String, from old: String, to new: String) -> String {
        guard old != new, label == old || label.hasPrefix(old + ":") else { return label }
        return new + label.dropFirst(old.count)
    }
}

@discardableResult
func netlink<T>(_ body: () throws(RouteNetlinkError) -> T) throws(SandboxError) -> T {
    do {
        return try body()
    } catch {
        throw .netlink(error)
    }
}

@discardableResult
func sandboxing<T>(_ body: () throws(NamespaceError) -> T) throws(SandboxError) -> T {
    do {
        return try body()
    } catch {
        throw .namespace(error)
    }
}

import Foundation
import Glibc
import LinkcondBase
import LinkcondSystem
import NetNamespace
import RouteNetlink

/// Changes a scenario makes to a running sandbox besides profiles: links, addresses, default routes,
/// the captive portal. Each is one or a few netlink requests inside the sandbox's namespaces.
extension Sandbox {
    /// Which end of a client link.
    public enum LinkSide: String, Sendable, Codable {
        /// The device's own interface (`wl0`/`ww0`): like switching the radio off.
        case client
        /// The router's end (`c-wl0`/`c-ww0`): the device keeps its interface up but loses carrier, like
        /// walking out of range.
        case router
    }

    /// One of the client's links.
    public enum ClientLink: String, Sendable, Codable {
        case wifi
        case cellular

        var clientInterface: String { self == .wifi ? SandboxPlan.wifiInterface : SandboxPlan.cellularInterface }
        var routerInterface: String { self == .wifi ? SandboxPlan.routerWifiInterface : SandboxPlan.routerCellularInterface }
        var subnet: SandboxPlan.Subnet { self == .wifi ? SandboxPlan.wifiSubnet : SandboxPlan.cellularSubnet }
        var metric: UInt32 { self == .wifi ? SandboxPlan.wifiMetric : SandboxPlan.cellularMetric }

        /// The router's addresses on this link: both families, or only `family`'s.
        func gateways(_ family: AddressFamily?) -> [IPAddress] {
            [subnet.routerIPv4.address, subnet.routerIPv6.address].filter { family == nil || $0.family == family }
        }
    }

    private func namespace(_ name: String) throws(SandboxError) -> NamedNamespace {
        do {
            return try NamedNamespace(existing: name)
        } catch {
            throw .notUp(name: topology.name)
        }
    }

    private func wrap(_ body: () throws(RouteNetlinkError) -> Void) throws(SandboxError) {
        do {
            try body()
        } catch {
            throw .netlink(error)
        }
    }

    /// Takes a client link down or up. Equivalent to `ip -n lc-client link set dev wl0 down|up` (client
    /// side) or `ip -n lc-router link set dev c-wl0 down|up` (router side).
    ///
    /// The kernel flushes an interface's IPv4 routes and IPv6 addresses when the interface itself goes
    /// down; bringing the client side up again therefore restores its addresses and default routes, as a
    /// network manager would.
    public func setLink(_ link: ClientLink, side: LinkSide, up: Bool) throws(SandboxError) {
        switch side {
        case .router:
            let router = try netlink(try namespace(topology.routerNamespace))
            try wrap { () throws(RouteNetlinkError) in try router.setLink(link.routerInterface, up: up) }
        case .client:
            let client = try netlink(try namespace(topology.clientNamespace))
            try wrap { () throws(RouteNetlinkError) in try client.setLink(link.clientInterface, up: up) }
            if up { try restoreAddresses(link) }
        }
    }

    /// Removes the client link's addresses of `family` (nil: IPv4 and IPv6). Equivalent to
    /// `ip -n lc-client addr del ...`. The kernel removes routes that depend on them.
    public func removeAddresses(_ link: ClientLink, family: AddressFamily? = nil) throws(SandboxError) {
        let client = try netlink(try namespace(topology.clientNamespace))
        let existing = try addresses(of: link, client)
        for prefix in [link.subnet.peerIPv4, link.subnet.peerIPv6]
        where existing.contains(prefix) && (family == nil || prefix.address.family == family) {
            try wrap { () throws(RouteNetlinkError) in try client.deleteAddress(prefix, from: link.clientInterface) }
        }
    }

    /// Puts the client link's addresses and default routes of `family` (nil: both) back, whatever is missing.
    /// Equivalent to `ip -n lc-client addr add ...` and `ip -n lc-client route add default ...`.
    public func restoreAddresses(_ link: ClientLink, family: AddressFamily? = nil) throws(SandboxError) {
        let client = try netlink(try namespace(topology.clientNamespace))
        let existing = try addresses(of: link, client)
        for prefix in [link.subnet.peerIPv4, link.subnet.peerIPv6]
        where !existing.contains(prefix) && (family == nil || prefix.address.family == family) {
            try wrap { () throws(RouteNetlinkError) in try client.addAddress(prefix, to: link.clientInterface, noDAD: !prefix.address.isIPv4) }
        }
        try restoreDefaultRoutes(link, family: family)
    }

    /// Removes the client link's default routes (IPv4 and IPv6, or only `family`'s). Equivalent to
    /// `ip -n lc-client route del default via GW dev wl0 metric M` for each family.
    public func removeDefaultRoutes(_ link: ClientLink, family: AddressFamily? = nil) throws(SandboxError) {
        let client = try netlink(try namespace(topology.clientNamespace))
        let present = try defaultRoutes(of: link, client)
        for gateway in link.gateways(family) where present.contains(gateway.family) {
            try wrap { () throws(RouteNetlinkError) in
                try client.deleteRoute(destination: nil, gateway: gateway, interface: link.clientInterface, metric: link.metric)
            }
        }
    }

    /// Puts the client link's default routes back (whichever family is missing, or only `family`'s).
    public func restoreDefaultRoutes(_ link: ClientLink, family: AddressFamily? = nil) throws(SandboxError) {
        let client = try netlink(try namespace(topology.clientNamespace))
        let present = try defaultRoutes(of: link, client)
        for gateway in link.gateways(family) where !present.contains(gateway.family) {
            try wrap { () throws(RouteNetlinkError) in
                try client.addRoute(destination: nil, gateway: gateway, interface: link.clientInterface, metric: link.metric)
            }
        }
    }

    /// Hands the device over to `link`: to cellular, wifi loses carrier (router side down) while cellular
    /// is up; to wifi, wifi comes back (cellular stays, behind wifi's lower metric).
    public func handOver(to link: ClientLink) throws(SandboxError) {
        switch link {
        case .cellular:
            try setLink(.cellular, side: .router, up: true)
            try setLink(.wifi, side: .router, up: false)
        case .wifi:
            try setLink(.wifi, side: .router, up: true)
        }
    }

    /// The file whose presence makes the sandbox's server answer as a captive portal
    /// (`linkcond serve --portal-flag PATH`).
    public var portalFlagPath: String { store.portalFlagPath(for: topology.name) }

    /// Switches the captive portal on or off: while on, `/generate_204` answers 200 with a login page.
    public func setPortal(on: Bool) throws(SandboxError) {
        if on {
            do {
                try FileManager.default.createDirectory(atPath: store.directory, withIntermediateDirectories: true)
            } catch {
                throw .state(path: portalFlagPath, detail: "cannot create \(store.directory)")
            }
            do throws(SystemError) {
                try FileDescriptor.open(portalFlagPath, .writeOnly, options: .create).close()
            } catch {
                throw .state(path: portalFlagPath, detail: error.errno.description)
            }
        } else if unlink(portalFlagPath) != 0 && errno != ENOENT {
            throw .state(path: portalFlagPath, detail: String(cString: strerror(errno)))
        }
    }

    private func addresses(of link: ClientLink, _ client: RouteNetlinkClient) throws(SandboxError) -> [IPPrefix] {
        do {
            let index = try client.index(of: link.clientInterface)
            return try client.addresses().filter { $0.interfaceIndex == index }.map(\.prefix)
        } catch {
            throw .netlink(error)
        }
    }

    private func defaultRoutes(of link: ClientLink, _ client: RouteNetlinkClient) throws(SandboxError) -> Set<AddressFamily> {
        do {
            let index = try client.index(of: link.clientInterface)
            return Set(try client.routes().filter { $0.isDefault && $0.outputInterface == index && $0.table == .main }.map(\.family))
        } catch {
            throw .netlink(error)
        }
    }
}

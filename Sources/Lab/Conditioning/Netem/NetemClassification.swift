import Profiles
import RouteNetlink

/// The u32 filters that sort a site's traffic into the bands of its prio, for a profile's targets: the
/// netem backend's form of the userspace engine's classification (`TargetMatcher`, `DirectionEmulator`).
///
/// A target names the far end: on the uplink a filter matches the destination address and port
/// (`match ip dst …`, `match ip dport …`), on the downlink the source (`match ip src …`, `match ip sport …`).
/// A target with a port and no protocol matches TCP and UDP (two filters); `icmp` is protocol 1 on IPv4 and
/// next header 58 on IPv6. The port keys assume an IPv4 header without options and no IPv6 extension
/// headers, as iproute2's `match ip dport` does (see ``U32Key/ipSourcePort(_:)``).
///
/// The order is the evaluation order (the installer gives consecutive priorities from it); the first
/// filter that matches decides, and traffic no filter matches goes where the prio's priomap says.
enum NetemClassification {
    /// One filter before it has a priority.
    struct Rule: Sendable, Equatable {
        /// `protocol ip` or `protocol ipv6`.
        var protocolNumber: EtherType
        /// Every key must match.
        var keys: [U32Key]
        /// Where matching packets go (`flowid`).
        var classID: TrafficControlHandle

        /// The filter with priority `priority`.
        func filter(priority: UInt16) -> U32Filter {
            U32Filter(protocolNumber: protocolNumber, priority: priority, keys: keys, classID: classID)
        }
    }

    static let tcp: UInt8 = 6
    static let udp: UInt8 = 17
    static let icmp: UInt8 = 1
    static let icmpv6: UInt8 = 58
    static let dnsPort: UInt16 = 53

    /// Uplink filters. Without targets: DNS queries (UDP and TCP to port 53, IPv4 and IPv6) to `dns`; the
    /// priomap sends the rest to the conditions. With targets: DNS queries to a target to `dns` (conditions
    /// and DNS delay), other DNS queries to `dnsOnly` (the DNS delay alone), the rest of the targeted
    /// traffic to `main`; the priomap sends what is left to the untouched band.
    static func uplink(
        targets: [TrafficTarget], main: TrafficControlHandle, dns: TrafficControlHandle, dnsOnly: TrafficControlHandle
    ) -> [Rule] {
        if targets.isEmpty { return dnsRules(to: dns) }
        return targets.flatMap { dnsRules(within: $0, to: dns) } + dnsRules(to: dnsOnly)
            + targets.flatMap { rules(for: $0, farEndIsDestination: true, to: main) }
    }

    /// Downlink filters: the targeted traffic (matched on its source) to `main`; none without targets (the
    /// downlink is then a netem at the root).
    static func downlink(targets: [TrafficTarget], main: TrafficControlHandle) -> [Rule] {
        targets.flatMap { rules(for: $0, farEndIsDestination: false, to: main) }
    }

    /// DNS queries: UDP, then TCP, to port 53, over IPv4, then IPv6.
    static func dnsRules(to classID: TrafficControlHandle) -> [Rule] {
        [(EtherType.ipv4, udp), (.ipv4, tcp), (.ipv6, udp), (.ipv6, tcp)].map { family, transport in
            Rule(protocolNumber: family, keys: transportKeys(ipv6: family == .ipv6, transport: transport, port: dnsPort, destination: true), classID: classID)
        }
    }

    /// DNS queries to `target`: its prefix, UDP and TCP to port 53 as far as the target's protocol and port
    /// allow (none for an ICMP target or one with another port).
    static func dnsRules(within target: TrafficTarget, to classID: TrafficControlHandle) -> [Rule] {
        guard target.port == nil || target.port == dnsPort else { return [] }
        let ipv6 = !target.to.address.isIPv4
        return [(TrafficProtocol.udp, udp), (.tcp, tcp)].compactMap { name, transport in
            guard target.protocol == nil || target.protocol == name else { return nil }
            return Rule(
                protocolNumber: ipv6 ? .ipv6 : .ipv4,
                keys: U32Key.address(target.to, source: false) + transportKeys(ipv6: ipv6, transport: transport, port: dnsPort, destination: true),
                classID: classID)
        }
    }

    /// The filters that match `target`: its prefix (destination or source), then the protocol and port it
    /// names.
    static func rules(for target: TrafficTarget, farEndIsDestination: Bool, to classID: TrafficControlHandle) -> [Rule] {
        let ipv6 = !target.to.address.isIPv4
        let address = U32Key.address(target.to, source: !farEndIsDestination)
        let transports: [UInt8?]
        switch (target.protocol, target.port) {
        case (nil, nil): transports = [nil]
        case (nil, _?): transports = [tcp, udp]
        case (.tcp?, _): transports = [tcp]
        case (.udp?, _): transports = [udp]
        case (.icmp?, _): transports = [ipv6 ? icmpv6 : icmp]
        }
        return transports.map { transport in
            var keys = address
            if let transport {
                keys += transportKeys(ipv6: ipv6, transport: transport, port: target.port, destination: farEndIsDestination)
            }
            return Rule(protocolNumber: ipv6 ? .ipv6 : .ipv4, keys: keys, classID: classID)
        }
    }

    /// `match ip protocol P 0xff [match ip dport|sport PORT 0xffff]`, or the `ip6` forms.
    static func transportKeys(ipv6: Bool, transport: UInt8, port: UInt16?, destination: Bool) -> [U32Key] {
        var keys = [ipv6 ? U32Key.ip6Protocol(transport) : U32Key.ipProtocol(transport)]
        if let port {
            switch (ipv6, destination) {
            case (false, true): keys.append(.ipDestinationPort(port))
            case (false, false): keys.append(.ipSourcePort(port))
            case (true, true): keys.append(.ip6DestinationPort(port))
            case (true, false): keys.append(.ip6SourcePort(port))
            }
        }
        return keys
    }
}

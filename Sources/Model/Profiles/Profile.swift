/// A network profile: the conditions of both directions of a link and an extra delay for DNS.
///
/// Profiles are read from JSON with ``ProfileParser`` and found by name in a ``ProfileCatalog``;
/// `profiles/FORMAT.md` describes the file format.
public struct Profile: Sendable, Equatable {
    /// The profile's name: the catalog name, equal to the file name without `.json` (see ``isValidName(_:)``).
    public var name: String
    /// What the profile emulates and where its numbers come from.
    public var description: String
    /// Conditions on packets towards the device.
    public var downlink: LinkConditions
    /// Conditions on packets from the device.
    public var uplink: LinkConditions
    /// Extra delay for DNS queries (UDP and TCP port 53) from the device, in nanoseconds, on top of the
    /// uplink delay (Network Link Conditioner's "DNS Delay").
    public var dnsDelay: UInt64
    /// When not empty, only traffic to or from these gets the conditions (either direction); the rest passes
    /// untouched. The DNS delay is its own target and applies to every DNS query.
    public var targets: [TrafficTarget]
    /// The file the profile was read from; `nil` for a profile made in code.
    public var source: String?

    /// A profile; by default it changes nothing.
    public init(
        name: String, description: String = "", downlink: LinkConditions = .unconditioned,
        uplink: LinkConditions = .unconditioned, dnsDelay: UInt64 = 0, targets: [TrafficTarget] = [], source: String? = nil
    ) {
        self.name = name
        self.description = description
        self.downlink = downlink
        self.uplink = uplink
        self.dnsDelay = dnsDelay
        self.targets = targets
        self.source = source
    }

    /// Whether the profile changes nothing: both directions neutral and no DNS delay.
    public var isNeutral: Bool { downlink.isNeutral && uplink.isNeutral && dnsDelay == 0 }

    /// Whether `name` can name a profile: 1 to 64 characters of lowercase ASCII letters, digits, `-`,
    /// `_` and `.`, starting with a letter or digit (`"3g-lossy"`, `"wifi-80211ac"`).
    public static func isValidName(_ name: String) -> Bool {
        let scalars = Array(name.unicodeScalars)
        guard (1...64).contains(scalars.count) else { return false }
        func isAlphanumeric(_ scalar: Unicode.Scalar) -> Bool {
            ("a"..."z").contains(scalar) || ("0"..."9").contains(scalar)
        }
        return isAlphanumeric(scalars[0])
            && scalars.allSatisfy { isAlphanumeric($0) || "-_.".unicodeScalars.contains($0) }
    }
}

/// Which way packets go on a link.
public enum LinkDirection: String, Sendable, Codable, CaseIterable {
    /// From the device towards the network: the profile's `uplink`.
    case uplink
    /// From the network towards the device: the profile's `downlink`.
    case downlink
}

extension Profile {
    /// The conditions of `direction`.
    public func conditions(_ direction: LinkDirection) -> LinkConditions {
        direction == .uplink ? uplink : downlink
    }
}

import RouteNetlink

/// The kind of an interface, as a path monitor reports it (`NWInterface.InterfaceType`).
public enum InterfaceType: String, Sendable, Codable, CaseIterable, CustomStringConvertible {
    case wifi
    case cellular
    case wiredEthernet
    case loopback
    case other

    public var description: String { rawValue }
}

/// One usable interface of a path.
public struct PathInterface: Sendable, Codable, Equatable, Hashable {
    public var name: String
    public var index: Int32
    public var type: InterfaceType

    public init(name: String, index: Int32, type: InterfaceType) {
        self.name = name
        self.index = index
        self.type = type
    }
}

/// The state of the network as seen from one namespace: the Linux counterpart of Apple's `NWPath`.
///
/// It is a pure function of the namespace's link, address and route tables (see ``PathEvaluator``);
/// it says nothing about whether packets actually get through — that is the prober's job.
public struct NetworkPath: Sendable, Codable, Equatable {
    /// `NWPath.Status`.
    public enum Status: String, Sendable, Codable, CustomStringConvertible {
        /// Some interface has carrier, an address and a default route: traffic can be sent.
        case satisfied
        /// Nothing can carry traffic.
        case unsatisfied
        /// An interface could be used after some action (Linux: a dormant link, e.g. waiting for 802.1X).
        case requiresConnection

        public var description: String { rawValue }
    }

    /// Why a path is not satisfied: Apple's `notAvailable`, plus what Linux can tell apart.
    public enum UnsatisfiedReason: String, Sendable, Codable, CustomStringConvertible {
        /// No interface other than loopback is up (Apple's `notAvailable`).
        case notAvailable
        /// An interface is up but has no carrier (cable out, veth peer down, radio off).
        case noCarrier
        /// An interface has carrier but no usable (global, non-tentative) address.
        case noAddress
        /// An interface has an address but no default route.
        case noRoute
        /// Usable interfaces exist, but the monitor's interface filters exclude all of them.
        case interfaceFiltered

        public var description: String { rawValue }
    }

    public var status: Status
    /// Set when `status` is not `satisfied`.
    public var unsatisfiedReason: UnsatisfiedReason?
    /// The interfaces the path can use, the preferred one (lowest default-route metric) first.
    public var availableInterfaces: [PathInterface]
    /// True when the preferred interface is cellular or configured as expensive.
    public var isExpensive: Bool
    /// True when the preferred interface is configured as constrained (a low-data mode).
    public var isConstrained: Bool
    public var supportsIPv4: Bool
    public var supportsIPv6: Bool
    /// True when a DNS server is configured and reachable by a family the path supports.
    public var supportsDNS: Bool
    /// Default gateways of the usable interfaces, preferred first.
    public var gateways: [String]

    public init(
        status: Status, unsatisfiedReason: UnsatisfiedReason? = nil, availableInterfaces: [PathInterface] = [],
        isExpensive: Bool = false, isConstrained: Bool = false, supportsIPv4: Bool = false, supportsIPv6: Bool = false,
        supportsDNS: Bool = false, gateways: [String] = []
    ) {
        self.status = status
        self.unsatisfiedReason = unsatisfiedReason
        self.availableInterfaces = availableInterfaces
        self.isExpensive = isExpensive
        self.isConstrained = isConstrained
        self.supportsIPv4 = supportsIPv4
        self.supportsIPv6 = supportsIPv6
        self.supportsDNS = supportsDNS
        self.gateways = gateways
    }

    /// True when the path uses an interface of `type` (`NWPath.usesInterfaceType`): the preferred one.
    public func usesInterfaceType(_ type: InterfaceType) -> Bool {
        availableInterfaces.first?.type == type
    }

    /// A one-line summary: `satisfied via wl0 (wifi), IPv4+IPv6, DNS` or `unsatisfied (noCarrier)`.
    public var summary: String {
        guard status == .satisfied else {
            return "\(status)" + (unsatisfiedReason.map { " (\($0))" } ?? "")
        }
        var text = "satisfied via " + availableInterfaces.map { "\($0.name) (\($0.type))" }.joined(separator: ", ")
        let families = [supportsIPv4 ? "IPv4" : nil, supportsIPv6 ? "IPv6" : nil].compactMap { $0 }
        if !families.isEmpty { text += ", " + families.joined(separator: "+") }
        if supportsDNS { text += ", DNS" }
        if isExpensive { text += ", expensive" }
        if isConstrained { text += ", constrained" }
        return text
    }
}

/// One delivered path, with where it stands in the monitor's life.
public struct PathUpdate: Sendable, Codable, Equatable {
    public var path: NetworkPath
    /// True for the first path a started monitor delivers (the state at start, not a change).
    public var isBaseline: Bool
    /// The monitor's generation: bumped by every `start`, so late events of an earlier run can be told apart.
    public var generation: UInt64
    /// Counts updates within a generation, from 0.
    public var sequence: UInt64
    /// Monotonic time (CLOCK_MONOTONIC, nanoseconds) when the kernel event that caused this update was read.
    public var eventTime: UInt64
    /// Monotonic time when the update was evaluated.
    public var time: UInt64
}

import Profiles
import RouteNetlink

/// The handles, classes and filter priorities of the trees (see ``NetemBackend`` for the trees as tc
/// commands).
enum NetemShape {
    static let uplinkPrio = TrafficControlHandle(major: 1, minor: 0)
    static let uplinkMain = TrafficControlHandle(major: 1, minor: 1)
    static let uplinkDNS = TrafficControlHandle(major: 1, minor: 2)
    static let uplinkDNSOnly = TrafficControlHandle(major: 1, minor: 3)
    static let uplinkUntouched = TrafficControlHandle(major: 1, minor: 4)
    static let downlinkPrio = TrafficControlHandle(major: 3, minor: 0)
    static let downlinkMain = TrafficControlHandle(major: 3, minor: 1)
    static let downlinkUntouched = TrafficControlHandle(major: 3, minor: 2)
    /// A downlink without targets: the netem at the root, alternately `1:` and `2:`.
    static let rootHandles: [UInt16] = [1, 2]
    static let mainLeafHandles: [UInt16] = [0x10, 0x11]
    static let dnsLeafHandles: [UInt16] = [0x20, 0x21]
    static let dnsOnlyLeafHandles: [UInt16] = [0x30, 0x31]
    /// The untouched band's pfifo.
    static let untouched = TrafficControlHandle(major: 0x40, minor: 0)
    /// The two filter priority ranges a site's filters alternate between: 1…1000 and 1001…2000.
    static let filterRanges: [UInt16] = [1, 1001]
    /// Filters per site at most (one range).
    static let filtersPerRange = 1000

    static func prio(_ direction: LinkMeasurement.Direction) -> TrafficControlHandle { direction == .uplink ? uplinkPrio : downlinkPrio }
    static func main(_ direction: LinkMeasurement.Direction) -> TrafficControlHandle { direction == .uplink ? uplinkMain : downlinkMain }
    static func untouchedClass(_ direction: LinkMeasurement.Direction) -> TrafficControlHandle {
        direction == .uplink ? uplinkUntouched : downlinkUntouched
    }

    /// The range (0 or 1) of a filter priority; nil outside both (not linkcond's).
    static func range(of priority: UInt16) -> Int? {
        for (index, base) in filterRanges.enumerated() where priority >= base && Int(priority) < Int(base) + filtersPerRange { return index }
        return nil
    }

    /// A prio with `bands` bands and every priority mapped to band `band`.
    static func prioOptions(bands: Int32, band: UInt8) -> PrioOptions {
        PrioOptions(bands: bands, priorityMap: [UInt8](repeating: band, count: 16))
    }

    /// The filters of `direction` for `targets`, in evaluation order.
    static func rules(_ direction: LinkMeasurement.Direction, targets: [TrafficTarget]) -> [NetemClassification.Rule] {
        switch direction {
        case .uplink: NetemClassification.uplink(targets: targets, main: uplinkMain, dns: uplinkDNS, dnsOnly: uplinkDNSOnly)
        case .downlink: NetemClassification.downlink(targets: targets, main: downlinkMain)
        }
    }
}

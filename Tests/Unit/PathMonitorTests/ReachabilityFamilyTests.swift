import Foundation
import LinkcondBase
import XCTest

@testable import PathMonitor

/// How the families' states combine into the overall state (a pure function), and which family stands for
/// the link's samples.
final class ReachabilityFamilyTests: XCTestCase {
    static func family(
        _ family: ReachabilityFamily, _ state: ReachabilityState, loss: Double = 0, rtt: Double? = 0.01
    ) -> FamilyReachability {
        FamilyReachability(
            family: family, state: state, previousState: state, outcome: state == .online ? .online : .failure,
            quality: .good, medianRTT: rtt, lossFraction: loss, windowRounds: 1, consecutiveFailures: 0, rounds: 1,
            timeouts: .fixed(5))
    }

    private func overall(_ v4: ReachabilityState?, _ v6: ReachabilityState?) -> OverallReachability {
        OverallReachability([v4.map { Self.family(.ipv4, $0) }, v6.map { Self.family(.ipv6, $0) }].compactMap { $0 })
    }

    func testEveryPairOfStates() {
        let states = ReachabilityState.allCases
        let order: [ReachabilityState] = [.offline, .unknown, .limited, .portal, .online]
        for v4 in states {
            for v6 in states {
                let combined = overall(v4, v6)
                // The better of the two, in the order offline < unknown < limited < portal < online.
                let expected = order[max(order.firstIndex(of: v4)!, order.firstIndex(of: v6)!)]
                XCTAssertEqual(combined.state, expected, "\(v4) + \(v6)")
                XCTAssertEqual(combined.state == .offline, v4 == .offline && v6 == .offline, "offline only when both are")
                XCTAssertEqual(combined.state == .online, v4 == .online || v6 == .online, "online when either is")
                let single = (v4 == .online) != (v6 == .online) && v4 != .unknown && v6 != .unknown
                XCTAssertEqual(combined.isSingleFamily, single, "\(v4) + \(v6)")
                XCTAssertEqual(combined.onlineFamilies, [v4 == .online ? ReachabilityFamily.ipv4 : nil, v6 == .online ? .ipv6 : nil].compactMap { $0 })
            }
        }
    }

    func testTheSingleFamilyFlag() {
        XCTAssertTrue(overall(.online, .offline).isSingleFamily, "IPv6 lost its route: online on IPv4 alone")
        XCTAssertTrue(overall(.offline, .online).isSingleFamily)
        XCTAssertTrue(overall(.online, .limited).isSingleFamily, "IPv6's DNS fails")
        XCTAssertTrue(overall(.online, .portal).isSingleFamily)
        XCTAssertFalse(overall(.online, .online).isSingleFamily, "both work")
        XCTAssertFalse(overall(.online, .unknown).isSingleFamily, "IPv6 has not decided yet: no flag that would flicker")
        XCTAssertFalse(overall(.offline, .offline).isSingleFamily, "nothing works: offline, not single-family")
        XCTAssertFalse(overall(.online, nil).isSingleFamily, "one family probed (an IP literal): nothing to compare")
        XCTAssertEqual(overall(nil, nil).state, .unknown, "no family has finished a round")
        XCTAssertEqual(overall(nil, .offline).state, .offline, "only IPv6 probed")
    }

    func testAProbedFamilyWithoutARoundIsUnknown() {
        // IPv6 fails at once (no route) while IPv4's first round is still under way: not offline yet.
        let early = OverallReachability([Self.family(.ipv6, .offline)], probed: [.ipv4, .ipv6])
        XCTAssertEqual(early.state, .unknown)
        XCTAssertFalse(early.isSingleFamily)
        XCTAssertEqual(early.primary, .ipv6, "the only family with samples")
        let online = OverallReachability([Self.family(.ipv6, .online)], probed: [.ipv4, .ipv6])
        XCTAssertEqual(online.state, .online)
        XCTAssertFalse(online.isSingleFamily, "IPv4 has not decided")
        let both = OverallReachability([Self.family(.ipv4, .online), Self.family(.ipv6, .offline)], probed: [.ipv4, .ipv6])
        XCTAssertTrue(both.isSingleFamily)
    }

    func testThePrimaryFamilyCarriesTheSamples() {
        XCTAssertEqual(overall(.offline, .online).primary, .ipv6, "the working family")
        XCTAssertEqual(overall(.online, .offline).primary, .ipv4)
        XCTAssertEqual(overall(.online, .online).primary, .ipv4, "a tie goes to IPv4")
        let lossy = OverallReachability([Self.family(.ipv4, .online, loss: 0.2), Self.family(.ipv6, .online, loss: 0)])
        XCTAssertEqual(lossy.primary, .ipv6, "same state: the lower loss")
        let slow = OverallReachability([Self.family(.ipv4, .online, rtt: 0.3), Self.family(.ipv6, .online, rtt: 0.1)])
        XCTAssertEqual(slow.primary, .ipv6, "same state and loss: the lower RTT")
        let unmeasured = OverallReachability([Self.family(.ipv4, .online, rtt: nil), Self.family(.ipv6, .online, rtt: 0.1)])
        XCTAssertEqual(unmeasured.primary, .ipv6, "a measured RTT beats none")
    }

    func testFamiliesOfAddressesAndSettings() {
        XCTAssertEqual(ReachabilityFamily(IPAddress("198.19.0.2")!), .ipv4)
        XCTAssertEqual(ReachabilityFamily(IPAddress("2001:2:0:100::2")!), .ipv6)
        XCTAssertEqual(ReachabilityFamily.ipv6.addressFamily, .inet6)
        XCTAssertEqual(ReachabilityFamily.ipv4.recordType, .a)
        XCTAssertEqual(ReachabilityFamily.ipv6.recordType, .aaaa)
        XCTAssertEqual(ReachabilitySettings(families: [.ipv6, .ipv4, .ipv6]).probedFamilies, [.ipv4, .ipv6])
        XCTAssertEqual(ReachabilitySettings(families: []).probedFamilies, [.ipv4, .ipv6], "empty means both")
        XCTAssertEqual(ReachabilitySettings(host: "198.19.0.2").probedFamilies, [.ipv4], "a literal probes its own family")
        XCTAssertEqual(ReachabilitySettings(host: "2001:2:0:100::2").probedFamilies, [.ipv6])
    }

    func testEachFamilyAsksANameserverOfItsOwn() {
        let both = [IPAddress("198.19.0.2")!, IPAddress("2001:2:0:100::2")!]
        let round = NetworkProbeRound(namespace: nil, settings: ReachabilitySettings(nameservers: both))
        XCTAssertEqual(round.nameserver(for: .ipv4), both[0])
        XCTAssertEqual(round.nameserver(for: .ipv6), both[1])
        let v4Only = NetworkProbeRound(namespace: nil, settings: ReachabilitySettings(nameservers: [both[0]]))
        XCTAssertEqual(v4Only.nameserver(for: .ipv6), both[0], "none of its family: the first of all asks for AAAA")
    }
}

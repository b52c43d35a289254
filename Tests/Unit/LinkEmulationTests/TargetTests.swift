@testable import LinkEmulation
import Profiles
import XCTest

/// Traffic targets: prefixes as text, and which frames get the conditions on each direction.
final class TargetTests: XCTestCase {
    private func error(_ body: () throws -> Any) -> EmulationInputError? {
        do {
            _ = try body()
            XCTFail("accepted")
            return nil
        } catch let error as EmulationInputError {
            return error
        } catch {
            XCTFail("unexpected \(error)")
            return nil
        }
    }

    func testPrefixesReadAndPrintCanonically() throws {
        XCTAssertEqual(try TrafficTarget.prefix("198.18.2.0/24").description, "198.18.2.0/24")
        XCTAssertEqual(try TrafficTarget.prefix("198.18.2.7").description, "198.18.2.7/32")
        XCTAssertEqual(try TrafficTarget.prefix("0.0.0.0/0").description, "0.0.0.0/0")
        XCTAssertEqual(try TrafficTarget.prefix("2001:2::/48").description, "2001:2::/48")
        XCTAssertEqual(try TrafficTarget.prefix("2001:0002:0000:0000:0000:0000:0000:0007").description, "2001:2::7/128")
        XCTAssertEqual(try TrafficTarget.prefix("::").description, "::/128")
        XCTAssertEqual(try TrafficTarget.prefix("::ffff:198.18.0.1").description, "::ffff:198.18.0.1/128", "an IPv4-mapped address in the mixed notation RFC 5952 recommends")
        XCTAssertEqual(try TrafficTarget.prefix("2001:db8:0:0:1:0:0:1").description, "2001:db8::1:0:0:1/128", "the first longest run")
        let prefix = PrefixWords(try TrafficTarget.prefix("2001:2::/48"))
        XCTAssertTrue(prefix.contains(isIPv6: true, high: 0x2001_0002_0000_1234, low: 99))
        XCTAssertFalse(prefix.contains(isIPv6: true, high: 0x2001_0002_0001_0000, low: 0))
        XCTAssertFalse(prefix.contains(isIPv6: false, high: 0, low: 0x2001_0002))
        let wide = PrefixWords(try TrafficTarget.prefix("2001:2::/80"))
        XCTAssertTrue(wide.contains(isIPv6: true, high: 0x2001_0002_0000_0000, low: 0x0000_FFFF_FFFF_FFFF))
        XCTAssertFalse(wide.contains(isIPv6: true, high: 0x2001_0002_0000_0000, low: 0x0001_0000_0000_0000))
    }

    func testBadPrefixesSayWhatWasWrong() {
        XCTAssertEqual(
            error { try TrafficTarget.prefix("198.18.2.1/24") }?.description,
            #""198.18.2.1/24" has host bits set beyond the /24: expected the network address, "198.18.2.0/24""#)
        XCTAssertEqual(error { try TrafficTarget.prefix("198.18.2.0/33") }?.kind, .outOfRange)
        XCTAssertEqual(error { try TrafficTarget.prefix("2001:2::/129") }?.kind, .outOfRange)
        for text in ["", "198.18.2", "198.18.2.256", "198.018.2.1", "1::2::3", "2001:2:::/48", "12345::", "host.example", "198.18.2.0/"] {
            XCTAssertNotNil(error { try TrafficTarget.prefix(text) }, text)
        }
    }

    func testTargetsRefuseImpossibleCombinations() throws {
        XCTAssertEqual(
            error { try TrafficTarget(to: "198.18.2.0/24", protocol: "icmp", port: 7) }?.description,
            "ICMP has no ports (port 7 with protocol icmp): expected protocol tcp or udp with a port, or no port for icmp")
        XCTAssertEqual(error { try TrafficTarget(to: "198.18.2.0/24", port: 0) }?.kind, .outOfRange)
        XCTAssertEqual(error { try TrafficTarget(to: "198.18.2.0/24", protocol: "sctp") }?.kind, .invalidValue)
        XCTAssertEqual(try TrafficTarget(to: "198.18.2.0/24", protocol: "TCP", port: 443).description, "tcp 198.18.2.0/24 port 443")
    }

    /// `loss 100%` on the targets only: a frame that matches is dropped, any other is forwarded untouched.
    private func lossyHarness(_ targets: [TrafficTarget], direction: LinkDirection, dnsDelay: UInt64 = 0) -> Harness {
        Harness(
            LinkConditions(loss: .random(probability: 1, correlation: 0)),
            DirectionOptions(direction: direction, dnsDelay: dnsDelay, targets: targets, seed: 1))
    }

    func testOnTheUplinkTargetsMatchTheDestination() throws {
        let uplink = lossyHarness([try TrafficTarget(to: "198.18.2.0/24", protocol: "tcp", port: 443)], direction: .uplink)
        let inside = FrameBuilder.Address.v4(198, 18, 2, 200)
        let outside = FrameBuilder.Address.v4(198, 18, 3, 1)
        XCTAssertEqual(uplink.offer(FrameBuilder.frame(protocol: 6, to: inside, destinationPort: 443), at: t0), .dropped)
        XCTAssertEqual(uplink.offer(FrameBuilder.frame(protocol: 6, to: inside, destinationPort: 80), at: t0), .forwardNow, "other port")
        XCTAssertEqual(uplink.offer(FrameBuilder.frame(protocol: 17, to: inside, destinationPort: 443), at: t0), .forwardNow, "UDP")
        XCTAssertEqual(uplink.offer(FrameBuilder.frame(protocol: 6, to: outside, destinationPort: 443), at: t0), .forwardNow, "other net")
        XCTAssertEqual(
            uplink.offer(FrameBuilder.frame(protocol: 6, from: inside, to: outside, sourcePort: 443, destinationPort: 443), at: t0),
            .forwardNow, "the source does not count on the uplink")
        XCTAssertEqual(uplink.offer(FrameBuilder.arp(), at: t0), .forwardNow, "not IP")
        let counters = uplink.emulator.counters
        XCTAssertEqual(counters.lostFrames, 1)
        XCTAssertEqual(counters.untouchedFrames, 5)
    }

    func testOnTheDownlinkTargetsMatchTheSource() throws {
        let downlink = lossyHarness([try TrafficTarget(to: "198.18.2.0/24", protocol: "tcp", port: 443)], direction: .downlink)
        let server = FrameBuilder.Address.v4(198, 18, 2, 7)
        XCTAssertEqual(
            downlink.offer(FrameBuilder.frame(protocol: 6, from: server, to: FrameBuilder.client, sourcePort: 443, destinationPort: 40000), at: t0),
            .dropped, "a reply from the target")
        XCTAssertEqual(
            downlink.offer(FrameBuilder.frame(protocol: 6, from: FrameBuilder.client, to: server, sourcePort: 40000, destinationPort: 443), at: t0),
            .forwardNow, "the destination does not count on the downlink")
    }

    func testICMPTargetsMatchICMPAndICMPv6AndFamiliesStaySeparate() throws {
        let both = lossyHarness(
            [try TrafficTarget(to: "198.18.2.0/24", protocol: "icmp"), try TrafficTarget(to: "2001:2:0:2::/64", protocol: "icmp")],
            direction: .uplink)
        XCTAssertEqual(both.offer(FrameBuilder.frame(protocol: 1), at: t0), .dropped)
        XCTAssertEqual(both.offer(FrameBuilder.frame(protocol: 58, from: FrameBuilder.client6, to: FrameBuilder.server6), at: t0), .dropped)
        XCTAssertEqual(both.offer(FrameBuilder.frame(protocol: 17), at: t0), .forwardNow)
        XCTAssertEqual(both.offer(FrameBuilder.frame(protocol: 1, from: FrameBuilder.client6, to: FrameBuilder.server6), at: t0), .forwardNow, "protocol 1 is not ICMPv6")
        let v4Only = lossyHarness([try TrafficTarget(to: "0.0.0.0/0")], direction: .uplink)
        XCTAssertEqual(v4Only.offer(FrameBuilder.frame(protocol: 17, from: FrameBuilder.client6, to: FrameBuilder.server6), at: t0), .forwardNow)
        XCTAssertEqual(v4Only.offer(FrameBuilder.frame(protocol: 17), at: t0), .dropped)
    }

    func testAPortWithoutAProtocolMatchesTCPAndUDP() throws {
        let any = lossyHarness([try TrafficTarget(to: "198.18.2.0/24", port: 80)], direction: .uplink)
        XCTAssertEqual(any.offer(FrameBuilder.frame(protocol: 6, destinationPort: 80), at: t0), .dropped)
        XCTAssertEqual(any.offer(FrameBuilder.frame(protocol: 17, destinationPort: 80), at: t0), .dropped)
        XCTAssertEqual(any.offer(FrameBuilder.frame(protocol: 1), at: t0), .forwardNow)
    }

    func testDNSGetsItsDelayWhetherOrNotItIsATarget() throws {
        let dnsDelay = 200 * ms
        let harness = lossyHarness([try TrafficTarget(to: "198.18.2.0/24", protocol: "tcp")], direction: .uplink, dnsDelay: dnsDelay)
        let resolver = FrameBuilder.Address.v4(198, 18, 9, 53)
        // A query to a resolver outside the targets: no loss, only the DNS delay.
        XCTAssertEqual(harness.offer(FrameBuilder.frame(protocol: 17, to: resolver, destinationPort: 53, id: 1), at: t0), .held)
        // A query over TCP to a target: the conditions (here, loss) apply.
        XCTAssertEqual(harness.offer(FrameBuilder.frame(protocol: 6, destinationPort: 53, id: 2), at: t0), .dropped)
        harness.drain()
        XCTAssertEqual(harness.departureTimes, [1: t0 + dnsDelay])
        XCTAssertEqual(harness.emulator.counters.dnsFrames, 2)
    }
}

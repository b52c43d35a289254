import Profiles
import XCTest

@testable import LinkEmulation

/// Reading frames: DNS over IPv4 and IPv6, UDP and TCP, behind VLAN tags and extension headers; truncated
/// and malformed frames are safe.
final class ClassifierTests: XCTestCase {
    private func headers(_ frame: [UInt8]) -> FrameHeaders { frame.withUnsafeBytes { FrameHeaders($0) } }

    func testDNSQueriesOverEveryTransportAndFamily() {
        let cases: [(String, [UInt8])] = [
            ("IPv4 UDP", FrameBuilder.frame(protocol: 17, destinationPort: 53)),
            ("IPv4 TCP", FrameBuilder.frame(protocol: 6, destinationPort: 53)),
            ("IPv6 UDP", FrameBuilder.frame(protocol: 17, from: FrameBuilder.client6, to: FrameBuilder.server6, destinationPort: 53)),
            ("IPv6 TCP", FrameBuilder.frame(protocol: 6, from: FrameBuilder.client6, to: FrameBuilder.server6, destinationPort: 53)),
            ("802.1Q", FrameBuilder.frame(protocol: 17, destinationPort: 53, vlanTags: 1)),
            ("QinQ", FrameBuilder.frame(protocol: 17, destinationPort: 53, vlanTags: 2)),
            (
                "IPv6 behind hop-by-hop and a first fragment",
                FrameBuilder.frame(
                    protocol: 17, from: FrameBuilder.client6, to: FrameBuilder.server6, destinationPort: 53,
                    extensions: [.hopByHop, .fragment(offset: 0, more: true)])
            ),
        ]
        for (name, frame) in cases {
            let parsed = headers(frame)
            XCTAssertTrue(parsed.isDNSQuery, name)
            XCTAssertEqual(parsed.destinationPort, 53, name)
            XCTAssertEqual(parsed.sourcePort, 40000, name)
        }
    }

    func testWhatIsNotADNSQuery() {
        let cases: [(String, [UInt8])] = [
            ("a reply, from port 53", FrameBuilder.frame(protocol: 17, sourcePort: 53, destinationPort: 40000)),
            ("another port", FrameBuilder.frame(protocol: 17, destinationPort: 5353)),
            ("ICMP", FrameBuilder.frame(protocol: 1)),
            ("ARP", FrameBuilder.arp()),
            (
                "a later IPv6 fragment: no ports to read",
                FrameBuilder.frame(
                    protocol: 17, from: FrameBuilder.client6, to: FrameBuilder.server6, destinationPort: 53,
                    extensions: [.fragment(offset: 100, more: false)])
            ),
        ]
        for (name, frame) in cases { XCTAssertFalse(headers(frame).isDNSQuery, name) }
        var laterFragment = FrameBuilder.frame(protocol: 17, destinationPort: 53)
        laterFragment[20] = 0x00
        laterFragment[21] = 0x10  // fragment offset 16 × 8 bytes
        XCTAssertFalse(headers(laterFragment).isDNSQuery, "a later IPv4 fragment")
    }

    func testAddressesProtocolAndOffsets() {
        let v4 = headers(FrameBuilder.frame(protocol: 6, payload: 10, vlanTags: 1))
        XCTAssertEqual(v4.ipVersion, 4)
        XCTAssertEqual(v4.networkOffset, 18)
        XCTAssertEqual(v4.transportOffset, 38)
        XCTAssertEqual(v4.packetEnd, 18 + 20 + 20 + 10)
        XCTAssertEqual(v4.transportProtocol, 6)
        XCTAssertEqual(v4.sourceLow, 0xC612_0002)
        XCTAssertEqual(v4.destinationLow, 0xC612_0207)
        let v6 = headers(
            FrameBuilder.frame(
                protocol: 17, from: FrameBuilder.client6, to: FrameBuilder.server6, extensions: [.destinationOptions]))
        XCTAssertEqual(v6.ipVersion, 6)
        XCTAssertEqual(v6.transportOffset, 14 + 40 + 16)
        XCTAssertEqual(v6.transportProtocol, 17)
        XCTAssertEqual(v6.destinationHigh, 0x2001_0002_0000_0002)
        XCTAssertEqual(v6.destinationLow, 7)
        XCTAssertEqual(v6.sourceLow, 2)
    }

    func testEveryTruncationOfAFrameIsSafe() {
        let frames = [
            FrameBuilder.frame(protocol: 17, destinationPort: 53, payload: 20, vlanTags: 2),
            FrameBuilder.frame(
                protocol: 6, from: FrameBuilder.client6, to: FrameBuilder.server6, destinationPort: 53, payload: 20,
                extensions: [.hopByHop, .destinationOptions, .fragment(offset: 0, more: true)]),
            FrameBuilder.arp(),
        ]
        for frame in frames {
            for length in 0...frame.count {
                let prefix = Array(frame.prefix(length))
                let parsed = headers(prefix)
                XCTAssertLessThanOrEqual(parsed.packetEnd, length)
                XCTAssertLessThanOrEqual(parsed.transportOffset, max(parsed.packetEnd, 0))
                if parsed.hasPorts { XCTAssertLessThanOrEqual(parsed.transportOffset + 4, length) }
                let range = FrameEdits.corruptibleRange(length, parsed)
                XCTAssertTrue(range.isEmpty || (range.lowerBound >= 0 && range.upperBound <= length), "corruption stays inside")
            }
        }
        // A DNS query cut inside its UDP header has no ports, so it is not a query.
        let query = FrameBuilder.frame(protocol: 17, destinationPort: 53)
        XCTAssertFalse(headers(Array(query.prefix(34 + 3))).isDNSQuery)
    }

    func testMalformedHeadersAreNotIP() {
        var shortIHL = FrameBuilder.frame(protocol: 17, destinationPort: 53)
        shortIHL[14] = 0x44  // IHL 4: shorter than the fixed header
        XCTAssertFalse(headers(shortIHL).isIP)
        var wrongVersion = FrameBuilder.frame(protocol: 17, destinationPort: 53)
        wrongVersion[14] = 0x65
        XCTAssertFalse(headers(wrongVersion).isIP)
        var shortTotal = FrameBuilder.frame(protocol: 17, destinationPort: 53)
        shortTotal[16] = 0
        shortTotal[17] = 10  // total length below the header length
        XCTAssertFalse(headers(shortTotal).isIP)
        var lyingLength = FrameBuilder.frame(protocol: 17, destinationPort: 53)
        lyingLength[16] = 0xFF
        lyingLength[17] = 0xFF  // claims 65535 bytes: cut to the buffer
        XCTAssertEqual(headers(lyingLength).packetEnd, lyingLength.count)
        var longExtension = FrameBuilder.frame(
            protocol: 17, from: FrameBuilder.client6, to: FrameBuilder.server6, destinationPort: 53, extensions: [.hopByHop])
        longExtension[54 + 1] = 200  // hop-by-hop claims 1608 bytes
        let parsed = headers(longExtension)
        XCTAssertFalse(parsed.hasPorts)
        XCTAssertFalse(parsed.isDNSQuery)
    }

    func testRandomBytesNeverCrashTheReader() {
        var random = EmulatorRandom(seed: 99)
        for _ in 0..<20_000 {
            let length = Int(random.next(below: 120))
            var bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            // Make a third of them look like IPv4 or IPv6 so the deeper paths run.
            if length >= 15 {
                switch random.next(below: 3) {
                case 0: bytes[12] = 0x08; bytes[13] = 0x00; bytes[14] = 0x40 | (bytes[14] & 0x0F)
                case 1: bytes[12] = 0x86; bytes[13] = 0xDD; bytes[14] = 0x60 | (bytes[14] & 0x0F)
                default: break
                }
            }
            let parsed = headers(bytes)
            XCTAssertLessThanOrEqual(parsed.packetEnd, length)
            if parsed.hasPorts { XCTAssertLessThanOrEqual(parsed.transportOffset + 4, length) }
        }
    }

    // MARK: DNS delay, end to end

    func testDNSQueriesGetTheExtraDelayOnTheUplinkOnly() {
        let delay = 20 * ms
        let dnsDelay = 300 * ms
        let options = DirectionOptions(direction: .uplink, dnsDelay: dnsDelay, seed: 1)
        let uplink = Harness(LinkConditions(delay: delay), options)
        uplink.offer(FrameBuilder.frame(protocol: 17, destinationPort: 53, id: 1), at: t0)
        uplink.offer(FrameBuilder.frame(protocol: 6, from: FrameBuilder.client6, to: FrameBuilder.server6, destinationPort: 53, id: 2), at: t0)
        uplink.offer(FrameBuilder.frame(protocol: 17, destinationPort: 443, id: 3), at: t0 + ms)
        uplink.drain()
        XCTAssertEqual(uplink.departureTimes, [1: t0 + delay + dnsDelay, 2: t0 + delay + dnsDelay, 3: t0 + ms + delay])
        XCTAssertEqual(uplink.departures.map(\.id), [3, 1, 2], "DNS has its own line; other frames overtake it")
        XCTAssertEqual(uplink.emulator.counters.dnsFrames, 2)

        var downOptions = options
        downOptions.direction = .downlink
        let downlink = Harness(LinkConditions(delay: delay), downOptions)
        downlink.offer(FrameBuilder.frame(protocol: 17, destinationPort: 53, id: 1), at: t0)
        downlink.drain()
        XCTAssertEqual(downlink.departureTimes, [1: t0 + delay], "no DNS delay on the downlink")
    }

    func testADNSDelayAloneConditionsOnlyDNS() {
        let harness = Harness(.unconditioned, DirectionOptions(direction: .uplink, dnsDelay: 100 * ms, seed: 1))
        XCTAssertFalse(harness.emulator.isPassThrough)
        XCTAssertEqual(harness.offer(FrameBuilder.frame(protocol: 17, destinationPort: 80), at: t0), .forwardNow)
        XCTAssertEqual(harness.offer(FrameBuilder.frame(protocol: 17, destinationPort: 53, id: 9), at: t0), .held)
        XCTAssertEqual(harness.emulator.nextDeparture, t0 + 100 * ms)
    }
}

import LinkEmulation
import Profiles
import XCTest

/// Duplication, corruption and ECN marking, checked on the bytes a receiver gets.
final class ImpairmentTests: XCTestCase {
    // MARK: Duplicate

    func testDuplicatesComeAtTheirRateRightBehindTheirOriginal() {
        let count = 50_000
        let harness = Harness(LinkConditions(duplicate: Chance(0.1)), seed: 21)
        for k in 0..<count { harness.offer(FrameBuilder.frame(protocol: 17, payload: 40, id: UInt64(k)), at: t0 + UInt64(k) * 1000) }
        harness.drain()
        let duplicated = Int(harness.emulator.counters.duplicatedFrames)
        assertWithinBound(
            Double(duplicated), expected: 0.1 * Double(count), standardDeviation: (Double(count) * 0.09).squareRoot(),
            "duplicates")
        XCTAssertEqual(harness.departures.count, count + duplicated, "each duplicate reached the wire")
        // In departure order every id appears once, or twice in a row, and the copies are identical.
        var index = 0
        var expectedID: UInt64 = 0
        while index < harness.departures.count {
            let departure = harness.departures[index]
            XCTAssertEqual(departure.id, expectedID)
            if index + 1 < harness.departures.count, harness.departures[index + 1].id == expectedID {
                XCTAssertEqual(harness.departures[index + 1].bytes, departure.bytes, "a duplicate is a copy")
                XCTAssertEqual(harness.departures[index + 1].time, departure.time, "and leaves with its original")
                index += 1
            }
            index += 1
            expectedID += 1
        }
        XCTAssertEqual(expectedID, UInt64(count))
    }

    // MARK: Corrupt

    /// Offers `frames` into `corrupt 20%` and checks every one that came out: unchanged, or exactly one bit
    /// flipped inside `allowed(frame)`; returns how many were corrupted.
    private func corruptionRun(
        _ frames: [[UInt8]], allowed: ([UInt8]) -> Range<Int>, checksumHolds: (([UInt8]) -> Bool)? = nil,
        file: StaticString = #filePath, line: UInt = #line
    ) -> Int {
        let harness = Harness(LinkConditions(corrupt: Chance(0.2)), seed: 31)
        for (k, frame) in frames.enumerated() { harness.offer(frame, at: t0 + UInt64(k) * 1000) }
        harness.drain()
        XCTAssertEqual(harness.departures.count, frames.count, file: file, line: line)
        var corrupted = 0
        for (original, departure) in zip(frames, harness.departures) {
            let received = departure.bytes
            XCTAssertEqual(received.count, original.count, file: file, line: line)
            var flippedBits: [Int] = []
            for index in original.indices where original[index] != received[index] {
                let difference = original[index] ^ received[index]
                for bit in 0..<8 where difference & (1 << bit) != 0 { flippedBits.append(index * 8 + bit) }
            }
            if flippedBits.isEmpty {
                if let checksumHolds { XCTAssertTrue(checksumHolds(received), "an intact frame verifies", file: file, line: line) }
                continue
            }
            corrupted += 1
            XCTAssertEqual(flippedBits.count, 1, "exactly one bit flipped", file: file, line: line)
            let byte = flippedBits[0] / 8
            XCTAssertTrue(allowed(original).contains(byte), "byte \(byte) outside \(allowed(original))", file: file, line: line)
            if let checksumHolds {
                XCTAssertFalse(checksumHolds(received), "the receiver's checksum catches the flip", file: file, line: line)
            }
        }
        XCTAssertEqual(UInt64(corrupted), harness.emulator.counters.corruptedFrames, file: file, line: line)
        return corrupted
    }

    func testCorruptionFlipsOneBitOfTheTransportSegmentAtItsRate() {
        let count = 5000
        let frames = (0..<count).map { FrameBuilder.frame(protocol: 17, payload: 100 + $0 % 50, id: UInt64($0)) }
        // Ethernet 14 + IPv4 20: the UDP segment starts at 34 and ends with the frame.
        let corrupted = corruptionRun(frames, allowed: { 34..<$0.count }, checksumHolds: { FrameBuilder.transportChecksumIsValid($0) })
        assertWithinBound(
            Double(corrupted), expected: 0.2 * Double(count), standardDeviation: (Double(count) * 0.16).squareRoot(), "corrupted")
    }

    func testCorruptionSparesEthernetPadding() {
        // A TCP segment with 2 payload bytes is a 56-byte frame padded to 60: the padding is not part of the
        // IP packet, a flip there would go unnoticed, so it is never hit.
        let frames = (0..<2000).map { _ in FrameBuilder.frame(protocol: 6, payload: 2, padTo: 60) }
        XCTAssertEqual(frames[0].count, 60)
        let corrupted = corruptionRun(frames, allowed: { _ in 34..<56 }, checksumHolds: { FrameBuilder.transportChecksumIsValid($0) })
        XCTAssertGreaterThan(corrupted, 0)
    }

    func testCorruptionOfIPv6SkipsTheExtensionHeaders() {
        let frames = (0..<2000).map {
            FrameBuilder.frame(
                protocol: 6, from: FrameBuilder.client6, to: FrameBuilder.server6, payload: 60, id: UInt64($0),
                extensions: [.hopByHop, .destinationOptions])
        }
        // 14 + 40 + 8 (hop-by-hop) + 16 (destination options): TCP starts at 78.
        let corrupted = corruptionRun(
            frames, allowed: { 78..<$0.count },
            checksumHolds: { FrameBuilder.transportChecksumIsValid($0, extensionBytes: 24, transportProtocol: 6) })
        XCTAssertGreaterThan(corrupted, 0)
    }

    func testCorruptionBehindVLANTagsAndOfNonIPFrames() {
        let tagged = (0..<2000).map { FrameBuilder.frame(protocol: 17, payload: 80, id: UInt64($0), vlanTags: 2) }
        // Two tags: IPv4 at 22, UDP at 42.
        XCTAssertGreaterThan(
            corruptionRun(
                tagged, allowed: { 42..<$0.count }, checksumHolds: { FrameBuilder.transportChecksumIsValid($0, networkOffset: 22) }),
            0)
        let arp = (0..<2000).map { FrameBuilder.arp(id: UInt64($0)) }
        XCTAssertGreaterThan(corruptionRun(arp, allowed: { 14..<$0.count }), 0, "anything after the Ethernet header")
    }

    // MARK: ECN

    /// Offers one frame with `ecn` bits into `loss 100% ecn`; returns the verdict and the bytes after.
    private func ecnRun(_ frame: [UInt8]) -> (verdict: FrameVerdict, bytes: [UInt8], counters: DirectionCounters) {
        let emulator = DirectionEmulator(
            conditions: LinkConditions(loss: .random(probability: 1, correlation: 0), ecn: true),
            options: DirectionOptions(direction: .uplink, seed: 1))
        var bytes = frame
        let verdict = bytes.withUnsafeMutableBytes { emulator.offer($0, at: t0) }
        return (verdict, bytes, emulator.counters)
    }

    func testECNMarksECNCapableIPv4AndKeepsTheHeaderChecksumValid() {
        for ecn: UInt8 in [0b10, 0b01] {
            let original = FrameBuilder.frame(protocol: 17, payload: 50, ecn: ecn)
            XCTAssertTrue(FrameBuilder.ipv4HeaderChecksumIsValid(original))
            let run = ecnRun(original)
            XCTAssertEqual(run.verdict, .forwardNow, "ECT(\(ecn == 0b10 ? 0 : 1)) is marked, not dropped")
            XCTAssertEqual(run.bytes[15] & 0b11, 0b11, "CE")
            XCTAssertEqual(run.bytes[15] >> 2, original[15] >> 2, "DSCP unchanged")
            XCTAssertTrue(FrameBuilder.ipv4HeaderChecksumIsValid(run.bytes), "the checksum recomputed over the header verifies")
            let changed = Set(original.indices.filter { run.bytes[$0] != original[$0] })
            XCTAssertTrue(changed.contains(15))
            XCTAssertTrue(changed.isSubset(of: [15, 24, 25]), "only the TOS byte and the header checksum change")
            XCTAssertEqual(run.counters.ecnMarkedFrames, 1)
            XCTAssertEqual(run.counters.lostFrames, 0)
        }
    }

    func testECNDropsFramesThatAreNotECNCapableAndPassesCE() {
        let notECT = ecnRun(FrameBuilder.frame(protocol: 17, payload: 50, ecn: 0))
        XCTAssertEqual(notECT.verdict, .dropped)
        XCTAssertEqual(notECT.counters.lostFrames, 1)
        XCTAssertEqual(notECT.counters.ecnMarkedFrames, 0)
        let congested = FrameBuilder.frame(protocol: 17, payload: 50, ecn: 0b11)
        let run = ecnRun(congested)
        XCTAssertEqual(run.verdict, .forwardNow, "already CE: netem counts it as marked and sends it")
        XCTAssertEqual(run.bytes, congested)
        XCTAssertEqual(ecnRun(FrameBuilder.arp()).verdict, .dropped, "not IP: dropped")
    }

    func testECNMarksIPv6InTheTrafficClass() {
        let original = FrameBuilder.frame(protocol: 6, from: FrameBuilder.client6, to: FrameBuilder.server6, payload: 30, ecn: 0b10)
        let run = ecnRun(original)
        XCTAssertEqual(run.verdict, .forwardNow)
        XCTAssertEqual((run.bytes[15] >> 4) & 0b11, 0b11, "CE in the traffic class's low bits")
        XCTAssertEqual(run.bytes[14], original[14], "version and the rest of the class unchanged")
        XCTAssertEqual(Array(run.bytes[16...]), Array(original[16...]))
        XCTAssertEqual(ecnRun(FrameBuilder.frame(protocol: 6, from: FrameBuilder.client6, to: FrameBuilder.server6, ecn: 0)).verdict, .dropped)
    }
}

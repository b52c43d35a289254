import Foundation
import LinkEmulation
import Profiles
import TestRandomness
import XCTest

/// The emulator as a whole: pass-through, swaps, read-back and counters.
final class EmulatorTests: XCTestCase {
    private func udp(_ id: UInt64, length: Int = 200) -> [UInt8] { FrameBuilder.frame(protocol: 17, payload: length - 42, id: id) }

    func testAnUnconditionedDirectionForwardsEverythingUntouched() {
        for conditions in [LinkConditions.unconditioned, LinkConditions(queueLimit: 10, ecn: true)] {
            let harness = Harness(conditions)
            XCTAssertTrue(harness.emulator.isPassThrough)
            for k: UInt64 in 0..<100 { XCTAssertEqual(harness.offer(udp(k), at: t0), .forwardNow) }
            XCTAssertNil(harness.emulator.nextDeparture)
            XCTAssertEqual(harness.departures.map(\.bytes), (0..<100).map { udp($0) })
            let counters = harness.emulator.counters
            XCTAssertEqual(counters.offeredFrames, 100)
            XCTAssertEqual(counters.passedFrames, 100)
            XCTAssertEqual(counters.untouchedFrames, 100)
            XCTAssertEqual(counters.passedBytes, 100 * 200)
        }
        XCTAssertFalse(Harness(LinkConditions(delay: 1)).emulator.isPassThrough)
        let targeted = DirectionOptions(direction: .uplink, targets: [try! TrafficTarget(to: "198.18.2.0/24")], seed: 1)
        XCTAssertFalse(Harness(.unconditioned, targeted).emulator.isPassThrough, "targets need classifying")
    }

    func testASwapKeepsHeldFramesOnTheirSchedule() {
        let harness = Harness(LinkConditions(delay: 100 * ms))
        for k: UInt64 in 0..<10 { harness.offer(udp(k), at: t0 + k * ms) }
        harness.advance(to: t0 + 20 * ms)
        let faster = LinkConditions(delay: 10 * ms)
        harness.emulator.replace(conditions: faster)
        XCTAssertEqual(harness.emulator.conditions, faster, "read-back")
        for k: UInt64 in 10..<15 { harness.offer(udp(k), at: t0 + 20 * ms + (k - 10) * ms) }
        harness.drain()
        let times = harness.departureTimes
        for k: UInt64 in 0..<10 { XCTAssertEqual(times[k], t0 + k * ms + 100 * ms, "held frame \(k) keeps its departure") }
        for k: UInt64 in 10..<15 { XCTAssertEqual(times[k], t0 + 20 * ms + (k - 10) * ms + 10 * ms, "new frame \(k) gets the new delay") }
        XCTAssertEqual(harness.departures.prefix(5).map(\.id), [10, 11, 12, 13, 14], "and overtakes, as after a netem change")
    }

    func testARateChangeDoesNotMoveScheduledDepartures() {
        // 1500 bytes at 1.2 Mbit/s: 10 ms each. Five queued at t0; at t0 + 1 ms the rate goes to 12 Mbit/s.
        let harness = Harness(LinkConditions(rate: 1_200_000))
        for k: UInt64 in 0..<5 { harness.offer(udp(k, length: 1500), at: t0) }
        harness.advance(to: t0 + ms)
        harness.emulator.replace(conditions: LinkConditions(rate: 12_000_000))
        harness.offer(udp(5, length: 1500), at: t0 + 2 * ms)
        harness.drain()
        let times = harness.departureTimes
        for k: UInt64 in 0..<5 { XCTAssertEqual(times[k], t0 + (k + 1) * 10 * ms) }
        XCTAssertEqual(times[5], t0 + 50 * ms + ms, "the new frame waits for the transmitter, then takes 1 ms")
    }

    func testASwapToNeutralForwardsAtOnceWhileHeldFramesDrain() {
        let harness = Harness(LinkConditions(delay: 50 * ms))
        harness.offer(udp(1), at: t0)
        harness.emulator.replace(conditions: .unconditioned)
        XCTAssertTrue(harness.emulator.isPassThrough)
        XCTAssertEqual(harness.offer(udp(2), at: t0 + ms), .forwardNow)
        harness.drain()
        XCTAssertEqual(harness.departureTimes, [1: t0 + 50 * ms, 2: t0 + ms])
    }

    func testOptionsReadBackAndTheProfileInitializer() throws {
        let options = DirectionOptions(
            direction: .downlink, dnsDelay: 5, targets: [try TrafficTarget(to: "2001:2::/48")], queueLimitBytes: 9000, seed: 77)
        let emulator = DirectionEmulator(conditions: LinkConditions(delay: 3), options: options)
        XCTAssertEqual(emulator.options, options)
        XCTAssertEqual(options.effectiveDNSDelay, 0, "no DNS delay on the downlink")
        var changed = options
        changed.queueLimitBytes = nil
        emulator.replace(conditions: LinkConditions(delay: 4), options: changed)
        XCTAssertEqual(emulator.options, changed)
        XCTAssertEqual(emulator.conditions, LinkConditions(delay: 4))

        let profile = Profile(
            name: "p", downlink: LinkConditions(rate: 1_000_000), uplink: LinkConditions(delay: 7), dnsDelay: 9)
        let uplink = DirectionEmulator(profile: profile, direction: .uplink, seed: 1)
        XCTAssertEqual(uplink.conditions, profile.uplink)
        XCTAssertEqual(uplink.options.dnsDelay, 9)
        XCTAssertEqual(DirectionEmulator(profile: profile, direction: .downlink, seed: 1).conditions, profile.downlink)
    }

    func testEveryFrameIsAccountedFor() throws {
        // A busy mix: loss, duplicates, corruption, a slow link with a short queue, jitter and reordering.
        let conditions = LinkConditions(
            rate: 2_000_000, delay: 20 * ms, jitter: 5 * ms, loss: .random(probability: 0.05, correlation: 0.3),
            duplicate: Chance(0.05), corrupt: Chance(0.05), reorder: Reorder(0.1, gap: 3), queueLimit: 20)
        let harness = Harness(conditions, DirectionOptions(direction: .uplink, dnsDelay: 30 * ms, seed: 4))
        var random = SplitMix64(seed: 3)
        var time = t0
        for k: UInt64 in 0..<20_000 {
            let port: UInt16 = random.next() % 10 == 0 ? 53 : 443
            harness.offer(FrameBuilder.frame(protocol: 17, destinationPort: port, payload: 50 + Int(random.next() % 1000), id: k), at: time)
            time += random.next() % (4 * ms)
            if k == 10_000 { harness.emulator.replace(conditions: LinkConditions(rate: 4_000_000, delay: 5 * ms, queueLimit: 50)) }
        }
        var counters = harness.emulator.counters
        XCTAssertEqual(
            counters.offeredFrames + counters.duplicatedFrames,
            counters.passedFrames + counters.lostFrames + counters.queueDroppedFrames + counters.backlogFrames)
        XCTAssertGreaterThan(counters.backlogFrames, 0)
        XCTAssertGreaterThan(counters.queueDroppedFrames, 0)
        XCTAssertGreaterThan(counters.dnsFrames, 0)
        harness.drain()
        counters = harness.emulator.counters
        XCTAssertEqual(counters.backlogFrames, 0)
        XCTAssertEqual(counters.backlogBytes, 0)
        XCTAssertEqual(counters.passedFrames, UInt64(harness.departures.count))
        XCTAssertEqual(counters.passedBytes, UInt64(harness.departures.reduce(0) { $0 + $1.bytes.count }))
        XCTAssertEqual(counters.offeredFrames + counters.duplicatedFrames, counters.passedFrames + counters.lostFrames + counters.queueDroppedFrames)
    }

    func testTheHeldBytesLimitProtectsMemory() {
        let options = DirectionOptions(direction: .uplink, heldBytesLimit: 10_000, seed: 1)
        let harness = Harness(LinkConditions(delay: second), options)
        let verdicts = (0..<10).map { harness.offer(udp(UInt64($0), length: 1500), at: t0) }
        XCTAssertEqual(verdicts.filter { $0 == .held }.count, 6, "6 × 1500 = 9000 bytes fit, a seventh would not")
        let counters = harness.emulator.counters
        XCTAssertEqual(counters.queueDroppedFrames, 4)
        XCTAssertEqual(counters.heldLimitDroppedFrames, 4)
    }
}

@testable import LinkEmulation
import Profiles
import XCTest

/// Each queue discipline against its known behaviour, on synthetic arrivals with seeded randomness: byte
/// and time limits, DropHead dropping the oldest, CoDel's drop schedule (interval/√count), PIE's drop
/// probability controller, RED's average and its probability between the thresholds, ARED's adaptation,
/// and the sojourn counters.
final class QueueDisciplineTests: XCTestCase {
    /// Drives an emulator with 1000-byte UDP frames (ids in their last 8 bytes) and records departures; a
    /// departure at ``DirectionEmulator/nextDeparture`` may send nothing (the transmitter took a frame).
    private final class Driver {
        let emulator: DirectionEmulator
        private(set) var departures: [(id: UInt64, time: UInt64)] = []

        init(_ conditions: LinkConditions, seed: UInt64 = 1) {
            emulator = DirectionEmulator(conditions: conditions, options: DirectionOptions(direction: .downlink, seed: seed))
        }

        @discardableResult
        func offer(_ id: UInt64, at time: UInt64, length: Int = 1000) -> FrameVerdict {
            advance(to: time)
            var frame = FrameBuilder.frame(protocol: 17, payload: length - 42, id: id)
            let verdict = frame.withUnsafeMutableBytes { emulator.offer($0, at: time) }
            if verdict == .forwardNow { departures.append((id, time)) }
            return verdict
        }

        func advance(to time: UInt64) {
            while let next = emulator.nextDeparture, next <= time {
                emulator.departDue(at: next) { bytes, due in departures.append((FrameBuilder.id(of: Array(bytes)), due)) }
            }
        }

        func drain() {
            while let next = emulator.nextDeparture { advance(to: next) }
        }

        var ids: [UInt64] { departures.map(\.id) }
        var counters: DirectionCounters { emulator.counters }
    }

    /// 1 Mbit/s: a 1000-byte frame takes 8 ms.
    private let rate: UInt64 = 1_000_000
    private let service = 8 * ms

    // MARK: DropTail and DropHead

    func testAByteLimitCountsBytes() {
        // 3000 bytes hold three 1000-byte frames (the one being sent counts until it has left), or six of
        // 500 bytes.
        for (length, accepted) in [(1000, 3), (500, 6)] {
            let driver = Driver(LinkConditions(rate: rate, queue: .dropTail(.bytes(3000))))
            for id in 0..<10 { driver.offer(UInt64(id), at: t0, length: length) }
            driver.drain()
            XCTAssertEqual(driver.ids, (0..<UInt64(accepted)).map { $0 }, "\(length)-byte frames")
            XCTAssertEqual(driver.counters.tailDroppedFrames, UInt64(10 - accepted))
            XCTAssertEqual(driver.counters.queueDroppedFrames, UInt64(10 - accepted))
        }
    }

    func testATimeLimitDropsFramesThatWouldWaitLonger() {
        // Frames of a burst wait 0, 8, 16, 24 ms for the transmitter; a 20 ms limit takes three, and the
        // sojourns recorded are those waits.
        let driver = Driver(LinkConditions(rate: rate, queue: .dropTail(.time(20 * ms))))
        for id in 0..<10 { driver.offer(UInt64(id), at: t0) }
        driver.drain()
        XCTAssertEqual(driver.ids, [0, 1, 2])
        XCTAssertEqual(driver.counters.tailDroppedFrames, 7)
        let sojourn = driver.counters.sojourn
        XCTAssertEqual(sojourn.count, 3)
        XCTAssertEqual(sojourn.maximum, 16 * ms)
        XCTAssertEqual(sojourn.sum, 24 * ms)
    }

    func testDropHeadDropsTheOldestWaitingFrame() {
        // Frame 0 goes to the transmitter at once; 1, 2, 3 fill the queue; 4 and 5 push out 1 and 2.
        let driver = Driver(LinkConditions(rate: rate, queue: LinkQueue(.dropHead, limit: .packets(3))))
        for id in 0..<6 { driver.offer(UInt64(id), at: t0 + UInt64(id) * 100_000) }
        driver.drain()
        XCTAssertEqual(driver.ids, [0, 3, 4, 5])
        XCTAssertEqual(driver.counters.headDroppedFrames, 2)
        XCTAssertEqual(driver.counters.queueDroppedFrames, 2)
        // Back to back at the rate: the dropped frames took no time.
        XCTAssertEqual(driver.departures.map(\.time), [1, 2, 3, 4].map { t0 + $0 * service })
        XCTAssertEqual(driver.counters.sojourn.count, 4)
    }

    // MARK: CoDel

    func testCoDelDropsOnItsControlLawSchedule() {
        // Twice the rate for 5 s: the queue grows, so the sojourn passes the 5 ms target at once and stays
        // above it. CoDel drops first one interval after that, then at intervals of 100 ms/√count.
        let driver = Driver(LinkConditions(rate: rate, queue: LinkQueue(.codel(CoDelSettings()), limit: .packets(10_000))))
        let gap = service / 2
        let count = 1250
        for id in 0..<count { driver.offer(UInt64(id), at: t0 + UInt64(id) * gap) }
        driver.drain()
        // A frame is dropped when the transmitter takes the next one delivered, which leaves one service
        // time later (no delay).
        let delivered = Dictionary(uniqueKeysWithValues: driver.departures.map { ($0.id, $0.time) })
        var drops: [UInt64] = []
        var nextDelivered: UInt64?
        for id in (0..<UInt64(count)).reversed() {
            if let time = delivered[id] { nextDelivered = time - service } else if let at = nextDelivered { drops.append(at) }
        }
        drops.reverse()
        XCTAssertEqual(UInt64(drops.count), driver.counters.codelDroppedFrames)
        XCTAssertGreaterThan(drops.count, 20)
        // Frame 2 is the first to wait more than 5 ms (taken at t0 + 2 services), but only one frame waits
        // behind it, which stops CoDel's clock (at most one maximum-size frame queued); frame 3, taken at
        // t0 + 3 services, waited 12 ms with two behind it. The first drop is the first take an interval
        // after that.
        let firstAbove = t0 + 3 * service
        XCTAssertGreaterThanOrEqual(drops[0], firstAbove + 100 * ms)
        XCTAssertLessThanOrEqual(drops[0], firstAbove + 100 * ms + service)
        for k in 1..<20 {
            let expected = Double(100 * ms) / Double(k).squareRoot()
            XCTAssertEqual(Double(drops[k] - drops[k - 1]), expected, accuracy: Double(service), "drop \(k + 1) after interval/√\(k)")
        }
    }

    func testCoDelLeavesAShortQueueAlone() {
        // At 90% of the rate the queue never stands above the target for an interval: nothing is dropped.
        let driver = Driver(LinkConditions(rate: rate, queue: LinkQueue(.codel(CoDelSettings()))))
        for id in 0..<2000 { driver.offer(UInt64(id), at: t0 + UInt64(id) * (service * 10 / 9)) }
        driver.drain()
        XCTAssertEqual(driver.counters.codelDroppedFrames, 0)
        XCTAssertEqual(driver.ids.count, 2000)
        XCTAssertLessThan(driver.counters.sojourn.p99 ?? .max, 5 * ms)
    }

    // MARK: PIE

    func testPIEsProbabilityFollowsRFC8033sUpdate() {
        // From 0 with a delay of 30 ms (15 ms above the 15 ms target, 30 ms up from the last): the step is
        // (0.125 × 0.015 + 1.25 × 0.030) scaled by 1/2048 (probability below 1e-6). Next, with the same
        // delay, only alpha's term remains, scaled by 1/128 (probability between 1e-5 and 1e-4).
        var pie = PIEController(PIESettings())
        pie.start(at: t0)
        pie.dequeued(sojourn: 30 * ms, at: t0, queueEmpty: false)
        pie.update(backlogBytes: 100_000)
        let first = (0.125 * 0.015 + 1.25 * 0.030) / 2048
        XCTAssertEqual(pie.probability, first, accuracy: 1e-12)
        pie.update(backlogBytes: 100_000)
        XCTAssertEqual(pie.probability, first + 0.125 * 0.015 / 128, accuracy: 1e-12)
        // Above 250 ms of delay the probability also rises by 2% per update; steps are at most 2% once it
        // is 10% or more.
        var fast = PIEController(PIESettings())
        fast.start(at: t0)
        fast.dequeued(sojourn: 300 * ms, at: t0, queueEmpty: false)
        fast.update(backlogBytes: 100_000)
        XCTAssertEqual(fast.probability, (0.125 * 0.285 + 1.25 * 0.3) / 2048 + 0.02, accuracy: 1e-12)
        for _ in 0..<20 { fast.update(backlogBytes: 100_000) }
        let before = fast.probability
        fast.update(backlogBytes: 100_000)
        XCTAssertGreaterThan(before, 0.1)
        XCTAssertEqual(fast.probability - before, min(0.02, 0.125 * 0.285) + 0.02, accuracy: 1e-12, "capped step plus the 250 ms step")
        // With no delay twice in a row it decays by 1/64 a step.
        fast.dequeued(sojourn: 0, at: t0 + second, queueEmpty: true)
        fast.update(backlogBytes: 0)
        let decaying = fast.probability
        fast.update(backlogBytes: 0)
        XCTAssertEqual(fast.probability, max(0, decaying - 0.125 * 0.015) * 63 / 64, accuracy: 1e-12)
    }

    func testPIEKeepsTheDelayNearItsTargetUnderOverload() {
        // Unresponsive traffic at twice the rate for 60 s: DropTail would hold the queue at its limit
        // (1000 frames, 8 s); PIE drops about half the frames and holds the sojourn near 15 ms.
        let driver = Driver(LinkConditions(rate: rate, queue: LinkQueue(.pie(PIESettings()))), seed: 3)
        let count = 15_000
        for id in 0..<count { driver.offer(UInt64(id), at: t0 + UInt64(id) * service / 2) }
        driver.drain()
        let counters = driver.counters
        XCTAssertGreaterThan(counters.pieDroppedFrames, UInt64(count / 3))
        XCTAssertEqual(counters.tailDroppedFrames, 0, "the hard limit is never reached")
        XCTAssertLessThan(counters.sojourn.median ?? .max, 45 * ms, "median sojourn within 3 × target")
    }

    // MARK: RED

    func testREDsAverageIsTheExponentialAverageOfTheBacklog() {
        // min 30 KB, max 90 KB: tc's burst (2 × 30 + 90)/3 = 50 packets gives Wlog 5 (W = 1/32). Arrivals
        // with 20 KB queued (below min: never dropped) move the average 1/32 of the way each time.
        let settings = REDSettings(minimum: 30_000, maximum: 90_000)
        XCTAssertEqual(settings.effectiveBurst, 50)
        XCTAssertEqual(settings.weightLog, 5)
        var red = REDController(settings, rate: rate)
        var random = EmulatorRandom(seed: 1)
        var expected = 0.0
        for k in 0..<50 {
            XCTAssertEqual(red.arrival(backlogBytes: 20_000, at: t0, &random), .enqueue)
            expected += (20_000 - expected) / 32
            XCTAssertEqual(red.average, expected, accuracy: 1e-9, "arrival \(k)")
        }
        // Idle for 800 ms at 1 Mbit/s (100 packets of 1000 bytes): the average decays by (31/32)^100.
        red.becameIdle(at: t0)
        _ = red.arrival(backlogBytes: 0, at: t0 + 800 * ms, &random)
        XCTAssertEqual(red.average, expected * pow(31.0 / 32, 100) * 31 / 32, accuracy: 1e-6)
    }

    func testREDDropsWithTheLinearProbabilityBetweenItsThresholds() {
        // Average held at 60 KB, halfway: pb = maxP / 2 = 5%. Floyd's count method spaces drops uniformly
        // over 1 to 1/pb arrivals, so the drop fraction is 2pb/(1 + pb). Above max every arrival is dropped,
        // below min none.
        let settings = REDSettings(minimum: 30_000, maximum: 90_000, probability: 0.1)
        var red = REDController(settings, rate: rate)
        var random = EmulatorRandom(seed: 5)
        for _ in 0..<20_000 { _ = red.arrival(backlogBytes: 60_000, at: t0, &random) }
        XCTAssertEqual(red.average, 60_000, accuracy: 10)
        let arrivals = 100_000
        var drops = 0
        for _ in 0..<arrivals where red.arrival(backlogBytes: 60_000, at: t0, &random) != .enqueue { drops += 1 }
        let pb = 0.1 * 0.5
        let fraction = 2 * pb / (1 + pb)
        // Drops are a renewal process with uniform gaps on 1...20: variance of the count ≈ n σ²/μ³.
        let mean = 10.5
        let variance = (400.0 - 1) / 12
        assertWithinBound(
            Double(drops), expected: Double(arrivals) * fraction, standardDeviation: (Double(arrivals) * variance / pow(mean, 3)).squareRoot(),
            "drops at pb 5%")
        var above = REDController(settings, rate: rate)
        for _ in 0..<20_000 { _ = above.arrival(backlogBytes: 95_000, at: t0, &random) }
        XCTAssertEqual(above.arrival(backlogBytes: 95_000, at: t0, &random), .forced)
        var below = REDController(settings, rate: rate)
        XCTAssertFalse((0..<10_000).contains { _ in below.arrival(backlogBytes: 29_000, at: t0, &random) != .enqueue })
    }

    func testAREDRaisesMaxPAboveItsBandAndLowersItBelow() {
        var red = REDController(REDSettings(minimum: 30_000, maximum: 90_000, probability: 0.02, adaptive: true), rate: rate)
        var random = EmulatorRandom(seed: 9)
        for _ in 0..<20_000 { _ = red.arrival(backlogBytes: 80_000, at: t0, &random) }
        // Above 66 KB (min + 0.6 × range): + min(1%, maxP/4) every 500 ms.
        red.adapt()
        XCTAssertEqual(red.maxProbability, 0.025, accuracy: 1e-12)
        red.adapt()
        XCTAssertEqual(red.maxProbability, 0.025 + 0.00625, accuracy: 1e-12)
        for _ in 0..<20_000 { _ = red.arrival(backlogBytes: 35_000, at: t0, &random) }
        let before = red.maxProbability
        red.adapt()
        XCTAssertEqual(red.maxProbability, before * 0.9, accuracy: 1e-12, "below 54 KB: × 0.9")
    }

    func testAREDInTheEmulatorDropsAndCounts() {
        // A RED queue in the emulator under twice its rate (unresponsive traffic) drops early, probabilistic
        // or forced, never at the hard limit: the queue stands near its maximum threshold (90 KB, 720 ms
        // at the rate; the instantaneous queue runs a little above the average), far below the hard limit
        // (360 KB, 2.9 s), where a DropTail queue of that limit would stand.
        let queue = LinkQueue(.red(REDSettings(minimum: 30_000, maximum: 90_000, adaptive: true)))
        XCTAssertEqual(queue.limit, .bytes(360_000))
        let driver = Driver(LinkConditions(rate: rate, queue: queue), seed: 4)
        for id in 0..<5000 { driver.offer(UInt64(id), at: t0 + UInt64(id) * service / 2) }
        driver.drain()
        let counters = driver.counters
        XCTAssertGreaterThan(counters.redDroppedFrames, 1500)
        XCTAssertEqual(counters.tailDroppedFrames, 0)
        XCTAssertGreaterThan(counters.redForcedDroppedFrames, 0)
        XCTAssertLessThan(counters.sojourn.p99 ?? .max, 720 * ms * 6 / 5)
        XCTAssertGreaterThan(counters.sojourn.median ?? 0, 240 * ms, "above the minimum threshold (30 KB, 240 ms)")
        XCTAssertEqual(counters.offeredFrames, counters.passedFrames + counters.queueDroppedFrames + counters.backlogFrames)
    }

    // MARK: Counters

    func testTheSojournHistogramReadsQuantilesWithinItsResolution() {
        var histogram = SojournHistogram()
        XCTAssertNil(histogram.median)
        for value in 1...1000 { histogram.record(UInt64(value) * ms) }
        let median = Double(histogram.median ?? 0)
        XCTAssertGreaterThanOrEqual(median, Double(500 * ms))
        XCTAssertLessThanOrEqual(median, Double(500 * ms) * 1.13)
        XCTAssertEqual(histogram.maximum, 1000 * ms)
        XCTAssertEqual(histogram.quantile(1), 1000 * ms)
        histogram.record(0)
        XCTAssertEqual(histogram.quantile(0), 1023)
    }

    func testASwapToDropTailSendsTheWaitingFramesInOrder() {
        let driver = Driver(LinkConditions(rate: rate, queue: LinkQueue(.codel(CoDelSettings()))))
        for id in 0..<20 { driver.offer(UInt64(id), at: t0) }
        driver.emulator.replace(conditions: LinkConditions(rate: rate, queue: .dropTail(.packets(100))))
        for id in 20..<25 { driver.offer(UInt64(id), at: t0 + ms) }
        driver.drain()
        XCTAssertEqual(driver.ids, (0..<25).map(UInt64.init))
        XCTAssertEqual(driver.departures.map(\.time), (1...25).map { t0 + UInt64($0) * service })
    }
}

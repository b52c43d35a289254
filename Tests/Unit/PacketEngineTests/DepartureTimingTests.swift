import CPacket
import EngineBenchIO
import LinkEmulation
import XCTest

@testable import PacketEngine

/// Where a direction's timing comes from, on a virtual clock: arrivals are the source's stamps, not the
/// read; the departure timer is armed early by the wake-up latency the loop measures on it, and the thread
/// spins from its wake-up to the due time; the kernel's stamps are converted to the monotonic clock and
/// refused when a clock step makes them implausible. No root, no sockets, no wall-clock bounds.
final class DepartureTimingTests: XCTestCase {
    private let millisecond: UInt64 = 1_000_000
    private let microsecond: UInt64 = 1000

    func testAFrameDepartsItsDelayAfterItsStampNotAfterItWasRead() {
        let direction = EmbeddedDirection(FixedDelayScheduler(delay: 10_000_000))
        let start = direction.wire.now
        // Stamped 300 µs before the loop reads it (the thread's wake-up, or a busy moment).
        direction.wire.push(TestFrame.udp(id: 1), arrival: start - 300 * microsecond)
        direction.wire.push(TestFrame.udp(id: 2))
        direction.run()
        XCTAssertEqual(direction.wire.timerDeadline, start - 300 * microsecond + 10 * millisecond, "the timer was armed from the read time")
        direction.advanceTime(to: start - 300 * microsecond + 10 * millisecond)
        XCTAssertEqual(direction.wire.sentIDs, [1])
        direction.advanceTime(to: start + 10 * millisecond)
        XCTAssertEqual(direction.wire.sentIDs, [1, 2], "a frame without a stamp counts from its read")
        XCTAssertEqual(direction.wire.sent.map(\.time), [start - 300 * microsecond + 10 * millisecond, start + 10 * millisecond])
        XCTAssertEqual(direction.statistics.lateness.maximum, 0)
    }

    /// One frame at a time through a 10 ms delay, the thread woken `latency` after each deadline the timer
    /// was armed for; returns the send times minus the due times.
    private func departures(
        _ direction: EmbeddedDirection<FixedDelayScheduler>, count: Int, latency: UInt64
    ) -> [Int64] {
        direction.wire.sleep = { wire in
            guard let deadline = wire.timerDeadline else { return false }
            wire.now = max(wire.now, deadline + latency)
            return true
        }
        var excess: [Int64] = []
        for id in 0..<count {
            direction.wire.forgetSent()
            direction.advanceTime(by: 3 * millisecond)
            let due = direction.wire.now + 10 * millisecond
            direction.wire.push(TestFrame.udp(id: UInt8(id)))
            direction.run()
            guard let sent = direction.wire.sent.first else {
                XCTFail("frame \(id) did not leave")
                return excess
            }
            excess.append(Int64(sent.time) - Int64(due))
        }
        return excess
    }

    func testTheTimerIsArmedEarlyByTheMeasuredWakeUpAndTheLoopDepartsOnTheDueTime() {
        let direction = EmbeddedDirection(FixedDelayScheduler(delay: 10_000_000), timing: .adaptiveLead(maximum: 200 * microsecond))
        // Each reading of the clock moves it 100 ns, so a spin on it ends.
        direction.wire.clockTick = 100
        XCTAssertEqual(direction.loop.lead, 50 * microsecond, "the lead before anything was measured")
        direction.wire.push(TestFrame.udp(id: 1))
        direction.run()
        XCTAssertEqual(direction.wire.timerDeadline, direction.loop.scheduler.nextDeparture.map { $0 - 50 * microsecond }, "not armed a lead early")

        let first = EmbeddedDirection(FixedDelayScheduler(delay: 10_000_000), timing: .adaptiveLead(maximum: 200 * microsecond))
        first.wire.clockTick = 100
        // Woken 30 µs late every time: within the first lead, and the lead learns it.
        let excess = departures(first, count: 40, latency: 30 * microsecond)
        XCTAssertEqual(excess.count, 40)
        XCTAssertTrue(excess.allSatisfy { $0 >= 0 }, "a frame left before it was due: \(excess)")
        XCTAssertTrue(excess.allSatisfy { $0 < 1000 }, "a frame left more than a few clock readings late: \(excess)")
        XCTAssertEqual(first.statistics.timerWakeups.count, 40, "every wake-up by the timer is measured")
        XCTAssertEqual(first.statistics.timerWakeups.quantile(0.5).map { $0 / microsecond }, 30)
        XCTAssertEqual(first.loop.lead, 32 * microsecond, "the lead is the 1 µs bucket above the wake-ups plus the margin")
        // Each departure is spun for the lead minus the wake-up: 20 µs for the first eight (the initial lead), 2 µs after.
        XCTAssertLessThan(first.statistics.departureSpin, 8 * 21 * microsecond + 32 * 3 * microsecond, "it spun longer than lead minus wake-up")
        XCTAssertGreaterThan(first.statistics.departureSpin, 8 * 19 * microsecond + 32 * 1 * microsecond, "it did not spin to the due time")

        // Woken 80 µs late from now on: the first departures are late by the difference, until the lead has learnt it.
        let later = departures(first, count: 20, latency: 80 * microsecond)
        XCTAssertGreaterThan(later[0], 40 * microsecond.signed, "the old lead covered a longer wake-up")
        XCTAssertEqual(first.loop.lead, 82 * microsecond)
        XCTAssertTrue(later.suffix(10).allSatisfy { $0 >= 0 && $0 < 1000 }, "still late after the lead had learnt: \(later)")

        // Never more than the maximum: beyond it frames are late by the rest, never early.
        let slow = departures(first, count: 20, latency: 500 * microsecond)
        XCTAssertEqual(first.loop.lead, 200 * microsecond)
        XCTAssertTrue(slow.suffix(10).allSatisfy { $0 >= 300 * microsecond.signed && $0 < 301 * microsecond.signed }, "\(slow)")
    }

    func testWithNothingDueSoonTheLoopSleepsInsteadOfSpinning() {
        let direction = EmbeddedDirection(FixedDelayScheduler(delay: 10_000_000), timing: .adaptiveLead(maximum: 200 * microsecond))
        direction.wire.clockTick = 100
        direction.wire.push(TestFrame.udp(id: 1))
        let readings = direction.wire.clockReadings
        XCTAssertFalse(direction.run())
        XCTAssertNotNil(direction.wire.timerDeadline, "a held frame did not arm the timer")
        XCTAssertLessThan(direction.wire.clockReadings - readings, 10, "it spun on the clock for a departure 10 ms away")
        XCTAssertEqual(direction.statistics.departureSpin, 0)
        // With nothing held it waits with no timer at all.
        direction.advanceTime(to: direction.wire.timerDeadline! + 50 * microsecond)
        XCTAssertEqual(direction.wire.sentIDs, [1])
        XCTAssertNil(direction.wire.timerDeadline)
        XCTAssertNil(direction.loop.armedDeadline)
    }

    func testTheEstimateFollowsTheRecentWakeUpsAndStaysWithinItsBounds() {
        let estimator = WakeLatencyEstimator(initialLead: 50 * microsecond, maximumLead: 150 * microsecond)
        for _ in 0..<(WakeLatencyEstimator.warmup - 1) { estimator.record(5 * microsecond) }
        XCTAssertEqual(estimator.lead, 50 * microsecond, "estimated from fewer samples than the warm-up")
        estimator.record(5 * microsecond)
        XCTAssertEqual(estimator.lead, 7 * microsecond)
        // A window of 20 µs wake-ups with 5 of its 128 (3.9%) at 100 µs: the lead covers the 95%, not the rest.
        for index in 0..<WakeLatencyEstimator.window { estimator.record(index % 26 == 0 ? 100 * microsecond : 20 * microsecond) }
        XCTAssertEqual(estimator.lead, 21 * microsecond + WakeLatencyEstimator.margin, "not the 95th percentile")
        // Slower wake-ups displace the old ones.
        for _ in 0..<WakeLatencyEstimator.window { estimator.record(60 * microsecond + 400) }
        XCTAssertEqual(estimator.lead, 61 * microsecond + WakeLatencyEstimator.margin)
        for _ in 0..<WakeLatencyEstimator.window { estimator.record(10 * millisecond) }
        XCTAssertEqual(estimator.lead, 150 * microsecond, "past the maximum")
        XCTAssertEqual(estimator.recorded, UInt64(WakeLatencyEstimator.warmup + 3 * WakeLatencyEstimator.window))
    }

    func testKernelStampsAreConvertedToTheMonotonicClockAndRefusedWhenImplausible() {
        // The wall clock 1,700,000,000 s ahead of the monotonic one.
        let offset: Int64 = 1_700_000_000 * 1_000_000_000
        let readAt: UInt64 = 5_000 * 1_000_000_000
        func convert(_ seconds: UInt32, _ nanoseconds: UInt32) -> UInt64? {
            KernelArrivalStamps.monotonic(seconds: seconds, nanoseconds: nanoseconds, offset: offset, readAt: readAt)
        }
        XCTAssertEqual(convert(1_700_004_999, 999_700_000), readAt - 300 * microsecond)
        XCTAssertEqual(convert(1_700_005_000, 0), readAt, "stamped at the very read")
        XCTAssertNil(convert(0, 0), "a missing stamp")
        XCTAssertNil(convert(1_700_005_000, 1), "a stamp after the read (the wall clock stepped back)")
        XCTAssertNil(convert(1_700_004_998, 999_999_999), "more than a second before the read (stepped forward)")
        XCTAssertEqual(convert(1_700_004_999, 0), readAt - KernelArrivalStamps.oldest, "exactly the oldest allowed")
        XCTAssertNil(convert(3, 0), "a stamp before the monotonic clock's start")

        // A wall-clock reading taken between two monotonic ones converts to a time between them (give or take
        // the offset's rounding); tried again when the thread was preempted between the clock readings.
        var stamps = KernelArrivalStamps()
        var between = false
        var now = timespec()
        for _ in 0..<20 where !between {
            stamps.refresh()
            let before = cpk_monotonic_ns()
            clock_gettime(CLOCK_REALTIME, &now)
            let after = cpk_monotonic_ns()
            let stamp = stamps.arrival(seconds: UInt32(now.tv_sec), nanoseconds: UInt32(now.tv_nsec), readAt: after + 1000)
            between = stamp + 1000 >= before && stamp <= after + 1000
        }
        XCTAssertTrue(between, "a stamp of now did not convert to now (offset \(stamps.offset))")
        _ = stamps.takeFallbacks()

        // A reading taken by a thread preempted between its clock readings (off by up to half the gap) does
        // not replace a tight one, unless it disagrees by more than both can be off: the wall clock stepped.
        var kept = KernelArrivalStamps()
        kept.take(5_000_000, uncertainty: 400)
        kept.take(5_003_000, uncertainty: 8000)
        XCTAssertEqual(kept.offset, 5_000_000, "a preempted reading replaced a tight one")
        kept.take(5_000_300, uncertainty: 300)
        XCTAssertEqual(kept.offset, 5_000_300, "a tight reading is always taken")
        kept.take(9_000_000, uncertainty: 8000)
        XCTAssertEqual(kept.offset, 9_000_000, "a step of the wall clock was not followed")
        XCTAssertEqual(kept.uncertainty, 8000)
        kept.take(9_004_000, uncertainty: 5000)
        XCTAssertEqual(kept.offset, 9_004_000, "a tighter reading than the kept one is taken")

        let monotonicNow = cpk_monotonic_ns()
        XCTAssertEqual(stamps.arrival(seconds: 0, nanoseconds: 0, readAt: monotonicNow), monotonicNow)
        XCTAssertEqual(stamps.takeFallbacks(), 1)
        XCTAssertEqual(stamps.takeFallbacks(), 0)
    }

    func testTheRingReportsTheStampTheKernelWroteInEachSlot() {
        let layout = RingLayout(frameBytes: 100, slots: 4, headroom: 0)
        let memory = UnsafeMutableRawPointer.allocate(byteCount: layout.bytes, alignment: 64)
        defer { memory.deallocate() }
        memory.initializeMemory(as: UInt8.self, repeating: 0, count: layout.bytes)
        var ring = MappedRing(memory: memory, layout: layout, headroom: 0)
        for slot in 0..<2 {
            let header = ring.slot(slot).assumingMemoryBound(to: tpacket2_hdr.self)
            header.pointee.tp_len = 60
            header.pointee.tp_snaplen = 60
            header.pointee.tp_mac = UInt16(RingGeometry.headerLength + 2)
            header.pointee.tp_sec = 1_700_000_000 + UInt32(slot)
            header.pointee.tp_nsec = 123_456 + UInt32(slot)
            header.pointee.tp_status = UInt32(TP_STATUS_USER | TP_STATUS_TS_SOFTWARE)
        }
        XCTAssertEqual(ring.take(upTo: 4), 2)
        XCTAssertEqual(ring.stamp(0).seconds, 1_700_000_000)
        XCTAssertEqual(ring.stamp(0).nanoseconds, 123_456)
        XCTAssertEqual(ring.stamp(1).seconds, 1_700_000_001)
        XCTAssertEqual(ring.stamp(1).nanoseconds, 123_457)
    }
}

extension UInt64 {
    fileprivate var signed: Int64 { Int64(self) }
}

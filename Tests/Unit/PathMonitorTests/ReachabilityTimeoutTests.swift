import Foundation
import LinkcondBase
import XCTest

@testable import PathMonitor

/// The RFC 6298 estimator, the state machine's two estimators, and the bounds, all with round trips given
/// as numbers: no clock, no sockets.
final class ReachabilityTimeoutTests: XCTestCase {
    private func estimator(minimum: Double = 0.5, maximum: Double = 5, granularity: Double = 0.2) -> RoundTripEstimator {
        RoundTripEstimator(minimum: minimum, maximum: maximum, granularity: granularity)
    }

    func testFirstSampleAndSmoothingFollowRFC6298() {
        var rto = estimator(minimum: 0, granularity: 0.01)
        XCTAssertEqual(rto.timeout, 5, "before any sample: the ceiling")
        XCTAssertNil(rto.smoothedRTT)
        rto.add(sample: 0.8)
        XCTAssertEqual(rto.smoothedRTT, 0.8)
        XCTAssertEqual(rto.rttVariation, 0.4, "R/2")
        XCTAssertEqual(rto.timeout, 0.8 + 4 * 0.4, accuracy: 1e-12, "SRTT + 4·RTTVAR")
        rto.add(sample: 0.4)
        // RTTVAR first, with the old SRTT: ¾·0.4 + ¼·|0.8 − 0.4| = 0.4; then SRTT = ⅞·0.8 + ⅛·0.4 = 0.75.
        XCTAssertEqual(rto.rttVariation ?? 0, 0.4, accuracy: 1e-12)
        XCTAssertEqual(rto.smoothedRTT ?? 0, 0.75, accuracy: 1e-12)
        XCTAssertEqual(rto.timeout, 0.75 + 1.6, accuracy: 1e-12)
    }

    func testGranularityFloorAndCeiling() {
        var steady = estimator()
        for _ in 0..<200 { steady.add(sample: 0.115) }
        XCTAssertEqual(steady.rttVariation ?? 1, 0, accuracy: 1e-9, "a steady link's variation decays away")
        XCTAssertEqual(steady.timeout, 0.5, "0.115 + 0.2 is below the 0.5 s floor")
        var edge = estimator()
        for _ in 0..<200 { edge.add(sample: 0.85) }
        XCTAssertEqual(edge.timeout, 1.05, accuracy: 1e-6, "SRTT + G once 4·RTTVAR is below G")
        XCTAssertEqual(edge.steadyTimeout(rtt: 0.85), 1.05, accuracy: 1e-12)
        var slow = estimator()
        slow.add(sample: 4)
        XCTAssertEqual(slow.timeout, 5, "4 + 4·2 is above the ceiling")
        let inverted = RoundTripEstimator(minimum: 3, maximum: 2, granularity: 0)
        XCTAssertEqual(inverted.minimum, 2, "a ceiling below the floor wins")
    }

    func testTimeoutsDoubleAndASampleRecomputes() {
        var rto = estimator()
        for _ in 0..<50 { rto.add(sample: 0.1) }
        XCTAssertEqual(rto.timeout, 0.5)
        rto.timedOut()
        XCTAssertEqual(rto.timeout, 1)
        XCTAssertEqual(rto.backoffs, 1)
        XCTAssertNotNil(rto.smoothedRTT, "one timeout keeps SRTT")
        rto.timedOut()
        XCTAssertEqual(rto.timeout, 2)
        XCTAssertNil(rto.smoothedRTT, "the second timeout in a row clears SRTT and RTTVAR")
        rto.timedOut()
        rto.timedOut()
        XCTAssertEqual(rto.timeout, 5, "capped at the ceiling")
        rto.add(sample: 0.85)
        XCTAssertEqual(rto.backoffs, 0)
        XCTAssertEqual(rto.smoothedRTT, 0.85, "a cleared estimator starts afresh")
        XCTAssertEqual(rto.timeout, 0.85 * 3, accuracy: 1e-12, "R + 4·R/2")
    }

    func testDNSAndTransportHaveTheirOwnEstimators() {
        var machine = ReachabilityStateMachine(settings: ReachabilitySettings())
        XCTAssertEqual(machine.timeouts, ProbeTimeouts(dns: 5, transport: 5, dnsPatience: 5, isAdaptive: true), "nothing measured")
        // DNS answers 3 s late (NLC "High Latency DNS"); TCP and HTTP take 1 ms.
        for _ in 0..<30 {
            _ = machine.record([ScriptedRound.dns(rtt: 3.0), ScriptedRound.tcp(rtt: 0.001), ScriptedRound.http(204, rtt: 0.001)])
        }
        XCTAssertEqual(machine.timeouts.transport, 0.5, "TCP and HTTP are compared with their own round trips")
        XCTAssertEqual(machine.timeouts.dns, 3.2, accuracy: 0.01, "DNS with its own: 3 s + G")
        XCTAssertEqual(machine.timeouts.longest, machine.timeouts.dns)
        XCTAssertEqual(machine.timeouts.dnsPatience, 5)
        // A timed-out connect backs off only the transport estimator.
        _ = machine.record([ScriptedRound.dns(rtt: 3.0), ScriptedRound.tcp(rtt: nil)])
        XCTAssertEqual(machine.timeouts.transport, 1)
        XCTAssertEqual(machine.timeouts.dns, 3.2, accuracy: 0.01)
        // A DNS timeout backs off only DNS (capped at the ceiling).
        _ = machine.record([ScriptedRound.dns(nil), ScriptedRound.tcp(rtt: 0.001), ScriptedRound.http(204, rtt: 0.001)])
        XCTAssertEqual(machine.timeouts.dns, 5)
        XCTAssertEqual(machine.timeouts.transport, 0.5, "a sample recomputes the backed-off timeout")
    }

    func testAmbiguousAndFailedProbesGiveNoSamples() {
        var machine = ReachabilityStateMachine(settings: ReachabilitySettings())
        // Karn: a connect the kernel retransmitted has an RTT but no sample.
        let retransmitted = ProbeResult(kind: .tcp, success: true, rtt: 1.1, address: ScriptedRound.server, time: 2)
        _ = machine.record([ScriptedRound.dns(rtt: 0.1), retransmitted, ScriptedRound.http(204, rtt: 0.1)])
        XCTAssertEqual(machine.transportEstimator.smoothedRTT, 0.1, "only the HTTP exchange was a sample")
        // A refused connect is neither a sample nor a timeout.
        let refused = ProbeResult(kind: .tcp, success: false, address: ScriptedRound.server, error: "connect: Connection refused", time: 2)
        _ = machine.record([ScriptedRound.dns(rtt: 0.1), refused])
        XCTAssertEqual(machine.transportEstimator.backoffs, 0)
        XCTAssertEqual(machine.dnsEstimator.smoothedRTT ?? 0, 0.1, accuracy: 1e-12)
    }

    func testFixedModeAlwaysUsesTheTimeout() {
        var machine = ReachabilityStateMachine(settings: ReachabilitySettings(timeout: 4, timeoutMode: .fixed))
        XCTAssertEqual(machine.timeouts, .fixed(4))
        XCTAssertFalse(machine.timeouts.isAdaptive)
        for _ in 0..<10 { _ = machine.record(ScriptedRound.online(rtt: 0.01)) }
        _ = machine.record(ScriptedRound.failure)
        XCTAssertEqual(machine.timeouts, .fixed(4), "neither samples nor timeouts move it")
    }

    func testBoundsForMeasuredLinks() {
        let settings = ReachabilitySettings()
        // LTE (NLC 50 + 65 ms), 3G (100 + 100 ms), Wi-Fi: the floor.
        for rtt in [0.115, 0.2, 0.002] {
            XCTAssertEqual(settings.steadyTimeout(rtt: rtt), 0.5, "\(rtt)")
            XCTAssertEqual(settings.detectionBound(rtt: rtt), 1 + 0.5 + 1 + 0.1, accuracy: 1e-9, "\(rtt)")
            XCTAssertLessThanOrEqual(settings.detectionBound(rtt: rtt), 3, "the issue's target")
        }
        // Edge: 0.85 s round trips: 1 + 1.05 + 2.1 + 0.1.
        XCTAssertEqual(settings.detectionBound(rtt: 0.85), 4.25, accuracy: 1e-9)
        // 3 s DNS delay: d₁ = 3.2 s, and the doubled 6.4 s is capped at 5.
        XCTAssertEqual(settings.detectionBound(rtt: 0.001, dnsRTT: 3.0), 1 + 3.2 + 5 + 0.1, accuracy: 1e-9)
        // Nothing measured: the ceiling.
        XCTAssertEqual(settings.detectionBound(probeTimeout: 5), settings.detectionBound, accuracy: 1e-12)
        XCTAssertEqual(settings.detectionBound(probeTimeout: 0.01), settings.detectionBound(probeTimeout: 0.5), "the floor")
        // Three rounds and a retry delay: 1 + 0.5 + 1 + 2 + 2 × 0.25 + 0.15.
        let three = ReachabilitySettings(timeoutMode: .adaptive(.init(retryDelay: 0.25)), failureThreshold: 3)
        XCTAssertEqual(three.detectionBound(probeTimeout: 0.5), 5.15, accuracy: 1e-9)
        // Fixed mode: the same on every link.
        let fixed = ReachabilitySettings(timeoutMode: .fixed)
        XCTAssertEqual(fixed.detectionBound(rtt: 0.115), 12.1, accuracy: 1e-9)
        XCTAssertEqual(fixed.steadyTimeout(rtt: 0.115), 5)
    }
}

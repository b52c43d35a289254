import Foundation
import LinkcondBase
import RouteNetlink
import XCTest

@testable import PathMonitor

/// Scripted round results, as a round engine would return them.
enum ScriptedRound {
    static let server = "198.19.0.2"

    static func dns(_ address: String? = server, rtt: Double = 0.002, time: UInt64 = 1) -> ProbeResult {
        address.map { ProbeResult(kind: .dns, success: true, rtt: rtt, address: $0, time: time, rttSample: rtt) }
            ?? ProbeResult(kind: .dns, success: false, error: "timed out after 5.0 s", time: time, timedOut: true)
    }

    static func tcp(rtt: Double?, address: String = server, time: UInt64 = 2) -> ProbeResult {
        rtt.map { ProbeResult(kind: .tcp, success: true, rtt: $0, address: address, time: time, rttSample: $0) }
            ?? ProbeResult(kind: .tcp, success: false, address: address, error: "timed out after 5.0 s", time: time, timedOut: true)
    }

    static func http(_ status: Int?, rtt: Double = 0.003, time: UInt64 = 3) -> ProbeResult {
        status.map { ProbeResult(kind: .http, success: true, rtt: rtt, httpStatus: $0, address: server, time: time, rttSample: rtt) }
            ?? ProbeResult(kind: .http, success: false, address: server, error: "timed out after 5.0 s", time: time, timedOut: true)
    }

    static func online(rtt: Double = 0.010, address: String = server) -> [ProbeResult] {
        [dns(address), tcp(rtt: rtt, address: address), http(204)]
    }

    static func portal(_ status: Int = 200, rtt: Double = 0.010) -> [ProbeResult] {
        [dns(), tcp(rtt: rtt), http(status)]
    }

    static func limited(rtt: Double = 0.010) -> [ProbeResult] {
        [tcp(rtt: rtt, time: 1), dns(nil, time: 2)]
    }

    static let failure: [ProbeResult] = [dns(nil), tcp(rtt: nil)]
}

final class ReachabilityStateMachineTests: XCTestCase {
    private func machine(_ settings: ReachabilitySettings = ReachabilitySettings()) -> ReachabilityStateMachine {
        ReachabilityStateMachine(settings: settings)
    }

    func testDefaultsAndBounds() {
        let settings = ReachabilitySettings()
        XCTAssertEqual(settings.interval, 1)
        XCTAssertEqual(settings.timeout, 5)
        XCTAssertEqual(settings.timeoutMode, .adaptive(.init(minimum: 0.5, margin: 0.2, retryDelay: 0)))
        XCTAssertEqual(settings.families, [.ipv4, .ipv6])
        XCTAssertEqual(settings.probedFamilies, [.ipv4, .ipv6])
        XCTAssertEqual(settings.failureThreshold, 2)
        XCTAssertEqual(settings.offlineBackoffInitial, 1)
        XCTAssertEqual(settings.offlineBackoffMaximum, 4)
        XCTAssertEqual(settings.qualityWindow, 20)
        XCTAssertEqual(settings.host, "server.linkcond.test")
        XCTAssertEqual(settings.path, "/generate_204")
        XCTAssertEqual(settings.port, 80)
        XCTAssertNil(settings.nameservers)
        XCTAssertEqual(settings.dnsPort, 53)
        // Adaptive, any link: 1 s + 5 s + 5 s (the second round's doubled timeout is capped at the ceiling)
        // to declare offline; 5 s + 4 s + 5 s to declare online again; 50 ms a round on top.
        XCTAssertEqual(ReachabilitySettings.roundAllowance, 0.05)
        XCTAssertEqual(ReachabilitySettings.detectionBound(), 11.1, accuracy: 1e-9)
        XCTAssertEqual(ReachabilitySettings.recoveryBound(), 14.1, accuracy: 1e-9)
        XCTAssertEqual(settings.detectionBound, ReachabilitySettings.detectionBound())
        XCTAssertEqual(settings.recoveryBound, ReachabilitySettings.recoveryBound())
        // Fixed: 2 × (1 s + 5 s), as before adaptive timeouts.
        let fixed = ReachabilitySettings(timeoutMode: .fixed)
        XCTAssertEqual(fixed.detectionBound, 12.1, accuracy: 1e-9)
        XCTAssertEqual(fixed.recoveryBound, 14.1, accuracy: 1e-9)

        let fast = ReachabilitySettings(interval: 0.5, timeout: 2, timeoutMode: .fixed, failureThreshold: 3, offlineBackoffMaximum: 8)
        XCTAssertEqual(ReachabilitySettings.detectionBound(fast), 3 * 2.55, accuracy: 1e-9)
        XCTAssertEqual(ReachabilitySettings.recoveryBound(fast), 12.1, accuracy: 1e-9)
        XCTAssertEqual(ReachabilitySettings.detectionBound(ReachabilitySettings(timeoutMode: .fixed, failureThreshold: 0)), 6.05,
                       accuracy: 1e-9, "a threshold below 1 counts as 1")
        XCTAssertEqual(ReachabilitySettings.detectionBound(ReachabilitySettings(failureThreshold: 0)), 6.05, accuracy: 1e-9)
    }

    func testBackoffDoublesToItsCap() {
        let settings = ReachabilitySettings()
        XCTAssertEqual((0..<6).map { settings.offlineBackoff(afterOfflineRounds: $0) }, [1, 2, 4, 4, 4, 4])
        let custom = ReachabilitySettings(offlineBackoffInitial: 0.5, offlineBackoffMaximum: 3)
        XCTAssertEqual((0..<5).map { custom.offlineBackoff(afterOfflineRounds: $0) }, [0.5, 1, 2, 3, 3])
        XCTAssertEqual(settings.offlineBackoff(afterOfflineRounds: 1_000_000), 4, "no overflow, no endless loop")
    }

    func testStartsUnknownAndTheFirstSuccessIsOnline() {
        var machine = machine()
        XCTAssertEqual(machine.state, .unknown)
        XCTAssertEqual(machine.nextDelay, 1)
        let evaluation = machine.record(ScriptedRound.online())
        XCTAssertEqual(evaluation.previousState, .unknown)
        XCTAssertEqual(evaluation.state, .online)
        XCTAssertEqual(evaluation.outcome, .online)
        XCTAssertEqual(evaluation.nextDelay, 1)
        XCTAssertEqual(evaluation.consecutiveFailures, 0)
        XCTAssertEqual(machine.lastKnownAddress, IPAddress("198.19.0.2"))
    }

    func testUnknownStaysUnknownUntilTheThreshold() {
        var machine = machine()
        let first = machine.record(ScriptedRound.failure)
        XCTAssertEqual(first.state, .unknown, "one failed round is not an outage")
        XCTAssertEqual(first.consecutiveFailures, 1)
        XCTAssertEqual(first.nextDelay, 0, "adaptive: below the threshold a failed round is retried at once")
        var fixed = self.machine(ReachabilitySettings(timeoutMode: .fixed))
        XCTAssertEqual(fixed.record(ScriptedRound.failure).nextDelay, 1, "fixed: below the threshold the interval applies")
        var patient = self.machine(ReachabilitySettings(timeoutMode: .adaptive(.init(retryDelay: 0.25))))
        XCTAssertEqual(patient.record(ScriptedRound.failure).nextDelay, 0.25)
        let second = machine.record(ScriptedRound.failure)
        XCTAssertEqual(second.state, .offline)
        XCTAssertEqual(second.previousState, .unknown)
        XCTAssertEqual(second.nextDelay, 1, "the first pause offline is the initial backoff")
    }

    func testThresholdCountsOnlyConsecutiveFailures() {
        var machine = machine(ReachabilitySettings(failureThreshold: 3))
        _ = machine.record(ScriptedRound.online())
        XCTAssertEqual(machine.record(ScriptedRound.failure).state, .online)
        XCTAssertEqual(machine.record(ScriptedRound.failure).state, .online)
        XCTAssertEqual(machine.record(ScriptedRound.online()).consecutiveFailures, 0, "a success resets the count")
        XCTAssertEqual(machine.record(ScriptedRound.failure).state, .online)
        XCTAssertEqual(machine.record(ScriptedRound.failure).state, .online)
        let third = machine.record(ScriptedRound.failure)
        XCTAssertEqual(third.state, .offline)
        XCTAssertEqual(third.consecutiveFailures, 3)

        var single = self.machine(ReachabilitySettings(failureThreshold: 1))
        XCTAssertEqual(single.record(ScriptedRound.failure).state, .offline)
    }

    func testOfflineBacksOffAndTheFirstSuccessIsOnlineAgain() {
        var machine = machine()
        _ = machine.record(ScriptedRound.online())
        var delays: [Double] = []
        var states: [ReachabilityState] = []
        for _ in 0..<7 {
            let evaluation = machine.record(ScriptedRound.failure)
            delays.append(evaluation.nextDelay)
            states.append(evaluation.state)
        }
        XCTAssertEqual(states, [.online, .offline, .offline, .offline, .offline, .offline, .offline])
        XCTAssertEqual(delays, [0, 1, 2, 4, 4, 4, 4], "a retry at once, then the offline backoff")
        let back = machine.record(ScriptedRound.online())
        XCTAssertEqual(back.previousState, .offline)
        XCTAssertEqual(back.state, .online)
        XCTAssertEqual(back.nextDelay, 1, "online rounds follow each other at the interval")
        // A new outage backs off from the start again.
        XCTAssertEqual(machine.record(ScriptedRound.failure).nextDelay, 0)
        XCTAssertEqual(machine.record(ScriptedRound.failure).nextDelay, 1)
        XCTAssertEqual(machine.record(ScriptedRound.failure).nextDelay, 2)
    }

    func testAnyOtherHTTPAnswerIsAPortalAtOnce() {
        var machine = machine()
        _ = machine.record(ScriptedRound.online())
        for status in [200, 302, 301, 307, 511, 500] {
            let evaluation = machine.record(ScriptedRound.portal(status))
            XCTAssertEqual(evaluation.state, .portal, "HTTP \(status)")
            XCTAssertEqual(evaluation.outcome, .portal)
            XCTAssertEqual(evaluation.nextDelay, 1)
        }
        XCTAssertEqual(machine.record(ScriptedRound.online()).state, .online)
        // From offline too, without waiting for a threshold.
        _ = machine.record(ScriptedRound.failure)
        _ = machine.record(ScriptedRound.failure)
        XCTAssertEqual(machine.state, .offline)
        XCTAssertEqual(machine.record(ScriptedRound.portal()).state, .portal)
    }

    func testLimitedNeedsTheThresholdAndUsesTheLatestRound() {
        var machine = machine()
        _ = machine.record(ScriptedRound.online())
        let first = machine.record(ScriptedRound.limited())
        XCTAssertEqual(first.outcome, .limited)
        XCTAssertEqual(first.state, .online, "below the threshold nothing changes")
        XCTAssertEqual(first.nextDelay, 0, "a limited round is a failed round: retried at once")
        let second = machine.record(ScriptedRound.limited())
        XCTAssertEqual(second.state, .limited)
        XCTAssertEqual(second.nextDelay, 1, "limited is not offline: no backoff")
        XCTAssertEqual(machine.lastKnownAddress, IPAddress("198.19.0.2"), "the last known address survives DNS failures")
        // IP stops working too: offline; and the other way round.
        XCTAssertEqual(machine.record(ScriptedRound.failure).state, .offline)
        XCTAssertEqual(machine.record(ScriptedRound.limited()).state, .limited)
        XCTAssertEqual(machine.record(ScriptedRound.online()).state, .online)
    }

    func testOutcomeOfResults() {
        typealias R = ScriptedRound
        XCTAssertEqual(ProbeOutcome(R.online()), .online)
        XCTAssertEqual(ProbeOutcome(R.portal(302)), .portal)
        XCTAssertEqual(ProbeOutcome(R.limited()), .limited)
        XCTAssertEqual(ProbeOutcome(R.failure), .failure)
        XCTAssertEqual(ProbeOutcome([]), .failure)
        XCTAssertEqual(ProbeOutcome([R.dns(), R.tcp(rtt: nil)]), .failure, "DNS alone is not enough")
        XCTAssertEqual(ProbeOutcome([R.dns(), R.tcp(rtt: 0.01), R.http(nil)]), .failure, "no HTTP answer")
        XCTAssertEqual(ProbeOutcome([R.dns(nil)]), .failure, "DNS failed and no known address to try")
        XCTAssertEqual(ProbeOutcome([R.tcp(rtt: 0.01), R.http(204)]), .online, "an IP literal needs no DNS")
        XCTAssertEqual(ProbeOutcome([R.tcp(rtt: 0.01, time: 1), R.tcp(rtt: 0.01, time: 2), R.dns(nil, time: 3)]), .limited,
                       "link checks that kept working")
        XCTAssertEqual(ProbeOutcome([R.tcp(rtt: 0.01, time: 1), R.tcp(rtt: nil, time: 2), R.dns(nil, time: 3)]), .failure,
                       "the last connect to end failed: the link stopped carrying traffic")
        XCTAssertFalse(ProbeOutcome.failure.gotThrough)
        XCTAssertTrue(ProbeOutcome.limited.gotThrough)
    }

    func testQualityThresholds() {
        XCTAssertEqual(LinkQuality.classify(medianRTT: nil, loss: nil), .unknown)
        XCTAssertEqual(LinkQuality.classify(medianRTT: nil, loss: 1), .minimal, "nothing got through")
        XCTAssertEqual(LinkQuality.classify(medianRTT: 0.002, loss: 0), .good, "Wi-Fi")
        XCTAssertEqual(LinkQuality.classify(medianRTT: 0.115, loss: 0), .good, "LTE: 50 + 65 ms")
        XCTAssertEqual(LinkQuality.classify(medianRTT: 0.150, loss: 0.05), .good, "both limits inclusive")
        XCTAssertEqual(LinkQuality.classify(medianRTT: 0.010, loss: 0.10), .moderate, "fast but lossy")
        XCTAssertEqual(LinkQuality.classify(medianRTT: 0.200, loss: 0), .moderate, "3G: 100 + 100 ms")
        XCTAssertEqual(LinkQuality.classify(medianRTT: 0.500, loss: 0.20), .moderate)
        XCTAssertEqual(LinkQuality.classify(medianRTT: 0.840, loss: 0), .minimal, "Edge: 400 + 440 ms")
        XCTAssertEqual(LinkQuality.classify(medianRTT: 0.010, loss: 0.25), .minimal)
    }

    func testQualityWindowSamples() {
        var machine = machine(ReachabilitySettings(qualityWindow: 4))
        let first = machine.record(ScriptedRound.online(rtt: 0.010))
        XCTAssertEqual(first.medianRTT, 0.010)
        XCTAssertEqual(first.lossFraction, 0)
        XCTAssertEqual(first.windowRounds, 1)
        XCTAssertEqual(first.quality, .good)
        XCTAssertEqual(machine.record(ScriptedRound.online(rtt: 0.030)).medianRTT ?? 0, 0.020, accuracy: 1e-12, "even count: the mean of the middle two")
        XCTAssertEqual(machine.record(ScriptedRound.online(rtt: 0.020)).medianRTT, 0.020, "odd count: the middle")
        let fourth = machine.record(ScriptedRound.failure)
        XCTAssertEqual(fourth.medianRTT ?? 0, 0.020, accuracy: 1e-12, "failed rounds carry no RTT")
        XCTAssertEqual(fourth.lossFraction, 0.25)
        XCTAssertEqual(fourth.quality, .minimal, "25 % loss")
        // The window slides: the 10 ms round falls out.
        let fifth = machine.record(ScriptedRound.limited(rtt: 0.400))
        XCTAssertEqual(fifth.windowRounds, 4)
        XCTAssertEqual(fifth.medianRTT ?? 0, 0.030, accuracy: 1e-12, "30, 20, 400 ms: the median is 30 ms")
        XCTAssertEqual(fifth.lossFraction, 0.25, "a limited round got through")
        let sixth = machine.record(ScriptedRound.online(rtt: 0.040))
        XCTAssertEqual(sixth.medianRTT ?? 0, 0.040, accuracy: 1e-12, "20, 400, 40 ms once 30 ms fell out")
        // All failures: minimal, no RTT, 100 % loss.
        for _ in 0..<4 { _ = machine.record(ScriptedRound.failure) }
        let dead = machine.record(ScriptedRound.failure)
        XCTAssertNil(dead.medianRTT)
        XCTAssertEqual(dead.lossFraction, 1)
        XCTAssertEqual(dead.quality, .minimal)
    }

    func testLastKnownAddressFollowsDNS() {
        var machine = machine()
        XCTAssertNil(machine.lastKnownAddress)
        _ = machine.record(ScriptedRound.failure)
        XCTAssertNil(machine.lastKnownAddress)
        _ = machine.record(ScriptedRound.online(address: "198.19.0.9"))
        XCTAssertEqual(machine.lastKnownAddress, IPAddress("198.19.0.9"))
        _ = machine.record(ScriptedRound.online(address: "2001:2:0:100::2"))
        XCTAssertEqual(machine.lastKnownAddress, IPAddress("2001:2:0:100::2"))
    }

    func testUpdatesAreCodable() throws {
        let ipv6 = FamilyReachability(
            family: .ipv6, state: .offline, previousState: .online, outcome: .failure, quality: .minimal, medianRTT: nil,
            lossFraction: 1, windowRounds: 2, consecutiveFailures: 2, rounds: 2,
            timeouts: ProbeTimeouts(dns: 1, transport: 1, dnsPatience: 5, isAdaptive: true))
        let update = ReachabilityUpdate(
            state: .offline, previousState: .online, outcome: .failure, quality: .minimal, medianRTT: nil,
            lossFraction: 1, windowRounds: 2, results: ScriptedRound.failure, consecutiveFailures: 2, nextRoundIn: 1,
            time: 42, generation: 3, round: 7, family: .ipv6, ipv6: ipv6)
        XCTAssertTrue(update.isStateChange)
        XCTAssertEqual(update.reachability(of: .ipv6), ipv6)
        XCTAssertNil(update.reachability(of: .ipv4))
        let decoded = try JSONDecoder().decode(ReachabilityUpdate.self, from: JSONEncoder().encode(update))
        XCTAssertEqual(decoded, update)
        let text = String(decoding: try JSONEncoder().encode(update.results[0]), as: UTF8.self)
        XCTAssertTrue(text.contains("\"kind\":\"dns\""), text)
        let whole = String(decoding: try JSONEncoder().encode(update), as: UTF8.self)
        XCTAssertTrue(whole.contains("\"family\":\"ipv6\""), whole)
        XCTAssertTrue(whole.contains("\"ipv6\":{"), "per-family objects under their names: \(whole)")
        XCTAssertTrue(whole.contains("\"isSingleFamily\":false"), whole)
    }
}

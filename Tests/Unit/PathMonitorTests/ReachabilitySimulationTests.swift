import Foundation
import LinkcondBase
import TestRandomness
import XCTest

@testable import PathMonitor

/// A link as the simulation sees it: how long each exchange takes (seconds), or that nothing gets through.
struct SimulatedLink {
    var dns: Double
    var connect: Double
    var http: Double
    var lost = false

    /// NLC LTE: 50 + 65 ms; the rates make serialization negligible.
    static let lte = SimulatedLink(dns: 0.1152, connect: 0.1151, http: 0.1160)
    /// NLC 3G: 100 + 100 ms, 780/330 kbit/s: a SYN 1.8 + 0.8 ms, a query 1.9 + 1 ms, the request 5 ms + the reply 1.3 ms.
    static let threeG = SimulatedLink(dns: 0.2029, connect: 0.2026, http: 0.2063)
    /// NLC Edge: 400 + 440 ms, 240/200 kbit/s: a SYN 3 + 2.5 ms, a query 3.2 + 3.3 ms, the request 8.2 ms + the reply 4.3 ms.
    static let edge = SimulatedLink(dns: 0.8465, connect: 0.8455, http: 0.8525)
    /// An unconditioned veth pair.
    static let wifi = SimulatedLink(dns: 0.0003, connect: 0.0002, http: 0.0005)
    /// NLC High Latency DNS: DNS 3 s late, nothing else.
    static let slowDNS = SimulatedLink(dns: 3.0003, connect: 0.0002, http: 0.0005)
    static let dead = SimulatedLink(dns: 0, connect: 0, http: 0, lost: true)
}


/// The prober's state machine driven through simulated time: a model of one family's rounds that follows
/// the timing rules ``NetworkProbeRound`` documents, over a link that changes at given times. Time is
/// injected, so the bounds are checked without a clock and without sockets.
struct ReachabilitySimulation {
    /// The link from each time on, in time order.
    var timeline: [(from: Double, link: SimulatedLink)]
    var settings: ReachabilitySettings
    /// Up to this much extra time per exchange (the prober's thread waking up, the server), seeded.
    var jitter = 0.0
    var random = SplitMix64(seed: 42)
    /// Per round, for what is not probing (opening sockets, judging).
    static let overhead = 0.002

    struct Round {
        var start: Double
        var end: Double
        var state: ReachabilityState
        var outcome: ProbeOutcome
        /// The timeouts the round had.
        var timeouts: ProbeTimeouts
    }

    func link(at time: Double) -> SimulatedLink {
        timeline.last { $0.from <= time }?.link ?? timeline[0].link
    }

    /// True when an exchange from `start` lasting `duration` meets a lost period.
    func isLost(_ start: Double, _ duration: Double) -> Bool {
        if link(at: start).lost || link(at: start + duration).lost { return true }
        return timeline.contains { $0.from > start && $0.from < start + duration && $0.link.lost }
    }

    private mutating func exchange(_ start: Double, _ rtt: KeyPath<SimulatedLink, Double>, timeout: Double) -> Double? {
        let duration = link(at: start)[keyPath: rtt] + (jitter > 0 ? Double.random(in: 0...jitter, using: &random) : 0)
        return isLost(start, duration) || duration > timeout ? nil : duration
    }

    private static func result(_ kind: ProbeResult.Kind, _ start: Double, _ duration: Double?, ended: Double, status: Int? = nil) -> ProbeResult {
        ProbeResult(
            kind: kind, success: duration != nil, rtt: duration, httpStatus: duration == nil ? nil : status,
            address: ScriptedRound.server, time: UInt64(ended * 1e9), timedOut: duration == nil, rttSample: duration)
    }

    /// One round from `start`: its results and when it ends.
    mutating func round(start: Double, lastKnown: IPAddress?, timeouts t: ProbeTimeouts) -> ([ProbeResult], Double) {
        var results: [ProbeResult] = []
        // Step 1: DNS and the connect to the known address side by side.
        let connect = lastKnown == nil ? nil : exchange(start, \.connect, timeout: t.transport)
        let connectEnd = lastKnown == nil ? start : start + (connect ?? t.transport)
        if lastKnown != nil { results.append(Self.result(.tcp, start, connect, ended: connectEnd)) }
        let patient = t.isAdaptive && connect != nil && connectEnd <= start + t.dns && t.dnsPatience > t.dns
        var dns = exchange(start, \.dns, timeout: patient ? t.dnsPatience : t.dns)
        var dnsEnd = start + (dns ?? (patient ? t.dnsPatience : t.dns))
        if patient, start + (dns ?? t.dnsPatience) > start + t.dns {
            // Link checks from the DNS timeout on, one every min(transport, interval), while DNS is pending.
            let spacing = max(0.01, min(t.transport, settings.interval))
            var check = start + t.dns
            while check < dnsEnd {
                let duration = exchange(check, \.connect, timeout: t.transport)
                let ended = check + (duration ?? t.transport)
                if duration == nil && ended < dnsEnd {
                    dns = nil
                    dnsEnd = ended
                }
                if ended <= dnsEnd { results.append(Self.result(.tcp, check, duration, ended: ended)) }
                check += spacing
            }
        }
        results.append(Self.result(.dns, start, dns, ended: dnsEnd))
        results.sort { $0.time < $1.time }
        var end = max(dnsEnd, connectEnd)
        guard dns != nil, lastKnown == nil || connect != nil else { return (results, end) }
        // Step 2: a fresh connect when there was none, then the exchange.
        let stepDeadline = end + t.transport
        if lastKnown == nil {
            let fresh = exchange(end, \.connect, timeout: t.transport)
            end += fresh ?? t.transport
            results.append(Self.result(.tcp, end, fresh, ended: end))
            guard fresh != nil else { return (results, end) }
        }
        let httpTimeout = t.isAdaptive ? t.transport : stepDeadline - end
        let http = exchange(end, \.http, timeout: httpTimeout)
        end += http ?? httpTimeout
        results.append(Self.result(.http, end, http, ended: end, status: 204))
        return (results, end)
    }

    /// Runs rounds until `until`; returns them.
    mutating func run(until: Double) -> [Round] {
        var machine = ReachabilityStateMachine(settings: settings)
        var rounds: [Round] = []
        var time = 0.0
        while time < until {
            let timeouts = machine.timeouts
            let (results, end) = round(start: time, lastKnown: machine.lastKnownAddress, timeouts: timeouts)
            let evaluation = machine.record(results)
            let ended = end + Self.overhead
            rounds.append(Round(start: time, end: ended, state: evaluation.state, outcome: evaluation.outcome, timeouts: timeouts))
            time = ended + evaluation.nextDelay
        }
        return rounds
    }
}

final class ReachabilitySimulationTests: XCTestCase {
    private let settings = ReachabilitySettings()

    /// 100 % loss from every moment of a 3 s stretch (5 ms apart) after `warmUp` s on `link`: the worst
    /// detection seen, and the bound for the timeouts in force as the loss began.
    private func worstDetection(on link: SimulatedLink, settings: ReachabilitySettings, warmUp: Double = 30) -> (seconds: Double, bound: Double) {
        var worst = 0.0
        var bound = 0.0
        for step in 0..<600 {
            let loss = warmUp + Double(step) * 0.005
            var simulation = ReachabilitySimulation(timeline: [(0, link), (loss, .dead)], settings: settings)
            let rounds = simulation.run(until: loss + 30)
            let before = rounds.filter { $0.end <= loss }
            XCTAssertFalse(before.dropFirst().contains { $0.state != .online }, "a healthy period was not online")
            guard let offline = rounds.first(where: { $0.end > loss && $0.state == .offline }) else {
                XCTFail("never offline after loss at \(loss)")
                return (.infinity, 0)
            }
            let inForce = rounds.last { $0.start <= loss }?.timeouts.longest ?? settings.timeout
            let allowed = settings.detectionBound(probeTimeout: inForce)
            XCTAssertLessThanOrEqual(offline.end - loss, allowed, "loss at \(loss)")
            if offline.end - loss > worst { worst = offline.end - loss }
            bound = max(bound, allowed)
        }
        return (worst, bound)
    }

    func testLossOnLTEClassLinksIsOfflineWithinThreeSeconds() {
        for (name, link) in [("lte", SimulatedLink.lte), ("3g", .threeG), ("wifi", .wifi)] {
            let (worst, bound) = worstDetection(on: link, settings: settings)
            XCTAssertEqual(bound, 2.6, accuracy: 1e-9, name)
            XCTAssertLessThanOrEqual(worst, 3, name)
            XCTAssertGreaterThan(worst, 2.4, "\(name): the sweep reaches the worst case, so the bound is nearly tight")
            print("simulation: \(name) 100% loss → offline within \(String(format: "%.3f", worst)) s (bound \(bound) s)")
        }
    }

    func testLossOnEdgeAndBehindSlowDNSIsOfflineWithinTheBound() {
        let (edge, edgeBound) = worstDetection(on: .edge, settings: settings)
        XCTAssertLessThanOrEqual(edgeBound, 4.3)
        // One DNS sample a round (about 4 s): RTTVAR needs a while to decay from its first R/2.
        let (slow, slowBound) = worstDetection(on: .slowDNS, settings: settings, warmUp: 200)
        XCTAssertEqual(slowBound, 9.3, accuracy: 0.01)
        print(String(format: "simulation: edge → offline within %.3f s (bound %.2f s); slow DNS within %.3f s (bound %.2f s)", edge, edgeBound, slow, slowBound))
    }

    func testFixedModeTakesTheSameTimeOnEveryLink() {
        let fixed = ReachabilitySettings(timeoutMode: .fixed)
        let (worst, bound) = worstDetection(on: .lte, settings: fixed)
        XCTAssertEqual(bound, 12.1, accuracy: 1e-9)
        XCTAssertGreaterThan(worst, 11.5, "fixed 5 s timeouts: about 12 s even on LTE")
    }

    func testHealthyLinksAreNeverOfflineNorLimited() {
        for (name, link) in [("lte", SimulatedLink.lte), ("3g", .threeG), ("edge", .edge), ("wifi", .wifi), ("slow-dns", .slowDNS)] {
            for jitter in [0.0, 0.02, 0.05] {
                var simulation = ReachabilitySimulation(timeline: [(0, link)], settings: settings, jitter: jitter)
                let rounds = simulation.run(until: 3600)
                XCTAssertEqual(rounds.first?.state, .online, name)
                XCTAssertTrue(rounds.allSatisfy { $0.state == .online }, "\(name), jitter \(jitter): \(Set(rounds.map(\.state)))")
                let failed = rounds.filter { $0.outcome != .online }.count
                XCTAssertLessThanOrEqual(failed, jitter == 0 ? 0 : rounds.count / 100, "\(name), jitter \(jitter): \(failed) failed rounds")
            }
        }
    }

    func testALinkThatGetsSlowerIsNeverOffline() {
        // Abrupt changes with no loss: the first round after may fail, its retry (doubled timeouts) succeeds.
        for (from, to) in [(SimulatedLink.lte, SimulatedLink.edge), (.wifi, .edge), (.lte, .slowDNS), (.wifi, .slowDNS), (.edge, .slowDNS)] {
            var simulation = ReachabilitySimulation(timeline: [(0, from), (60, to)], settings: settings)
            let rounds = simulation.run(until: 300)
            XCTAssertTrue(rounds.allSatisfy { $0.state == .online }, "\(from) → \(to): \(rounds.filter { $0.state != .online }.map(\.start))")
        }
    }

    func testTheTunnel() {
        // LTE, 25 s of 100 % loss, 3G, LTE: the shipped scenario.
        var simulation = ReachabilitySimulation(timeline: [(0, .lte), (10, .dead), (35, .threeG), (50, .lte)], settings: settings)
        let rounds = simulation.run(until: 60)
        let offline = rounds.first { $0.state == .offline }
        XCTAssertLessThanOrEqual((offline?.end ?? .infinity) - 10, 2.6)
        let back = rounds.first { $0.end > 35 && $0.state == .online }
        XCTAssertLessThanOrEqual((back?.end ?? .infinity) - 35, settings.recoveryBound)
        XCTAssertTrue(rounds.filter { $0.start > (back?.end ?? 60) }.allSatisfy { $0.state == .online }, "online on 3G and LTE again")
        print(String(format: "simulation: tunnel offline after %.3f s, online %.3f s after 3G", (offline?.end ?? 0) - 10, (back?.end ?? 0) - 35))
    }
}

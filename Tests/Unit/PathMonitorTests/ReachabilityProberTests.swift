import Dispatch
import Foundation
import Glibc
import LinkcondBase
import RouteNetlink
import Synchronization
import XCTest

@testable import PathMonitor

/// A round engine that plays a script per family, one entry per round; after its script a family repeats
/// its `after`. With `holdRounds`, each round of those families waits until `release()` (or until the
/// prober cancels it).
final class ScriptedEngine: ProbeRoundEngine {
    private struct State {
        var scripts: [ReachabilityFamily: [[ProbeResult]]]
        var requests: [ProbeRoundRequest] = []
        var released = 0
        var started = 0
    }

    private let state: Mutex<State>
    private let after: [ReachabilityFamily: [ProbeResult]]
    private let held: Set<ReachabilityFamily>

    /// The same script and `after` for every family.
    convenience init(_ script: [[ProbeResult]], after: [ProbeResult] = ScriptedRound.online(), holdRounds: Bool = false) {
        self.init(families: [.ipv4: script, .ipv6: script], after: [.ipv4: after, .ipv6: after], held: holdRounds ? [.ipv4, .ipv6] : [])
    }

    init(families scripts: [ReachabilityFamily: [[ProbeResult]]], after: [ReachabilityFamily: [ProbeResult]], held: Set<ReachabilityFamily> = []) {
        state = Mutex(State(scripts: scripts))
        self.after = after
        self.held = held
    }

    /// Every request so far, in the order the rounds started.
    var requests: [ProbeRoundRequest] { state.withLock { $0.requests } }
    /// The `lastKnownAddress` of each round so far.
    var lastKnownAddresses: [IPAddress?] { requests.map(\.lastKnownAddress) }
    /// Rounds started so far.
    var roundsStarted: Int { state.withLock { $0.started } }

    /// Lets one held round finish.
    func release() { state.withLock { $0.released += 1 } }
    /// Lets every held round finish, now and from now on.
    func releaseAll() { state.withLock { $0.released = Int.max } }

    func run(_ request: ProbeRoundRequest, isCancelled: () -> Bool) -> [ProbeResult] {
        let round = state.withLock { state -> Int in
            state.requests.append(request)
            state.started += 1
            return state.started
        }
        if held.contains(request.family) {
            while state.withLock({ $0.released < round }) && !isCancelled() { usleep(1000) }
        }
        return state.withLock { state in
            if let next = state.scripts[request.family]?.first {
                state.scripts[request.family]?.removeFirst()
                return next
            }
            return after[request.family] ?? ScriptedRound.online()
        }
    }
}

/// Collects what a handler receives, from any thread.
final class UpdateLog: Sendable {
    private let updates = Mutex<[ReachabilityUpdate]>([])

    func append(_ update: ReachabilityUpdate) { updates.withLock { $0.append(update) } }
    var all: [ReachabilityUpdate] { updates.withLock { $0 } }

    /// Waits (polling) until `count` updates arrived or `timeout` passed; returns what arrived.
    func wait(for count: Int, timeout: Double = 5) -> [ReachabilityUpdate] {
        let deadline = Date().addingTimeInterval(timeout)
        while all.count < count && Date() < deadline { usleep(1000) }
        return all
    }
}

final class ReachabilityProberTests: XCTestCase {
    /// Settings that make a scripted prober run in milliseconds, one family (one sequence of rounds).
    private let fast = ReachabilitySettings(
        interval: 0.001, timeout: 1, offlineBackoffInitial: 0.002, offlineBackoffMaximum: 0.008, families: [.ipv4])

    func testEveryRoundIsDeliveredWithItsSamples() {
        let engine = ScriptedEngine([
            ScriptedRound.online(rtt: 0.010), ScriptedRound.online(rtt: 0.030), ScriptedRound.failure, ScriptedRound.failure,
            ScriptedRound.failure, ScriptedRound.failure, ScriptedRound.online(rtt: 0.020),
        ])
        let prober = ReachabilityProber(settings: fast, engine: engine)
        XCTAssertEqual(prober.currentState, .unknown)
        let log = UpdateLog()
        prober.start(queue: DispatchQueue(label: "test")) { log.append($0) }
        let updates = Array(log.wait(for: 7).prefix(7))
        prober.cancel()
        XCTAssertEqual(updates.count, 7)
        XCTAssertEqual(updates.map(\.state), [.online, .online, .online, .offline, .offline, .offline, .online])
        XCTAssertEqual(updates.map(\.previousState), [.unknown, .online, .online, .online, .offline, .offline, .offline])
        XCTAssertEqual(updates.map(\.isStateChange), [true, false, false, true, false, false, true])
        XCTAssertEqual(updates.map(\.round), Array(0..<7))
        XCTAssertTrue(updates.allSatisfy { $0.generation == 1 })
        XCTAssertEqual(updates.map(\.nextRoundIn), [0.001, 0.001, 0, 0.002, 0.004, 0.008, 0.001],
                       "interval, a failed round retried at once, then backoff while offline")
        XCTAssertEqual(updates[1].medianRTT ?? 0, 0.020, accuracy: 1e-12)
        XCTAssertEqual(updates[5].lossFraction, 4.0 / 6.0, accuracy: 1e-12)
        XCTAssertEqual(updates[2].results, ScriptedRound.failure, "the round's own results travel with it")
        XCTAssertTrue(zip(updates, updates.dropFirst()).allSatisfy { $0.time <= $1.time }, "monotonic timestamps")
        XCTAssertEqual(updates.last?.quality, .minimal)
        XCTAssertEqual(prober.currentState, .online)
        XCTAssertTrue(updates.allSatisfy { $0.family == .ipv4 && $0.ipv6 == nil && !$0.isSingleFamily })
        XCTAssertEqual(updates.map { $0.ipv4?.rounds }, Array(1...7))
        // The machine's timeouts reach the engine: the ceiling before any sample, then what the samples say
        // (10–30 ms round trips: the 0.5 s floor), doubled after each timed-out round.
        let timeouts = engine.requests.prefix(7).map(\.timeouts.transport)
        XCTAssertEqual(timeouts, [1, 0.5, 0.5, 1, 1, 1, 1])
        XCTAssertTrue(engine.requests.allSatisfy { $0.family == .ipv4 && $0.timeouts.isAdaptive })
    }

    func testFamiliesAreProbedOnTheirOwnAndCombined() throws {
        let settings = ReachabilitySettings(
            interval: 0.001, timeout: 1, offlineBackoffInitial: 0.002, offlineBackoffMaximum: 0.008)
        let v6 = ScriptedRound.online(address: "2001:2:0:100::2")
        // IPv6's rounds wait until IPv4 has delivered one, so IPv4 is online when IPv6 goes offline whichever
        // family's thread the scheduler runs first (on a busy machine IPv6's four quick rounds could all come
        // before IPv4's first).
        let engine = ScriptedEngine(
            families: [.ipv4: [], .ipv6: [v6, v6, ScriptedRound.failure, ScriptedRound.failure]],
            after: [.ipv4: ScriptedRound.online(), .ipv6: ScriptedRound.failure], held: [.ipv6])
        let prober = ReachabilityProber(settings: settings, engine: engine)
        let log = UpdateLog()
        prober.start { log.append($0) }
        let deadline = Date().addingTimeInterval(10)
        while !log.all.contains(where: { $0.family == .ipv4 }) && Date() < deadline { usleep(1000) }
        engine.releaseAll()
        while !log.all.contains(where: { $0.ipv6?.state == .offline }) && Date() < deadline { usleep(1000) }
        prober.cancel()
        let updates = log.all
        XCTAssertEqual(Set(updates.map(\.family)), [.ipv4, .ipv6], "both families' rounds are delivered")
        XCTAssertEqual(updates.map(\.round), Array(0..<UInt64(updates.count)), "one sequence across families")
        XCTAssertTrue(zip(updates, updates.dropFirst()).allSatisfy { $0.time <= $1.time }, "in the order they were made")
        let lost = try XCTUnwrap(updates.first { $0.ipv6?.state == .offline })
        XCTAssertEqual(lost.family, .ipv6)
        XCTAssertEqual(lost.ipv6?.previousState, .online)
        XCTAssertEqual(lost.ipv4?.state, .online)
        XCTAssertEqual(lost.state, .online, "IPv4 still works: online overall")
        XCTAssertFalse(lost.isStateChange)
        XCTAssertTrue(lost.isSingleFamily)
        XCTAssertFalse(updates.prefix { $0 != lost }.contains { $0.isSingleFamily }, "no flag while both worked")
        XCTAssertEqual(prober.currentState(of: .ipv6), .offline)
        XCTAssertEqual(prober.currentState(of: .ipv4), .online)
        XCTAssertEqual(prober.currentFamilies.map(\.family), [.ipv4, .ipv6])
        // Each family learns its own address.
        XCTAssertTrue(engine.requests.filter { $0.family == .ipv6 }.compactMap(\.lastKnownAddress).allSatisfy { !$0.isIPv4 })
        XCTAssertTrue(engine.requests.filter { $0.family == .ipv4 }.compactMap(\.lastKnownAddress).allSatisfy(\.isIPv4))
    }

    func testAFamilyThatHangsDoesNotHoldTheOtherBack() {
        let settings = ReachabilitySettings(interval: 0.001, timeout: 1)
        let engine = ScriptedEngine(families: [:], after: [.ipv4: ScriptedRound.online()], held: [.ipv6])
        let prober = ReachabilityProber(settings: settings, engine: engine)
        let log = UpdateLog()
        prober.start { log.append($0) }
        let updates = log.wait(for: 5)
        prober.cancel()
        XCTAssertGreaterThanOrEqual(updates.count, 5, "IPv4's rounds went on while IPv6's first round hung")
        XCTAssertTrue(updates.allSatisfy { $0.family == .ipv4 && $0.ipv6 == nil && $0.state == .online && !$0.isSingleFamily })
    }

    func testTheEngineLearnsTheLastKnownAddress() {
        let engine = ScriptedEngine([ScriptedRound.failure, ScriptedRound.online(address: "198.19.0.7"), ScriptedRound.limited()])
        let prober = ReachabilityProber(settings: fast, engine: engine)
        let log = UpdateLog()
        prober.start { log.append($0) }
        _ = log.wait(for: 4)
        prober.cancel()
        XCTAssertEqual(Array(engine.lastKnownAddresses.prefix(4)), [nil, nil, IPAddress("198.19.0.7"), IPAddress("198.19.0.7")])
    }

    func testStreamGetsUpdatesAndEndsOnCancel() async {
        let prober = ReachabilityProber(settings: fast, engine: ScriptedEngine([], after: ScriptedRound.online()))
        let stream = prober.updates
        prober.start()
        var received: [ReachabilityUpdate] = []
        for await update in stream {
            received.append(update)
            if received.count == 3 { prober.cancel() }
        }
        XCTAssertGreaterThanOrEqual(received.count, 3, "the stream ended only after cancel")
        XCTAssertEqual(received.prefix(3).map(\.round), [0, 1, 2])
        XCTAssertFalse(prober.isRunning)

        // A stream taken after cancel waits for the next start; a late subscriber gets the latest update first.
        prober.start()
        let generation = prober.generation
        while prober.currentUpdate == nil { usleep(1000) }
        var late = prober.updates.makeAsyncIterator()
        let first = await late.next()
        XCTAssertEqual(first?.generation, generation)
        prober.cancel()
        while await late.next() != nil {}
    }

    func testNothingOfACancelledRunIsDelivered() {
        // Round 1 of generation 1 is held while the prober is restarted, then released.
        let engine = ScriptedEngine([ScriptedRound.failure], after: ScriptedRound.online(), holdRounds: true)
        let prober = ReachabilityProber(settings: fast, engine: engine)
        let log = UpdateLog()
        prober.start { log.append($0) }
        while engine.roundsStarted < 1 { usleep(1000) }
        prober.start { log.append($0) }
        XCTAssertEqual(prober.generation, 2)
        XCTAssertEqual(prober.currentState, .unknown, "a restart starts from unknown")
        for _ in 0..<5 { engine.release() }
        let updates = log.wait(for: 3)
        prober.cancel()
        XCTAssertGreaterThanOrEqual(updates.count, 3)
        XCTAssertTrue(updates.allSatisfy { $0.generation == 2 }, "\(updates.map(\.generation))")
        XCTAssertEqual(updates.first?.round, 0)
    }

    func testUpdatesQueuedBeforeCancelAreDropped() {
        let queue = DispatchQueue(label: "held")
        queue.suspend()
        let prober = ReachabilityProber(settings: fast, engine: ScriptedEngine([]))
        let log = UpdateLog()
        prober.start(queue: queue) { log.append($0) }
        while prober.currentUpdate == nil { usleep(1000) }
        prober.cancel()
        let cancelledAt = prober.currentUpdate?.round
        queue.resume()
        queue.sync {}
        XCTAssertNotNil(cancelledAt, "rounds ran")
        XCTAssertEqual(log.all, [], "updates queued before cancel reached the handler")
        // And after cancel nothing new: the thread stops within a slice.
        usleep(100_000)
        queue.sync {}
        XCTAssertEqual(log.all, [])
    }

    func testRestartAfterCancel() {
        let prober = ReachabilityProber(settings: fast, engine: ScriptedEngine([ScriptedRound.failure, ScriptedRound.failure], after: ScriptedRound.portal()))
        let first = UpdateLog()
        prober.start { first.append($0) }
        _ = first.wait(for: 3)
        prober.cancel()
        XCTAssertEqual(prober.currentState, .portal, "cancel keeps the last state")
        let second = UpdateLog()
        prober.start { second.append($0) }
        let updates = second.wait(for: 2)
        prober.cancel()
        XCTAssertEqual(updates.first?.previousState, .unknown)
        XCTAssertEqual(updates.first?.state, .portal)
        XCTAssertTrue(updates.allSatisfy { $0.generation == 2 })
    }
}

import Dispatch
import Foundation
import Glibc
import LinkcondBase
import RouteNetlink
import Synchronization
import XCTest

@testable import PathMonitor

/// A round engine that plays a script, one entry per round; after the script it repeats `after`.
/// With `holdRounds`, each round waits until `release()` (or until the prober cancels it).
final class ScriptedEngine: ProbeRoundEngine {
    private struct State {
        var script: [[ProbeResult]]
        var lastKnown: [IPAddress?] = []
        var released = 0
        var started = 0
    }

    private let state: Mutex<State>
    private let after: [ProbeResult]
    private let holdRounds: Bool

    init(_ script: [[ProbeResult]], after: [ProbeResult] = ScriptedRound.online(), holdRounds: Bool = false) {
        state = Mutex(State(script: script))
        self.after = after
        self.holdRounds = holdRounds
    }

    /// The `lastKnownAddress` of each round so far.
    var lastKnownAddresses: [IPAddress?] { state.withLock { $0.lastKnown } }
    /// Rounds started so far.
    var roundsStarted: Int { state.withLock { $0.started } }

    /// Lets one held round finish.
    func release() { state.withLock { $0.released += 1 } }

    func run(lastKnownAddress: IPAddress?, isCancelled: () -> Bool) -> [ProbeResult] {
        let round = state.withLock { state -> Int in
            state.lastKnown.append(lastKnownAddress)
            state.started += 1
            return state.started
        }
        if holdRounds {
            while state.withLock({ $0.released < round }) && !isCancelled() { usleep(1000) }
        }
        return state.withLock { $0.script.isEmpty ? after : $0.script.removeFirst() }
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
    /// Settings that make a scripted prober run in milliseconds.
    private let fast = ReachabilitySettings(interval: 0.001, timeout: 1, offlineBackoffInitial: 0.002, offlineBackoffMaximum: 0.008)

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
        XCTAssertEqual(updates.map(\.nextRoundIn), [0.001, 0.001, 0.001, 0.002, 0.004, 0.008, 0.001], "interval, then backoff while offline")
        XCTAssertEqual(updates[1].medianRTT ?? 0, 0.020, accuracy: 1e-12)
        XCTAssertEqual(updates[5].lossFraction, 4.0 / 6.0, accuracy: 1e-12)
        XCTAssertEqual(updates[2].results, ScriptedRound.failure, "the round's own results travel with it")
        XCTAssertTrue(zip(updates, updates.dropFirst()).allSatisfy { $0.time <= $1.time }, "monotonic timestamps")
        XCTAssertEqual(updates.last?.quality, .minimal)
        XCTAssertEqual(prober.currentState, .online)
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

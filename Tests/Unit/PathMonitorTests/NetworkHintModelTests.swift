import XCTest

@testable import PathMonitor

/// The hint model's event matrix (REFERENCE.md §5), one test per case, and a few more.
final class NetworkHintModelTests: XCTestCase {
    typealias Model = NetworkHintModel<String>

    private let wifi = NetworkPath(
        status: .satisfied, availableInterfaces: [PathInterface(name: "wl0", index: 2, type: .wifi)],
        supportsIPv4: true, supportsIPv6: true, supportsDNS: true, gateways: ["198.18.1.1"])
    private let cellular = NetworkPath(
        status: .satisfied, availableInterfaces: [PathInterface(name: "ww0", index: 3, type: .cellular)],
        isExpensive: true, supportsIPv4: true, supportsDNS: true, gateways: ["198.18.2.1"])
    private let offline = NetworkPath(status: .unsatisfied, unsatisfiedReason: .noCarrier)
    private let dormant = NetworkPath(status: .requiresConnection, unsatisfiedReason: .noCarrier)

    private func started() -> (Model, UInt64) {
        var model = Model()
        let generation = model.beginMonitor()
        return (model, generation)
    }

    // MARK: The six cases of the event matrix

    /// 1. Started, no callback yet: state stays unknown; requests are still allowed.
    func testStartedNoCallbackYetStaysUnknownAndRequestsAllowed() {
        var (model, _) = started()
        XCTAssertEqual(model.hint, .unknown)
        XCTAssertFalse(model.showsOfflineBanner)
        XCTAssertTrue(model.allowsRequests)
        let attempt = model.attempt("load feed")
        XCTAssertTrue(attempt.shouldPerform)
        XCTAssertFalse(attempt.isQueuedForReplay)
        XCTAssertEqual(model.hint, .unknown)
        XCTAssertEqual(model.pendingActions, [])
    }

    /// 2. Path available, an API request fails: only the request outcome changes; no "offline" is shown.
    func testPathAvailableRequestFailsOnlyRequestOutcomeChanges() {
        var (model, generation) = started()
        model.apply(wifi, generation: generation)
        let before = model
        model.record(.timeout)
        model.record(.authenticationFailed)
        model.record(.serverError(status: 502))
        XCTAssertEqual(model.hint, .available)
        XCTAssertFalse(model.showsOfflineBanner)
        XCTAssertEqual(model.requests.lastOutcome, .serverError(status: 502))
        XCTAssertEqual(model.requests.consecutiveFailures, 3)
        XCTAssertTrue(model.requests.isFailing)
        // Everything but the request model is as before.
        XCTAssertEqual(model.hint, before.hint)
        XCTAssertEqual(model.path, before.path)
        XCTAssertEqual(model.isExpensive, before.isExpensive)
        XCTAssertEqual(model.isConstrained, before.isConstrained)
        XCTAssertEqual(model.generation, before.generation)
        XCTAssertEqual(model.pendingActions, before.pendingActions)
        XCTAssertNotEqual(model.requests, before.requests)
    }

    /// 3. Unavailable becomes available again: the banner goes away; the same user action is not replayed twice.
    func testUnavailableBecomesAvailableBannerGoesAwayActionReplayedOnce() {
        var (model, generation) = started()
        model.apply(offline, generation: generation)
        XCTAssertTrue(model.showsOfflineBanner)
        XCTAssertEqual(model.attempt("send message"), ActionAttempt(shouldPerform: true, isQueuedForReplay: true))
        model.attempt("send message")  // the user taps again
        XCTAssertEqual(model.pendingActions, ["send message"])

        let back = model.apply(wifi, generation: generation)
        XCTAssertEqual(back.hint, .available)
        XCTAssertTrue(back.bannerChanged)
        XCTAssertFalse(model.showsOfflineBanner)
        XCTAssertEqual(back.replay, ["send message"])

        // Availability reported again (the same path, then another satisfied one): nothing more to replay.
        XCTAssertEqual(model.apply(wifi, generation: generation).replay, [])
        XCTAssertEqual(model.apply(cellular, generation: generation).replay, [])
        XCTAssertEqual(model.pendingActions, [])
    }

    /// 4. An event from a cancelled monitor arrives late: neither the state nor the cost flags change.
    func testLateEventFromCancelledMonitorChangesNeitherStateNorCostFlags() {
        var (model, old) = started()
        model.apply(cellular, generation: old)
        let new = model.beginMonitor()  // restart: bump first, then cancel the old monitor, start a new one
        XCTAssertNotEqual(new, old)
        let before = model

        for late in [offline, wifi, dormant, cellular] {
            let change = model.apply(late, generation: old)
            XCTAssertFalse(change.isAccepted)
            XCTAssertFalse(change.hintChanged)
            XCTAssertFalse(change.costFlagsChanged)
            XCTAssertFalse(change.strategyChanged)
        }
        XCTAssertEqual(model, before)
        XCTAssertEqual(model.hint, .available)
        XCTAssertTrue(model.isExpensive)
        XCTAssertFalse(model.isConstrained)
    }

    /// 5. The same event arrives several times: the hint stays the same; retries do not pile up.
    func testSameEventSeveralTimesHintSameRetriesDoNotPileUp() {
        var (model, generation) = started()
        model.apply(offline, generation: generation)
        model.attempt("upload photo")
        let afterFirst = model
        for _ in 0..<5 {
            let change = model.apply(offline, generation: generation)
            XCTAssertTrue(change.isAccepted)
            XCTAssertTrue(change.isEmpty)
            model.attempt("upload photo")
        }
        XCTAssertEqual(model, afterFirst)
        XCTAssertEqual(model.pendingActions, ["upload photo"])

        let first = model.apply(wifi, generation: generation)
        XCTAssertEqual(first.replay, ["upload photo"])
        for _ in 0..<5 {
            let change = model.apply(wifi, generation: generation)
            XCTAssertTrue(change.isEmpty)
            XCTAssertEqual(change.replay, [])
            XCTAssertEqual(model.hint, .available)
        }
    }

    /// 6. Expensive or constrained flips: only the download strategy changes.
    func testExpensiveOrConstrainedFlipsOnlyDownloadStrategyChanges() {
        var (model, generation) = started()
        model.apply(wifi, generation: generation)
        XCTAssertEqual(model.downloadStrategy, .full)

        var expensive = wifi
        expensive.isExpensive = true
        var change = model.apply(expensive, generation: generation)
        XCTAssertTrue(change.costFlagsChanged)
        XCTAssertEqual(change.previousStrategy, .full)
        XCTAssertEqual(change.strategy, .reduced)
        XCTAssertFalse(change.hintChanged)
        XCTAssertFalse(change.bannerChanged)
        XCTAssertEqual(change.replay, [])
        XCTAssertEqual(model.hint, .available)

        var constrained = wifi
        constrained.isConstrained = true
        change = model.apply(constrained, generation: generation)
        XCTAssertEqual(change.strategy, .minimal)
        XCTAssertFalse(change.hintChanged)
        XCTAssertFalse(change.bannerChanged)
        XCTAssertTrue(model.allowsRequests)

        change = model.apply(wifi, generation: generation)
        XCTAssertEqual(change.strategy, .full)
        XCTAssertFalse(change.hintChanged)
        XCTAssertEqual(model.hint, .available)
    }

    // MARK: More

    func testStatusMapping() {
        XCTAssertEqual(NetworkHint(.satisfied), .available)
        XCTAssertEqual(NetworkHint(.requiresConnection), .needsConnection)
        XCTAssertEqual(NetworkHint(.unsatisfied), .unavailable)

        var (model, generation) = started()
        model.apply(dormant, generation: generation)
        XCTAssertEqual(model.hint, .needsConnection)
        XCTAssertFalse(model.showsOfflineBanner, "only unavailable shows the banner")
        XCTAssertFalse(model.attempt("sync").isQueuedForReplay)
        model.apply(offline, generation: generation)
        XCTAssertEqual(model.hint, .unavailable)
        XCTAssertTrue(model.showsOfflineBanner)
    }

    func testRestartSequence() {
        var model = Model()
        XCTAssertEqual(model.generation, 0)
        // Nothing is accepted before the first monitor begins.
        XCTAssertFalse(model.apply(wifi, generation: 0).isAccepted)
        XCTAssertEqual(model.hint, .unknown)

        let first = model.beginMonitor()
        XCTAssertEqual(model.generation, first)
        XCTAssertTrue(model.apply(offline, generation: first).isAccepted)
        XCTAssertEqual(model.hint, .unavailable)

        // Restart: the generation is bumped before anything else; the hint stays until the new monitor reports.
        let second = model.beginMonitor()
        XCTAssertGreaterThan(second, first)
        XCTAssertEqual(model.hint, .unavailable)
        XCTAssertFalse(model.apply(wifi, generation: first).isAccepted, "late event of the cancelled monitor")
        XCTAssertEqual(model.hint, .unavailable)

        let baseline = model.apply(wifi, generation: second)
        XCTAssertTrue(baseline.isAccepted)
        XCTAssertEqual(baseline.previousHint, .unavailable)
        XCTAssertEqual(model.hint, .available)
        XCTAssertEqual(model.path, wifi)

        // A future generation is not accepted either.
        XCTAssertFalse(model.apply(offline, generation: second + 1).isAccepted)
        XCTAssertEqual(model.hint, .available)

        // Stopping bumps the generation too and forgets the hint.
        let stop = model.stopMonitor()
        XCTAssertEqual(stop.hint, .unknown)
        XCTAssertFalse(model.apply(offline, generation: second).isAccepted)
        XCTAssertEqual(model.hint, .unknown)
        XCTAssertFalse(model.showsOfflineBanner)

        // PathUpdate values go through the same check.
        let third = model.beginMonitor()
        let update = PathUpdate(path: cellular, isBaseline: true, generation: 1, sequence: 0, eventTime: 0, time: 0)
        XCTAssertTrue(model.apply(update, generation: third).isAccepted)
        XCTAssertEqual(model.hint, .available)
        XCTAssertEqual(model.downloadStrategy, .reduced)
    }

    func testCostFlagFlipChangesOnlyTheStrategy() {
        var (model, generation) = started()
        model.apply(offline, generation: generation)
        model.attempt("refresh")
        model.apply(wifi, generation: generation)  // replays "refresh"
        let before = model

        var expensive = wifi
        expensive.isExpensive = true
        let change = model.apply(expensive, generation: generation)
        XCTAssertEqual(
            change,
            HintChange(
                isAccepted: true, previousHint: .available, hint: .available, previousStrategy: .full,
                strategy: .reduced, costFlagsChanged: true, replay: []))
        XCTAssertEqual(model.hint, before.hint)
        XCTAssertEqual(model.requests, before.requests)
        XCTAssertEqual(model.pendingActions, before.pendingActions)
        XCTAssertEqual(model.showsOfflineBanner, before.showsOfflineBanner)

        // Both flags set: constrained wins; dropping only expensive keeps the strategy but reports the flags.
        var both = expensive
        both.isConstrained = true
        XCTAssertEqual(model.apply(both, generation: generation).strategy, .minimal)
        var onlyConstrained = both
        onlyConstrained.isExpensive = false
        let flip = model.apply(onlyConstrained, generation: generation)
        XCTAssertTrue(flip.costFlagsChanged)
        XCTAssertFalse(flip.strategyChanged)
        XCTAssertFalse(flip.hintChanged)
    }

    func testCostFlagsKeptWhileNotSatisfied() {
        var (model, generation) = started()
        model.apply(cellular, generation: generation)
        XCTAssertEqual(model.downloadStrategy, .reduced)
        let change = model.apply(offline, generation: generation)
        XCTAssertTrue(change.hintChanged)
        XCTAssertFalse(change.costFlagsChanged)
        XCTAssertEqual(model.downloadStrategy, .reduced)
        XCTAssertTrue(model.isExpensive)
    }

    func testRequestOutcomesNeverChangeTheHint() {
        let outcomes: [RequestOutcome] = [
            .timeout, .authenticationFailed, .serverError(status: 503), .transportError("connection refused"), .success,
        ]
        let paths: [NetworkPath?] = [nil, wifi, cellular, offline, dormant]
        for path in paths {
            var (model, generation) = started()
            if let path { model.apply(path, generation: generation) }
            if model.hint == .unavailable { model.attempt("post") }
            let hint = model.hint
            let banner = model.showsOfflineBanner
            let strategy = model.downloadStrategy
            let pending = model.pendingActions
            for _ in 0..<4 {
                for outcome in outcomes {
                    model.record(outcome)
                    XCTAssertEqual(model.hint, hint, "\(outcome) on \(path?.summary ?? "no path")")
                    XCTAssertEqual(model.showsOfflineBanner, banner)
                    XCTAssertEqual(model.downloadStrategy, strategy)
                    XCTAssertEqual(model.pendingActions, pending, "a success does not replay or drop queued actions")
                }
            }
            XCTAssertEqual(model.requests.total, 4 * outcomes.count)
            XCTAssertEqual(model.requests.lastOutcome, .success)
        }
    }

    func testRequestOutcomeModel() {
        var requests = RequestOutcomeModel(failureThreshold: 2)
        XCTAssertNil(requests.lastOutcome)
        XCTAssertFalse(requests.isFailing)
        requests.record(.timeout)
        XCTAssertFalse(requests.isFailing)
        requests.record(.serverError(status: 500))
        XCTAssertTrue(requests.isFailing)
        XCTAssertEqual(requests.consecutiveFailures, 2)
        requests.record(.success)
        XCTAssertFalse(requests.isFailing)
        XCTAssertEqual(requests.consecutiveFailures, 0)
        XCTAssertEqual(requests.failures, 2)
        XCTAssertEqual(requests.total, 3)
        XCTAssertEqual(RequestOutcomeModel(failureThreshold: 0).failureThreshold, 1)
        XCTAssertFalse(RequestOutcome.success.isFailure)
        XCTAssertTrue(RequestOutcome.authenticationFailed.isFailure)
    }

    func testResolvedActionIsNotReplayedAndQueueKeepsOrder() {
        var (model, generation) = started()
        model.apply(offline, generation: generation)
        model.attempt("a")
        model.attempt("b")
        model.attempt("c")
        model.attempt("a")
        XCTAssertEqual(model.pendingActions, ["a", "b", "c"])
        XCTAssertTrue(model.resolve("b"))  // it went through despite the hint
        XCTAssertFalse(model.resolve("b"))
        // Through needsConnection: still nothing to replay; then available hands back the rest, once.
        XCTAssertEqual(model.apply(dormant, generation: generation).replay, [])
        XCTAssertEqual(model.apply(wifi, generation: generation).replay, ["a", "c"])
        XCTAssertEqual(model.apply(offline, generation: generation).replay, [])
        XCTAssertEqual(model.apply(wifi, generation: generation).replay, [])
    }

    func testQueuedActionsSurviveARestart() {
        var (model, first) = started()
        model.apply(offline, generation: first)
        model.attempt("checkout")
        let second = model.beginMonitor()
        XCTAssertEqual(model.apply(wifi, generation: first).replay, [], "a late event does not replay")
        XCTAssertEqual(model.pendingActions, ["checkout"])
        XCTAssertEqual(model.apply(wifi, generation: second).replay, ["checkout"])
    }
}

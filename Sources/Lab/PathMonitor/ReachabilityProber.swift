import Dispatch
import Foundation
import Glibc
import LinkcondBase
import NetNamespace
import RouteNetlink
import Synchronization

/// Probes whether the internet is reachable from one namespace, over IPv4 and IPv6, because path state
/// cannot see loss: under 3G, a lossy link or 100 % loss the link stays up and no path monitor changes
/// state (REFERENCE.md §4).
///
/// Each probed family (``ReachabilitySettings/probedFamilies``) has a thread of its own that runs probe
/// rounds (``NetworkProbeRound``: DNS, TCP connect, `GET /generate_204`) one after another,
/// ``ReachabilitySettings/interval`` apart while not offline and with backoff while offline, and judges
/// them with a ``ReachabilityStateMachine`` of its own: 204 means online, any other HTTP answer a captive
/// portal, DNS failing while TCP to the last known address works limited, and
/// ``ReachabilitySettings/failureThreshold`` failed rounds in a row offline. The families never wait for
/// each other, so a dead IPv6 does not slow IPv4's rounds. Their states combine into the overall state
/// (``OverallReachability``): online when either family works, flagged when only one does.
///
/// Every round of every family delivers an update (overall state, each family's conclusion, the round's
/// samples, link quality), so a consumer sees the samples even while the state stays the same;
/// ``ReachabilityUpdate/isStateChange`` marks changes of the overall state. Updates reach the handler and
/// the streams in the order they were made.
///
/// Every `start` bumps the ``generation``; an update of an earlier generation, or one that comes up after
/// `cancel`, is never delivered. The prober can be started again after `cancel`. Its threads hold it only
/// weakly: a prober that is let go without `cancel` stops probing within a round (and its streams end).
/// It only sends probes; it never changes anything in the namespace.
public final class ReachabilityProber: Sendable {
    private struct State: ~Copyable {
        var generation: UInt64 = 0
        var running = false
        var handler: (@Sendable (ReachabilityUpdate) -> Void)?
        var queue: DispatchQueue?
        var current: ReachabilityState = .unknown
        var families: [ReachabilityFamily: FamilyReachability] = [:]
        var nextRound: UInt64 = 0
        var last: ReachabilityUpdate?
        var subscribers = UpdateSubscribers<ReachabilityUpdate>()
    }

    /// The namespace probed from; nil: the host's own.
    public let namespace: NamedNamespace?
    public let settings: ReachabilitySettings
    private let engine: any ProbeRoundEngine
    private let state = Mutex(State())

    /// A prober whose sockets live in `namespace` (nil: the host's namespace). Nameservers come from
    /// `/etc/netns/NAME/resolv.conf` (or `/etc/resolv.conf`) unless the settings name them.
    public init(namespace: NamedNamespace?, settings: ReachabilitySettings = ReachabilitySettings()) {
        self.namespace = namespace
        self.settings = settings
        engine = NetworkProbeRound(namespace: namespace, settings: settings)
    }

    /// A prober that runs `engine`'s rounds instead of real probes (scripted rounds in tests).
    public init(settings: ReachabilitySettings = ReachabilitySettings(), engine: any ProbeRoundEngine) {
        namespace = nil
        self.settings = settings
        self.engine = engine
    }

    deinit {
        cancel()
    }

    /// The latest overall state: ``ReachabilityState/unknown`` from `start` until a round decides.
    public var currentState: ReachabilityState { state.withLock { $0.current } }
    /// The latest delivered update of the running generation.
    public var currentUpdate: ReachabilityUpdate? { state.withLock { $0.last } }
    /// Each probed family's latest conclusion in the running generation, in family order (a family appears
    /// after its first round).
    public var currentFamilies: [FamilyReachability] {
        state.withLock { $0.families.values.sorted { $0.family < $1.family } }
    }
    /// Bumped by every `start`.
    public var generation: UInt64 { state.withLock { $0.generation } }
    public var isRunning: Bool { state.withLock { $0.running } }

    /// The latest state of `family`; nil before its first round (or when it is not probed).
    public func currentState(of family: ReachabilityFamily) -> ReachabilityState? {
        state.withLock { $0.families[family]?.state }
    }

    /// Starts probing (again: a running prober is restarted, and the rounds of the earlier run are dropped).
    /// `handler`, if given, is called on `queue` with every update. The first rounds start at once; the
    /// state stays ``ReachabilityState/unknown`` until a round decides.
    public func start(
        queue: DispatchQueue = DispatchQueue(label: "linkcond.reachability"),
        handler: (@Sendable (ReachabilityUpdate) -> Void)? = nil
    ) {
        let generation = state.withLock { (state: inout State) -> UInt64 in
            state.generation += 1
            state.running = true
            state.handler = handler
            state.queue = queue
            state.current = .unknown
            state.families = [:]
            state.nextRound = 0
            state.last = nil
            return state.generation
        }
        let owner = WeakProber(prober: self)
        for family in settings.probedFamilies {
            let thread = Thread { [engine, settings] in
                ThreadName.setCurrent("lc-probe-\(family)")
                Self.runRounds(of: family, generation: generation, owner: owner, engine: engine, settings: settings)
            }
            thread.start()
        }
    }

    /// Stops probing. No update is delivered after `cancel` returns (updates already queued are dropped when
    /// they come up), and every `updates` stream finishes. A round in flight ends within about 100 ms.
    /// The prober can be started again.
    public func cancel() {
        let subscribers = state.withLock { (state: inout State) -> [AsyncStream<ReachabilityUpdate>.Continuation] in
            state.running = false
            state.handler = nil
            return state.subscribers.removeAll()
        }
        for subscriber in subscribers { subscriber.finish() }
    }

    /// An `AsyncSequence` of updates: it starts with the latest update of the running generation (so a late
    /// subscriber learns the state at once), keeps the newest ``ReachabilitySettings/streamBufferSize`` when
    /// the consumer falls behind, and ends on `cancel`. Each access makes a new stream.
    public var updates: AsyncStream<ReachabilityUpdate> {
        let bufferSize = settings.streamBufferSize
        return state.withLock { state in
            state.subscribers.add(latest: state.last, bufferSize: bufferSize) { [weak self] id in
                self?.state.withLock { $0.subscribers.remove(id) }
            }
        }
    }

    /// True while `generation` is the running one.
    func isCurrent(_ generation: UInt64) -> Bool {
        state.withLock { $0.running && $0.generation == generation }
    }

    /// The prober as its threads see it: weakly, so a prober nobody holds any more goes away and its
    /// threads stop at their next look.
    private struct WeakProber: Sendable {
        weak let prober: ReachabilityProber?

        /// False once the prober is gone, cancelled or restarted.
        func isCurrent(_ generation: UInt64) -> Bool {
            prober?.isCurrent(generation) ?? false
        }

        /// Delivers through the prober, if it is still there (holding it only for this call).
        func deliver(_ conclusion: FamilyReachability, results: [ProbeResult], nextRoundIn: Double, generation: UInt64) -> Bool {
            guard let prober else { return false }
            prober.deliver(conclusion, results: results, nextRoundIn: nextRoundIn, generation: generation)
            return true
        }
    }

    /// The loop of one family in one generation, on the family's own thread: round, judge, deliver, wait.
    /// It holds the prober only while looking at it or delivering.
    private static func runRounds(
        of family: ReachabilityFamily, generation: UInt64, owner: WeakProber, engine: any ProbeRoundEngine,
        settings: ReachabilitySettings
    ) {
        var machine = ReachabilityStateMachine(settings: settings)
        var rounds: UInt64 = 0
        let isCancelled = { !owner.isCurrent(generation) }
        while !isCancelled() {
            let request = ProbeRoundRequest(family: family, lastKnownAddress: machine.lastKnownAddress, timeouts: machine.timeouts)
            let results = engine.run(request, isCancelled: isCancelled)
            let ended = ProbeClock.now()
            let evaluation = machine.record(results)
            rounds += 1
            let conclusion = FamilyReachability(family: family, evaluation, rounds: rounds, timeouts: machine.timeouts)
            guard owner.deliver(conclusion, results: results, nextRoundIn: evaluation.nextDelay, generation: generation) else { return }
            // The pause counts from the round's end, so judging and delivering take none of it.
            let wake = ended + evaluation.nextDelay
            while !isCancelled() && ProbeClock.now() < wake {
                _ = ProbeClock.wait([], until: wake, slice: 0.05)
            }
        }
    }

    /// Records a family's round, combines the families and hands the update to the streams and the handler,
    /// all under the lock, so updates of the two families go out in the order they were made.
    private func deliver(_ conclusion: FamilyReachability, results: [ProbeResult], nextRoundIn: Double, generation: UInt64) {
        state.withLock { (state: inout State) in
            guard state.running, state.generation == generation else { return }
            state.families[conclusion.family] = conclusion
            let overall = OverallReachability(Array(state.families.values), probed: settings.probedFamilies)
            let primary = overall.primary.flatMap { state.families[$0] } ?? conclusion
            let update = ReachabilityUpdate(
                state: overall.state, previousState: state.current, outcome: conclusion.outcome, quality: primary.quality,
                medianRTT: primary.medianRTT, lossFraction: primary.lossFraction, windowRounds: primary.windowRounds,
                results: results, consecutiveFailures: conclusion.consecutiveFailures, nextRoundIn: nextRoundIn,
                time: MonotonicClock.nanoseconds(), generation: generation, round: state.nextRound,
                family: conclusion.family, ipv4: state.families[.ipv4], ipv6: state.families[.ipv6],
                isSingleFamily: overall.isSingleFamily)
            state.nextRound += 1
            state.last = update
            state.current = update.state
            // Yielded under the lock, so a cancel or restart cannot slip between the check and the yield.
            for subscriber in state.subscribers.continuations { subscriber.yield(update) }
            guard let queue = state.queue, let handler = state.handler else { return }
            queue.async { [weak self] in
                // Checked again on the queue: a cancel or restart in between drops the update.
                if self?.isCurrent(generation) == true { handler(update) }
            }
        }
    }
}

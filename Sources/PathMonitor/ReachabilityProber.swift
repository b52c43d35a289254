import Dispatch
import Foundation
import Glibc
import LinkcondBase
import NetNamespace
import RouteNetlink
import Synchronization

/// Probes whether the internet is reachable from one namespace, because path state cannot see loss: under
/// 3G, a lossy link or 100 % loss the link stays up and no path monitor changes state (REFERENCE.md §4).
///
/// A thread of the prober's own runs probe rounds (``NetworkProbeRound``: DNS, TCP connect, `GET
/// /generate_204`) one after another, ``ReachabilitySettings/interval`` apart while not offline and with
/// backoff while offline, and judges them with ``ReachabilityStateMachine``: 204 means online, any other
/// HTTP answer a captive portal, DNS failing while TCP to the last known address works limited, and
/// ``ReachabilitySettings/failureThreshold`` failed rounds in a row offline. Every round delivers an
/// update (state, RTT and loss samples, link quality), so a consumer sees the samples even while the state
/// stays the same; ``ReachabilityUpdate/isStateChange`` marks the changes.
///
/// Every `start` bumps the ``generation``; an update of an earlier generation, or one that comes up after
/// `cancel`, is never delivered. The prober can be started again after `cancel`. It only sends probes; it
/// never changes anything in the namespace.
public final class ReachabilityProber: Sendable {
    private struct State: ~Copyable {
        var generation: UInt64 = 0
        var running = false
        var handler: (@Sendable (ReachabilityUpdate) -> Void)?
        var queue: DispatchQueue?
        var current: ReachabilityState = .unknown
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

    /// The latest state: ``ReachabilityState/unknown`` from `start` until a round decides.
    public var currentState: ReachabilityState { state.withLock { $0.current } }
    /// The latest delivered update of the running generation.
    public var currentUpdate: ReachabilityUpdate? { state.withLock { $0.last } }
    /// Bumped by every `start`.
    public var generation: UInt64 { state.withLock { $0.generation } }
    public var isRunning: Bool { state.withLock { $0.running } }

    /// Starts probing (again: a running prober is restarted, and the rounds of the earlier run are dropped).
    /// `handler`, if given, is called on `queue` with every update. The first round starts at once; the
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
            state.last = nil
            return state.generation
        }
        let thread = Thread { [self] in runRounds(generation: generation) }
        thread.name = "linkcond.reachability"
        thread.start()
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

    /// The loop of one generation, on the prober's own thread: round, judge, deliver, wait.
    private func runRounds(generation: UInt64) {
        var machine = ReachabilityStateMachine(settings: settings)
        var round: UInt64 = 0
        let isCancelled = { [self] in !isCurrent(generation) }
        while !isCancelled() {
            let results = engine.run(lastKnownAddress: machine.lastKnownAddress, isCancelled: isCancelled)
            let ended = ProbeClock.now()
            guard !isCancelled() else { return }
            let evaluation = machine.record(results)
            deliver(ReachabilityUpdate(
                state: evaluation.state, previousState: evaluation.previousState, outcome: evaluation.outcome,
                quality: evaluation.quality, medianRTT: evaluation.medianRTT, lossFraction: evaluation.lossFraction,
                windowRounds: evaluation.windowRounds, results: results,
                consecutiveFailures: evaluation.consecutiveFailures, nextRoundIn: evaluation.nextDelay,
                time: MonotonicClock.nanoseconds(), generation: generation, round: round))
            round += 1
            // The pause counts from the round's end, so judging and delivering take none of it.
            let wake = ended + evaluation.nextDelay
            while !isCancelled() && ProbeClock.now() < wake {
                _ = ProbeClock.wait([], until: wake, slice: 0.05)
            }
        }
    }

    private func deliver(_ update: ReachabilityUpdate) {
        typealias Target = (queue: DispatchQueue?, handler: (@Sendable (ReachabilityUpdate) -> Void)?)
        let target = state.withLock { (state: inout State) -> Target? in
            guard state.running, state.generation == update.generation else { return nil }
            state.last = update
            state.current = update.state
            // Yielded under the lock, so a cancel or restart cannot slip between the check and the yield.
            for subscriber in state.subscribers.continuations { subscriber.yield(update) }
            return (state.queue, state.handler)
        }
        guard let queue = target?.queue, let handler = target?.handler else { return }
        queue.async { [self] in
            // Checked again on the queue: a cancel or restart in between drops the update.
            if isCurrent(update.generation) { handler(update) }
        }
    }
}

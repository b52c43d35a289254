import Dispatch
import Foundation
import Glibc
import LinkcondBase
import NetNamespace
import Netlink
import RouteNetlink
import Synchronization

/// Follows one namespace's network path: the Linux counterpart of Apple's `NWPathMonitor`.
///
/// `start` subscribes to rtnetlink notifications (`RTNLGRP_LINK`, IPv4/IPv6 `IFADDR` and `ROUTE`;
/// `ip monitor link address route`), then reads the tables in full, so no change can fall between the
/// read and the subscription. When it returns, ``currentPath`` is valid, and the first path is delivered,
/// marked as the baseline. From then on a thread of the monitor's own applies each notification to its
/// tables and re-evaluates the path:
/// - every change of status is delivered, even when it is undone within the same burst of events
///   (satisfied → unsatisfied → satisfied gives three updates);
/// - other changes within a burst are coalesced into one update at the end of the burst;
/// - when the kernel drops notifications (`ENOBUFS`: more events than the socket buffer holds) the tables
///   are read again in full (a *resync*), never left stale;
/// - every `start` bumps the ``generation``; an update of an earlier generation, or one that arrives after
///   `cancel`, is never delivered.
///
/// The monitor only reads: it never changes anything in the namespace. It can watch a sandbox's client
/// namespace or the host's own (`namespace: nil`).
public final class PathMonitor: Sendable {
    /// Counters for tests and diagnostics.
    public struct Statistics: Sendable, Equatable {
        /// Notifications applied.
        public var events: UInt64 = 0
        /// Updates delivered.
        public var updates: UInt64 = 0
        /// Full re-reads after lost notifications.
        public var resyncs: UInt64 = 0
    }

    private struct State: ~Copyable {
        var generation: UInt64 = 0
        var running = false
        var handler: (@Sendable (PathUpdate) -> Void)?
        var queue: DispatchQueue?
        var last: PathUpdate?
        var subscribers = UpdateSubscribers<PathUpdate>()
        var statistics = Statistics()
    }

    public let namespace: NamedNamespace?
    public let options: PathEvaluationOptions
    private let state = Mutex(State())

    /// A monitor of `namespace` (nil: the host's own) with interface filters and cost overrides.
    /// Classification uses sysfs only for the host's namespace (sysfs shows the process's own namespace).
    public init(namespace: NamedNamespace? = nil, options: PathEvaluationOptions = PathEvaluationOptions()) {
        self.namespace = namespace
        var options = options
        if namespace == nil && options.classifier.sysfsRoot == nil { options.classifier.sysfsRoot = "/sys" }
        self.options = options
    }

    deinit {
        cancel()
    }

    /// The latest path; nil before the first `start`.
    public var currentPath: NetworkPath? { state.withLock { $0.last?.path } }
    /// The latest delivered update.
    public var currentUpdate: PathUpdate? { state.withLock { $0.last } }
    /// Bumped by every `start`.
    public var generation: UInt64 { state.withLock { $0.generation } }
    public var statistics: Statistics { state.withLock { $0.statistics } }
    public var isRunning: Bool { state.withLock { $0.running } }

    /// Starts following the namespace. `handler`, if given, is called on `queue` with every update,
    /// the baseline first. Throws when the namespace cannot be entered or read; then nothing runs.
    public func start(queue: DispatchQueue = DispatchQueue(label: "linkcond.path-monitor"), handler: (@Sendable (PathUpdate) -> Void)? = nil) throws(PathMonitorError) {
        let (listener, reader) = try openSockets()
        let tables: NetworkTables
        do {
            tables = try reader.read()
        } catch {
            throw .netlink(error)
        }
        let generation: UInt64 = try state.withLock { (state: inout State) throws(PathMonitorError) -> UInt64 in
            guard !state.running else { throw .alreadyRunning }
            state.generation += 1
            state.running = true
            state.handler = handler
            state.queue = queue
            return state.generation
        }
        let now = MonotonicClock.nanoseconds()
        let baseline = PathUpdate(
            path: PathEvaluator.evaluate(tables, options: options), isBaseline: true, generation: generation, sequence: 0,
            eventTime: now, time: now)
        deliver(baseline)
        let loop = MonitorLoop(monitor: self, listener: listener, reader: reader, tables: tables, generation: generation)
        let thread = Thread {
            ThreadName.setCurrent("lc-path-monitor")
            loop.run()
        }
        thread.start()
    }

    private func openSockets() throws(PathMonitorError) -> (NetlinkListener, NetworkTablesReader) {
        let groups: [RouteNetlinkGroup] = [.link, .ipv4Address, .ipv6Address, .ipv4Route, .ipv6Route]
        let namespace = self.namespace
        do {
            // Both sockets from one thread in the namespace.
            var sockets = try NamedNamespace.openSockets([.routeNetlink, .routeNetlink], in: namespace)
            let listener = try NetlinkListener(adopting: sockets.take(0)!, groups: groups.map(\.rawValue))
            let connection = try NetlinkConnection(adopting: sockets.take(1)!)
            try? listener.socket.socket.fileDescriptor.setNonBlocking()
            let client = RouteNetlinkClient(connection: connection, namespace: namespace?.name)
            return (listener, NetworkTablesReader(client: client, namespace: namespace))
        } catch let error as NamespaceError {
            throw .namespace(error)
        } catch let error as NetlinkError {
            throw .netlink(.netlink(error))
        } catch {
            throw .namespace(.system(operation: "open the monitor's sockets", errno: EIO))
        }
    }

    /// Stops the monitor. No update is delivered after `cancel` returns (updates already queued are
    /// dropped when they come up). The monitor can be started again.
    public func cancel() {
        let subscribers = state.withLock { (state: inout State) -> [AsyncStream<PathUpdate>.Continuation] in
            state.running = false
            state.handler = nil
            return state.subscribers.removeAll()
        }
        for subscriber in subscribers { subscriber.finish() }
    }

    /// An `AsyncSequence` of updates. It starts with the latest update (so a late subscriber learns the
    /// current path at once), keeps the newest 64 when the consumer falls behind, and ends on `cancel`.
    public func updates() -> AsyncStream<PathUpdate> {
        let bufferSize = 64
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

    func count(events: UInt64 = 0, resyncs: UInt64 = 0) {
        state.withLock {
            $0.statistics.events += events
            $0.statistics.resyncs += resyncs
        }
    }

    func deliver(_ update: PathUpdate) {
        let target = state.withLock { (state: inout State) -> (DispatchQueue?, (@Sendable (PathUpdate) -> Void)?, [AsyncStream<PathUpdate>.Continuation])? in
            guard state.running, state.generation == update.generation else { return nil }
            state.last = update
            state.statistics.updates += 1
            return (state.queue, state.handler, state.subscribers.continuations)
        }
        guard let (queue, handler, subscribers) = target else { return }
        for subscriber in subscribers { subscriber.yield(update) }
        if let queue, let handler {
            queue.async { [self] in
                // Checked again on the queue: a cancel or restart in between drops the update.
                if isCurrent(update.generation) { handler(update) }
            }
        }
    }
}

/// The monitor's event loop, on a thread of its own: read notifications, apply, evaluate, deliver.
/// It holds the monitor weakly, so a monitor let go without `cancel` stops its thread within a poll.
private final class MonitorLoop: @unchecked Sendable {
    weak var monitor: PathMonitor?
    let options: PathEvaluationOptions
    let listener: NetlinkListener
    let reader: NetworkTablesReader
    var tables: NetworkTables
    let generation: UInt64
    var lastDelivered: NetworkPath
    var sequence: UInt64 = 1
    /// Set when a full re-read failed (or a message could not be read): retried on the next wake-up.
    var needsResync = false
    /// A change that did not alter the status is published at the end of a burst, or after this long
    /// into a burst, whichever comes first.
    static let coalescingLimit: UInt64 = 5_000_000

    init(monitor: PathMonitor, listener: NetlinkListener, reader: NetworkTablesReader, tables: NetworkTables, generation: UInt64) {
        self.monitor = monitor
        options = monitor.options
        self.listener = listener
        self.reader = reader
        self.tables = tables
        self.generation = generation
        lastDelivered = PathEvaluator.evaluate(tables, options: options)
    }

    func run() {
        var poller = pollfd(fd: listener.socket.fileDescriptor, events: Int16(POLLIN), revents: 0)
        while monitor?.isCurrent(generation) == true {
            poller.revents = 0
            let ready = poll(&poller, 1, 100)
            let eventTime = MonotonicClock.nanoseconds()
            if needsResync {
                resync(eventTime: eventTime)
            }
            guard ready > 0 else { continue }
            drain(eventTime: eventTime)
        }
    }

    /// Reads everything queued on the socket, applying and evaluating as it goes.
    private func drain(eventTime: UInt64) {
        var applied: UInt64 = 0
        var lastPublished = eventTime
        defer { monitor?.count(events: applied) }
        while true {
            let messages: [NetlinkMessage]
            do {
                messages = try listener.receive()
            } catch where error.kind == .system && (error.errno == EAGAIN || error.errno == EWOULDBLOCK) {
                break  // the burst is over
            } catch {
                // ENOBUFS (notifications lost) or an unreadable message: the tables cannot be trusted.
                monitor?.count(events: applied)
                applied = 0
                resync(eventTime: eventTime)
                return
            }
            for message in messages {
                applied += 1
                let change = tables.apply(message)
                switch change {
                case .none:
                    continue
                case .link(interfaceStateChanged: true), .address(removed: true):
                    // The kernel flushes IPv4 routes of an interface that goes down or loses its last IPv4
                    // address without notifying: read the routes again.
                    refreshRoutes()
                default:
                    break
                }
                let path = PathEvaluator.evaluate(tables, options: options)
                let now = MonotonicClock.nanoseconds()
                if path.status != lastDelivered.status || (path != lastDelivered && now - lastPublished > Self.coalescingLimit) {
                    publish(path, eventTime: eventTime)
                    lastPublished = now
                }
            }
        }
        let path = PathEvaluator.evaluate(tables, options: options)
        if path != lastDelivered { publish(path, eventTime: eventTime) }
    }

    private func refreshRoutes() {
        do {
            tables.routes = try reader.routes()
        } catch {
            needsResync = true
        }
    }

    private func resync(eventTime: UInt64) {
        // Drop whatever is left in the socket, then read the truth in full.
        while (try? listener.receive()) != nil {}
        do {
            tables = try reader.read()
            needsResync = false
        } catch {
            needsResync = true  // tried again on the next wake-up
            return
        }
        monitor?.count(resyncs: 1)
        let path = PathEvaluator.evaluate(tables, options: options)
        if path != lastDelivered { publish(path, eventTime: eventTime) }
    }

    private func publish(_ path: NetworkPath, eventTime: UInt64) {
        lastDelivered = path
        let update = PathUpdate(
            path: path, isBaseline: false, generation: generation, sequence: sequence, eventTime: eventTime,
            time: MonotonicClock.nanoseconds())
        sequence += 1
        monitor?.deliver(update)
    }
}

import Dispatch
import Foundation
import LinkcondBase
import NetNamespace
import PathMonitor
import Sandboxing

/// The event streams of the API (`GET /v1/sandboxes/NAME/events`): one path monitor (and one prober, unless
/// a client asks for the path alone) per sandbox, started when the first client subscribes and stopped when
/// the last one leaves, whose updates every subscriber gets as JSON lines (``UpdateLine``) — the latest path
/// and reachability first, then each update as it comes.
///
/// A subscriber that does not keep up cannot hold the others up: each has a queue of its own, written by its
/// own connection thread, and one that falls more than ``maximumBacklog`` lines behind is cut off with a last
/// line saying so.
final class EventStreams: @unchecked Sendable {
    static let maximumBacklog = 1024
    private let lock = NSLock()
    private var hubs: [String: Hub] = [:]

    /// A subscriber's side: the lines waiting for it, and whether its stream is over.
    final class Subscription: @unchecked Sendable {
        private let condition = NSCondition()
        private var lines: [String] = []
        private var ended: String?
        fileprivate var hubKey = ""
        fileprivate let identifier = UUID()

        fileprivate func push(_ line: String) {
            condition.lock()
            defer { condition.unlock() }
            guard ended == nil else { return }
            guard lines.count < EventStreams.maximumBacklog else {
                ended = "the client fell more than \(EventStreams.maximumBacklog) events behind"
                condition.signal()
                return
            }
            lines.append(line)
            condition.signal()
        }

        fileprivate func end(_ reason: String) {
            condition.lock()
            if ended == nil { ended = reason }
            condition.signal()
            condition.unlock()
        }

        /// The lines that came, waiting up to `seconds` for one; `ended` once the stream is over (after its
        /// last lines).
        func next(waiting seconds: Double) -> (lines: [String], ended: String?) {
            condition.lock()
            defer { condition.unlock() }
            if lines.isEmpty && ended == nil { _ = condition.wait(until: Date(timeIntervalSinceNow: seconds)) }
            let taken = lines
            lines.removeAll()
            return (taken, taken.isEmpty ? ended : nil)
        }
    }

    /// One sandbox's monitor and prober, and their subscribers.
    private final class Hub: @unchecked Sendable {
        let monitor: PathMonitor
        let prober: ReachabilityProber?
        let origin = MonotonicClock.nanoseconds()
        let queue = DispatchQueue(label: "linkcond.api.events")
        let identity: NamespaceIdentity?
        let namespacePath: String
        var subscribers: [UUID: Subscription] = [:]
        var latest: [String: String] = [:]

        init(client: NamedNamespace, probe: Bool) {
            monitor = PathMonitor(namespace: client)
            prober = probe ? ReachabilityProber(namespace: client) : nil
            namespacePath = client.path
            identity = NamespaceIdentity(path: client.path)
        }

        /// Delivers a line to every subscriber (on the hub's queue) and keeps it as the lane's latest.
        func publish(_ lane: String, _ line: String, lock: NSLock) {
            lock.lock()
            latest[lane] = line
            let targets = Array(subscribers.values)
            lock.unlock()
            for subscriber in targets { subscriber.push(line) }
        }

        var namespaceIsGone: Bool { NamespaceIdentity(path: namespacePath) != identity }
    }

    /// Subscribes to `sandbox`'s updates (with the prober's when `probe`); the subscription's first lines are
    /// the latest path and reachability seen. Throws when the sandbox is not up.
    func subscribe(_ sandbox: Sandbox, probe: Bool) throws -> Subscription {
        try subscribe(key: "\(sandbox.store.directory)/\(sandbox.topology.name)#\(probe)", probe: probe) { try sandbox.clientNamespace() }
    }

    /// Subscribes to the updates of the namespace `namespace` opens (an attachment's target), kept apart from
    /// other streams by `key`.
    func subscribe(key: String, probe: Bool, namespace: () throws -> NamedNamespace) throws -> Subscription {
        let subscription = Subscription()
        subscription.hubKey = key
        lock.lock()
        if let hub = hubs[key], !hub.namespaceIsGone {
            hub.subscribers[subscription.identifier] = subscription
            let latest = ["path", "reachability"].compactMap { hub.latest[$0] }
            lock.unlock()
            for line in latest { subscription.push(line) }
            return subscription
        }
        lock.unlock()
        let client = try namespace()
        let hub = Hub(client: client, probe: probe)
        lock.lock()
        if let stale = hubs[key] {
            for subscriber in stale.subscribers.values { subscriber.end("the namespace watched went away") }
            stale.monitor.cancel()
            stale.prober?.cancel()
        }
        hub.subscribers[subscription.identifier] = subscription
        hubs[key] = hub
        lock.unlock()
        let lock = self.lock
        do {
            try hub.monitor.start(queue: hub.queue) { [weak hub] update in
                guard let hub, let line = UpdateLine.json(lane: "path", update: update, time: update.time, origin: hub.origin) else { return }
                hub.publish("path", line, lock: lock)
            }
        } catch {
            unsubscribe(subscription)
            throw error
        }
        hub.prober?.start(queue: hub.queue) { [weak hub] update in
            guard let hub, let line = UpdateLine.json(lane: "reachability", update: update, time: update.time, origin: hub.origin) else { return }
            hub.publish("reachability", line, lock: lock)
        }
        return subscription
    }

    /// Takes `subscription` off its hub; the last one out stops the monitor and the prober.
    func unsubscribe(_ subscription: Subscription) {
        lock.lock()
        guard let hub = hubs[subscription.hubKey] else {
            lock.unlock()
            return
        }
        hub.subscribers[subscription.identifier] = nil
        let last = hub.subscribers.isEmpty
        if last { hubs[subscription.hubKey] = nil }
        lock.unlock()
        if last {
            hub.prober?.cancel()
            hub.monitor.cancel()
        }
    }

    /// Whether the namespace `subscription` watches went away (the sandbox was removed or rebuilt).
    func isGone(_ subscription: Subscription) -> Bool {
        lock.lock()
        let hub = hubs[subscription.hubKey]
        lock.unlock()
        return hub?.namespaceIsGone ?? true
    }

    /// Ends every stream (the server stops).
    func endAll(_ reason: String) {
        lock.lock()
        let all = hubs.values.flatMap(\.subscribers.values)
        lock.unlock()
        for subscription in all { subscription.end(reason) }
    }
}

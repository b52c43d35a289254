import Glibc
import NetNamespace
import RouteNetlink
import Synchronization

/// Carries a link change on one side of the wire to the other side, so that pulling the router's end
/// still looks like radio loss to the client (and the other way round).
///
/// A veth has carrier exactly when its peer is up, so in the wire namespace the carrier of `cl-wl0` says
/// whether the client's `wl0` is up, and that of `rt-wl0` whether the router's `c-wl0` is. The relay
/// follows `RTNLGRP_LINK` there and, after every burst of notifications, applies one rule to the current
/// state: for each wire end X that is administratively up, the other end's admin state becomes X's
/// carrier. An end that is down (because the relay set it down) is ignored — its carrier then says
/// nothing about its peer — so at most one end is ever down by the relay and nothing loops:
///
/// - `c-wl0` down ⇒ `rt-wl0` loses carrier ⇒ `cl-wl0` set down ⇒ `wl0` loses carrier; `c-wl0` up reverses it.
/// - `wl0` down ⇒ `cl-wl0` loses carrier ⇒ `rt-wl0` set down ⇒ `c-wl0` loses carrier.
///
/// An end that is down without the relay having set it down is held down by someone else — an
/// attachment's pulled cable (`link down` on the wire's end facing the stand-in) — and the relay leaves it
/// down until that someone brings it up: the other side keeps its carrier, as the far end of a pulled
/// cable does.
///
/// Loss, even 100 %, is not a link change: the relay reacts to links only. It starts by setting both ends up.
public final class CarrierRelay: Sendable {
    /// What the relay has seen and done.
    public struct Statistics: Sendable, Equatable {
        /// Bursts of link notifications read.
        public var bursts: UInt64 = 0
        /// Admin-state changes made (`ip link set END up|down`).
        public var changes: UInt64 = 0
        /// Failures to read or change a link, and the last one.
        public var errors: UInt64 = 0
        public var lastError: String?
    }

    private struct State {
        /// Released by ``stop()``, which closes the relay's sockets.
        var loop: RelayLoop?
        var thread: pthread_t?
        var statistics = Statistics()
    }

    /// The ends the relay keeps in step.
    public let wire: WireEnds
    private let state: Mutex<State>

    /// Subscribes to link notifications in the wire's namespace and opens the netlink connection that reads
    /// and sets the ends. Nothing changes before ``start()``.
    public init(wire: WireEnds) throws(PacketEngineError) {
        self.wire = wire
        let place = namespaceText(wire.namespace)
        let operation = "subscribe to link notifications in \(place)"
        let notifications: LinkNotifications
        let links: RouteNetlinkClient
        do {
            var sockets = try NamedNamespace.openSockets([.routeNetlink, .routeNetlink], in: wire.namespace)
            notifications = try LinkNotifications(adopting: sockets.take(0)!)
            links = try RouteNetlinkClient(adopting: sockets.take(1)!, namespace: wire.namespace?.name)
        } catch {
            throw .wrapping(operation, error)
        }
        let loop = RelayLoop(
            wire: wire, notifications: notifications, links: links, wake: try WakeSignal(place: "the carrier relay in \(place)"))
        state = Mutex(State(loop: loop))
    }

    deinit {
        stop()
    }

    /// Sets both ends up, applies the rule once, and starts following notifications on a thread of its own.
    /// A relay starts once; after ``stop()`` make a new one.
    public func start() throws(PacketEngineError) {
        try state.withLock { (state: inout State) throws(PacketEngineError) in
            guard state.thread == nil else { return }
            guard let loop = state.loop else {
                throw PacketEngineError(operation: "start the carrier relay in \(namespaceText(wire.namespace))", detail: "it was stopped")
            }
            try loop.setUp(wire.clientSide)
            try loop.setUp(wire.routerSide)
            state.thread = try EngineThread.start(loop, operation: "start the carrier relay in \(namespaceText(wire.namespace))")
        }
    }

    /// Stops following notifications, waits for the thread to end and closes the relay's sockets. The ends
    /// keep their state. Idempotent.
    public func stop() {
        state.withLock { state in
            guard let loop = state.loop else { return }
            if let thread = state.thread {
                loop.requestStop()
                pthread_join(thread, nil)
                state.thread = nil
            }
            state.statistics = loop.statistics.withLock { $0 }
            state.loop = nil
        }
    }

    /// What the relay has seen and done so far.
    public var statistics: Statistics {
        state.withLock { state in state.loop?.statistics.withLock { $0 } ?? state.statistics }
    }
}

/// The relay's thread: wait for link notifications, then bring the ends in line with the rule.
private final class RelayLoop: ThreadBody, @unchecked Sendable {
    let wire: WireEnds
    let notifications: LinkNotifications
    let links: RouteNetlinkClient
    let wake: WakeSignal
    let statistics = Mutex(CarrierRelay.Statistics())
    private let stopRequested = Atomic<Bool>(false)
    /// The ends the relay set down and has not seen up since (touched by the relay's thread alone).
    private var setDown: Set<String> = []

    init(wire: WireEnds, notifications: LinkNotifications, links: RouteNetlinkClient, wake: WakeSignal) {
        self.wire = wire
        self.notifications = notifications
        self.links = links
        self.wake = wake
    }

    func requestStop() {
        stopRequested.store(true, ordering: .relaxed)
        wake.wake()
    }

    func setUp(_ end: String) throws(PacketEngineError) {
        do {
            try links.setLink(end, up: true)
        } catch {
            throw .netlink("ip -n \(namespaceText(wire.namespace)) link set \(end) up", error)
        }
    }

    func runThread() {
        EngineThread.configureCurrent(name: "lc-carrier")
        var descriptors = [
            pollfd(fd: notifications.readinessDescriptor.rawValue, events: Int16(POLLIN), revents: 0),
            pollfd(fd: wake.fileDescriptor, events: Int16(POLLIN), revents: 0),
        ]
        apply()
        while !stopRequested.load(ordering: .relaxed) {
            descriptors[0].revents = 0
            descriptors[1].revents = 0
            guard poll(&descriptors, 2, -1) > 0 else { continue }
            if descriptors[1].revents != 0 { wake.acknowledge() }
            guard descriptors[0].revents != 0 else { continue }
            // Their content does not matter: the rule is applied to the state read afresh, so a lost
            // notification (an overrun) loses nothing either.
            _ = try? notifications.drain()
            statistics.withLock { $0.bursts += 1 }
            apply()
        }
    }

    /// Applies the rule until the state is stable (a change can make the other end's rule apply).
    private func apply() {
        for _ in 0..<4 {
            do {
                let client = try links.link(named: wire.clientSide)
                let router = try links.link(named: wire.routerSide)
                for end in [client, router] where end.isUp { setDown.remove(end.name) }
                // Down, and not by the relay: held down by someone else (a pulled cable), left down.
                let clientHeld = !client.isUp && !setDown.contains(client.name)
                let routerHeld = !router.isUp && !setDown.contains(router.name)
                if client.isUp, router.isUp != client.carrier, !(routerHeld && client.carrier) {
                    try change(wire.routerSide, up: client.carrier)
                } else if router.isUp, client.isUp != router.carrier, !(clientHeld && router.carrier) {
                    try change(wire.clientSide, up: router.carrier)
                } else {
                    return
                }
            } catch {
                statistics.withLock {
                    $0.errors += 1
                    $0.lastError = "\(error)"
                }
                return
            }
        }
    }

    private func change(_ end: String, up: Bool) throws {
        try links.setLink(end, up: up)
        if up { setDown.remove(end) } else { setDown.insert(end) }
        statistics.withLock { $0.changes += 1 }
    }
}

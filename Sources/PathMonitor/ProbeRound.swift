import Glibc
import LinkcondBase
import NetNamespace
import RouteNetlink

/// Runs one probe round. ``ReachabilityProber`` calls it on its own thread, one round at a time; tests
/// inject scripted rounds through it.
public protocol ProbeRoundEngine: Sendable {
    /// Probes once and returns the probes' results in the order they ended.
    /// - Parameters:
    ///   - lastKnownAddress: what the last successful DNS query gave (nil before the first): where a TCP
    ///     connect goes to tell "DNS broken" (limited) from "nothing works".
    ///   - isCancelled: turns true when the prober is cancelled or restarted; the round should end soon
    ///     (its results are dropped anyway).
    func run(lastKnownAddress: IPAddress?, isCancelled: () -> Bool) -> [ProbeResult]
}

/// The real round, with sockets created in a namespace:
///
/// 1. Side by side, under one ``ReachabilitySettings/timeout``: an A query for the host over UDP to the
///    first nameserver (resent every ``ReachabilitySettings/dnsRetransmitInterval``), and a TCP connect to
///    the last known address. A host given as an IP literal needs no query.
/// 2. When DNS gave an address: `GET path` over the connection to it (the one from step 1 when the address
///    is the same, a fresh one otherwise), under one more ``ReachabilitySettings/timeout``.
///
/// When DNS fails, step 1's connect alone tells whether IP still gets through (``ProbeOutcome/limited``).
/// Step 1 running both at once keeps a round on a dead link to one timeout, which is what
/// ``ReachabilitySettings/detectionBound(_:)`` counts on.
public struct NetworkProbeRound: ProbeRoundEngine {
    /// Where sockets are created; nil: the host's namespace (the calling thread's).
    public let namespace: NamedNamespace?
    public let settings: ReachabilitySettings

    public init(namespace: NamedNamespace?, settings: ReachabilitySettings) {
        self.namespace = namespace
        self.settings = settings
    }

    /// The nameserver a round asks: the first of ``ReachabilitySettings/nameservers``, or of the namespace's
    /// resolv.conf (read again each round, so an edited file takes effect at once).
    public func nameserver() -> IPAddress? {
        (settings.nameservers ?? ResolverConfiguration.load(for: namespace).effectiveNameservers).first
    }

    public func run(lastKnownAddress: IPAddress?, isCancelled: () -> Bool) -> [ProbeResult] {
        let timeout = max(0.001, settings.timeout)
        // Step 1's time counts from here, so reading resolv.conf and opening sockets are inside the timeout.
        let first = resolveAndConnect(lastKnownAddress: lastKnownAddress, deadline: ProbeClock.now() + timeout, isCancelled: isCancelled)
        guard let target = first.resolved, !isCancelled() else { return first.results }
        if let connection = first.connection, case .failure? = connection.result { return first.results }
        return first.results + fetch(from: target, over: first.connection, deadline: ProbeClock.now() + timeout, isCancelled: isCancelled)
    }

    /// Step 1: the A query and the connect to the last known address, side by side until `deadline`.
    /// Returns their results (in the order they ended), the address to fetch from (nil when DNS failed),
    /// and the connection when it went to that address.
    private func resolveAndConnect(
        lastKnownAddress: IPAddress?, deadline: Double, isCancelled: () -> Bool
    ) -> (results: [ProbeResult], resolved: IPAddress?, connection: ConnectAttempt?) {
        let literal = IPAddress(settings.host)
        let nameserver = literal == nil ? self.nameserver() : nil
        let connectTarget = literal ?? lastKnownAddress
        var results: [ProbeResult] = []

        var kinds: [ProbeSocket.Kind] = []
        if let nameserver { kinds.append(.udp(nameserver)) }
        if let connectTarget { kinds.append(.tcp(connectTarget)) }
        var sockets: [ProbeSocket]
        switch ProbeSocket.open(kinds, in: namespace) {
        case .failure(let failure):
            let result = ProbeResult(kind: literal == nil ? .dns : .tcp, success: false, error: failure.text, time: MonotonicClock.nanoseconds())
            return ([result], nil, nil)
        case .success(let opened):
            sockets = opened
        }
        var dns: DNSProbe.Exchange?
        if let nameserver {
            dns = DNSProbe.Exchange(
                socket: sockets.removeFirst(), server: nameserver, port: settings.dnsPort, name: settings.host,
                retransmitInterval: settings.dnsRetransmitInterval)
        } else if literal == nil {
            results.append(ProbeResult(kind: .dns, success: false, error: "no nameserver", time: MonotonicClock.nanoseconds()))
        }
        let connect = connectTarget.map { ConnectAttempt(socket: sockets.removeFirst(), target: $0, port: settings.port) }

        while !isCancelled() {
            let now = ProbeClock.now()
            dns?.sendIfDue(now: now)
            let dnsPending = dns?.isPending ?? false
            var connectNeeded = connect?.isPending ?? false
            // Once DNS named another address, the connect to the old one no longer matters.
            if !dnsPending, case .success(let address)? = dns?.result, address != connectTarget { connectNeeded = false }
            if (!dnsPending && !connectNeeded) || now >= deadline { break }
            var fds: [(fd: Int32, events: Int16)] = []
            if let dns, dnsPending { fds.append((dns.socket.fd, Int16(POLLIN))) }
            if let connect, connectNeeded { fds.append((connect.socket.fd, Int16(POLLOUT))) }
            let revents = ProbeClock.wait(fds, until: dnsPending ? min(deadline, dns?.nextSend ?? deadline) : deadline)
            if let dns, dnsPending, revents.first.map({ $0 != 0 }) == true { dns.readAnswers() }
            if let connect, connectNeeded, revents.last.map({ $0 != 0 }) == true { connect.complete() }
        }

        let expiry: ProbeFailure = isCancelled() ? .cancelled : .timedOut(after: settings.timeout)
        var resolved = literal
        if let dns {
            dns.expire(expiry)
            if case .success(let address)? = dns.result { resolved = address }
            dns.probeResult.map { results.append($0) }
        }
        // The connect counts when it went where the probe goes, or when DNS failed (it is then the only
        // evidence); a connect to an address DNS no longer gives is dropped.
        var connection: ConnectAttempt?
        if let connect, resolved == nil || resolved == connect.target {
            connect.expire(expiry)
            connect.probeResult.map { results.append($0) }
            connection = connect
        }
        results.sort { $0.time < $1.time }
        return (results, resolved, resolved == nil ? nil : connection)
    }

    /// Step 2: `GET path` from `target` over `connection` (established), or over a fresh connection made
    /// here, all by `deadline`. Returns the fresh connect's result, if any, and the HTTP result.
    private func fetch(from target: IPAddress, over connection: ConnectAttempt?, deadline: Double, isCancelled: () -> Bool) -> [ProbeResult] {
        var results: [ProbeResult] = []
        let established: ConnectAttempt
        if let connection {
            established = connection
        } else {
            switch ProbeSocket.open([.tcp(target)], in: namespace) {
            case .failure(let failure):
                return [ProbeResult(kind: .tcp, success: false, address: target.description, error: failure.text, time: MonotonicClock.nanoseconds())]
            case .success(let opened):
                established = ConnectAttempt(socket: opened[0], target: target, port: settings.port)
            }
            while established.isPending && !isCancelled() && ProbeClock.now() < deadline {
                let revents = ProbeClock.wait([(established.socket.fd, Int16(POLLOUT))], until: deadline)
                if revents.first.map({ $0 != 0 }) == true { established.complete() }
            }
            established.expire(isCancelled() ? .cancelled : .timedOut(after: settings.timeout))
            established.probeResult.map { results.append($0) }
            guard case .success? = established.result, !isCancelled() else { return results }
        }
        let request = HTTPProbe.request(host: settings.host, path: settings.path, port: settings.port)
        let exchanged = HTTPProbe.exchange(
            on: established.socket, request: request, deadline: deadline, timeout: settings.timeout, isCancelled: isCancelled)
        let now = MonotonicClock.nanoseconds()
        switch exchanged {
        case .success(let (response, seconds)):
            results.append(ProbeResult(kind: .http, success: true, rtt: seconds, httpStatus: response.status, address: target.description, time: now))
        case .failure(let failure):
            results.append(ProbeResult(kind: .http, success: false, address: target.description, error: failure.text, time: now))
        }
        return results
    }
}

/// A non-blocking TCP connect in flight.
final class ConnectAttempt {
    let socket: ProbeSocket
    let target: IPAddress
    let started: Double
    /// Set once the attempt is over.
    private(set) var result: Result<Void, ProbeFailure>?
    /// Monotonic nanoseconds when it ended.
    private(set) var finished: UInt64?

    init(socket: ProbeSocket, target: IPAddress, port: UInt16) {
        self.socket = socket
        self.target = target
        started = ProbeClock.now()
        if let failure = socket.connect(to: target, port: port) { finish(.failure(failure)) }
    }

    var isPending: Bool { result == nil }

    /// After POLLOUT (or an error event): established or failed.
    func complete() {
        guard isPending else { return }
        if let failure = socket.connectionError() {
            finish(.failure(failure))
        } else {
            finish(.success(()))
        }
    }

    /// Ends a pending attempt with `failure`.
    func expire(_ failure: ProbeFailure) {
        if isPending { finish(.failure(failure)) }
    }

    private func finish(_ outcome: Result<Void, ProbeFailure>) {
        result = outcome
        finished = MonotonicClock.nanoseconds()
    }

    var probeResult: ProbeResult? {
        guard let result, let finished else { return nil }
        switch result {
        case .success:
            return ProbeResult(kind: .tcp, success: true, rtt: ProbeClock.seconds(finished) - started, address: target.description, time: finished)
        case .failure(let failure):
            return ProbeResult(kind: .tcp, success: false, address: target.description, error: failure.text, time: finished)
        }
    }
}

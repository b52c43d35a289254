import Glibc
import LinkcondBase
import NetNamespace
import RouteNetlink

/// What one round of one family is to do.
public struct ProbeRoundRequest: Sendable, Equatable {
    /// The family probed: the record asked for, the nameserver, the addresses connected to.
    public var family: ReachabilityFamily
    /// What the family's last successful DNS query gave (nil before the first): where a TCP connect goes
    /// to tell "DNS broken" (limited) from "nothing works".
    public var lastKnownAddress: IPAddress?
    /// How long each probe may take (``ReachabilityStateMachine/timeouts``).
    public var timeouts: ProbeTimeouts

    /// A request, field by field.
    public init(family: ReachabilityFamily, lastKnownAddress: IPAddress?, timeouts: ProbeTimeouts) {
        self.family = family
        self.lastKnownAddress = lastKnownAddress
        self.timeouts = timeouts
    }
}

/// Runs one probe round. ``ReachabilityProber`` calls it on a thread per family, one round at a time per
/// family (so two rounds of different families may run at once); tests inject scripted rounds through it.
public protocol ProbeRoundEngine: Sendable {
    /// Probes once and returns the probes' results in the order they ended.
    /// - Parameters:
    ///   - request: the family, its last known address and the timeouts.
    ///   - isCancelled: turns true when the prober is cancelled or restarted; the round should end soon
    ///     (its results are dropped anyway).
    func run(_ request: ProbeRoundRequest, isCancelled: () -> Bool) -> [ProbeResult]
}

/// The real round of one family, with sockets created in a namespace:
///
/// 1. Side by side: a query for the host (A or AAAA) over UDP to the family's nameserver (resent every
///    ``ReachabilitySettings/dnsRetransmitInterval``, at most every DNS timeout), and a TCP connect to the
///    last known address. A host given as an IP literal needs no query.
/// 2. When DNS gave an address: `GET path` over the connection to it (the one from step 1 when the address
///    is the same, a fresh one otherwise).
///
/// Fixed timeouts (``ProbeTimeouts/isAdaptive`` false): step 1 has one deadline, ``ProbeTimeouts/dns`` (=
/// ``ProbeTimeouts/transport``), and step 2 another. Adaptive: each probe has its own — the query
/// ``ProbeTimeouts/dns``, each connect and the HTTP exchange ``ProbeTimeouts/transport`` — and a query still
/// unanswered at its timeout is waited for up to ``ProbeTimeouts/dnsPatience`` when step 1's connect
/// succeeded, while a ``LinkCheck`` shows the link keeps carrying traffic: slow DNS is not lost DNS.
///
/// When DNS fails, step 1's connect alone tells whether IP still gets through (``ProbeOutcome/limited``).
/// Step 1 running both at once keeps a round on a dead link to the longer of the two timeouts, which is
/// what ``ReachabilitySettings/detectionBound(probeTimeout:)`` counts on.
public struct NetworkProbeRound: ProbeRoundEngine {
    /// Where sockets are created; nil: the host's namespace (the calling thread's).
    public let namespace: NamedNamespace?
    /// Host, path, port, nameservers and retransmission interval come from here; timeouts from each request.
    public let settings: ReachabilitySettings

    /// A round engine whose sockets live in `namespace` (nil: the calling thread's).
    public init(namespace: NamedNamespace?, settings: ReachabilitySettings) {
        self.namespace = namespace
        self.settings = settings
    }

    /// The nameserver `family`'s rounds ask: the first of that family among
    /// ``ReachabilitySettings/nameservers`` or the namespace's resolv.conf (read again each round, so an
    /// edited file takes effect at once), or the first of all when none is of that family.
    public func nameserver(for family: ReachabilityFamily) -> IPAddress? {
        let all = settings.nameservers ?? ResolverConfiguration.load(for: namespace).effectiveNameservers
        return all.first { ReachabilityFamily($0) == family } ?? all.first
    }

    public func run(_ request: ProbeRoundRequest, isCancelled: () -> Bool) -> [ProbeResult] {
        let first = resolveAndConnect(request, isCancelled: isCancelled)
        guard let target = first.resolved, !isCancelled() else { return first.results }
        if let connection = first.connection, case .failure? = connection.result { return first.results }
        return first.results + fetch(request, from: target, over: first.connection, isCancelled: isCancelled)
    }

    /// Step 1: the query and the connect to the last known address, side by side, each until its deadline.
    /// Returns their results (in the order they ended), the address to fetch from (nil when DNS failed),
    /// and the connection when it went to that address.
    private func resolveAndConnect(
        _ request: ProbeRoundRequest, isCancelled: () -> Bool
    ) -> (results: [ProbeResult], resolved: IPAddress?, connection: ConnectAttempt?) {
        let timeouts = request.timeouts
        let family = request.family
        // Time counts from here, so reading resolv.conf and opening sockets are inside the timeouts.
        let started = ProbeClock.now()
        let literal = IPAddress(settings.host)
        let nameserver = literal == nil ? self.nameserver(for: family) : nil
        let connectTarget = literal ?? request.lastKnownAddress
        var results: [ProbeResult] = []

        var kinds: [ProbeSocket.Kind] = []
        if let nameserver { kinds.append(.udp(nameserver)) }
        if let connectTarget { kinds.append(.tcp(connectTarget)) }
        var sockets: [ProbeSocket]
        switch ProbeSocket.open(kinds, in: namespace) {
        case .failure(let failure):
            let result = ProbeResult(
                kind: literal == nil ? .dns : .tcp, success: false, error: failure.text, time: MonotonicClock.nanoseconds(),
                family: family)
            return ([result], nil, nil)
        case .success(let opened):
            sockets = opened
        }
        var dns: DNSProbe.Exchange?
        if let nameserver {
            dns = DNSProbe.Exchange(
                socket: sockets.removeFirst(), server: nameserver, port: settings.dnsPort, name: settings.host,
                type: family.recordType, retransmitInterval: min(settings.dnsRetransmitInterval, timeouts.dns))
        } else if literal == nil {
            results.append(ProbeResult(kind: .dns, success: false, error: "no nameserver", time: MonotonicClock.nanoseconds(), family: family))
        }
        let connect = connectTarget.map { ConnectAttempt(socket: sockets.removeFirst(), target: $0, port: settings.port) }

        var dnsDeadline = started + timeouts.dns
        let connectDeadline = started + timeouts.transport
        var check: LinkCheck?
        while !isCancelled() {
            let now = ProbeClock.now()
            dns?.sendIfDue(now: now)
            if let connect, connect.isPending, now >= connectDeadline { connect.expire(.timedOut(after: timeouts.transport)) }
            if let dns, dns.isPending, now >= dnsDeadline {
                if timeouts.isAdaptive, check == nil, connect?.succeeded == true, let connectTarget,
                   started + timeouts.dnsPatience > dnsDeadline {
                    // The link carries traffic: the answer is slow rather than lost. Wait, checking the link.
                    dnsDeadline = started + timeouts.dnsPatience
                    check = LinkCheck(
                        target: connectTarget, port: settings.port, family: family, namespace: namespace,
                        spacing: max(0.01, min(timeouts.transport, settings.interval)), timeout: timeouts.transport, now: now)
                } else {
                    dns.expire(.timedOut(after: dnsDeadline - started))
                }
            }
            if let check, let dns, dns.isPending {
                check.step(now: now)
                if check.failed { dns.expire(.timedOut(after: now - started)) }
            }
            let dnsPending = dns?.isPending ?? false
            var connectNeeded = connect?.isPending ?? false
            // Once DNS named another address, the connect to the old one no longer matters.
            if !dnsPending, case .success(let address)? = dns?.result, address != connectTarget { connectNeeded = false }
            if !dnsPending && !connectNeeded { break }

            var fds: [(fd: Int32, events: Int16)] = []
            var wake = Double.infinity
            if let dns, dnsPending {
                fds.append((dns.socket.fd, Int16(POLLIN)))
                wake = min(dnsDeadline, dns.nextSend)
            }
            if let connect, connectNeeded {
                fds.append((connect.socket.fd, Int16(POLLOUT)))
                wake = min(wake, connectDeadline)
            }
            let checking = dnsPending ? check?.pending : nil
            if let checking { fds.append((checking.fd, Int16(POLLOUT))) }
            if dnsPending, let check { wake = min(wake, check.nextWake) }
            let revents = ProbeClock.wait(fds, until: wake)
            var index = 0
            if let dns, dnsPending {
                if revents[index] != 0 { dns.readAnswers() }
                index += 1
            }
            if let connect, connectNeeded {
                if revents[index] != 0 { connect.complete() }
                index += 1
            }
            if checking != nil, revents[index] != 0 { check?.complete() }
        }

        let cancelled: ProbeFailure = .cancelled
        var resolved = literal
        if let dns {
            dns.expire(cancelled)
            if case .success(let address)? = dns.result { resolved = address }
            dns.probeResult(family: family).map { results.append($0) }
        }
        // The connect counts when it went where the probe goes, or when DNS failed (it is then the only
        // evidence); a connect to an address DNS no longer gives is dropped.
        var connection: ConnectAttempt?
        if let connect, resolved == nil || resolved == connect.target {
            connect.expire(cancelled)
            connect.probeResult(family: family).map { results.append($0) }
            connection = connect
        }
        results += check?.results ?? []
        results.sort { $0.time < $1.time }
        return (results, resolved, resolved == nil ? nil : connection)
    }

    /// Step 2: `GET path` from `target` over `connection` (established), or over a fresh connection made
    /// here. Returns the fresh connect's result, if any, and the HTTP result.
    private func fetch(
        _ request: ProbeRoundRequest, from target: IPAddress, over connection: ConnectAttempt?, isCancelled: () -> Bool
    ) -> [ProbeResult] {
        let timeouts = request.timeouts
        let family = request.family
        // Fixed mode: one deadline for the whole step. Adaptive: the connect and the exchange each get theirs.
        let stepDeadline = ProbeClock.now() + timeouts.transport
        var results: [ProbeResult] = []
        let established: ConnectAttempt
        if let connection {
            established = connection
        } else {
            switch ProbeSocket.open([.tcp(target)], in: namespace) {
            case .failure(let failure):
                return [ProbeResult(
                    kind: .tcp, success: false, address: target.description, error: failure.text,
                    time: MonotonicClock.nanoseconds(), family: family)]
            case .success(let opened):
                established = ConnectAttempt(socket: opened[0], target: target, port: settings.port)
            }
            while established.isPending && !isCancelled() && ProbeClock.now() < stepDeadline {
                let revents = ProbeClock.wait([(established.socket.fd, Int16(POLLOUT))], until: stepDeadline)
                if revents.first.map({ $0 != 0 }) == true { established.complete() }
            }
            established.expire(isCancelled() ? .cancelled : .timedOut(after: timeouts.transport))
            established.probeResult(family: family).map { results.append($0) }
            guard case .success? = established.result, !isCancelled() else { return results }
        }
        let deadline = timeouts.isAdaptive ? ProbeClock.now() + timeouts.transport : stepDeadline
        let retransmittedBefore = established.socket.retransmissions()
        let request = HTTPProbe.request(host: settings.host, path: settings.path, port: settings.port)
        let exchanged = HTTPProbe.exchange(
            on: established.socket, request: request, deadline: deadline, timeout: timeouts.transport, isCancelled: isCancelled)
        let now = MonotonicClock.nanoseconds()
        switch exchanged {
        case .success(let (response, seconds)):
            // Karn's algorithm: an exchange the kernel had to retransmit gives no round-trip sample.
            let retransmittedAfter = established.socket.retransmissions()
            let clean = retransmittedBefore != nil && retransmittedAfter == retransmittedBefore
            results.append(ProbeResult(
                kind: .http, success: true, rtt: seconds, httpStatus: response.status, address: target.description,
                time: now, family: family, rttSample: clean ? seconds : nil))
        case .failure(let failure):
            results.append(ProbeResult(
                kind: .http, success: false, address: target.description, error: failure.text, time: now, family: family,
                timedOut: failure.isTimeout))
        }
        return results
    }
}

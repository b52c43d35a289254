import Glibc
import LinkcondBase
import NetNamespace

/// A non-blocking TCP connect in flight.
final class ConnectAttempt {
    let socket: ProbeSocket
    let target: IPAddress
    let started: Double
    /// Set once the attempt is over.
    private(set) var result: Result<Void, ProbeFailure>?
    /// Monotonic nanoseconds when it ended.
    private(set) var finished: UInt64?
    /// True when the kernel retransmitted the SYN: the connect time is then no round-trip sample.
    private(set) var retransmitted = false

    init(socket: ProbeSocket, target: IPAddress, port: UInt16) {
        self.socket = socket
        self.target = target
        started = ProbeClock.now()
        if let failure = socket.connect(to: target, port: port) { finish(.failure(failure)) }
    }

    var isPending: Bool { result == nil }

    /// True once the connection is established.
    var succeeded: Bool {
        if case .success? = result { return true }
        return false
    }

    /// After POLLOUT (or an error event): established or failed.
    func complete() {
        guard isPending else { return }
        if let failure = socket.connectionError() {
            finish(.failure(failure))
        } else {
            retransmitted = (socket.retransmissions() ?? 1) > 0
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

    /// The attempt as a result of `family`; nil while pending.
    func probeResult(family: ReachabilityFamily) -> ProbeResult? {
        guard let result, let finished else { return nil }
        switch result {
        case .success:
            let rtt = ProbeClock.seconds(finished) - started
            return ProbeResult(
                kind: .tcp, success: true, rtt: rtt, address: target.description, time: finished, family: family,
                rttSample: retransmitted ? nil : rtt)
        case .failure(let failure):
            return ProbeResult(
                kind: .tcp, success: false, address: target.description, error: failure.text, time: finished,
                family: family, timedOut: failure.isTimeout)
        }
    }
}

/// Adaptive mode's check that the link still carries traffic while a slow DNS answer is waited for: one
/// TCP connect to the last known address at a time, a new one every `spacing` seconds, each given
/// `timeout`. A successful connect is closed at once; the first that fails ends the checking (``failed``),
/// and with it the wait for DNS.
final class LinkCheck {
    let target: IPAddress
    let port: UInt16
    let family: ReachabilityFamily
    let namespace: NamedNamespace?
    let spacing: Double
    let timeout: Double
    /// The connects that ended, in order.
    private(set) var results: [ProbeResult] = []
    /// True once a connect failed.
    private(set) var failed = false
    private var current: ConnectAttempt?
    private var deadline = 0.0
    private var nextStart: Double

    init(target: IPAddress, port: UInt16, family: ReachabilityFamily, namespace: NamedNamespace?, spacing: Double, timeout: Double, now: Double) {
        self.target = target
        self.port = port
        self.family = family
        self.namespace = namespace
        self.spacing = spacing
        self.timeout = timeout
        nextStart = now
    }

    /// The socket to poll for POLLOUT, while a connect is in flight.
    var pending: ProbeSocket? { current?.socket }

    /// When ``step(now:)`` has something to do next (monotonic seconds).
    var nextWake: Double { current != nil ? deadline : nextStart }

    /// Ends a connect whose time is up, and starts the next one when it is due.
    func step(now: Double) {
        if let current, current.isPending, now >= deadline {
            current.expire(.timedOut(after: timeout))
            record(current)
        }
        guard current == nil, !failed, now >= nextStart else { return }
        nextStart = now + spacing
        deadline = now + timeout
        switch ProbeSocket.open([.tcp(target)], in: namespace) {
        case .failure(let failure):
            failed = true
            results.append(ProbeResult(
                kind: .tcp, success: false, address: target.description, error: failure.text,
                time: MonotonicClock.nanoseconds(), family: family))
        case .success(let sockets):
            let attempt = ConnectAttempt(socket: sockets[0], target: target, port: port)
            current = attempt
            if !attempt.isPending { record(attempt) }
        }
    }

    /// After an event on ``pending``.
    func complete() {
        guard let current else { return }
        current.complete()
        if !current.isPending { record(current) }
    }

    private func record(_ attempt: ConnectAttempt) {
        if let result = attempt.probeResult(family: family) {
            results.append(result)
            if !result.success { failed = true }
        }
        current = nil
    }
}

import Glibc
import LinkcondBase
import RouteNetlink

/// The prober's DNS step: one A query over UDP, its retransmissions and the check of the answer.
/// Encoding and decoding are Responders' ``DNSMessage``; this adds only what a stub resolver checks.
enum DNSProbe {
    /// The wire bytes of an A query for `name` with RD set; nil when `name` is not a valid DNS name.
    static func query(id: UInt16, name: String) -> [UInt8]? {
        guard let dnsName = DNSName(name) else { return nil }
        return DNSMessage.query(id: id, name: dnsName, type: .a).encoded()
    }

    /// What a datagram says about the query `id` for `name`.
    enum Answer: Equatable {
        /// Not an answer to this query (another id, not a response, another question): keep waiting.
        case unrelated
        /// The first A record's address.
        case address(IPAddress)
        /// An answer that gives no address (NXDOMAIN, REFUSED, no A record, truncated).
        case failed(String)
    }

    /// Checks a datagram against the query: id, QR, the question echoed, then RCODE and the A records.
    static func answer(_ bytes: [UInt8], id: UInt16, name: String) -> Answer {
        guard let message = try? DNSMessage(bytes: bytes), message.id == id, message.isResponse else { return .unrelated }
        if let expected = DNSName(name), let question = message.questions.first,
           !question.name.isEquivalent(to: expected) || question.type != .a {
            return .unrelated
        }
        guard message.responseCode == .noError else { return .failed("\(message.responseCode)") }
        if let record = message.answers.first(where: { $0.type == .a && $0.data.count == 4 }),
           let address = IPAddress(bytes: record.data) {
            return .address(address)
        }
        return .failed(message.isTruncated ? "truncated answer without an A record" : "no A record")
    }

    /// One query in flight on a connected UDP socket, resent every `retransmitInterval` until answered.
    final class Exchange {
        let socket: ProbeSocket
        let server: IPAddress
        let name: String
        let id: UInt16
        let query: [UInt8]
        let retransmitInterval: Double
        let started: Double
        private(set) var nextSend: Double
        /// Set once the exchange is over.
        private(set) var result: Result<IPAddress, ProbeFailure>?
        /// Monotonic nanoseconds when the exchange ended.
        private(set) var finished: UInt64?

        /// Sends the first query. The exchange is over at once when the name is invalid or sending fails.
        init(socket: ProbeSocket, server: IPAddress, port: UInt16, name: String, retransmitInterval: Double) {
            self.socket = socket
            self.server = server
            self.name = name
            id = UInt16.random(in: .min ... .max)
            query = DNSProbe.query(id: id, name: name) ?? []
            self.retransmitInterval = max(0.05, retransmitInterval)
            started = ProbeClock.now()
            nextSend = started
            if query.isEmpty {
                finish(.failure(ProbeFailure(text: "invalid DNS name '\(name)'")))
            } else if let failure = socket.connect(to: server, port: port) {
                finish(.failure(failure))
            } else {
                sendIfDue(now: started)
            }
        }

        var isPending: Bool { result == nil }

        /// Sends (again) when the retransmission time has come.
        func sendIfDue(now: Double) {
            guard isPending, now >= nextSend else { return }
            switch socket.send(query[...]) {
            case .failure(let failure): finish(.failure(failure))
            case .success: nextSend = now + retransmitInterval
            }
        }

        /// Reads every waiting datagram. An ICMP error (port or host unreachable) ends the exchange.
        func readAnswers() {
            while isPending, let received = socket.receive(capacity: 1500) {
                switch received {
                case .failure(let failure):
                    finish(.failure(failure))
                case .success(let bytes):
                    switch DNSProbe.answer(bytes, id: id, name: name) {
                    case .unrelated: continue
                    case .address(let address): finish(.success(address))
                    case .failed(let text): finish(.failure(ProbeFailure(text: text)))
                    }
                }
            }
        }

        /// Ends a pending exchange with `failure` (a timeout, a cancel).
        func expire(_ failure: ProbeFailure) {
            if isPending { finish(.failure(failure)) }
        }

        private func finish(_ outcome: Result<IPAddress, ProbeFailure>) {
            result = outcome
            finished = MonotonicClock.nanoseconds()
        }

        /// The exchange as a result; nil while pending.
        var probeResult: ProbeResult? {
            guard let result, let finished else { return nil }
            switch result {
            case .success(let address):
                return ProbeResult(
                    kind: .dns, success: true, rtt: ProbeClock.seconds(finished) - started, address: address.description,
                    time: finished)
            case .failure(let failure):
                return ProbeResult(kind: .dns, success: false, error: "\(server): \(failure)", time: finished)
            }
        }
    }
}

import Glibc
import LinkcondBase
import RouteNetlink

/// The prober's DNS step: one A or AAAA query over UDP, its retransmissions and the check of the answer.
/// Encoding and decoding are LinkcondBase's ``DNSMessage``; this adds only what a stub resolver checks.
enum DNSProbe {
    /// The wire bytes of a query of `type` (A or AAAA) for `name` with RD set; nil when `name` is not a
    /// valid DNS name.
    static func query(id: UInt16, name: String, type: DNSRecordType = .a) -> [UInt8]? {
        guard let dnsName = DNSName(name) else { return nil }
        return DNSMessage.query(id: id, name: dnsName, type: type).encoded()
    }

    /// What a datagram says about a query of `type` for `name`.
    enum Answer: Equatable {
        /// Not an answer to this query (another id, not a response, another question): keep waiting.
        case unrelated
        /// The first address record's address.
        case address(IPAddress)
        /// An answer that gives no address (NXDOMAIN, REFUSED, no record of the type, truncated).
        case failed(String)
    }

    /// Checks a datagram against the query: id (one of `ids`), QR, the question echoed, then RCODE and the
    /// records of `type` (A: 4 bytes, AAAA: 16).
    static func answer(_ bytes: [UInt8], ids: Set<UInt16>, name: String, type: DNSRecordType = .a) -> Answer {
        guard let message = try? DNSMessage(bytes: bytes) else { return .unrelated }
        return answer(message, ids: ids, name: name, type: type)
    }

    /// ``answer(_:ids:name:type:)`` for a decoded message.
    static func answer(_ message: DNSMessage, ids: Set<UInt16>, name: String, type: DNSRecordType) -> Answer {
        guard ids.contains(message.id), message.isResponse else { return .unrelated }
        if let expected = DNSName(name), let question = message.questions.first,
           !question.name.isEquivalent(to: expected) || question.type != type {
            return .unrelated
        }
        guard message.responseCode == .noError else { return .failed("\(message.responseCode)") }
        let length = type == .aaaa ? 16 : 4
        if let record = message.answers.first(where: { $0.type == type && $0.data.count == length }),
           let address = IPAddress(bytes: record.data) {
            return .address(address)
        }
        return .failed(message.isTruncated ? "truncated answer without an \(type) record" : "no \(type) record")
    }

    /// ``answer(_:ids:name:type:)`` for a single id.
    static func answer(_ bytes: [UInt8], id: UInt16, name: String, type: DNSRecordType = .a) -> Answer {
        answer(bytes, ids: [id], name: name, type: type)
    }

    /// One query in flight on a connected UDP socket, resent every `retransmitInterval` until answered.
    /// Every transmission carries an ID of its own, so an answer says which transmission it answers and
    /// gives an unambiguous round trip.
    final class Exchange {
        let socket: ProbeSocket
        let server: IPAddress
        let name: String
        let type: DNSRecordType
        let retransmitInterval: Double
        let started: Double
        private(set) var nextSend: Double
        /// Each transmission's ID and the monotonic second it was sent.
        private var sent: [UInt16: Double] = [:]
        /// Set once the exchange is over.
        private(set) var result: Result<IPAddress, ProbeFailure>?
        /// Monotonic nanoseconds when the exchange ended.
        private(set) var finished: UInt64?
        /// Seconds from the answered transmission to its answer.
        private(set) var sample: Double?

        /// Sends the first query. The exchange is over at once when the name is invalid or sending fails.
        init(socket: ProbeSocket, server: IPAddress, port: UInt16, name: String, type: DNSRecordType, retransmitInterval: Double) {
            self.socket = socket
            self.server = server
            self.name = name
            self.type = type
            self.retransmitInterval = max(0.05, retransmitInterval)
            started = ProbeClock.now()
            nextSend = started
            if DNSName(name) == nil {
                finish(.failure(ProbeFailure(text: "invalid DNS name '\(name)'")))
            } else if let failure = socket.connect(to: server, port: port) {
                finish(.failure(failure))
            } else {
                sendIfDue(now: started)
            }
        }

        var isPending: Bool { result == nil }

        /// The IDs sent so far.
        var ids: Set<UInt16> { Set(sent.keys) }

        /// Sends (again, with a fresh ID) when the retransmission time has come.
        func sendIfDue(now: Double) {
            guard isPending, now >= nextSend else { return }
            var id = UInt16.random(in: .min ... .max)
            while sent[id] != nil { id = UInt16.random(in: .min ... .max) }
            guard let query = DNSProbe.query(id: id, name: name, type: type) else { return }
            switch socket.send(query[...]) {
            case .failure(let failure): finish(.failure(failure))
            case .success:
                sent[id] = now
                nextSend = now + retransmitInterval
            }
        }

        /// Reads every waiting datagram. An ICMP error (port or host unreachable) ends the exchange.
        func readAnswers() {
            while isPending, let received = socket.receive(capacity: 1500) {
                switch received {
                case .failure(let failure):
                    finish(.failure(failure))
                case .success(let bytes):
                    guard let message = try? DNSMessage(bytes: bytes) else { continue }
                    let answer = DNSProbe.answer(message, ids: ids, name: name, type: type)
                    if answer != .unrelated, let sentAt = sent[message.id] { sample = ProbeClock.now() - sentAt }
                    switch answer {
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

        /// The exchange as a result of `family`; nil while pending.
        func probeResult(family: ReachabilityFamily) -> ProbeResult? {
            guard let result, let finished else { return nil }
            switch result {
            case .success(let address):
                return ProbeResult(
                    kind: .dns, success: true, rtt: ProbeClock.seconds(finished) - started, address: address.description,
                    time: finished, family: family, rttSample: sample)
            case .failure(let failure):
                return ProbeResult(
                    kind: .dns, success: false, error: "\(server): \(failure)", time: finished, family: family,
                    timedOut: failure.isTimeout)
            }
        }
    }
}

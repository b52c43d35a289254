import LinkcondBase
/// The answers of the sandbox's authoritative DNS server for one zone. Pure: bytes in, bytes out.
///
/// - The apex and every name below it (`server.linkcond.test`, `x.y.linkcond.test`), compared
///   case-insensitively, get the configured address for A, AAAA (and both for ANY), and NOERROR with no
///   answers for any other type. These responses are authoritative (AA).
/// - A name outside the zone, or a class other than IN/ANY, gets REFUSED.
/// - A query that cannot be decoded, or has other than one question, gets FORMERR when its header could be
///   read; a message shorter than a header, or a response, is dropped (nil).
/// - An opcode other than QUERY gets NOTIMP.
/// The ID, opcode, RD and CD flags and the question are echoed.
public struct DNSZone: Sendable, Equatable {
    /// The zone's apex, e.g. `linkcond.test`.
    public var apex: DNSName
    /// The four bytes of the A answer.
    public var ipv4Address: [UInt8]
    /// The sixteen bytes of the AAAA answer.
    public var ipv6Address: [UInt8]
    /// TTL of the answers, in seconds.
    public var ttl: UInt32

    /// Largest UDP response (RFC 1035); longer responses are truncated (TC set, answers dropped).
    public static let maximumUDPResponseSize = 512

    public init(apex: DNSName, ipv4Address: [UInt8], ipv6Address: [UInt8], ttl: UInt32 = 5) {
        precondition(ipv4Address.count == 4 && ipv6Address.count == 16, "DNSZone: wrong address length")
        self.apex = apex
        self.ipv4Address = ipv4Address
        self.ipv6Address = ipv6Address
        self.ttl = ttl
    }

    /// The zone the configuration describes.
    public init(configuration: ResponderConfiguration) throws(ResponderError) {
        guard let apex = DNSName(configuration.zone) else { throw .invalidZone(configuration.zone) }
        guard let ipv4 = IPAddress(configuration.ipv4Address).flatMap({ $0.isIPv4 ? $0.bytes : nil }) else {
            throw .invalidAddress(field: "ipv4Address", value: configuration.ipv4Address)
        }
        guard let ipv6 = IPAddress(configuration.ipv6Address).flatMap({ $0.isIPv4 ? nil : $0.bytes }) else {
            throw .invalidAddress(field: "ipv6Address", value: configuration.ipv6Address)
        }
        self.init(apex: apex, ipv4Address: ipv4, ipv6Address: ipv6, ttl: configuration.dnsTTL)
    }

    /// The response to the query in `query`, encoded, or nil when the query is to be dropped.
    /// - Parameter maximumSize: for UDP, ``maximumUDPResponseSize``; nil for TCP.
    public func response(to query: [UInt8], maximumSize: Int? = DNSZone.maximumUDPResponseSize) -> [UInt8]? {
        guard let header = DNSHeader(bytes: query), !header.isResponse else { return nil }
        let message: DNSMessage
        do {
            message = try DNSMessage(bytes: query)
        } catch {
            return DNSMessage(
                id: header.id, isResponse: true, opcode: header.opcode,
                recursionDesired: header.recursionDesired, responseCode: .formatError
            ).encoded()
        }
        var response = self.response(to: message)
        var bytes = response.encoded()
        if let maximumSize, bytes.count > maximumSize {
            response.isTruncated = true
            response.answers = []
            response.authorities = []
            response.additionals = []
            bytes = response.encoded()
            if bytes.count > maximumSize {
                response.questions = []
                bytes = response.encoded()
            }
        }
        return bytes
    }

    /// The response to a decoded query (see the type's description for the rules).
    public func response(to query: DNSMessage) -> DNSMessage {
        var response = DNSMessage(
            id: query.id, isResponse: true, opcode: query.opcode,
            recursionDesired: query.recursionDesired, checkingDisabled: query.checkingDisabled,
            responseCode: .noError, questions: query.questions
        )
        guard query.opcode == 0 else {
            response.responseCode = .notImplemented
            return response
        }
        guard query.questions.count == 1, let question = query.questions.first else {
            response.responseCode = .formatError
            response.questions = []
            return response
        }
        guard question.recordClass == .internet || question.recordClass == .any,
              question.name.isSubdomain(of: apex)
        else {
            response.responseCode = .refused
            return response
        }
        response.isAuthoritative = true
        if question.type == .a || question.type == .any {
            response.answers.append(DNSResourceRecord(name: question.name, type: .a, ttl: ttl, data: ipv4Address))
        }
        if question.type == .aaaa || question.type == .any {
            response.answers.append(DNSResourceRecord(name: question.name, type: .aaaa, ttl: ttl, data: ipv6Address))
        }
        return response
    }
}

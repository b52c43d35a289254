// libFuzzer target: the DNS wire format (LinkcondBase.DNSMessage) and the sandbox's DNS zone (Responders).
// Any input decodes or is refused; what decodes must encode and decode back the same (names compared
// without ASCII case, since the encoder compresses a name against an earlier one that differs only in
// case; the first question is kept exactly, so a query's 0x20 case is echoed); the zone answers any query
// within its size limit.
import LinkcondBase
import Responders

/// The sandbox's zone: server.linkcond.test at 198.19.0.2 and 2001:2:0:100::2.
let zone = DNSZone(
    apex: DNSName("linkcond.test")!, ipv4Address: [198, 19, 0, 2],
    ipv6Address: [0x20, 0x01, 0, 2, 0, 0, 1, 0] + [UInt8](repeating: 0, count: 7) + [2])

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDNS(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let response = zone.response(to: bytes), response.count > DNSZone.maximumUDPResponseSize {
        fatalError("a response of \(response.count) bytes")
    }
    guard let message = try? DNSMessage(bytes: bytes) else { return 0 }
    let encoded = message.encoded()
    let again: DNSMessage
    do {
        again = try DNSMessage(bytes: encoded)
    } catch {
        fatalError("the encoded message does not decode: \(error)")
    }
    guard canonical(again) == canonical(message) else { fatalError("decoded differently after encoding") }
    guard again.questions.first?.name == message.questions.first?.name else {
        fatalError("the first question's name changed case")
    }
    _ = message.questions.map { $0.name.description }
    return 0
}

/// The message with every name in lower case.
func canonical(_ message: DNSMessage) -> DNSMessage {
    func lowered(_ name: DNSName) -> DNSName {
        guard let name = DNSName(labels: name.canonicalLabels) else { fatalError("a decoded name is invalid") }
        return name
    }
    func lowered(_ records: [DNSResourceRecord]) -> [DNSResourceRecord] {
        records.map { record in
            var record = record
            record.name = lowered(record.name)
            return record
        }
    }
    var message = message
    message.questions = message.questions.map { question in
        var question = question
        question.name = lowered(question.name)
        return question
    }
    message.answers = lowered(message.answers)
    message.authorities = lowered(message.authorities)
    message.additionals = lowered(message.additionals)
    return message
}

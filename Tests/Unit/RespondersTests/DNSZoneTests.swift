import LinkcondBase
import XCTest
@testable import Responders

final class DNSZoneTests: XCTestCase {
    let zone = DNSZone(
        apex: DNSName("linkcond.test")!,
        ipv4Address: [198, 19, 0, 2],
        ipv6Address: [0x20, 0x01, 0x00, 0x02, 0x00, 0x00, 0x01, 0x00, 0, 0, 0, 0, 0, 0, 0, 0x02],
        ttl: 5
    )

    func testZoneFromDefaultConfiguration() throws {
        XCTAssertEqual(try DNSZone(configuration: ResponderConfiguration()), zone)
        XCTAssertThrowsError(try DNSZone(configuration: ResponderConfiguration(ipv4Address: "2001:db8::1")))
        XCTAssertThrowsError(try DNSZone(configuration: ResponderConfiguration(ipv6Address: "198.19.0.2")))
        XCTAssertThrowsError(try DNSZone(configuration: ResponderConfiguration(zone: "a..b")))
    }

    func testAnswersAByteForByte() throws {
        let response = try XCTUnwrap(zone.response(to: DNSMessageTests.serverQuery))
        let question = Array(DNSMessageTests.serverQuery[12...])
        XCTAssertEqual(response.count, 12 + question.count + 16)
        XCTAssertEqual(Array(response[0..<12]), [
            0x12, 0x34,  // ID echoed
            0x85, 0x00,  // QR, AA, RD; NOERROR
            0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,  // QD 1, AN 1
        ])
        XCTAssertEqual(Array(response[12..<(12 + question.count)]), question)
        XCTAssertEqual(Array(response[(12 + question.count)...]), [
            0xC0, 0x0C,  // owner: pointer to the question name
            0x00, 0x01,  // TYPE A
            0x00, 0x01,  // CLASS IN
            0x00, 0x00, 0x00, 0x05,  // TTL 5
            0x00, 0x04,  // RDLENGTH
            198, 19, 0, 2,
        ])
    }

    func testAnswersAAAA() throws {
        let message = try ask("server.linkcond.test", .aaaa)
        XCTAssertEqual(message.responseCode, .noError)
        XCTAssertTrue(message.isAuthoritative)
        XCTAssertEqual(message.answers.count, 1)
        XCTAssertEqual(message.answers[0].type, .aaaa)
        XCTAssertEqual(message.answers[0].ttl, 5)
        XCTAssertEqual(message.answers[0].data, zone.ipv6Address)
    }

    func testAnswersApexAndDeepNamesCaseInsensitively() throws {
        for name in ["linkcond.test", "LINKCOND.TEST.", "x.y.LinkCond.Test", "a.b.c.d.linkcond.test"] {
            let message = try ask(name, .a)
            XCTAssertEqual(message.responseCode, .noError, name)
            XCTAssertEqual(message.answers.map(\.data), [[198, 19, 0, 2]], name)
            // The question is echoed with its case (0x20 randomization).
            XCTAssertEqual(message.questions.first?.name, DNSName(name), name)
        }
    }

    func testAnyGetsBothAddresses() throws {
        let message = try ask("server.linkcond.test", .any)
        XCTAssertEqual(message.answers.map(\.type), [.a, .aaaa])
    }

    func testOtherTypesGetNoData() throws {
        for type in [DNSRecordType.mx, .txt, .https, .soa] {
            let message = try ask("server.linkcond.test", type)
            XCTAssertEqual(message.responseCode, .noError)
            XCTAssertTrue(message.isAuthoritative)
            XCTAssertTrue(message.answers.isEmpty)
            XCTAssertEqual(message.questions.count, 1)
        }
    }

    func testOutsideZoneIsRefused() throws {
        for name in ["example.com", "notlinkcond.test", "test", "."] {
            let message = try ask(name, .a, id: 0x4321)
            XCTAssertEqual(message.id, 0x4321)
            XCTAssertEqual(message.responseCode, .refused, name)
            XCTAssertTrue(message.answers.isEmpty)
            XCTAssertFalse(message.isAuthoritative)
            XCTAssertEqual(message.questions.first?.name, DNSName(name))
        }
        // Class CHAOS inside the zone is refused as well.
        var query = DNSMessage.query(id: 1, name: DNSName("linkcond.test")!, type: .txt)
        query.questions[0].recordClass = .chaos
        XCTAssertEqual(zone.response(to: query).responseCode, .refused)
    }

    func testTruncatedQueryGetsFormErr() throws {
        let truncated = Array(DNSMessageTests.serverQuery.prefix(20))
        let bytes = try XCTUnwrap(zone.response(to: truncated))
        XCTAssertEqual(bytes, [0x12, 0x34, 0x81, 0x01, 0, 0, 0, 0, 0, 0, 0, 0])
        let message = try DNSMessage(bytes: bytes)
        XCTAssertEqual(message.responseCode, .formatError)
        XCTAssertTrue(message.recursionDesired)
    }

    func testPointerLoopGetsFormErr() throws {
        let looping: [UInt8] = [0x12, 0x34, 0x01, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0,
                                0xC0, 0x0C, 0x00, 0x01, 0x00, 0x01]
        let message = try DNSMessage(bytes: XCTUnwrap(zone.response(to: looping)))
        XCTAssertEqual(message.responseCode, .formatError)
        XCTAssertEqual(message.id, 0x1234)
    }

    func testQuestionCountOtherThanOneGetsFormErr() throws {
        var none = DNSMessage.query(id: 9, name: .root, type: .a)
        none.questions = []
        XCTAssertEqual(try DNSMessage(bytes: XCTUnwrap(zone.response(to: none.encoded()))).responseCode, .formatError)
        var two = DNSMessage.query(id: 9, name: DNSName("a.linkcond.test")!, type: .a)
        two.questions.append(DNSQuestion(name: DNSName("b.linkcond.test")!, type: .a))
        XCTAssertEqual(try DNSMessage(bytes: XCTUnwrap(zone.response(to: two.encoded()))).responseCode, .formatError)
    }

    func testHeaderlessAndResponsesAreDropped() {
        XCTAssertNil(zone.response(to: []))
        XCTAssertNil(zone.response(to: Array(DNSMessageTests.serverQuery.prefix(11))))
        var response = DNSMessageTests.serverQuery
        response[2] |= 0x80
        XCTAssertNil(zone.response(to: response))
    }

    func testOtherOpcodeGetsNotImp() throws {
        var query = DNSMessage.query(id: 3, name: DNSName("linkcond.test")!, type: .a)
        query.opcode = 2  // STATUS
        let message = try DNSMessage(bytes: XCTUnwrap(zone.response(to: query.encoded())))
        XCTAssertEqual(message.responseCode, .notImplemented)
        XCTAssertEqual(message.opcode, 2)
    }

    func testEDNSQueryIsAnswered() throws {
        var query = DNSMessage.query(id: 5, name: DNSName("server.linkcond.test")!, type: .a)
        query.additionals = [DNSResourceRecord(name: .root, type: .opt, recordClass: 1232, ttl: 0, data: [])]
        let message = try DNSMessage(bytes: XCTUnwrap(zone.response(to: query.encoded())))
        XCTAssertEqual(message.responseCode, .noError)
        XCTAssertEqual(message.answers.count, 1)
    }

    func testOversizedUDPResponseIsTruncated() throws {
        let query = DNSMessage.query(id: 5, name: DNSName("server.linkcond.test")!, type: .any).encoded()
        let bytes = try XCTUnwrap(zone.response(to: query, maximumSize: 50))
        XCTAssertLessThanOrEqual(bytes.count, 50)
        let message = try DNSMessage(bytes: bytes)
        XCTAssertTrue(message.isTruncated)
        XCTAssertTrue(message.answers.isEmpty)
        XCTAssertEqual(try DNSMessage(bytes: XCTUnwrap(zone.response(to: query, maximumSize: nil))).answers.count, 2)
    }

    private func ask(_ name: String, _ type: DNSRecordType, id: UInt16 = 0x1234) throws -> DNSMessage {
        let query = DNSMessage.query(id: id, name: try XCTUnwrap(DNSName(name)), type: type)
        let bytes = try XCTUnwrap(zone.response(to: query.encoded()))
        XCTAssertLessThanOrEqual(bytes.count, 512)
        let message = try DNSMessage(bytes: bytes)
        XCTAssertTrue(message.isResponse)
        XCTAssertEqual(message.id, id)
        XCTAssertTrue(message.recursionDesired)
        XCTAssertFalse(message.recursionAvailable)
        return message
    }
}

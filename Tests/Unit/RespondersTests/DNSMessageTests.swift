import XCTest
@testable import LinkcondBase
@testable import Responders

final class DNSMessageTests: XCTestCase {
    /// `server.linkcond.test` A, id 0x1234, RD, as a stub resolver sends it.
    static let serverQuery: [UInt8] = [
        0x12, 0x34,  // ID
        0x01, 0x00,  // flags: RD
        0x00, 0x01,  // QDCOUNT 1
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // AN, NS, AR
        0x06, 0x73, 0x65, 0x72, 0x76, 0x65, 0x72,  // "server"
        0x08, 0x6C, 0x69, 0x6E, 0x6B, 0x63, 0x6F, 0x6E, 0x64,  // "linkcond"
        0x04, 0x74, 0x65, 0x73, 0x74,  // "test"
        0x00,  // root
        0x00, 0x01,  // QTYPE A
        0x00, 0x01,  // QCLASS IN
    ]

    func testEncodesQueryByteForByte() throws {
        let name = try XCTUnwrap(DNSName("server.linkcond.test"))
        XCTAssertEqual(DNSMessage.query(id: 0x1234, name: name, type: .a).encoded(), Self.serverQuery)
    }

    func testDecodesQuery() throws {
        let message = try DNSMessage(bytes: Self.serverQuery)
        XCTAssertEqual(message.id, 0x1234)
        XCTAssertFalse(message.isResponse)
        XCTAssertTrue(message.recursionDesired)
        XCTAssertEqual(message.opcode, 0)
        XCTAssertEqual(message.questions.count, 1)
        XCTAssertEqual(message.questions[0].name.description, "server.linkcond.test")
        XCTAssertEqual(message.questions[0].type, .a)
        XCTAssertEqual(message.questions[0].recordClass, .internet)
        XCTAssertTrue(message.answers.isEmpty)
    }

    func testDecodesCompressedOwnerName() throws {
        // The question, then an A answer whose owner is a pointer into the question's second label (byte 19).
        var bytes = Self.serverQuery
        bytes[7] = 1  // ANCOUNT 1
        bytes += [0xC0, 0x13, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x0E, 0x10, 0x00, 0x04, 10, 0, 0, 1]
        let message = try DNSMessage(bytes: bytes)
        XCTAssertEqual(message.answers.count, 1)
        XCTAssertEqual(message.answers[0].name.description, "linkcond.test")
        XCTAssertEqual(message.answers[0].ttl, 3600)
        XCTAssertEqual(message.answers[0].data, [10, 0, 0, 1])
    }

    func testRejectsSelfPointer() {
        let bytes: [UInt8] = [0x12, 0x34, 0x01, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0,
                              0xC0, 0x0C, 0x00, 0x01, 0x00, 0x01]
        XCTAssertThrowsError(try DNSMessage(bytes: bytes)) { error in
            XCTAssertEqual(error as? DNSMessageError, .pointerLoop(offset: 12))
        }
    }

    func testRejectsPointerLoopThroughLabels() {
        // "a" then a pointer back to the start of the same name: a -> a -> a ...
        let bytes: [UInt8] = [0x12, 0x34, 0x01, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0,
                              0x01, 0x61, 0xC0, 0x0C, 0x00, 0x01, 0x00, 0x01]
        XCTAssertThrowsError(try DNSMessage(bytes: bytes)) { error in
            XCTAssertEqual(error as? DNSMessageError, .pointerLoop(offset: 14))
        }
    }

    func testRejectsMutualPointers() {
        // Byte 12 points to byte 14, which points back to byte 12.
        let bytes: [UInt8] = [0x12, 0x34, 0x01, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0,
                              0xC0, 0x0E, 0xC0, 0x0C, 0x00, 0x01, 0x00, 0x01]
        XCTAssertThrowsError(try DNSMessage(bytes: bytes)) { error in
            XCTAssertEqual(error as? DNSMessageError, .pointerLoop(offset: 12))
        }
    }

    func testRejectsTruncatedMessages() {
        for length in [0, 5, 11] {
            XCTAssertThrowsError(try DNSMessage(bytes: Array(Self.serverQuery.prefix(length))))
        }
        for length in 13..<Self.serverQuery.count {
            XCTAssertThrowsError(try DNSMessage(bytes: Array(Self.serverQuery.prefix(length))), "length \(length)") {
                error in
                guard case .truncated = error as? DNSMessageError else {
                    return XCTFail("expected truncated, got \(error)")
                }
            }
        }
    }

    func testRejectsReservedLabelTypeAndOverlongName() {
        let header: [UInt8] = [0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]
        XCTAssertThrowsError(try DNSMessage(bytes: header + [0x41, 0x61, 0x00, 0, 1, 0, 1])) { error in
            XCTAssertEqual(error as? DNSMessageError, .invalidLabel(offset: 12))
        }
        let label: [UInt8] = [63] + [UInt8](repeating: 0x61, count: 63)
        let longName = label + label + label + label + [0]  // 4 * 64 + 1 = 257 bytes
        XCTAssertThrowsError(try DNSMessage(bytes: header + longName + [0, 1, 0, 1])) { error in
            guard case .nameTooLong = error as? DNSMessageError else { return XCTFail("got \(error)") }
        }
    }

    func testEncoderCompressesRepeatedNamesCaseInsensitively() throws {
        let name = try XCTUnwrap(DNSName("Server.LinkCond.test"))
        let other = try XCTUnwrap(DNSName("www.linkcond.TEST"))
        let message = DNSMessage(
            id: 7, isResponse: true, questions: [DNSQuestion(name: name, type: .a)],
            answers: [DNSResourceRecord(name: name, type: .a, ttl: 5, data: [1, 2, 3, 4]),
                      DNSResourceRecord(name: other, type: .a, ttl: 5, data: [1, 2, 3, 5])])
        let bytes = message.encoded()
        // First answer's owner: pointer to the question name at byte 12.
        XCTAssertEqual(Array(bytes[38..<40]), [0xC0, 0x0C])
        // Second answer's owner: "www" then a pointer to "LinkCond.test" at byte 19.
        XCTAssertEqual(Array(bytes[54..<60]), [0x03, 0x77, 0x77, 0x77, 0xC0, 0x13])
        let decoded = try DNSMessage(bytes: bytes)
        XCTAssertEqual(decoded.answers.map(\.name.description), ["Server.LinkCond.test", "www.LinkCond.test"])
        XCTAssertEqual(decoded.questions, message.questions)
    }

    func testNamesFromText() throws {
        XCTAssertEqual(DNSName("linkcond.test.")?.labels.count, 2)
        XCTAssertEqual(DNSName(".")?.labels, [])
        XCTAssertEqual(DNSName("")?.description, ".")
        XCTAssertNil(DNSName("a..b"))
        XCTAssertNil(DNSName(String(repeating: "x", count: 64) + ".test"))
        let deep = try XCTUnwrap(DNSName("X.Y.LINKCOND.Test"))
        let zone = try XCTUnwrap(DNSName("linkcond.test"))
        XCTAssertTrue(deep.isSubdomain(of: zone))
        XCTAssertTrue(zone.isSubdomain(of: zone))
        XCTAssertFalse(try XCTUnwrap(DNSName("notlinkcond.test")).isSubdomain(of: zone))
        XCTAssertFalse(zone.isSubdomain(of: deep))
        XCTAssertTrue(try XCTUnwrap(DNSName("LinkCond.TEST")).isEquivalent(to: zone))
    }

    func testHeaderFlagsRoundTrip() throws {
        let message = DNSMessage(id: 0xBEEF, isResponse: true, opcode: 2, isAuthoritative: true, isTruncated: true,
                                 recursionDesired: true, recursionAvailable: true, authenticData: true,
                                 checkingDisabled: true, responseCode: .refused)
        let bytes = message.encoded()
        XCTAssertEqual(Array(bytes[0..<4]), [0xBE, 0xEF, 0x97, 0xB5])
        XCTAssertEqual(try DNSMessage(bytes: bytes), message)
    }
}

import CMnl
import Glibc
import Netlink
import XCTest

final class NetlinkMessageTests: XCTestCase {
    func testParseSplitsADatagramIntoItsMessages() throws {
        // Payloads of 5 and 0 bytes: the first message is padded to 24 on the wire, its length says 21.
        let first = message(type: 16, flags: 2, sequence: 7, portID: 99, payload: [1, 2, 3, 4, 5])
        let second = message(type: UInt16(NLMSG_DONE), flags: 2, sequence: 7, portID: 99)
        XCTAssertEqual(first.count, 24)
        let messages = try NetlinkMessage.parse(datagram: first + second)
        XCTAssertEqual(messages, [
            NetlinkMessage(type: 16, flags: 2, sequence: 7, portID: 99, payload: [1, 2, 3, 4, 5]),
            NetlinkMessage(type: UInt16(NLMSG_DONE), flags: 2, sequence: 7, portID: 99, payload: []),
        ])
    }

    func testBytesRoundTrip() throws {
        let original = NetlinkMessage(type: 20, flags: 0x22, sequence: 0xdead_beef, portID: 0x1234, payload: [9, 8, 7])
        XCTAssertEqual(original.bytes, message(type: 20, flags: 0x22, sequence: 0xdead_beef, portID: 0x1234, payload: [9, 8, 7]))
        XCTAssertEqual(try NetlinkMessage.parse(datagram: original.bytes), [original])
    }

    func testParseOfASliceThatDoesNotStartAtZero() throws {
        let bytes = [UInt8](repeating: 0xee, count: 3) + message(type: 16, sequence: 1, portID: 2, payload: [4])
        let parsed = try NetlinkMessage.parse(datagram: bytes[3...])
        XCTAssertEqual(parsed, [NetlinkMessage(type: 16, sequence: 1, portID: 2, payload: [4])])
    }

    func testParseRejectsEveryTruncation() throws {
        let first = message(type: 16, sequence: 1, portID: 2, payload: [1, 2, 3, 4, 5])  // length 21, 24 on the wire
        let second = message(type: 20, sequence: 1, portID: 2, payload: [UInt8](repeating: 6, count: 12))
        let datagram = first + second
        // parse succeeds when the cut falls on the end of a message (its padding may be missing).
        let boundaries: [ClosedRange<Int>] = [0...0, 21...24, datagram.count...datagram.count]
        for cut in 0...datagram.count {
            let ok = boundaries.contains { $0.contains(cut) }
            do {
                let messages = try NetlinkMessage.parse(datagram: datagram.prefix(cut))
                XCTAssertTrue(ok, "cut at \(cut) parsed into \(messages.count) messages")
            } catch {
                XCTAssertFalse(ok, "cut at \(cut): \(error)")
                XCTAssertEqual(error.kind, .malformed)
                XCTAssertEqual(error.operation, "decode netlink message")
            }
        }
    }

    func testParseRejectsLengthsShorterThanAHeaderWithoutLooping() {
        for claimed: UInt32 in [0, 1, 15] {
            var bytes = message(type: 16, sequence: 1, portID: 2, payload: [0, 0, 0, 0])
            bytes.withUnsafeMutableBytes { $0.storeBytes(of: claimed, as: UInt32.self) }
            XCTAssertThrowsError(try NetlinkMessage.parse(datagram: bytes), "length \(claimed)")
        }
    }

    func testParseRejectsLengthsLongerThanTheDatagram() {
        var bytes = message(type: 16, sequence: 1, portID: 2, payload: [0, 0, 0, 0])
        for claimed: UInt32 in [21, 24, 4096, UInt32.max] {
            bytes.withUnsafeMutableBytes { $0.storeBytes(of: claimed, as: UInt32.self) }
            XCTAssertThrowsError(try NetlinkMessage.parse(datagram: bytes), "length \(claimed)") { error in
                XCTAssertTrue("\(error)".contains("claims"), "\(error)")
            }
        }
    }

    // MARK: decodeError

    func request(payloadBytes: Int) -> [UInt8] {
        message(type: 36, flags: 0x505, sequence: 42, portID: 0, payload: [UInt8](repeating: 0xab, count: payloadBytes))
    }

    func decode(_ bytes: [UInt8]) throws -> (errno: Int32, message: String?, offset: UInt32?) {
        let parsed = try NetlinkMessage.parse(datagram: bytes)
        XCTAssertEqual(parsed.count, 1)
        return try parsed[0].decodeError(operation: "test")
    }

    func testAckDecodesToZero() throws {
        let result = try decode(ack(to: request(payloadBytes: 20), portID: 1))
        XCTAssertEqual(result.errno, 0)
        XCTAssertNil(result.message)
        XCTAssertNil(result.offset)
    }

    func testCappedAndUncappedErrorsDecodeTheSame() throws {
        let text = "Specified qdisc kind is unknown"
        for payloadBytes in [0, 20, 36, 100] {
            let original = request(payloadBytes: payloadBytes)
            let capped = errorReply(to: original, portID: 1, errno: ENOENT, capped: true, text: text, offset: 36)
            let uncapped = errorReply(to: original, portID: 1, errno: ENOENT, capped: false, text: text, offset: 36)
            XCTAssertEqual(uncapped.count - capped.count, original.count - 16, "uncapped echoes the whole request")
            for reply in [capped, uncapped] {
                let result = try decode(reply)
                XCTAssertEqual(result.errno, ENOENT)
                XCTAssertEqual(result.message, text)
                XCTAssertEqual(result.offset, 36)
            }
        }
    }

    func testUncappedErrorWithAnUnalignedEchoedLength() throws {
        // An echoed request whose nlmsg_len is not a multiple of 4: the TLVs start after its padding.
        let echoedLength = 16 + 5
        let echoed = hostBytes(UInt32(echoedLength)) + [UInt8](repeating: 0, count: 12) + [1, 2, 3, 4, 5] + [0, 0, 0]
        let payload = hostBytes(-EINVAL) + echoed + stringAttribute(attrMessage, "bad") + attribute(attrOffset, hostBytes(UInt32(20)))
        let reply = message(type: nlmsgError, flags: flagAckTLVs, sequence: 1, portID: 1, payload: payload)
        let result = try decode(reply)
        XCTAssertEqual(result.errno, EINVAL)
        XCTAssertEqual(result.message, "bad")
        XCTAssertEqual(result.offset, 20)
    }

    func testTLVsAreIgnoredWithoutTheAckTLVsFlag() throws {
        var reply = errorReply(to: request(payloadBytes: 4), portID: 1, errno: EPERM, text: "ignored")
        let flagsValue = flags(of: reply) & ~flagAckTLVs
        reply.withUnsafeMutableBytes { $0.storeBytes(of: flagsValue, toByteOffset: 6, as: UInt16.self) }
        let result = try decode(reply)
        XCTAssertEqual(result.errno, EPERM)
        XCTAssertNil(result.message)
    }

    func testBrokenTLVAreaKeepsTheErrno() throws {
        var reply = errorReply(to: request(payloadBytes: 4), portID: 1, errno: EBUSY, text: "Device or resource busy")
        // The message attribute now claims more bytes than the reply has.
        let tlvStart = 16 + 4 + 16
        reply.withUnsafeMutableBytes { $0.storeBytes(of: UInt16(200), toByteOffset: tlvStart, as: UInt16.self) }
        let result = try decode(reply)
        XCTAssertEqual(result.errno, EBUSY)
        XCTAssertNil(result.message)
    }

    func testDoneCarriesTheDumpsErrorAndMessage() throws {
        let result = try decode(done(sequence: 1, portID: 1, errno: EOPNOTSUPP, text: "no dump here"))
        XCTAssertEqual(result.errno, EOPNOTSUPP)
        XCTAssertEqual(result.message, "no dump here")
        XCTAssertEqual(try decode(done(sequence: 1, portID: 1)).errno, 0)
    }

    func testErrorMessagesTooShortToDecodeAreMalformed() {
        let withoutCode = NetlinkMessage(type: nlmsgError, payload: [0, 0])
        XCTAssertThrowsError(try withoutCode.decodeError(operation: "x")) { error in
            XCTAssertEqual((error as? NetlinkError)?.kind, .malformed)
        }
        let withoutHeader = NetlinkMessage(type: nlmsgError, payload: hostBytes(-EPERM) + [0, 0])
        XCTAssertThrowsError(try withoutHeader.decodeError(operation: "x")) { error in
            XCTAssertEqual((error as? NetlinkError)?.kind, .malformed)
        }
        // Uncapped, with an echoed length that runs past the reply: the errno still comes through.
        let lying = NetlinkMessage(
            type: nlmsgError, flags: flagAckTLVs, payload: hostBytes(-EPERM) + hostBytes(UInt32.max) + [UInt8](repeating: 0, count: 12))
        XCTAssertEqual(try lying.decodeError(operation: "x").errno, EPERM)
    }

    func testErrorDescriptions() {
        let malformed = NetlinkError(kind: .malformed, operation: "decode link", detail: "too short")
        XCTAssertEqual(malformed.description, "decode link: malformed netlink reply (too short)")
        let overflow = NetlinkError(kind: .overflow, operation: "build", detail: "attribute 3")
        XCTAssertEqual(overflow.description, "build: the request does not fit in a netlink message (attribute 3)")
        XCTAssertEqual(malformed.withOperation("ip link show").operation, "ip link show")
        XCTAssertNil(malformed.systemMessage)
    }
}

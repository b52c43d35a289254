import CMnl
import Glibc
import Netlink
import XCTest

/// NetlinkConnection over a fake transport: the real framing, sequence checks and error decoding run;
/// only the socket is replaced.
final class NetlinkConnectionTests: XCTestCase {
    let port: UInt32 = 0x1234
    let first: UInt32 = 1_795_957_073

    func newLinkRequest() -> NetlinkMessageBuilder {
        let builder = NetlinkMessageBuilder(type: UInt16(RTM_NEWLINK), flags: UInt16(NLM_F_CREATE | NLM_F_EXCL))
        builder.putStruct(ifinfomsg())
        builder.put(UInt16(IFLA_IFNAME), string: "wl0")
        return builder
    }

    /// A dump reply message: `RTM_NEWLINK` carrying just a name, enough to tell replies apart.
    func linkReply(_ name: String, sequence: UInt32, flags: UInt16 = flagMulti) -> [UInt8] {
        message(
            type: UInt16(RTM_NEWLINK), flags: flags, sequence: sequence, portID: port,
            payload: [UInt8](repeating: 0, count: 16) + stringAttribute(UInt16(IFLA_IFNAME), name))
    }

    func names(_ messages: [NetlinkMessage]) -> [String] {
        messages.map { message in
            var decoder = AttributeDecoder(message.payload[16...], operation: "name")
            while decoder.next() {
                if Int(decoder.type) == IFLA_IFNAME { return decoder.string() }
            }
            return "?"
        }
    }

    func kernelError(_ body: () throws -> Void, file: StaticString = #filePath, line: UInt = #line) -> NetlinkError? {
        do {
            try body()
            XCTFail("no error thrown", file: file, line: line)
            return nil
        } catch let error as NetlinkError {
            return error
        } catch {
            XCTFail("\(error) is not a NetlinkError", file: file, line: line)
            return nil
        }
    }

    // MARK: Requests

    func testAckReturnsNoMessagesAndTheRequestCarriesRequestAckAndTheSequence() throws {
        let fake = FakeTransport(portID: port) { request, _ in [ack(to: request, portID: self.port)] }
        let connection = NetlinkConnection(transport: fake, firstSequence: first)
        let builder = newLinkRequest()
        let replies = try connection.request(builder, operation: "ip link add wl0")
        XCTAssertEqual(replies, [])

        XCTAssertEqual(fake.sent.count, 1)
        let sent = fake.sent[0]
        XCTAssertEqual(sequence(of: sent), first)
        XCTAssertEqual(flags(of: sent), UInt16(NLM_F_CREATE | NLM_F_EXCL | NLM_F_REQUEST | NLM_F_ACK))
        XCTAssertEqual(sent, try builder.finish(), "exactly the builder's bytes go out")
        XCTAssertEqual(connection.portID, port)
    }

    func testRepliesBeforeTheAckAreReturned() throws {
        let fake = FakeTransport(portID: port) { request, _ in
            [self.linkReply("wl0", sequence: sequence(of: request), flags: 0) + ack(to: request, portID: self.port)]
        }
        let connection = NetlinkConnection(transport: fake, firstSequence: first)
        let replies = try connection.request(newLinkRequest(), operation: "ip link show dev wl0")
        XCTAssertEqual(names(replies), ["wl0"])
        XCTAssertEqual(replies.first?.sequence, first)
    }

    func testKernelRefusalCarriesTheExtendedAck() throws {
        let text = "Specified qdisc kind is unknown"
        let builder = NetlinkMessageBuilder(type: UInt16(RTM_NEWQDISC), flags: UInt16(NLM_F_CREATE | NLM_F_REPLACE))
        builder.putStruct(tcmsg())
        let kindOffset = UInt32(builder.length)  // the kernel points at the attribute it objects to
        builder.put(UInt16(TCA_KIND), string: "netemm")

        for capped in [true, false] {
            let fake = FakeTransport(portID: port) { request, _ in
                [errorReply(to: request, portID: self.port, errno: ENOENT, capped: capped, text: text, offset: kindOffset)]
            }
            let connection = NetlinkConnection(transport: fake, firstSequence: first)
            let operation = "tc qdisc replace dev wl0 root handle 1: netemm"
            let error = try XCTUnwrap(kernelError { try connection.request(builder, operation: operation) })
            XCTAssertEqual(error.kind, .kernel, "capped: \(capped)")
            XCTAssertEqual(error.errno, ENOENT)
            XCTAssertEqual(error.kernelMessage, text)
            XCTAssertEqual(error.kernelOffset, kindOffset)
            XCTAssertEqual(error.operation, operation)
            let systemText = String(cString: strerror(ENOENT))
            XCTAssertEqual(error.systemMessage, systemText)
            XCTAssertEqual(error.description, "\(operation): \(text) (\(systemText))")
        }
    }

    func testUncappedErrorEchoesTheWholeRequest() throws {
        // Uncapped, the request comes back in full before the TLVs; the decoder must skip all of it.
        let fake = FakeTransport(portID: port) { request, _ in
            [errorReply(to: request, portID: self.port, errno: EEXIST, capped: false, text: "File exists", offset: 16)]
        }
        let connection = NetlinkConnection(transport: fake, firstSequence: first)
        let error = try XCTUnwrap(kernelError { try connection.request(newLinkRequest(), operation: "ip link add wl0") })
        XCTAssertEqual(error.errno, EEXIST)
        XCTAssertEqual(error.kernelMessage, "File exists")
        XCTAssertEqual(error.kernelOffset, 16)
    }

    func testRefusalWithoutExtendedAckUsesStrerror() throws {
        let fake = FakeTransport(portID: port) { request, _ in [errorReply(to: request, portID: self.port, errno: EPERM)] }
        let connection = NetlinkConnection(transport: fake, firstSequence: first)
        let error = try XCTUnwrap(kernelError { try connection.request(newLinkRequest(), operation: "ip link add wl0") })
        XCTAssertEqual(error.kind, .kernel)
        XCTAssertEqual(error.errno, EPERM)
        XCTAssertNil(error.kernelMessage)
        XCTAssertNil(error.kernelOffset)
        XCTAssertEqual(error.description, "ip link add wl0: \(String(cString: strerror(EPERM)))")
    }

    func testRepliesToOtherRequestsAreSkipped() throws {
        let fake = FakeTransport(portID: port) { request, _ in
            let current = sequence(of: request)
            return [
                // A late refusal of the previous request, and a reply for another socket, in one datagram.
                errorReply(to: request, portID: self.port, errno: EBUSY).withSequence(current &- 1)
                    + errorReply(to: request, portID: self.port + 1, errno: EBUSY),
                // A message from the future, then our ack.
                self.linkReply("stale", sequence: current &+ 1, flags: 0) + ack(to: request, portID: self.port),
            ]
        }
        let connection = NetlinkConnection(transport: fake, firstSequence: first)
        XCTAssertEqual(try connection.request(newLinkRequest(), operation: "ip link add wl0"), [])
    }

    func testSequenceNumbersIncrementFromTheFirstAndWrap() throws {
        let start = UInt32.max - 1
        let fake = FakeTransport(portID: port) { request, _ in [ack(to: request, portID: self.port)] }
        let connection = NetlinkConnection(transport: fake, firstSequence: start)
        for _ in 0..<3 { try connection.request(newLinkRequest(), operation: "ip link add wl0") }
        _ = try? connection.dump(newLinkRequest(), operation: "ip link show")  // a dump takes the next one too
        XCTAssertEqual(fake.sent.map(sequence(of:)), [start, start &+ 1, start &+ 2, start &+ 3])
        XCTAssertEqual(fake.sent.map(sequence(of:)), [UInt32.max - 1, UInt32.max, 0, 1])
    }

    func testMalformedReplyIsReportedUnderTheOperation() throws {
        let fake = FakeTransport(portID: port) { request, _ in [Array(ack(to: request, portID: self.port).prefix(15))] }
        let connection = NetlinkConnection(transport: fake, firstSequence: first)
        let error = try XCTUnwrap(kernelError { try connection.request(newLinkRequest(), operation: "ip link add wl0") })
        XCTAssertEqual(error.kind, .malformed)
        XCTAssertEqual(error.operation, "ip link add wl0")
    }

    func testOverflowingRequestIsNeverSent() throws {
        let fake = FakeTransport(portID: port)
        let connection = NetlinkConnection(transport: fake, firstSequence: first)
        let builder = NetlinkMessageBuilder(type: UInt16(RTM_NEWLINK), flags: 0, capacity: 20)
        builder.put(UInt16(IFLA_IFNAME), string: "a-name-that-does-not-fit")
        let error = try XCTUnwrap(kernelError { try connection.request(builder, operation: "ip link add") })
        XCTAssertEqual(error.kind, .overflow)
        XCTAssertEqual(fake.sent.count, 0)
    }

    func testTransportFailurePropagates() throws {
        let fake = FakeTransport(portID: port)  // answers nothing: receive fails with EAGAIN
        let connection = NetlinkConnection(transport: fake, firstSequence: first)
        let error = try XCTUnwrap(kernelError { try connection.request(newLinkRequest(), operation: "ip link add wl0") })
        XCTAssertEqual(error.kind, .system)
        XCTAssertEqual(error.errno, EAGAIN)
    }

    // MARK: Dumps

    func testMultipartDumpAcrossTwoDatagramsEndingInDone() throws {
        let fake = FakeTransport(portID: port) { request, _ in
            let current = sequence(of: request)
            return [
                self.linkReply("lo", sequence: current) + self.linkReply("wl0", sequence: current),
                self.linkReply("c-wl0", sequence: current) + done(sequence: current, portID: self.port),
            ]
        }
        let connection = NetlinkConnection(transport: fake, firstSequence: first)
        let builder = NetlinkMessageBuilder(type: UInt16(RTM_GETLINK), flags: 0)
        builder.putStruct(ifinfomsg())
        let replies = try connection.dump(builder, operation: "ip link show")
        XCTAssertEqual(names(replies), ["lo", "wl0", "c-wl0"])
        XCTAssertEqual(fake.sent.count, 1)
        XCTAssertEqual(flags(of: fake.sent[0]), UInt16(NLM_F_REQUEST | NLM_F_DUMP))
    }

    func testInterruptedDumpIsReadAgain() throws {
        let fake = FakeTransport(portID: port) { request, attempt in
            let current = sequence(of: request)
            if attempt == 0 {
                // The table changed while it was read: the kernel marks the messages and the DONE.
                let interrupted = flagMulti | flagDumpInterrupted
                return [
                    self.linkReply("old", sequence: current, flags: interrupted)
                        + done(sequence: current, portID: self.port, flags: interrupted)
                ]
            }
            return [self.linkReply("new", sequence: current) + done(sequence: current, portID: self.port)]
        }
        let connection = NetlinkConnection(transport: fake, firstSequence: first)
        let replies = try connection.dump(NetlinkMessageBuilder(type: UInt16(RTM_GETLINK), flags: 0), operation: "ip link show")
        XCTAssertEqual(names(replies), ["new"], "only the clean dump's messages are returned")
        XCTAssertEqual(fake.sent.map(sequence(of:)), [first, first + 1], "the retry is a new request")
    }

    func testDumpThatStaysInterruptedThrowsAfterTheRetries() throws {
        for retries in [0, 2] {
            let fake = FakeTransport(portID: port) { request, _ in
                let current = sequence(of: request)
                return [
                    self.linkReply("x", sequence: current, flags: flagMulti | flagDumpInterrupted)
                        + done(sequence: current, portID: self.port)
                ]
            }
            let connection = NetlinkConnection(transport: fake, firstSequence: first)
            let error = try XCTUnwrap(kernelError {
                _ = try connection.dump(
                    NetlinkMessageBuilder(type: UInt16(RTM_GETLINK), flags: 0), operation: "ip link show", retries: retries)
            })
            XCTAssertEqual(error.kind, .dumpInterrupted)
            XCTAssertEqual(error.operation, "ip link show")
            XCTAssertTrue(error.description.contains("NLM_F_DUMP_INTR"), error.description)
            XCTAssertEqual(fake.sent.count, retries + 1, "one attempt and \(retries) retries")
        }
    }

    func testDumpRefusedInItsDoneMessage() throws {
        let text = "Filter by table is not supported"
        let fake = FakeTransport(portID: port) { request, _ in
            [done(sequence: sequence(of: request), portID: self.port, errno: EOPNOTSUPP, text: text)]
        }
        let connection = NetlinkConnection(transport: fake, firstSequence: first)
        let error = try XCTUnwrap(kernelError {
            _ = try connection.dump(NetlinkMessageBuilder(type: UInt16(RTM_GETROUTE), flags: 0), operation: "ip route show")
        })
        XCTAssertEqual(error.kind, .kernel)
        XCTAssertEqual(error.errno, EOPNOTSUPP)
        XCTAssertEqual(error.kernelMessage, text)
    }

    func testDumpRefusedWithAnError() throws {
        let fake = FakeTransport(portID: port) { request, _ in [errorReply(to: request, portID: self.port, errno: EINVAL)] }
        let connection = NetlinkConnection(transport: fake, firstSequence: first)
        let error = try XCTUnwrap(kernelError {
            _ = try connection.dump(NetlinkMessageBuilder(type: UInt16(RTM_GETROUTE), flags: 0), operation: "ip route show")
        })
        XCTAssertEqual(error.kind, .kernel)
        XCTAssertEqual(error.errno, EINVAL)
    }

    func testOverrunIsReported() throws {
        let fake = FakeTransport(portID: port) { request, _ in
            [message(type: nlmsgOverrun, sequence: sequence(of: request), portID: self.port)]
        }
        let connection = NetlinkConnection(transport: fake, firstSequence: first)
        let error = try XCTUnwrap(kernelError {
            _ = try connection.dump(NetlinkMessageBuilder(type: UInt16(RTM_GETLINK), flags: 0), operation: "ip link show")
        })
        XCTAssertEqual(error.kind, .overrun)
    }
}

extension Array where Element == UInt8 {
    /// The same message with another `nlmsg_seq`.
    func withSequence(_ sequence: UInt32) -> [UInt8] {
        var copy = self
        copy.withUnsafeMutableBytes { $0.storeBytes(of: sequence, toByteOffset: 8, as: UInt32.self) }
        return copy
    }
}

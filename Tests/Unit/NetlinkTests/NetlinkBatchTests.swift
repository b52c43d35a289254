import CMnl
import Glibc
import Netlink
import Dispatch
import Foundation
import Synchronization
import XCTest

/// Batches, gets without an ack, counting, and the socket's own properties.
final class NetlinkBatchTests: XCTestCase {
    let port: UInt32 = 0x1234
    let first: UInt32 = 7

    func request(_ type: UInt16 = UInt16(RTM_NEWLINK)) -> NetlinkMessageBuilder {
        let builder = NetlinkMessageBuilder(type: type, flags: UInt16(NLM_F_CREATE | NLM_F_EXCL))
        builder.putStruct(ifinfomsg())
        return builder
    }

    func testBatchGoesOutInOneDatagramAndAnswersAreMatchedBySequenceInAnyOrder() throws {
        // The kernel's answers arrive out of order; the second request is refused.
        let fake = FakeTransport(portID: port) { datagram, _ in
            let messages = SentMessage.split(datagram)
            return [
                ack(to: messages[2].bytes, portID: self.port),
                errorReply(to: messages[1].bytes, portID: self.port, errno: EEXIST, text: "Exclusivity flag on, cannot modify"),
                ack(to: messages[0].bytes, portID: self.port),
            ]
        }
        let connection = NetlinkConnection(transport: fake, firstSequence: first)
        let results = try connection.send([
            NetlinkRequest(request(), operation: "one"), NetlinkRequest(request(), operation: "two"), NetlinkRequest(request(), operation: "three"),
        ])
        XCTAssertEqual(fake.sent.count, 1, "one datagram")
        XCTAssertEqual(fake.sentMessages.map(\.sequence), [first, first + 1, first + 2])
        XCTAssertTrue(fake.sentMessages.allSatisfy { $0.flags == UInt16(NLM_F_CREATE | NLM_F_EXCL | NLM_F_REQUEST | NLM_F_ACK) })
        XCTAssertNoThrow(try results[0].get())
        XCTAssertNoThrow(try results[2].get())
        guard case let .failure(error) = results[1] else { return XCTFail("the second request was refused") }
        XCTAssertEqual(error.errno, EEXIST)
        XCTAssertEqual(error.operation, "two")
        XCTAssertEqual(error.kernelMessage, "Exclusivity flag on, cannot modify")
        XCTAssertEqual(connection.statistics, { var s = NetlinkStatistics(); s.requests = 3; s.datagrams = 1; return s }())
    }

    func testDumpAtTheEndOfABatchInterleavesWithAcks() throws {
        let fake = FakeTransport(portID: port) { datagram, _ in
            let messages = SentMessage.split(datagram)
            let dump = messages[1].sequence
            let entry = message(type: UInt16(RTM_NEWQDISC), flags: flagMulti, sequence: dump, portID: self.port, payload: [UInt8](repeating: 0, count: 20))
            return [entry, ack(to: messages[0].bytes, portID: self.port), entry + done(sequence: dump, portID: self.port)]
        }
        let connection = NetlinkConnection(transport: fake, firstSequence: first)
        let dumpRequest = NetlinkMessageBuilder(type: UInt16(RTM_GETQDISC), flags: 0)
        dumpRequest.putStruct(tcmsg())
        let results = try connection.send([NetlinkRequest(request(), operation: "change"), NetlinkRequest(dumpRequest, operation: "dump", answer: .dump)])
        XCTAssertEqual(try results[0].get(), [])
        XCTAssertEqual(try results[1].get().count, 2)
        XCTAssertEqual(fake.sentMessages.last?.flags, UInt16(NLM_F_REQUEST | NLM_F_DUMP))
    }

    func testInterruptedDumpOfABatchIsReadAgainAlone() throws {
        let fake = FakeTransport(portID: port) { datagram, attempt in
            let messages = SentMessage.split(datagram)
            let dump = messages.last!.sequence
            var answers = messages.count > 1 ? [ack(to: messages[0].bytes, portID: self.port)] : []
            answers.append(done(sequence: dump, portID: self.port, flags: attempt == 0 ? flagMulti | flagDumpInterrupted : flagMulti))
            return answers
        }
        let connection = NetlinkConnection(transport: fake, firstSequence: first)
        let results = try connection.send([
            NetlinkRequest(request(), operation: "change"), NetlinkRequest(NetlinkMessageBuilder(type: UInt16(RTM_GETQDISC), flags: 0), operation: "dump", answer: .dump),
        ])
        XCTAssertNoThrow(try results[1].get())
        XCTAssertEqual(fake.sent.map { SentMessage.split($0).count }, [2, 1], "the change is not sent twice")
        XCTAssertEqual(connection.statistics.requests, 3)
    }

    func testGetIsSentWithoutAnAckAndReturnsTheOneReply() throws {
        let fake = FakeTransport(portID: port) { datagram, _ in
            let sent = SentMessage.split(datagram)[0]
            return [message(type: UInt16(RTM_NEWLINK), sequence: sent.sequence, portID: self.port, payload: [UInt8](repeating: 0, count: 16))]
        }
        let connection = NetlinkConnection(transport: fake, firstSequence: first)
        let replies = try connection.get(NetlinkMessageBuilder(type: UInt16(RTM_GETLINK), flags: 0), operation: "ip link show dev wl0")
        XCTAssertEqual(replies.map(\.type), [UInt16(RTM_NEWLINK)])
        XCTAssertEqual(fake.sentMessages.first?.flags, UInt16(NLM_F_REQUEST))
    }

    func testSocketsAreCloseOnExec() throws {
        let socket = try NetlinkSocket()
        XCTAssertTrue(socket.isCloseOnExec)
        XCTAssertNotEqual(socket.portID, 0)
    }

    func testTwoThreadsReceivingOnOneSocketEachGetWholeDatagrams() throws {
        // Both receivers wait on one socket; each of two acks lands whole in exactly one of them.
        let socket = try NetlinkSocket()
        socket.setReceiveTimeout(seconds: 5)
        let request = NetlinkMessageBuilder(type: UInt16(NLMSG_NOOP), flags: UInt16(NLM_F_REQUEST | NLM_F_ACK))
        request.sequence = 42
        let bytes = try request.finish()
        let group = DispatchGroup()
        let results = Mutex<[[NetlinkMessage]]>([])
        for _ in 0..<2 {
            group.enter()
            Thread.detachNewThread {
                if let datagram = try? socket.receive(), let messages = try? NetlinkMessage.parse(datagram: datagram) {
                    results.withLock { $0.append(messages) }
                }
                group.leave()
            }
        }
        try socket.send(bytes)
        try socket.send(bytes)
        group.wait()  // each receive gives up after the socket's 5 s timeout at most
        XCTAssertEqual(results.withLock { $0.map { $0.map(\.sequence) } }, [[42], [42]])
    }
}

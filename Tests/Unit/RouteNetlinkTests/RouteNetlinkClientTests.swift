import CMnl
import Glibc
import Netlink
import NetlinkTesting
import RouteNetlink
import XCTest

/// The client above the connection: index look-ups and vouched-for indexes, operation names written from
/// the encoded values, and batches read back from a real kernel dump.
final class RouteNetlinkClientTests: XCTestCase {
    let port: UInt32 = 0x77

    /// A kernel that knows `links` (name → index) and acks everything else.
    func kernel(_ links: [String: Int32], refuse: @escaping (SentMessage) -> Int32? = { _ in nil }) -> FakeTransport {
        FakeTransport(portID: port, answeringEachMessage: { message in
            if message.type == UInt16(RTM_GETLINK) {
                var name = ""
                var attributes = AttributeDecoder(message.payload.dropFirst(16), operation: "fake")
                while attributes.next() {
                    if Int(attributes.type) == IFLA_IFNAME { name = attributes.string() }
                }
                guard let index = links[name] else { return [errorReply(to: message.bytes, portID: self.port, errno: ENODEV)] }
                var info = ifinfomsg()
                info.ifi_index = index
                return [NetlinkTesting.message(type: UInt16(RTM_NEWLINK), sequence: message.sequence, portID: self.port,
                                               payload: rawBytes(of: info) + stringAttribute(UInt16(IFLA_IFNAME), name))]
            }
            if let code = refuse(message) { return [errorReply(to: message.bytes, portID: self.port, errno: code)] }
            return [ack(to: message.bytes, portID: self.port)]
        })
    }

    func interfaceIndex(of message: SentMessage) -> Int32 { message.payload.load(ifinfomsg.self, at: 0)!.ifi_index }

    func testAnUnknownNameIsLookedUpAndAVouchedOneIsNot() throws {
        let fake = kernel(["wl0": 9, "c-wl0": 10])
        let client = RouteNetlinkClient(connection: NetlinkConnection(transport: fake, firstSequence: 1), namespace: "NS", interfaceIndexes: ["c-wl0": 10])
        try client.setLink("wl0", up: true)
        try client.setLink("c-wl0", up: true)
        XCTAssertEqual(fake.sentMessages.map(\.type), [UInt16(RTM_GETLINK), UInt16(RTM_NEWLINK), UInt16(RTM_NEWLINK)])
        XCTAssertEqual(fake.sentMessages.filter { $0.type == UInt16(RTM_NEWLINK) }.map(interfaceIndex), [9, 10])
        XCTAssertEqual(client.connection.statistics.requests, 3, "the look-up is counted too")
    }

    func testAStaleVouchedIndexIsForgottenLookedUpAndResent() throws {
        let fake = kernel(["wl0": 5], refuse: { self.interfaceIndex(of: $0) == 20 ? ENODEV : nil })
        let client = RouteNetlinkClient(connection: NetlinkConnection(transport: fake, firstSequence: 1), namespace: "NS", interfaceIndexes: ["wl0": 20])
        try client.setLink("wl0", up: false)
        XCTAssertEqual(fake.sentMessages.map(\.type), [UInt16(RTM_NEWLINK), UInt16(RTM_GETLINK), UInt16(RTM_NEWLINK)])
        XCTAssertEqual(fake.sentMessages.last.map(interfaceIndex), 5)
        try client.setLink("wl0", up: true)
        XCTAssertEqual(fake.sentMessages.count, 5, "the new index is looked up again, never trusted blindly: \(fake.sentMessages.map(\.type))")
    }

    func testAMissingInterfaceNamesTheNamespace() throws {
        let client = RouteNetlinkClient(connection: NetlinkConnection(transport: kernel([:]), firstSequence: 1), namespace: "NS")
        XCTAssertThrowsError(try client.setLink("nope0", up: true)) { error in
            XCTAssertEqual(error as? RouteNetlinkError, .noSuchInterface(name: "nope0", namespace: "NS"))
        }
    }

    func testOperationNamesAreWrittenFromTheEncodedValues() throws {
        let client = RouteNetlinkClient(
            connection: NetlinkConnection(transport: kernel([:], refuse: { _ in ENOENT }), firstSequence: 1), namespace: "NS", interfaceIndexes: ["x0": 3])
        var parameters = NetemParameters()
        parameters.delay = 400_000_000
        parameters.jitter = 50_000_000
        parameters.delayCorrelation = NetemProbability.scaled(0.25)
        parameters.loss = NetemProbability.scaled(0.01)
        parameters.rate = 30_000
        parameters.ecn = true
        parameters.limit = 500
        XCTAssertThrowsError(try client.replaceQdisc(on: "x0", handle: TrafficControlHandle(major: 1, minor: 0), options: .netem(parameters, clock: .standard))) { error in
            guard case let .netlink(inner) = error as? RouteNetlinkError else { return XCTFail("\(error)") }
            XCTAssertEqual(inner.operation, "tc -n NS qdisc replace dev x0 root handle 1: netem delay 400ms 50ms 25% loss 1% rate 240kbit ecn limit 500")
        }
        let filter = U32Filter(protocolNumber: .ipv6, priority: 3, keys: [.ip6Protocol(17), .ip6DestinationPort(53)], classID: TrafficControlHandle(major: 1, minor: 2))
        XCTAssertThrowsError(try client.addFilter(filter, on: "x0", parent: TrafficControlHandle(major: 1, minor: 0))) { error in
            XCTAssertTrue("\(error)".hasPrefix(
                "tc -n NS filter add dev x0 parent 1: protocol ipv6 prio 3 u32 match u32 0x00001100 0x0000ff00 at 4 match u32 0x00000035 0x0000ffff at 40 flowid 1:2: "),
                "\(error)")
        }
    }

    /// A batch's read-back decoded from the kernel's real answer to `tc -s qdisc show` (reply-qdisc).
    func testBatchReadBackDecodesARealKernelDump() throws {
        let fixture = try Fixture.load("reply-qdisc")
        let fake = FakeTransport(portID: port, answeringEachMessage: { message in
            if message.flags & UInt16(NLM_F_DUMP) == UInt16(NLM_F_DUMP) {
                // The captured datagrams, re-addressed to this request.
                return fixture.datagrams.map { datagram in
                    SentMessage.split(datagram).flatMap { part -> [UInt8] in
                        var bytes = part.bytes
                        bytes.withUnsafeMutableBytes { raw in
                            raw.storeBytes(of: message.sequence, toByteOffset: 8, as: UInt32.self)
                            raw.storeBytes(of: self.port, toByteOffset: 12, as: UInt32.self)
                        }
                        return padded(bytes)
                    }
                }
            }
            return [ack(to: message.bytes, portID: self.port)]
        })
        let client = RouteNetlinkClient(connection: NetlinkConnection(transport: fake, firstSequence: 1), namespace: "NS", interfaceIndexes: ["x0": 3])
        let reply = try client.send(
            [.replaceQdisc(interface: "x0", handle: TrafficControlHandle(major: 1, minor: 0), parent: .root, options: .pfifo(limit: 100), graft: false)],
            readingBack: true)
        XCTAssertEqual(fake.sent.count, 1, "change and read-back in one datagram")
        XCTAssertNil(reply.firstError)
        XCTAssertEqual(reply.qdiscs.map(\.kind), ["noqueue", "pfifo"])
        XCTAssertEqual(reply.qdiscs.last?.statistics.packets, 6)
        XCTAssertEqual(reply.qdiscs.last?.handle.description, "1:")
    }

    func testGraftAddsOnlyTheExclusiveFlagToTheReplace() throws {
        let options = QdiscOptions.prio(PrioOptions(bands: 2))
        let replace = try QdiscRequest.replace(interfaceIndex: 3, handle: TrafficControlHandle(major: 1, minor: 0), parent: .root, options: options).finish()
        var graft = try QdiscRequest.replace(interfaceIndex: 3, handle: TrafficControlHandle(major: 1, minor: 0), parent: .root, options: options, graft: true).finish()
        XCTAssertEqual(graft.u16(at: 6), replace.u16(at: 6) | UInt16(NLM_F_EXCL))
        graft.setU16(replace.u16(at: 6), at: 6)
        XCTAssertEqual(graft, replace)
    }
}

import CMnl
import Netlink
import NetlinkTesting
import RouteNetlink
import XCTest

/// Runs a golden case the way linkcond sends requests: a ``RouteNetlinkClient`` on a ``NetlinkConnection``
/// over a fake transport, with the fixture's sequence number injected as the connection's first and the
/// fixture's interface index vouched for (as the sandbox's fixed indexes are). Nothing is added by hand:
/// what the fake transport receives is what the kernel would.
struct GoldenHarness {
    /// The namespace name the client is given, so operation names read like the fixtures' commands.
    static let namespace = "NS"
    static let port: UInt32 = 0x4c43

    let transport: FakeTransport
    let client: RouteNetlinkClient

    init(_ fixture: Fixture) throws {
        transport = FakeTransport(portID: Self.port, answeringEachMessage: Self.kernel)
        let connection = NetlinkConnection(transport: transport, firstSequence: try fixture.sequence)
        var indexes: [String: Int32] = [:]
        if !fixture.values("ifindex").isEmpty {
            let index = try fixture.interfaceIndex
            for name in ["wl0", "c-wl0", "x0"] { indexes[name] = index }
        }
        client = RouteNetlinkClient(connection: connection, namespace: Self.namespace, interfaceIndexes: indexes)
    }

    /// A kernel that accepts everything: an ack for requests that ask for one, an empty dump, and for a get
    /// without an ack (`ip link show dev NAME`) a link of that name.
    static func kernel(_ message: SentMessage) -> [[UInt8]] {
        if message.flags & UInt16(NLM_F_DUMP) == UInt16(NLM_F_DUMP) {
            return [done(sequence: message.sequence, portID: port)]
        }
        if message.flags & UInt16(NLM_F_ACK) != 0 { return [ack(to: message.bytes, portID: port)] }
        return [linkReply(to: message, index: 3)]
    }

    /// An `RTM_NEWLINK` answering `message` for the name it asked for.
    static func linkReply(to message: SentMessage, index: Int32) -> [UInt8] {
        var name = "?"
        var attributes = AttributeDecoder(message.payload.dropFirst(MemoryLayout<ifinfomsg>.size), operation: "fake")
        while attributes.next() {
            if Int(attributes.type) == IFLA_IFNAME { name = attributes.string() }
        }
        var info = ifinfomsg()
        info.ifi_index = index
        return NetlinkTesting.message(
            type: UInt16(RTM_NEWLINK), sequence: message.sequence, portID: port,
            payload: rawBytes(of: info) + stringAttribute(UInt16(IFLA_IFNAME), name))
    }
}

/// One golden case: the command a fixture was captured from and the client call that sends the same.
struct GoldenCase: Sendable {
    /// The fixture's `# command:` line: ties the Swift call below to the command that was captured.
    let command: String
    /// The call, on a client whose namespace is "NS".
    let perform: @Sendable (Fixture, RouteNetlinkClient) throws -> Void
}

extension XCTestCase {
    /// Performs `golden` against a fake kernel and compares the one datagram sent with the fixture.
    func assertSendsFixture(_ name: String, _ golden: GoldenCase?, file: StaticString = #filePath, line: UInt = #line) throws {
        let golden = try XCTUnwrap(golden, "no case for fixture \(name)", file: file, line: line)
        let fixture = try Fixture.load(name)
        XCTAssertEqual(try fixture.command, golden.command, "\(name).txt was captured from another command", file: file, line: line)
        let expected = try fixture.bytes
        XCTAssertGreaterThanOrEqual(expected.count, NetlinkMessage.headerLength, "\(name).txt", file: file, line: line)
        XCTAssertEqual(
            expected.u32(at: 8), try fixture.sequence, "\(name).txt: the header's sequence is not the message's", file: file, line: line)
        let harness = try GoldenHarness(fixture)
        try golden.perform(fixture, harness.client)
        XCTAssertEqual(harness.transport.sent.count, 1, "\(name): one datagram, no look-up", file: file, line: line)
        XCTAssertEqual(harness.client.connection.statistics.requests, 1, "\(name): counted", file: file, line: line)
        guard let actual = harness.transport.sent.first else { return }
        assertSameRequest(actual, expected, name: name, command: golden.command, file: file, line: line)
    }
}

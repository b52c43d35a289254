import CMnl
import Glibc
import LinkcondBase
import Netlink
import RouteNetlink
import XCTest

/// The decoders against real kernel dump replies (captured by `scripts/capture-fixtures` together with
/// iproute2's JSON view of the same objects, the `# expect-*` lines), and against every truncation and a
/// few corruptions of those replies.
final class DecoderTests: XCTestCase {
    /// Reply fixtures this class reads; GoldenBytesTests checks that every fixture is used somewhere.
    static let replyFixtures = ["reply-link", "reply-addr", "reply-route", "reply-route6", "reply-qdisc", "reply-filter"]

    static let newLink = UInt16(RTM_NEWLINK)
    static let newAddress = UInt16(RTM_NEWADDR)
    static let newRoute = UInt16(RTM_NEWROUTE)
    static let newQdisc = UInt16(RTM_NEWQDISC)

    /// `ifi_flags` bits by the names `ip -j link` prints (linux/if.h). iproute2 never prints RUNNING.
    static let linkFlagNames: [(String, UInt32)] = [
        ("UP", 0x1), ("BROADCAST", 0x2), ("DEBUG", 0x4), ("LOOPBACK", 0x8), ("POINTOPOINT", 0x10),
        ("NOTRAILERS", 0x20), ("NOARP", 0x80), ("PROMISC", 0x100), ("ALLMULTI", 0x200), ("MASTER", 0x400),
        ("SLAVE", 0x800), ("MULTICAST", 0x1000), ("PORTSEL", 0x2000), ("AUTOMEDIA", 0x4000), ("DYNAMIC", 0x8000),
        ("LOWER_UP", 0x10000), ("DORMANT", 0x20000), ("ECHO", 0x40000),
    ]

    /// `ifa_scope` by the names `ip -j addr` prints (rtnetlink.h `RT_SCOPE_*`).
    static let scopeNames: [String: UInt8] = ["global": 0, "site": 200, "link": 253, "host": 254, "nowhere": 255]

    /// Address flags by the names `ip -j addr` prints as booleans (linux/if_addr.h `IFA_F_*`).
    static let addressFlagNames: [(String, UInt32)] = [
        ("secondary", 0x01), ("nodad", 0x02), ("optimistic", 0x04), ("dadfailed", 0x08), ("home", 0x10),
        ("deprecated", 0x20), ("tentative", 0x40), ("mngtmpaddr", 0x100), ("noprefixroute", 0x200),
        ("autojoin", 0x400), ("stable-privacy", 0x800),
    ]

    /// The fixture's messages, after checking they are one dump: every message carries the dump's
    /// sequence number, and the last one is NLMSG_DONE.
    func dump(_ name: String, file: StaticString = #filePath, line: UInt = #line) throws -> (Fixture, [NetlinkMessage]) {
        let fixture = try Fixture.load(name)
        let messages = try fixture.messages()
        let sequence = try fixture.sequence
        for message in messages {
            XCTAssertEqual(message.sequence, sequence, "\(name): a message of another exchange", file: file, line: line)
        }
        XCTAssertEqual(messages.last?.type, NetlinkMessage.done, "\(name): the dump does not end in NLMSG_DONE", file: file, line: line)
        return (fixture, messages)
    }

    // MARK: Real replies

    func testLinkDumpDecodesLikeIproute2() throws {
        let (fixture, messages) = try dump("reply-link")
        let links = try messages.filter { $0.type == Self.newLink }.map { message throws -> Link in try Link.decode(message) }
        let expected = fixture.expectations("link")
        XCTAssertFalse(expected.isEmpty, "reply-link.txt has no expect-link lines")
        XCTAssertEqual(links.map(\.index).sorted(), expected.compactMap { $0["index"].flatMap { Int32($0) } }.sorted())

        for expectation in expected {
            let index = try XCTUnwrap(expectation["index"].flatMap { Int32($0) })
            guard let link = links.first(where: { $0.index == index }) else {
                XCTFail("no RTM_NEWLINK for index \(index)")
                continue
            }
            let name = expectation["name"] ?? "?"
            XCTAssertEqual(link.name, name)
            XCTAssertEqual(link.kind, expectation["kind"].flatMap { $0.isEmpty ? nil : $0 }, name)
            XCTAssertEqual(link.mtu, expectation["mtu"].flatMap { UInt32($0) }, name)
            XCTAssertEqual(link.hardwareAddressText, expectation["address"], name)
            XCTAssertEqual(link.operationalState.description, expectation["operstate"], name)
            XCTAssertEqual(link.alias, expectation["alias"].flatMap { $0.isEmpty ? nil : $0 }, "\(name)'s alias")
            let flags = Set((expectation["flags"] ?? "").split(separator: ",").map(String.init))
            for (flagName, bit) in Self.linkFlagNames {
                XCTAssertEqual(link.flags.rawValue & bit != 0, flags.contains(flagName), "\(name): IFF_\(flagName)")
            }
            XCTAssertEqual(link.isUp, flags.contains("UP"), name)
            XCTAssertEqual(link.isLoopback, flags.contains("LOOPBACK"), name)
            // With both ends up a veth has carrier, and its IFLA_LINK is the other end's index.
            if link.kind == "veth" {
                XCTAssertEqual(link.carrier, flags.contains("LOWER_UP"), name)
                let peers = expected.filter { $0["kind"] == "veth" && $0["index"] != expectation["index"] }
                XCTAssertEqual(peers.count, 1)
                XCTAssertEqual(link.linkIndex, peers.first?["index"].flatMap { Int32($0) }, "\(name)'s peer")
            }
        }
    }

    func testAddressDumpDecodesLikeIproute2() throws {
        let (fixture, messages) = try dump("reply-addr")
        let addresses = try messages.filter { $0.type == Self.newAddress }.map { message throws -> InterfaceAddress in
            try InterfaceAddress.decode(message)
        }
        let expected = fixture.expectations("address")
        XCTAssertFalse(expected.isEmpty, "reply-addr.txt has no expect-address lines")
        XCTAssertEqual(addresses.count, expected.count)

        for expectation in expected {
            let text = expectation["prefix"] ?? "?"
            guard let address = addresses.first(where: {
                $0.prefix.description == text && String($0.interfaceIndex) == expectation["index"]
            }) else {
                XCTFail("no RTM_NEWADDR for \(text) on index \(expectation["index"] ?? "?"); decoded \(addresses)")
                continue
            }
            XCTAssertEqual(address.prefix, IPPrefix(text), text)
            XCTAssertEqual(address.scope.rawValue, expectation["scope"].flatMap { Self.scopeNames[$0] }, text)
            let flags = Set((expectation["flags"] ?? "").split(separator: ",").map(String.init))
            for (flagName, bit) in Self.addressFlagNames {
                XCTAssertEqual(address.flags.rawValue & bit != 0, flags.contains(flagName), "\(text): \(flagName)")
            }
            XCTAssertEqual(address.isTentative, flags.contains("tentative"), text)
        }
    }

    /// A decoded route written the way the capture script writes `# expect-route:` lines.
    static func summary(_ route: Route) -> String {
        "dst=\(route.destination?.description ?? "default") gateway=\(route.gateway?.description ?? "")"
            + " oif=\(route.outputInterface.map { String($0) } ?? "") metric=\(route.metric.map { String($0) } ?? "")"
    }

    func assertRouteDump(_ name: String, family: Int32) throws {
        let (fixture, messages) = try dump(name)
        let routes = try messages.filter { $0.type == Self.newRoute }.map { message throws -> Route in try Route.decode(message) }
        let expected = fixture.values("expect-route")
        XCTAssertFalse(expected.isEmpty, "\(name).txt has no expect-route lines")
        XCTAssertEqual(routes.map(Self.summary).sorted(), expected.sorted(), name)
        for route in routes {
            let text = Self.summary(route)
            XCTAssertEqual(route.family.rawValue, UInt8(family), text)
            XCTAssertEqual(route.table.rawValue, UInt32(RT_TABLE_MAIN.rawValue), text)
            XCTAssertEqual(route.type.rawValue, UInt8(RTN_UNICAST), text)
            XCTAssertEqual(route.isDefault, route.destination == nil, text)
            // Routes through a gateway are scope universe; routes to the link itself scope link.
            let scope = route.gateway == nil ? RT_SCOPE_LINK.rawValue : RT_SCOPE_UNIVERSE.rawValue
            if family == AF_INET { XCTAssertEqual(route.scope.rawValue, UInt8(scope), text) }
        }
    }

    func testIPv4RouteDumpDecodesLikeIproute2() throws { try assertRouteDump("reply-route", family: AF_INET) }
    func testIPv6RouteDumpDecodesLikeIproute2() throws { try assertRouteDump("reply-route6", family: AF_INET6) }

    func testQdiscDumpDecodesLikeTc() throws {
        let (fixture, messages) = try dump("reply-qdisc")
        let qdiscs = try messages.filter { $0.type == Self.newQdisc }.map { message throws -> Qdisc in try Qdisc.decode(message) }
        let expected = fixture.expectations("qdisc")
        XCTAssertFalse(expected.isEmpty, "reply-qdisc.txt has no expect-qdisc lines")
        XCTAssertEqual(qdiscs.count, expected.count)

        for expectation in expected {
            guard let qdisc = qdiscs.first(where: { String($0.interfaceIndex) == expectation["oif"] }) else {
                XCTFail("no RTM_NEWQDISC for index \(expectation["oif"] ?? "?")")
                continue
            }
            let kind = expectation["kind"] ?? "?"
            XCTAssertEqual(qdisc.kind, kind)
            XCTAssertEqual(qdisc.handle.description, expectation["handle"], kind)
            XCTAssertEqual(qdisc.parent.description, expectation["parent"], kind)
            if let limit = expectation["limit"], !limit.isEmpty {
                // pfifo's TCA_OPTIONS is a struct tc_fifo_qopt: one u32, the limit in packets.
                XCTAssertEqual(qdisc.options.load(UInt32.self, at: 0).map { String($0) }, limit, kind)
            }
            let statistics = qdisc.statistics
            XCTAssertEqual(String(statistics.bytes), expectation["bytes"], "\(kind) bytes")
            XCTAssertEqual(String(statistics.packets), expectation["packets"], "\(kind) packets")
            XCTAssertEqual(String(statistics.drops), expectation["drops"], "\(kind) drops")
            XCTAssertEqual(String(statistics.overlimits), expectation["overlimits"], "\(kind) overlimits")
            XCTAssertEqual(String(statistics.backlogBytes), expectation["backlog"], "\(kind) backlog")
            XCTAssertEqual(String(statistics.queueLength), expectation["qlen"], "\(kind) qlen")
        }
    }

    // MARK: Truncated and malformed replies

    /// How one kind of object is decoded, for the truncation tests.
    struct Decoder: Sendable {
        let type: UInt16
        /// Size of the family header (ifinfomsg, ifaddrmsg, rtmsg, tcmsg).
        let headerSize: Int
        /// Attribute types without which decoding must fail.
        let required: Set<UInt16>
        let decode: @Sendable (NetlinkMessage) throws -> Void
    }

    static let decoders: [Decoder] = [
        Decoder(type: newLink, headerSize: 16, required: [UInt16(IFLA_IFNAME)]) { _ = try Link.decode($0) },
        Decoder(type: newAddress, headerSize: 8, required: []) { _ = try InterfaceAddress.decode($0) },
        Decoder(type: newRoute, headerSize: 12, required: []) { _ = try Route.decode($0) },
        Decoder(type: newQdisc, headerSize: 20, required: []) { _ = try Qdisc.decode($0) },
        Decoder(type: UInt16(RTM_NEWTFILTER), headerSize: 20, required: []) { _ = try TrafficFilter.decode($0) },
    ]

    /// The top-level attributes of a payload: (type, start, length).
    static func attributes(of payload: [UInt8], after headerSize: Int) -> [(type: UInt16, start: Int, length: Int)] {
        var found: [(UInt16, Int, Int)] = []
        var offset = headerSize
        while offset + 4 <= payload.count {
            let length = Int(payload.u16(at: offset))
            guard length >= 4, offset + length <= payload.count else { break }
            found.append((payload.u16(at: offset + 2) & 0x3fff, offset, length))
            offset += (length + 3) & ~3
        }
        return found
    }

    /// Every message of every reply, cut at every length: a cut inside the family header or inside an
    /// attribute must throw; a cut between attributes must decode (unless it drops a required attribute).
    /// None may crash or read past the end.
    func testEveryTruncationOfEveryReplyDecodesOrThrows() throws {
        var checked = 0
        for name in Self.replyFixtures {
            for message in try Fixture.load(name).messages() {
                guard let decoder = Self.decoders.first(where: { $0.type == message.type }) else { continue }
                let payload = message.payload
                let attributes = Self.attributes(of: payload, after: decoder.headerSize)
                let end = attributes.last.map { $0.start + $0.length } ?? decoder.headerSize
                XCTAssertEqual((end + 3) & ~3, (payload.count + 3) & ~3, "\(name): the attribute walk stopped early")
                for cut in 0...payload.count {
                    var truncated = message
                    truncated.payload = Array(payload.prefix(cut))
                    let insideAttribute = attributes.contains { $0.start < cut && cut < $0.start + $0.length }
                    let present = Set(attributes.filter { $0.start + $0.length <= cut }.map(\.type))
                    var shouldDecode = cut >= decoder.headerSize && !insideAttribute && decoder.required.isSubset(of: present)
                    if message.type == Self.newAddress {
                        // An address needs IFA_ADDRESS or IFA_LOCAL.
                        shouldDecode = shouldDecode && !present.isDisjoint(with: [UInt16(IFA_ADDRESS), UInt16(IFA_LOCAL)])
                    }
                    do {
                        try decoder.decode(truncated)
                        XCTAssertTrue(shouldDecode, "\(name): type \(message.type) cut at \(cut)/\(payload.count) decoded")
                    } catch let error as RouteNetlinkError {
                        XCTAssertFalse(shouldDecode, "\(name): type \(message.type) cut at \(cut)/\(payload.count): \(error)")
                        guard case .malformed = error else {
                            XCTFail("\(name): cut at \(cut) threw \(error), expected .malformed")
                            continue
                        }
                    }
                    checked += 1
                }
            }
        }
        XCTAssertGreaterThan(checked, 1000, "too few cuts checked: are the reply fixtures there?")
    }

    /// Every datagram of every reply, cut at every length: parse succeeds exactly at message boundaries.
    func testEveryTruncationOfEveryReplyDatagramParsesOrThrows() throws {
        for name in Self.replyFixtures {
            for datagram in try Fixture.load(name).datagrams {
                var boundaries: [ClosedRange<Int>] = [0...0]
                var offset = 0
                while offset + 16 <= datagram.count {
                    let length = Int(datagram.u32(at: offset))
                    XCTAssertGreaterThanOrEqual(length, 16)
                    boundaries.append((offset + length)...((offset + length + 3) & ~3))
                    offset = (offset + length + 3) & ~3
                }
                XCTAssertEqual(offset, datagram.count, "\(name): messages do not fill the datagram")
                for cut in 0...datagram.count {
                    let atBoundary = boundaries.contains { $0.contains(cut) }
                    do {
                        _ = try NetlinkMessage.parse(datagram: datagram.prefix(cut))
                        XCTAssertTrue(atBoundary, "\(name): a datagram cut at \(cut) parsed")
                    } catch {
                        XCTAssertFalse(atBoundary, "\(name): a datagram cut at \(cut) threw \(error)")
                        XCTAssertEqual(error.kind, .malformed)
                    }
                }
            }
        }
    }

    /// The RTM_NEWLINK of wl0 from the link dump, as raw material for corruptions.
    func wl0Message() throws -> NetlinkMessage {
        let messages = try Fixture.load("reply-link").messages().filter { $0.type == Self.newLink }
        let links = try messages.map { message throws -> Link in try Link.decode(message) }
        let index = try XCTUnwrap(links.firstIndex { $0.name == "wl0" }, "no wl0 in reply-link.txt")
        return messages[index]
    }

    func assertMalformed(_ message: NetlinkMessage, _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try Link.decode(message), what, file: file, line: line) { error in
            guard case let .malformed(object, detail)? = error as? RouteNetlinkError else {
                return XCTFail("\(what): \(error), expected .malformed", file: file, line: line)
            }
            XCTAssertEqual(object, "link", file: file, line: line)
            XCTAssertFalse(detail.isEmpty, file: file, line: line)
        }
    }

    func testAttributeLongerThanTheRemainderIsMalformed() throws {
        var message = try wl0Message()
        let first = 16 // the first attribute follows the ifinfomsg
        let remainder = message.payload.count - first
        for claimed in [remainder + 1, remainder + 4, Int(UInt16.max)] {
            message.payload.setU16(UInt16(claimed), at: first)
            assertMalformed(message, "first attribute claims \(claimed) of \(remainder) bytes")
        }
        // The same in the last attribute: one byte more than what is left.
        var last = try wl0Message()
        let attributes = Self.attributes(of: last.payload, after: 16)
        let final = try XCTUnwrap(attributes.last)
        last.payload.setU16(UInt16(last.payload.count - final.start + 1), at: final.start)
        assertMalformed(last, "last attribute runs one byte past the end")
    }

    func testAttributeLengthShorterThanItsHeaderIsMalformed() throws {
        for claimed: UInt16 in [0, 1, 2, 3] {
            var message = try wl0Message()
            message.payload.setU16(claimed, at: 16)
            assertMalformed(message, "attribute length \(claimed)")
        }
    }

    func testNestedAttributeRunningPastItsNestIsMalformed() throws {
        var message = try wl0Message()
        let linkInfo = try XCTUnwrap(
            Self.attributes(of: message.payload, after: 16).first { $0.type == UInt16(IFLA_LINKINFO) }, "no IFLA_LINKINFO")
        // IFLA_INFO_KIND, the first attribute inside, now claims the whole nest and one byte more.
        message.payload.setU16(UInt16(linkInfo.length - 4 + 1), at: linkInfo.start + 4)
        assertMalformed(message, "IFLA_INFO_KIND longer than IFLA_LINKINFO")
    }

    func testFamilyHeadersShorterThanTheirStructAreMalformed() throws {
        let wl0 = try wl0Message()
        for length in [0, 1, 15] {
            var message = wl0
            message.payload = Array(wl0.payload.prefix(length))
            assertMalformed(message, "ifinfomsg of \(length) bytes")
        }
        for decoder in Self.decoders {
            let message = NetlinkMessage(type: decoder.type, payload: [UInt8](repeating: 0, count: decoder.headerSize - 1))
            XCTAssertThrowsError(try decoder.decode(message), "type \(decoder.type), \(decoder.headerSize - 1) bytes")
        }
    }

    func testLinkWithoutANameIsMalformed() throws {
        var message = try wl0Message()
        message.payload = Array(message.payload.prefix(16))
        assertMalformed(message, "ifinfomsg without attributes")
    }
}

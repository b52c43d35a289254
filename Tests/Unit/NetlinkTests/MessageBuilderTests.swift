import CMnl
import Netlink
import XCTest

final class MessageBuilderTests: XCTestCase {
    func u16(_ bytes: [UInt8], _ offset: Int) -> UInt16 {
        bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: UInt16.self) }
    }

    func u32(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: UInt32.self) }
    }

    func testHeaderOnly() throws {
        let type = UInt16(RTM_NEWLINK)
        let flags = UInt16(NLM_F_CREATE | NLM_F_EXCL)
        let builder = NetlinkMessageBuilder(type: type, flags: flags)
        builder.sequence = 0x6b0c_2351
        builder.flags |= UInt16(NLM_F_REQUEST)
        let bytes = try builder.finish()
        XCTAssertEqual(
            bytes, message(type: type, flags: flags | UInt16(NLM_F_REQUEST), sequence: 0x6b0c_2351, portID: 0))
        XCTAssertEqual(builder.length, 16)
        XCTAssertEqual(builder.type, type)
    }

    func testAttributesArePaddedAndStringsNulTerminated() throws {
        let builder = NetlinkMessageBuilder(type: 1, flags: 0)
        builder.put(1, string: "wl0")
        builder.put(2, string: "c-wl0")
        builder.put(3, uint8: 0xab)
        builder.put(4, uint16: 0xbeef)
        builder.put(5, uint32: 0xdead_beef)
        builder.put(6, uint64: 0x0123_4567_89ab_cdef)
        builder.put(7, bytes: [1, 2, 3])
        builder.put(8, bytes: [])
        let body = stringAttribute(1, "wl0") + stringAttribute(2, "c-wl0") + attribute(3, [0xab])
            + attribute(4, hostBytes(UInt16(0xbeef))) + attribute(5, hostBytes(UInt32(0xdead_beef)))
            + attribute(6, hostBytes(UInt64(0x0123_4567_89ab_cdef))) + attribute(7, [1, 2, 3]) + attribute(8, [])
        XCTAssertEqual(try builder.finish(), message(type: 1, sequence: 0, portID: 0, payload: body))
    }

    func testStructAfterTheHeader() throws {
        var info = ifinfomsg()
        info.ifi_index = 3
        info.ifi_flags = 1
        info.ifi_change = 1
        let builder = NetlinkMessageBuilder(type: UInt16(RTM_NEWLINK), flags: 0)
        builder.putStruct(info)
        let bytes = try builder.finish()
        XCTAssertEqual(bytes.count, 16 + 16)
        XCTAssertEqual(u32(bytes, 0), 32)
        XCTAssertEqual(Array(bytes[16...]), withUnsafeBytes(of: info) { Array($0) })
    }

    func testNestLengthsCoverEverythingAppendedInside() throws {
        // The veth shape: IFLA_LINKINFO { IFLA_INFO_KIND "veth", IFLA_INFO_DATA { VETH_INFO_PEER { ifinfomsg, IFLA_IFNAME } } }
        let builder = NetlinkMessageBuilder(type: UInt16(RTM_NEWLINK), flags: 0)
        builder.putStruct(ifinfomsg())
        let linkInfoStart = builder.length
        let linkInfo = builder.beginNest(UInt16(IFLA_LINKINFO))
        builder.put(UInt16(IFLA_INFO_KIND), string: "veth")
        let dataStart = builder.length
        let data = builder.beginNest(UInt16(IFLA_INFO_DATA))
        let peerStart = builder.length
        let peer = builder.beginNest(UInt16(VETH_INFO_PEER))
        builder.putStruct(ifinfomsg())
        builder.put(UInt16(IFLA_IFNAME), string: "c-wl0")
        builder.endNest(peer)
        builder.endNest(data)
        builder.endNest(linkInfo)
        let bytes = try builder.finish()

        let peerBody = [UInt8](repeating: 0, count: 16) + stringAttribute(UInt16(IFLA_IFNAME), "c-wl0")
        let dataBody = attribute(UInt16(VETH_INFO_PEER), peerBody)
        let linkInfoBody = stringAttribute(UInt16(IFLA_INFO_KIND), "veth") + attribute(UInt16(IFLA_INFO_DATA), dataBody)
        let expected = message(
            type: UInt16(RTM_NEWLINK), sequence: 0, portID: 0,
            payload: [UInt8](repeating: 0, count: 16) + attribute(UInt16(IFLA_LINKINFO), linkInfoBody))
        XCTAssertEqual(bytes, expected)
        XCTAssertEqual(Int(u16(bytes, linkInfoStart)), 4 + linkInfoBody.count)
        XCTAssertEqual(Int(u16(bytes, dataStart)), 4 + dataBody.count)
        XCTAssertEqual(Int(u16(bytes, peerStart)), 4 + peerBody.count)
        XCTAssertEqual(u16(bytes, linkInfoStart + 2), UInt16(IFLA_LINKINFO), "no NLA_F_NESTED unless asked")
    }

    func testNestedFlagAndEmptyNest() throws {
        let builder = NetlinkMessageBuilder(type: 1, flags: 0)
        let nest = builder.beginNest(5, nestedFlag: true)
        builder.endNest(nest)
        let bytes = try builder.finish()
        XCTAssertEqual(u16(bytes, 16), 4, "an empty nest is just its header")
        XCTAssertEqual(u16(bytes, 18), 5 | UInt16(NLA_F_NESTED))
    }

    func testStructThenAttributesNestLikeNetemOptions() throws {
        // tc/q_netem.c: TCA_OPTIONS holds a struct tc_netem_qopt, then attributes, and its length covers both.
        let qopt = tc_netem_qopt(latency: 100_000, limit: 1000, loss: 0, gap: 0, duplicate: 0, jitter: 10_000)
        let corr = tc_netem_corr(delay_corr: 25, loss_corr: 0, dup_corr: 0)
        let latency: Int64 = 100_000_000
        let builder = NetlinkMessageBuilder(type: UInt16(RTM_NEWQDISC), flags: 0)
        builder.putStruct(tcmsg())
        builder.put(UInt16(TCA_KIND), string: "netem")
        let optionsStart = builder.length
        let options = builder.beginNest(UInt16(TCA_OPTIONS))
        builder.putStruct(qopt)
        builder.put(UInt16(TCA_NETEM_CORR), structure: corr)
        builder.put(UInt16(TCA_NETEM_LATENCY64), uint64: UInt64(bitPattern: latency))
        builder.endNest(options)
        let bytes = try builder.finish()

        let qoptBytes = padded(withUnsafeBytes(of: qopt) { Array($0) })
        let attributes = attribute(UInt16(TCA_NETEM_CORR), withUnsafeBytes(of: corr) { Array($0) })
            + attribute(UInt16(TCA_NETEM_LATENCY64), hostBytes(latency))
        XCTAssertEqual(Int(u16(bytes, optionsStart)), 4 + qoptBytes.count + attributes.count)
        XCTAssertEqual(bytes.count, optionsStart + 4 + qoptBytes.count + attributes.count)
        XCTAssertEqual(Array(bytes[(optionsStart + 4)..<(optionsStart + 4 + qoptBytes.count)]), qoptBytes)

        // And it reads back: the nest's payload is the struct, then attributes.
        let parsed = try XCTUnwrap(try NetlinkMessage.parse(datagram: bytes).first)
        var top = AttributeDecoder(parsed.payload[20...], operation: "netem")
        var found = false
        while top.next() {
            guard Int(top.type) == TCA_OPTIONS else { continue }
            found = true
            XCTAssertEqual(top.structure(tc_netem_qopt.self)?.jitter, qopt.jitter)
            var inner = AttributeDecoder(top.payload.dropFirst(MemoryLayout<tc_netem_qopt>.size), operation: "netem")
            XCTAssertTrue(inner.next())
            XCTAssertEqual(inner.structure(tc_netem_corr.self)?.delay_corr, corr.delay_corr)
            XCTAssertTrue(inner.next())
            XCTAssertEqual(Int64(bitPattern: inner.uint64()), latency)
            XCTAssertFalse(inner.next())
            XCTAssertNoThrow(try inner.finish())
        }
        XCTAssertTrue(found)
        XCTAssertNoThrow(try top.finish())
    }

    func testOverflowIsReportedByFinish() throws {
        let builder = NetlinkMessageBuilder(type: 1, flags: 0, capacity: 24)
        builder.put(1, uint32: 7)  // 16 + 8 = 24: fits exactly
        XCTAssertEqual(builder.length, 24)
        builder.put(2, string: "this does not fit")
        XCTAssertEqual(builder.length, 24, "nothing is written past the capacity")
        builder.put(3, uint8: 1)  // ignored after an overflow, even though it would not fit either
        XCTAssertThrowsError(try builder.finish()) { error in
            let error = error as? NetlinkError
            XCTAssertEqual(error?.kind, .overflow)
            XCTAssertTrue(error?.detail?.contains("attribute 2") ?? false, "\(String(describing: error))")
            XCTAssertTrue(error?.description.contains("does not fit") ?? false)
        }
        XCTAssertEqual(builder.bytes, message(type: 1, sequence: 0, portID: 0, payload: attribute(1, hostBytes(UInt32(7)))))
    }

    func testOverflowInsideANestLeavesTheNestAlone() {
        let builder = NetlinkMessageBuilder(type: 1, flags: 0, capacity: 32)
        let nest = builder.beginNest(1)
        builder.put(2, bytes: [UInt8](repeating: 1, count: 40))
        builder.endNest(nest)
        XCTAssertEqual(builder.length, 20)
        XCTAssertThrowsError(try builder.finish())
    }

    func testStructThatDoesNotFitOverflows() {
        let builder = NetlinkMessageBuilder(type: 1, flags: 0, capacity: 28)
        builder.putStruct(ifinfomsg())  // 16 bytes, 12 left
        XCTAssertEqual(builder.length, 16)
        XCTAssertThrowsError(try builder.finish()) { error in
            XCTAssertEqual((error as? NetlinkError)?.kind, .overflow)
        }
    }

    func testEveryAttributeSizeAtTheCapacityBoundary() throws {
        // An attribute of n payload bytes needs align(4 + n); it fits exactly when that equals the room left.
        for payloadSize in 0...12 {
            let needed = (4 + payloadSize + 3) & ~3
            let fits = NetlinkMessageBuilder(type: 1, flags: 0, capacity: 16 + needed)
            fits.put(1, bytes: [UInt8](repeating: 0xaa, count: payloadSize))
            XCTAssertNoThrow(try fits.finish(), "\(payloadSize) bytes in \(needed)")
            XCTAssertEqual(fits.length, 16 + needed)

            let tooSmall = NetlinkMessageBuilder(type: 1, flags: 0, capacity: 16 + needed - 4)
            tooSmall.put(1, bytes: [UInt8](repeating: 0xaa, count: payloadSize))
            XCTAssertThrowsError(try tooSmall.finish(), "\(payloadSize) bytes in \(needed - 4)")
        }
    }

    func testAMessageThatOutgrowsItsFirstBlockKeepsEveryByteAndClearsPadding() throws {
        // Odd-sized payloads (padding after each) across several growths of the buffer, then a nest whose
        // length is patched after the growth moved the message.
        let builder = NetlinkMessageBuilder(type: 1, flags: 0)
        let nest = builder.beginNest(9)
        var body: [UInt8] = []
        for index in 0..<200 {
            let payload = [UInt8](repeating: UInt8(truncatingIfNeeded: index | 0x80), count: index % 7)
            builder.put(UInt16(index % 100 + 1), bytes: payload)
            body += attribute(UInt16(index % 100 + 1), payload)
        }
        builder.endNest(nest)
        let expected = message(type: 1, sequence: 0, portID: 0, payload: attribute(9, body))
        XCTAssertGreaterThan(expected.count, 1024, "the message outgrows the first block twice")
        XCTAssertEqual(try builder.finish(), expected)
    }
}

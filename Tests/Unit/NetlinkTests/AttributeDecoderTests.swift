import CMnl
import Netlink
import XCTest

final class AttributeDecoderTests: XCTestCase {
    /// Walks every attribute and returns (type, isNested, payload) for each, plus the decoder's error.
    func walk(_ bytes: ArraySlice<UInt8>) -> ([(UInt16, Bool, [UInt8])], NetlinkError?) {
        var decoder = AttributeDecoder(bytes, operation: "walk")
        var seen: [(UInt16, Bool, [UInt8])] = []
        while decoder.next() { seen.append((decoder.type, decoder.isNested, Array(decoder.payload))) }
        return (seen, decoder.error)
    }

    func testWalksEveryAttributeWithPaddingBetweenThem() {
        // Payloads of 1, 2, 3, 4 and 5 bytes: every amount of padding.
        let payloads: [[UInt8]] = [[1], [2, 2], [3, 3, 3], [4, 4, 4, 4], [5, 5, 5, 5, 5]]
        let bytes = payloads.enumerated().flatMap { attribute(UInt16($0.offset + 1), $0.element) }
        let (seen, error) = walk(bytes[...])
        XCTAssertNil(error)
        XCTAssertEqual(seen.map(\.0), payloads.indices.map { UInt16($0 + 1) })
        XCTAssertEqual(seen.map(\.2), payloads)
    }

    func testLastAttributeMayOmitItsPadding() {
        let bytes = attribute(1, [9, 9, 9, 9]) + Array(attribute(2, [7]).prefix(5))
        let (seen, error) = walk(bytes[...])
        XCTAssertNil(error)
        XCTAssertEqual(seen.map(\.2), [[9, 9, 9, 9], [7]])
    }

    func testUnknownTypesAreSkippedNotFatal() throws {
        let mtu: UInt32 = 1400
        let bytes = attribute(900, [1, 2, 3]) + attribute(UInt16(IFLA_MTU), hostBytes(mtu)) + attribute(0x3fff, [])
        var decoder = AttributeDecoder(bytes, operation: "decode link")
        var decoded: UInt32?
        var others: [UInt16] = []
        while decoder.next() {
            switch Int(decoder.type) {
            case IFLA_MTU: decoded = decoder.uint32()
            default: others.append(decoder.type)
            }
        }
        XCTAssertNoThrow(try decoder.finish())
        XCTAssertEqual(decoded, mtu)
        XCTAssertEqual(others, [900, 0x3fff])
    }

    func testTypedReads() throws {
        let values: (UInt8, UInt16, UInt32, UInt64, Int32) = (0xab, 0xbeef, 0xdead_beef, 0x0123_4567_89ab_cdef, -42)
        let bytes = attribute(1, hostBytes(values.0)) + attribute(2, hostBytes(values.1)) + attribute(3, hostBytes(values.2))
            + attribute(4, hostBytes(values.3)) + attribute(5, hostBytes(values.4))
        var decoder = AttributeDecoder(bytes, operation: "typed")
        XCTAssertTrue(decoder.next())
        XCTAssertEqual(decoder.uint8(), values.0)
        XCTAssertTrue(decoder.next())
        XCTAssertEqual(decoder.uint16(), values.1)
        XCTAssertTrue(decoder.next())
        XCTAssertEqual(decoder.uint32(), values.2)
        XCTAssertTrue(decoder.next())
        XCTAssertEqual(decoder.uint64(), values.3)
        XCTAssertTrue(decoder.next())
        XCTAssertEqual(decoder.int32(), values.4)
        XCTAssertFalse(decoder.next())
        XCTAssertNoThrow(try decoder.finish())
    }

    func testNestedAttributes() throws {
        let kind = "veth"
        let peerIndex: UInt32 = 7
        let inner = stringAttribute(UInt16(IFLA_INFO_KIND), kind) + attribute(UInt16(IFLA_INFO_DATA), hostBytes(peerIndex))
        let nestedType = UInt16(IFLA_LINKINFO) | UInt16(NLA_F_NESTED)
        let bytes = attribute(UInt16(IFLA_IFNAME), Array("wl0".utf8) + [0]) + attribute(nestedType, inner)

        var outer = AttributeDecoder(bytes, operation: "nest")
        XCTAssertTrue(outer.next())
        XCTAssertFalse(outer.isNested)
        XCTAssertTrue(outer.next())
        XCTAssertEqual(Int(outer.type), IFLA_LINKINFO, "NLA_F_NESTED is masked out of the type")
        XCTAssertTrue(outer.isNested)
        XCTAssertEqual(outer.payload.count, inner.count)

        var nested = outer.nested()
        XCTAssertTrue(nested.next())
        XCTAssertEqual(Int(nested.type), IFLA_INFO_KIND)
        XCTAssertEqual(nested.string(), kind)
        XCTAssertTrue(nested.next())
        XCTAssertEqual(nested.uint32(), peerIndex)
        XCTAssertFalse(nested.next())
        XCTAssertNoThrow(try nested.finish())
        XCTAssertFalse(outer.next())
        XCTAssertNoThrow(try outer.finish())
    }

    func testNestedDecoderStopsAtItsNest() {
        // The nest's last attribute claims more than the nest holds, though the outer buffer has more bytes.
        var inner = attribute(1, [1, 2, 3, 4])
        inner[0] = 12
        let bytes = attribute(5, inner) + attribute(6, [0, 0, 0, 0])
        var outer = AttributeDecoder(bytes, operation: "nest")
        XCTAssertTrue(outer.next())
        var nested = outer.nested()
        XCTAssertFalse(nested.next())
        XCTAssertEqual(nested.error?.kind, .malformed)
        XCTAssertTrue(outer.next(), "the outer walk is unaffected")
        XCTAssertEqual(outer.type, 6)
    }

    func testDecoderOverASliceThatDoesNotStartAtZero() {
        // Decoders run over `payload[16...]`; offsets must be relative to the slice.
        let value: UInt32 = 0x0102_0304
        let bytes = [UInt8](repeating: 0xee, count: 7) + attribute(3, hostBytes(value))
        var decoder = AttributeDecoder(bytes[7...], operation: "slice")
        XCTAssertTrue(decoder.next())
        XCTAssertEqual(decoder.type, 3)
        XCTAssertEqual(decoder.uint32(), value)
        XCTAssertFalse(decoder.next())
        XCTAssertNil(decoder.error)
    }

    func testWrongSizeU32RecordsAnErrorAndReadsZero() {
        for size in [0, 2, 3, 5, 8] {
            var decoder = AttributeDecoder(attribute(4, [UInt8](repeating: 0xff, count: size)), operation: "decode mtu")
            XCTAssertTrue(decoder.next())
            XCTAssertEqual(decoder.uint32(), 0, "\(size) bytes")
            XCTAssertEqual(decoder.error?.kind, .malformed)
            XCTAssertEqual(decoder.error?.operation, "decode mtu")
            XCTAssertTrue(decoder.error?.detail?.contains("\(size) bytes") ?? false, decoder.error?.description ?? "")
            XCTAssertFalse(decoder.next(), "iteration stops after an error")
            XCTAssertThrowsError(try decoder.finish())
        }
    }

    func testErrorIsSticky() {
        // A good attribute, a wrong-size read, then an attribute claiming too much: only the first is kept.
        var overlong = attribute(3, [0, 0, 0, 0])
        overlong[0] = 200
        let bytes = attribute(1, [1, 2]) + attribute(2, [1, 2, 3, 4]) + overlong
        var decoder = AttributeDecoder(bytes, operation: "sticky")
        XCTAssertTrue(decoder.next())
        XCTAssertEqual(decoder.uint32(), 0)  // 2 bytes: the first problem
        let first = decoder.error
        XCTAssertNotNil(first)
        XCTAssertFalse(decoder.next(), "no further attributes after the first error")
        XCTAssertEqual(hostBytes(decoder.uint16()), [1, 2], "the current payload is still readable")
        XCTAssertEqual(decoder.uint8(), 0)  // wrong size again
        XCTAssertEqual(decoder.error, first, "later problems do not replace the first")
        XCTAssertThrowsError(try decoder.finish()) { error in
            XCTAssertEqual(error as? NetlinkError, first)
        }
    }

    func testAttributeClaimingMoreThanRemainsStops() {
        var bytes = attribute(1, [1, 2, 3, 4]) + attribute(2, [5, 6, 7, 8])
        bytes[8] = 9  // the second attribute claims 9 bytes, 8 remain
        let (seen, error) = walk(bytes[...])
        XCTAssertEqual(seen.map(\.0), [1])
        XCTAssertEqual(error?.kind, .malformed)
        XCTAssertTrue(error?.detail?.contains("claims 9 bytes, 8 remain") ?? false, error?.description ?? "")
    }

    func testAttributeLengthShorterThanItsHeaderStopsWithoutLooping() {
        for length: UInt8 in [0, 1, 2, 3] {
            var bytes = attribute(1, [1, 2, 3, 4]) + attribute(2, [5, 6, 7, 8])
            bytes[8] = length
            let (seen, error) = walk(bytes[...])
            XCTAssertEqual(seen.map(\.0), [1], "length \(length)")
            XCTAssertEqual(error?.kind, .malformed, "length \(length)")
        }
    }

    func testTrailingBytesTooFewForAHeader() {
        for trailing in 1...3 {
            let bytes = attribute(1, [1, 2, 3, 4]) + [UInt8](repeating: 0, count: trailing)
            let (seen, error) = walk(bytes[...])
            XCTAssertEqual(seen.count, 1)
            XCTAssertEqual(error?.kind, .malformed, "\(trailing) trailing bytes")
        }
        let (seen, error) = walk([][...])
        XCTAssertTrue(seen.isEmpty)
        XCTAssertNil(error, "no attributes at all is fine")
    }

    func testStrings() {
        let cases: [([UInt8], String)] = [
            (Array("wl0".utf8) + [0], "wl0"),  // NUL-terminated
            (Array("wl0".utf8), "wl0"),  // no NUL: the whole payload
            (Array("wl0".utf8) + [0, 0x41, 0x42], "wl0"),  // stops at the first NUL
            ([0], ""),
            ([], ""),
        ]
        for (payload, text) in cases {
            var decoder = AttributeDecoder(attribute(3, payload), operation: "string")
            XCTAssertTrue(decoder.next())
            XCTAssertEqual(decoder.string(), text, "\(payload)")
            XCTAssertNil(decoder.error)
        }
    }

    func testStructureNeedsAtLeastItsSize() {
        let queue = gnet_stats_queue(qlen: 1, backlog: 2, drops: 3, requeues: 4, overlimits: 5)
        let exact = withUnsafeBytes(of: queue) { Array($0.prefix(MemoryLayout<gnet_stats_queue>.size)) }

        var longer = AttributeDecoder(attribute(1, exact + [9, 9, 9, 9]), operation: "struct")
        XCTAssertTrue(longer.next())
        XCTAssertEqual(longer.structure(gnet_stats_queue.self)?.drops, queue.drops, "kernels may append fields")
        XCTAssertNil(longer.error)

        var shorter = AttributeDecoder(attribute(1, Array(exact.dropLast())), operation: "struct")
        XCTAssertTrue(shorter.next())
        XCTAssertNil(shorter.structure(gnet_stats_queue.self))
        XCTAssertEqual(shorter.error?.kind, .malformed)
    }
}

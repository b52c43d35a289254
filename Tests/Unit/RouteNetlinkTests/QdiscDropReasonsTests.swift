import CMnl
import Netlink
import RouteNetlink
import XCTest

/// The drop reasons of codel, pie and red, read from their `TCA_STATS_APP` in an `RTM_NEWQDISC` laid out
/// as the kernel sends it in a dump (`TCA_STATS2` holding `TCA_STATS_BASIC`, `TCA_STATS_QUEUE`,
/// `TCA_STATS_APP`); the VM tier compares them with what `tc -s -j qdisc show` decodes from a real codel.
final class QdiscDropReasonsTests: XCTestCase {
    private func qdisc(kind: String, drops: UInt32, application: [UInt8]?, legacy: Bool = false) throws -> Qdisc {
        let builder = NetlinkMessageBuilder(type: UInt16(RTM_NEWQDISC), flags: 0)
        var header = tcmsg()
        header.tcm_family = UInt8(AF_UNSPEC)
        header.tcm_ifindex = 4
        header.tcm_handle = 0x8001_0000
        header.tcm_parent = 0x0001_0001
        builder.putStruct(header)
        builder.put(UInt16(TCA_KIND), string: kind)
        let statistics = builder.beginNest(UInt16(TCA_STATS2))
        var basic = gnet_stats_basic()
        basic.bytes = 123_456
        basic.packets = 99
        builder.put(UInt16(TCA_STATS_BASIC), structure: basic)
        var queue = gnet_stats_queue()
        queue.drops = drops
        builder.put(UInt16(TCA_STATS_QUEUE), structure: queue)
        if let application, !legacy { builder.put(UInt16(TCA_STATS_APP), bytes: application) }
        builder.endNest(statistics)
        if let application, legacy { builder.put(UInt16(TCA_XSTATS), bytes: application) }
        return try Qdisc.decode(try XCTUnwrap(try NetlinkMessage.parse(datagram: try builder.finish()).first))
    }

    private func bytes<T>(of value: T) -> [UInt8] { withUnsafeBytes(of: value) { Array($0) } }

    func testCoDelsOwnDropsAreItsDropsLessThoseAtTheLimit() throws {
        var stats = tc_codel_xstats()
        stats.maxpacket = 1514
        stats.drop_overlimit = 3
        stats.ecn_mark = 7
        let codel = try qdisc(kind: "codel", drops: 45, application: bytes(of: stats))
        XCTAssertEqual(codel.statistics.drops, 45)
        XCTAssertEqual(codel.dropReasons, QdiscDropReasons(limit: 3, early: 42, ecnMarked: 7))
        // A kernel that sends the older TCA_XSTATS alone is read the same way.
        XCTAssertEqual(try qdisc(kind: "codel", drops: 45, application: bytes(of: stats), legacy: true).dropReasons, codel.dropReasons)
    }

    func testPieAndRedNameTheirReasonsThemselves() throws {
        var pie = tc_pie_xstats()
        pie.dropped = 84
        pie.overlimit = 2
        pie.ecn_mark = 1
        XCTAssertEqual(try qdisc(kind: "pie", drops: 86, application: bytes(of: pie)).dropReasons, QdiscDropReasons(limit: 2, early: 84, ecnMarked: 1))
        var red = tc_red_xstats()
        red.early = 7
        red.pdrop = 5
        red.other = 1
        red.marked = 9
        XCTAssertEqual(try qdisc(kind: "red", drops: 13, application: bytes(of: red)).dropReasons, QdiscDropReasons(limit: 5, early: 8, ecnMarked: 9))
    }

    func testOtherKindsAndShortOrMissingStatisticsHaveNoReasons() throws {
        XCTAssertNil(try qdisc(kind: "tbf", drops: 1, application: [1, 2, 3, 4]).dropReasons)
        XCTAssertNil(try qdisc(kind: "codel", drops: 1, application: nil).dropReasons)
        XCTAssertNil(try qdisc(kind: "codel", drops: 1, application: [0, 0, 0, 0]).dropReasons, "4 bytes are no tc_codel_xstats")
    }
}

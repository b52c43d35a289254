import EngineControl
import Foundation
import LinkEmulation
import Profiles
import XCTest

/// The fidelity counters on the control socket: drops by reason, order holds, the totals since the engine
/// started beside the counters since the last apply, and the queue's sojourn; an older engine that sends
/// none of them is still read.
final class FidelityCodecTests: XCTestCase {
    func testTheFidelityCountersTravelAndReadBack() throws {
        var counters = DirectionCounters()
        counters.offeredFrames = 10
        counters.codelDroppedFrames = 3
        counters.tailDroppedFrames = 1
        counters.headDroppedFrames = 2
        counters.pieDroppedFrames = 4
        counters.redDroppedFrames = 5
        counters.redForcedDroppedFrames = 1
        counters.orderHolds = 6
        counters.jitterReorderedFrames = 7
        var totals = counters
        totals.offeredFrames = 1_000
        let state = EngineDirectionState(
            counters: counters, totals: totals, sojourn: EngineLateness(count: 9, median: 4_000_000, p99: 38_000_000, maximum: 51_000_000))
        let profile = Profile(
            name: "aqm", downlink: LinkConditions(rate: 1_000_000, jitter: 0, queue: LinkQueue(.codel(CoDelSettings(target: 10_000_000)))))
        let response = EngineResponse(
            links: [EngineLinkState(link: .wifi, clientSide: "cl-wl0", routerSide: "rt-wl0", profile: profile, uplink: state, downlink: state)],
            pid: 5)
        let text = EngineMessageCodec.text(of: response)
        XCTAssertTrue(text.contains(#""codelDroppedFrames":3"#), text)
        XCTAssertTrue(text.contains(#""sojourn":{"count":9,"median":4000000,"p99":38000000,"maximum":51000000}"#), text)
        XCTAssertTrue(text.contains(#""queue":{"discipline":"codel","target":"10ms"}"#), text)
        var read = try EngineMessageCodec.response(Array(text.utf8))
        read.links[0].profile?.source = nil
        XCTAssertEqual(read, response)
        XCTAssertEqual(read.links[0].uplink.totals?.offeredFrames, 1_000)
    }

    func testAnOlderEnginesAnswerWithoutThemIsRead() throws {
        let state = EngineDirectionState(counters: DirectionCounters())
        let text = EngineMessageCodec.text(
            of: EngineResponse(links: [EngineLinkState(link: .wifi, clientSide: "a", routerSide: "b", profile: nil, uplink: state, downlink: state)], pid: 1))
        var older = text
        for key in ["orderHolds", "jitterReorderedFrames", "tailDroppedFrames", "headDroppedFrames", "codelDroppedFrames", "pieDroppedFrames",
            "redDroppedFrames", "redForcedDroppedFrames"]
        {
            older = older.replacingOccurrences(of: ",\"\(key)\":0", with: "")
        }
        XCTAssertFalse(older.contains("orderHolds"))
        let read = try EngineMessageCodec.response(Array(older.utf8))
        XCTAssertEqual(read.links[0].uplink.counters, DirectionCounters())
        XCTAssertNil(read.links[0].uplink.totals)
        XCTAssertNil(read.links[0].uplink.sojourn)
    }
}

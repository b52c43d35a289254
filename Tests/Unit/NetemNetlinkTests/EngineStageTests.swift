import EngineControl
import JSONDocument
import LinkEmulation
import Profiles
import XCTest

@testable import Conditioning

/// How `show` reads an engine direction: drops by reason (the held-bytes bound counted as a tail drop),
/// dropped as lost plus queue-dropped, and `--json` carrying the reasons, the sojourn and the totals since
/// the engine started.
final class EngineStageTests: XCTestCase {
    func testAnEngineDirectionShowsItsDropsByReasonSojournAndTotals() {
        var counters = DirectionCounters()
        counters.offeredFrames = 20
        counters.passedFrames = 10
        counters.lostFrames = 4
        counters.queueDroppedFrames = 6
        counters.tailDroppedFrames = 1
        counters.heldLimitDroppedFrames = 2
        counters.codelDroppedFrames = 3
        counters.orderHolds = 5
        let conditions = LinkConditions(rate: 240_000, delay: 400_000_000, queue: LinkQueue(.codel(CoDelSettings())))
        var stage = EngineBackend.stage(handle: "main", conditions, extraDelay: 0, counters, agrees: true)
        XCTAssertEqual(stage.dropped, 10)
        let engine = stage.engine
        XCTAssertEqual(engine?.queueDropped, 6)
        XCTAssertEqual(engine?.tailDropped, 3, "the tail drops and the held-bytes drops")
        XCTAssertEqual(engine?.codelDropped, 3)
        XCTAssertEqual(engine?.orderHolds, 5)
        XCTAssertEqual(stage.text, "rate 240kbit delay 400ms queue codel target 5ms interval 100ms limit 1000 packets")

        stage.engine?.sojourn = EngineLateness(count: 9, median: 4_000_000, p99: 38_000_000, maximum: 51_000_000)
        stage.engine?.totals = .init(offered: 120, sent: 100, lost: 8, queueDropped: 12)
        let text = JSONWriter.text(of: stage.json, indent: nil)
        XCTAssertTrue(text.contains(#""queueDrops":{"tail":3,"head":0,"codel":3,"pie":0,"red":0}"#), text)
        XCTAssertTrue(text.contains(#""orderHolds":5"#), text)
        XCTAssertTrue(text.contains(#""sojourn":{"count":9,"median":4000000,"p99":38000000,"maximum":51000000}"#), text)
        XCTAssertTrue(text.contains(#""sinceUp":{"offered":120,"sent":100,"lost":8,"queueDropped":12}"#), text)
        XCTAssertTrue(text.contains(#""queue":{"discipline":"codel"}"#), text)
    }
}

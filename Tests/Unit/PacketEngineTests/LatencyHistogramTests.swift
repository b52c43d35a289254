import PacketEngine
import XCTest

final class LatencyHistogramTests: XCTestCase {
    func testQuantilesAreWithinABucketAndNeverUnderstate() {
        var histogram = LatencyHistogram()
        XCTAssertNil(histogram.quantile(0.5))
        for value in 1...10_000 { histogram.record(UInt64(value) * 1000) }  // 1 µs … 10 ms
        let summary = histogram.summary
        XCTAssertEqual(summary.count, 10_000)
        XCTAssertEqual(summary.maximum, 10_000_000)
        let median = Double(summary.median!)
        XCTAssertGreaterThanOrEqual(median, 5_000_000)
        XCTAssertLessThanOrEqual(median, 5_000_000 * 1.07)
        let p99 = Double(summary.p99!)
        XCTAssertGreaterThanOrEqual(p99, 9_900_000)
        XCTAssertLessThanOrEqual(p99, 10_000_000)
    }

    func testBucketsCoverEveryValueOnce() {
        var previousUpper: UInt64?
        for index in 0..<(32 + 59 * 16) {
            let range = LatencyHistogram.bucketRange(index)
            if let previousUpper { XCTAssertEqual(range.lowerBound, previousUpper &+ 1, "gap before bucket \(index)") }
            previousUpper = range.upperBound
        }
        XCTAssertEqual(previousUpper, UInt64.max)
        var histogram = LatencyHistogram()
        histogram.record(UInt64.max)
        histogram.record(0)
        XCTAssertEqual(histogram.quantile(1), UInt64.max)
        XCTAssertEqual(histogram.quantile(0.5), 0)
    }
}

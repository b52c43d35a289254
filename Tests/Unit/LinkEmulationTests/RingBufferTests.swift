import AllocationCounting
import XCTest

@testable import LinkEmulation

/// The model's ring: first in first out across growth and wrap-around, and storage that its owner cannot
/// share or free twice (`~Copyable`, freed in `deinit`), counted with the test executable's malloc.
final class RingBufferTests: XCTestCase {
    func testElementsLeaveInOrderAcrossGrowthAndWrapAround() {
        var ring = RingBuffer<Int>()
        var expected: [Int] = []
        var next = 0
        for round in 0..<50 {
            for _ in 0..<(round % 7 + 3) {
                ring.append(next)
                expected.append(next)
                next += 1
            }
            for _ in 0..<(round % 5 + 1) where !ring.isEmpty {
                XCTAssertEqual(ring.first, expected.first)
                XCTAssertEqual(ring.removeFirst(), expected.removeFirst())
            }
            XCTAssertEqual(ring.count, expected.count)
            XCTAssertEqual(ring.last, expected.last)
            XCTAssertEqual((0..<ring.count).map { ring[$0] }, expected)
        }
        XCTAssertEqual(ring.removeLast(), expected.removeLast(), "used as a stack")
    }

    /// Fills a ring with `count` values and lets it go; returns the count it held.
    @inline(never)
    private func fillAndDrop(_ count: Int) -> Int {
        var ring = RingBuffer<UInt64>()
        for value in 0..<count { ring.append(UInt64(value)) }
        return ring.count
    }

    func testTheRingFreesItsStorageOnceWhenItGoes() {
        // Once first, so what the runtime makes on first use (the generic type's metadata) is not counted.
        _ = fillAndDrop(100)
        let allocations = lc_thread_allocations()
        let frees = lc_thread_frees()
        let count = fillAndDrop(100)
        let made = lc_thread_allocations() - allocations
        XCTAssertEqual(count, 100)
        // 16, 32, 64 and 128 elements: four blocks, each older one freed on growth, the last by deinit.
        XCTAssertEqual(made, 4, "storage blocks allocated")
        XCTAssertEqual(lc_thread_frees() - frees, made, "every block freed exactly once")
    }

    func testAnEmptyRingAllocatesNothing() {
        _ = fillAndDrop(1)
        let allocations = lc_thread_allocations()
        let count = fillAndDrop(0)
        XCTAssertEqual(lc_thread_allocations() - allocations, 0)
        XCTAssertEqual(count, 0)
    }
}

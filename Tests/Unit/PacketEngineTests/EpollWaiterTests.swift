import Foundation
import Glibc
import XCTest

@testable import PacketEngine

/// The engine's own waiter (epoll over a source descriptor, a timerfd and an eventfd) on a pipe standing in
/// for the receive socket: none of them needs privileges. Every wait here has something ready before it
/// starts (a past deadline, a written byte, a wake), so none can block.
final class EpollWaiterTests: XCTestCase {
    private func openDescriptors() -> Set<String> {
        Set((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? [])
    }

    private func events(_ waiter: EpollWaiter) -> [WaitEvent] {
        var seen: [WaitEvent] = []
        XCTAssertTrue(waiter.wait { seen.append($0) }, "the engine's waiter always sleeps until something happens")
        return seen
    }

    func testItReportsTheSourceTheTimerAndAWakeAndClosesWhatItOpened() throws {
        var ends: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&ends), 0)
        defer {
            close(ends[0])
            close(ends[1])
        }
        let before = openDescriptors()
        let waiter = try EpollWaiter(sourceDescriptor: ends[0], place: "a pipe")
        XCTAssertEqual(openDescriptors().subtracting(before).count, 3, "epoll, timerfd and eventfd")

        var byte: UInt8 = 1
        XCTAssertEqual(write(ends[1], &byte, 1), 1)
        XCTAssertEqual(events(waiter), [.readable])
        XCTAssertEqual(read(ends[0], &byte, 1), 1)

        // A deadline long past fires at once; the expiry is consumed, so the timer is quiet afterwards.
        waiter.armTimer(at: 1)
        XCTAssertEqual(events(waiter), [.timer])

        // A wake from another thread, joined before anything is counted (a Foundation Thread still holds
        // descriptors of its own for a moment after it signals: the count once caught one); the eventfd is
        // reset, so the next wait needs a new event.
        var thread = pthread_t()
        let context = Unmanaged.passRetained(waiter).toOpaque()
        XCTAssertEqual(pthread_create(&thread, nil, { context in
            Unmanaged<EpollWaiter>.fromOpaque(context!).takeRetainedValue().wake()
            return nil
        }, context), 0)
        XCTAssertEqual(pthread_join(thread, nil), 0)
        XCTAssertEqual(events(waiter), [.woken])
        waiter.armTimer(at: 1)
        XCTAssertEqual(events(waiter), [.timer], "a wake or an expiry was reported twice")

        waiter.close()
        XCTAssertEqual(openDescriptors(), before, "the waiter's descriptors are still open")
    }
}

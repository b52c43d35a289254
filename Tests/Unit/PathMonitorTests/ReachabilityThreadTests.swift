import Dispatch
import Foundation
import Glibc
import XCTest

@testable import PathMonitor

/// A prober or path monitor that is let go without `cancel` must not leave its threads polling forever.
/// Threads are counted by name in /proc/self/task, with a bounded wait for them to go.
final class ReachabilityThreadTests: XCTestCase {
    /// Threads of this process whose name (`comm`, at most 15 characters) starts with `prefix`.
    static func threads(named prefix: String) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.filter { task in
            (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?.hasPrefix(prefix) == true
        }.count
    }

    /// Polls until `condition` holds or `timeout` seconds pass; returns whether it held.
    static func eventually(within timeout: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition() {
            if Date() >= deadline { return false }
            usleep(5000)
        }
        return true
    }

    func testAProberLetGoWithoutCancelStopsItsThreadsAndEndsItsStreams() async {
        let before = Self.threads(named: "lc-probe-")
        weak var gone: ReachabilityProber?
        let stream: AsyncStream<ReachabilityUpdate>
        do {
            let settings = ReachabilitySettings(interval: 0.01, timeout: 1)
            let prober = ReachabilityProber(settings: settings, engine: ScriptedEngine([]))
            gone = prober
            stream = prober.updates
            prober.start()
            XCTAssertTrue(Self.eventually(within: 5) { prober.currentFamilies.count == 2 }, "both families ran a round")
            XCTAssertTrue(Self.eventually(within: 5) { Self.threads(named: "lc-probe-") == before + 2 }, "a thread per family: \(before) before, \(Self.threads(named: "lc-probe-")) now")
        }
        XCTAssertTrue(Self.eventually(within: 5) { gone == nil }, "the threads do not keep the prober alive")
        XCTAssertTrue(
            Self.eventually(within: 5) { Self.threads(named: "lc-probe-") == before },
            "\(Self.threads(named: "lc-probe-") - before) probe thread(s) still running")
        // The stream ends: the prober finished its streams as it went (bounded: a stream that never ends
        // fails the test instead of hanging it).
        let ended = expectation(description: "the updates stream ends")
        let reader = Task {
            var count = 0
            for await _ in stream { count += 1 }
            ended.fulfill()
            return count
        }
        await fulfillment(of: [ended], timeout: 5)
        reader.cancel()
        let count = await reader.value
        XCTAssertGreaterThanOrEqual(count, 1)
    }

    func testAProberThatIsCancelledAndLetGoLeavesNoThread() {
        let before = Self.threads(named: "lc-probe-")
        do {
            let prober = ReachabilityProber(settings: ReachabilitySettings(interval: 0.01, timeout: 1, families: [.ipv6]), engine: ScriptedEngine([]))
            prober.start()
            prober.start()  // a restart: the first generation's thread stops too
            XCTAssertTrue(Self.eventually(within: 5) { prober.currentUpdate != nil })
            prober.cancel()
        }
        XCTAssertTrue(Self.eventually(within: 5) { Self.threads(named: "lc-probe-") == before })
    }

    func testAPathMonitorLetGoWithoutCancelStopsItsThread() throws {
        let before = Self.threads(named: "lc-path-monitor")
        weak var gone: PathMonitor?
        do {
            let monitor = PathMonitor()  // the host's own namespace, read only
            gone = monitor
            try monitor.start()
            XCTAssertNotNil(monitor.currentPath)
            XCTAssertTrue(Self.eventually(within: 5) { Self.threads(named: "lc-path-monitor") == before + 1 })
        }
        XCTAssertTrue(Self.eventually(within: 5) { gone == nil }, "the thread does not keep the monitor alive")
        XCTAssertTrue(Self.eventually(within: 5) { Self.threads(named: "lc-path-monitor") == before }, "the monitor's thread still runs")
    }
}

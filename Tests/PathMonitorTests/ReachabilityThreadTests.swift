import Dispatch
import Foundation
import Glibc
import XCTest

@testable import PathMonitor

/// A path monitor that is let go without `cancel` must not leave its thread polling forever.
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

import Foundation
import Glibc
import Sandboxing
import XCTest

/// Timed conditions in the state file: what comes back, when, and who waits, read back as written; a holder
/// is proved by its start time, not its pid alone.
final class TimedChangeStateTests: XCTestCase {
    func testATimedChangeReadsBackAsItWasWritten() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lctimed-\(getpid())-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = SandboxStore(directory: directory)
        var state = SandboxState(name: "timed", cellular: true)
        state.complete = true
        state.generation = 7
        let edge = SandboxState.AppliedConditions(profile: "edge", source: nil, appliedAt: "2026-12-01T13:52:09Z", document: .object([("name", .string("edge"))]))
        state.timedChanges = [
            SandboxState.TimedChange(links: ["wifi", "cellular"], restore: ["wifi": edge], generation: 7, seconds: 30),
            SandboxState.TimedChange(links: [], restore: [:], generation: 3, seconds: 0),
        ]
        try store.save(state)
        XCTAssertEqual(store.record("timed"), .state(state))
        let text = try String(contentsOfFile: store.path(for: "timed"), encoding: .utf8)
        XCTAssertTrue(text.contains("\"timed\": ["), text)
        XCTAssertTrue(text.contains("\"holder\": \(getpid())"), text)
    }

    func testTheDeadlineAndTheHolder() {
        let due = SandboxState.TimedChange(links: ["wifi"], restore: [:], generation: 1, seconds: 0)
        XCTAssertTrue(due.isDue)
        XCTAssertTrue(due.holderIsRunning, "this process holds it")
        let later = SandboxState.TimedChange(links: ["wifi"], restore: [:], generation: 1, seconds: 600)
        XCTAssertFalse(later.isDue)
        XCTAssertTrue(later.endsAt.hasSuffix("Z") && later.endsAt.count == 20, later.endsAt)
        var impostor = later
        impostor.holderStartTime &+= 1  // same pid, another process
        XCTAssertFalse(impostor.holderIsRunning)
        var gone = later
        gone.holder = Int32.max
        XCTAssertFalse(gone.holderIsRunning)
    }
}

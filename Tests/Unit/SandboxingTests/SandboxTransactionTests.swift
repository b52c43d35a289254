import Foundation
import Glibc
import Sandboxing
import Synchronization
import XCTest

/// The sandbox's lock and a command's transaction (no privileges needed: a store in a temporary folder).
final class SandboxTransactionTests: XCTestCase {
    private func makeStore() throws -> SandboxStore {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lctx-\(getpid())-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: directory) }
        return SandboxStore(directory: directory)
    }

    private func upState(_ name: String) -> SandboxState {
        var state = SandboxState(name: name, cellular: false)
        state.complete = true
        return state
    }

    func testAnotherThreadOfTheProcessWaitsForTheLock() throws {
        let store = try makeStore()
        let held = try SandboxLock.acquire("a", store: store, command: "first")
        let released = Atomic<Bool>(false)
        let sawReleased = Atomic<Int>(-1)
        let waited = Atomic<Int>(0)
        let thread = Thread {
            // Not reentry: this thread does not hold the lock, so it waits like another process would.
            let lock = try? SandboxLock.acquire("a", store: store, command: "second", timeout: 30) { _ in waited.add(1, ordering: .relaxed) }
            sawReleased.store(released.load(ordering: .acquiring) ? 1 : 0, ordering: .releasing)
            lock?.release()
        }
        thread.start()
        // Until it waits (or, wrongly, gets the lock at once).
        while waited.load(ordering: .relaxed) == 0 && sawReleased.load(ordering: .acquiring) == -1 { usleep(1_000) }
        released.store(true, ordering: .releasing)
        held.release()
        while sawReleased.load(ordering: .acquiring) == -1 { usleep(1_000) }
        XCTAssertEqual(sawReleased.load(ordering: .acquiring), 1, "the second thread got the lock before the first released it")
    }

    func testTheHoldingThreadReentersAndTheLockIsFreeAfterTheOutermostRelease() throws {
        let store = try makeStore()
        let outer = try SandboxLock.acquire("b", store: store, command: "outer")
        let inner = try SandboxLock.acquire("b", store: store, command: "inner", timeout: 0)
        XCTAssertEqual(SandboxLock.holder(of: "b", store: store)?.command, "outer")
        inner.release()
        XCTAssertNotNil(SandboxLock.holder(of: "b", store: store), "still held by the outer acquisition")
        outer.release()
        XCTAssertNil(SandboxLock.holder(of: "b", store: store))
    }

    /// The holder is written over the last one's line without truncating the file: a shorter command after a
    /// longer one is still read as itself.
    func testAShorterHolderAfterALongerOneIsReadAsItself() throws {
        let store = try makeStore()
        try SandboxLock.acquire("e", store: store, command: "run a-scenario-with-a-long-name --observe ./app").release()
        let lock = try SandboxLock.acquire("e", store: store, command: "down")
        XCTAssertEqual(SandboxLock.holder(of: "e", store: store)?.command, "down")
        XCTAssertEqual(SandboxLock.holder(of: "e", store: store)?.pid, getpid())
        lock.release()
    }

    func testATransactionReadsTheStateOnceAndWritesThroughItself() throws {
        let store = try makeStore()
        try store.save(upState("c"))
        let sandbox = Sandbox(topology: try SandboxTopology(name: "c"), store: store)
        let transaction = try sandbox.transaction(for: "apply edge")
        XCTAssertEqual(SandboxLock.holder(of: "c", store: store)?.command, "apply edge")
        // A change behind its back is not seen: the command works on the state it read.
        var elsewhere = upState("c")
        elsewhere.backend = "netem"
        try store.save(elsewhere)
        XCTAssertNil(try transaction.upState().backend)
        try transaction.update { $0.backend = "userspace" }
        XCTAssertEqual(transaction.state?.backend, "userspace")
        XCTAssertEqual(store.record("c"), .state(try transaction.upState()), "what it saved is on disk")
        transaction.end()
        XCTAssertNil(SandboxLock.holder(of: "c", store: store))
    }

    func testALookTakesNoLockAndCannotWrite() throws {
        let store = try makeStore()
        // The state saved, not another made later: its creation time is stamped to the second.
        let saved = upState("d")
        try store.save(saved)
        let sandbox = Sandbox(topology: try SandboxTopology(name: "d"), store: store)
        let writer = try sandbox.transaction(for: "run tunnel")
        let look = sandbox.look()
        XCTAssertEqual(try look.upState(), saved, "a look reads while another command holds the lock")
        XCTAssertThrowsError(try look.save(upState("d"))) { error in
            XCTAssertTrue("\(error)".contains("only looks"), "\(error)")
        }
        writer.end()
    }

    func testATransactionOnASandboxThatIsNotUpSaysSo() throws {
        let store = try makeStore()
        let sandbox = Sandbox(topology: try SandboxTopology(name: "e"), store: store)
        XCTAssertThrowsError(try sandbox.look().upState()) { error in
            guard case SandboxError.notUp(name: "e") = error else { return XCTFail("\(error)") }
        }
        try "{".write(toFile: store.path(for: "e"), atomically: false, encoding: .utf8)
        XCTAssertThrowsError(try sandbox.look().upState()) { error in
            XCTAssertTrue("\(error)".contains("linkcond down --name e"), "\(error)")
        }
    }
}

import Conditioning
import Foundation
import LinkcondBase
import Sandboxing

/// The timed conditions the API put on (`"for": "30s"`): a thread each that waits for the time to be up, then
/// puts back what was there. The server holds them (the state names its pid), so when it stops they all end
/// at once; killed, the next change of the sandbox after the time is up puts things back.
final class TimedChanges: @unchecked Sendable {
    private let condition = NSCondition()
    private var stopping = false
    private var running = 0

    /// Waits on a thread of its own until `change`'s deadline (or the server stops), then ends it in a
    /// transaction of its own.
    func schedule(_ change: SandboxState.TimedChange, on sandbox: Sandbox, backend: any ConditioningBackend, catalogDirectory: String?) {
        condition.lock()
        running += 1
        condition.unlock()
        let thread = Thread { [self] in
            condition.lock()
            while !stopping, MonotonicClock.nanoseconds() < change.deadline {
                let left = Double(change.deadline &- MonotonicClock.nanoseconds()) / 1e9
                _ = condition.wait(until: Date(timeIntervalSinceNow: min(max(left, 0.001), 1)))
            }
            condition.unlock()
            if let transaction = try? sandbox.transaction(for: "end of a timed apply (api)") {
                _ = try? backend.endTimedChange(change.generation, in: transaction, catalogDirectory: catalogDirectory)
                transaction.end()
            }
            condition.lock()
            running -= 1
            condition.broadcast()
            condition.unlock()
        }
        thread.name = "linkcond.api.timed"
        thread.start()
    }

    /// Ends every timed change now and waits (at most `seconds`) until each has put its conditions back.
    func endAll(waiting seconds: Double) {
        condition.lock()
        stopping = true
        condition.broadcast()
        let deadline = Date(timeIntervalSinceNow: seconds)
        while running > 0, condition.wait(until: deadline) {}
        condition.unlock()
    }
}

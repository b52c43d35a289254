import Foundation
import Glibc
import XCTest

/// The rule that lets a timing check be measured again: only an attempt that failed while the machine stalled
/// is voided. The stall is made for real: the test process is stopped (SIGSTOP) for 300 ms by a child.
final class MachineStallTests: IntegrationTestCase {
    func testAFailedAttemptDuringAStallIsVoidedAndMeasuredAgain() throws {
        var attempts = 0
        var cleaned: [Int] = []
        try measuredAgainIfTheMachineStalled {
            attempts += 1
            let attempt = attempts
            addTeardownBlock { cleaned.append(attempt) }
            guard attempt == 1 else { return }
            let pid = getpid()
            let child = try Process.run(URL(fileURLWithPath: "/bin/sh"), arguments: ["-c", "kill -STOP \(pid); sleep 0.3; kill -CONT \(pid)"])
            child.waitUntilExit()
            XCTFail("the first attempt fails, during a stall")
        }
        XCTAssertEqual(attempts, 2, "the stalled attempt was not made again")
        XCTAssertEqual(cleaned, [1, 2], "each attempt's teardown blocks run when it ends")
    }

    func testAStallIsSeenAndOrdinaryWakeUpsAreNot() throws {
        let watch = MachineStallWatch()
        usleep(50_000)
        let pid = getpid()
        let child = try Process.run(URL(fileURLWithPath: "/bin/sh"), arguments: ["-c", "kill -STOP \(pid); sleep 0.3; kill -CONT \(pid)"])
        child.waitUntilExit()
        usleep(50_000)
        let stalls = watch.stop()
        // About 40 wake-ups of 10 ms; the stop is one stall of about 300 ms, not a run of them.
        XCTAssertTrue(stalls.contains { $0.length >= 250_000_000 }, "\(stalls)")
        XCTAssertLessThan(stalls.count, 4, "\(stalls)")
    }
}

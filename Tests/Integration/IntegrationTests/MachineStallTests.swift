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

/// The second way the machine can fail a timing check: an engine thread kept waiting for a CPU. Made for real:
/// a process with an engine's name and command line (`…/linkcond engine`, here Python under that name) starts a
/// thread `lc-downlink` that spins on CPU 0 beside a busy loop pinned to the same CPU, so the kernel runs each
/// about half the time; another such process has an `lc-uplink` thread that sleeps through the test, on any CPU.
/// (On a CI-loaded machine a stand-in that woke every 10 ms on the contended CPU waited 115 ms within a second,
/// and one that woke every 200 ms there 136 ms: the count is of all waiting, so a thread that asks for a busy
/// CPU often waits often. One that asks once is reported only if kept waiting 100 ms at a stretch, a stall by
/// the watch's first rule too.)
final class EngineStarvationTests: IntegrationTestCase {
    func testAnEngineThreadKeptFromTheCPUIsSeenAndASleepingOneIsNot() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lcit-fake-engine-\(getpid())-\(UniqueName.next())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: directory) }
        let fake = directory.appendingPathComponent("linkcond")
        try FileManager.default.createSymbolicLink(atPath: fake.path, withDestinationPath: "/usr/bin/python3")
        let forwarding = "import ctypes, sys, threading, time\n"
            + "def forward():\n"
            + "    ctypes.CDLL(None).prctl(15, sys.argv[2].encode(), 0, 0, 0)\n"
            + "    end = time.monotonic() + 0.8\n"
            + "    while time.monotonic() < end:\n"
            + "        if sys.argv[3] != 'spin': time.sleep(0.8)\n"
            + "thread = threading.Thread(target=forward)\n"
            + "thread.start()\n"
            + "thread.join()\n"
        func start(_ thread: String, _ mode: String) throws -> Process {
            mode == "spin"
                ? try Process.run(URL(fileURLWithPath: "/usr/bin/taskset"), arguments: ["-c", "0", fake.path, "-c", forwarding, "engine", thread, mode])
                : try Process.run(fake, arguments: ["-c", forwarding, "engine", thread, mode])
        }
        let starved = try start("lc-downlink", "spin")
        let idle = try start("lc-uplink", "sleep")
        usleep(200_000)  // both have exec'd: the watch reads each command line once
        let watch = MachineStallWatch()
        let rival = try Process.run(URL(fileURLWithPath: "/usr/bin/taskset"), arguments: ["-c", "0", "timeout", "0.7", "sh", "-c", "while :; do :; done"])
        for process in [starved, idle, rival] { process.waitUntilExit() }
        let stalls = watch.stop()
        XCTAssertEqual([starved, idle].map(\.terminationStatus), [0, 0], "the stand-in engines did not run to their end")
        XCTAssertTrue(stalls.contains { $0.starvedThread == "lc-downlink of pid \(starved.processIdentifier)" }, "\(stalls)")
        XCTAssertFalse(stalls.contains { $0.starvedThread == "lc-uplink of pid \(idle.processIdentifier)" }, "\(stalls)")
    }
}

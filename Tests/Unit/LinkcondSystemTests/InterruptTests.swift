import Foundation
import LinkcondSystem
import Synchronization
import XCTest

/// How many times the test's SIGUSR1 handler ran (an atomic: safe to touch from a signal handler).
let handledSignals = Atomic<Int>(0)

final class InterruptTests: XCTestCase {
    func testRetryOnInterruptCallsAgainUntilAnotherOutcome() {
        var calls = 0
        let value = try? retryOnInterrupt { () -> Int32 in
            calls += 1
            if calls < 3 {
                Errno.current = .interrupted
                return -1
            }
            return 7
        }
        XCTAssertEqual(value, 7)
        XCTAssertEqual(calls, 3)

        calls = 0
        XCTAssertThrowsError(try retryOnInterrupt { () -> Int in
            calls += 1
            Errno.current = calls == 1 ? .interrupted : .wouldBlock
            return -1
        }) { XCTAssertEqual($0 as? Errno, .wouldBlock) }
        XCTAssertEqual(calls, 2)
    }

    /// A read blocked in the kernel when a signal arrives whose handler was installed without `SA_RESTART`
    /// fails with EINTR; the typed read goes back to reading and returns what is written afterwards.
    func testReadInterruptedBySignalIsRetried() throws {
        let outcome = try interruptedRead(retryOnInterrupt: true)
        XCTAssertEqual(outcome.handled, 1, "the handler ran once, while the read was blocked")
        XCTAssertEqual(try outcome.result.get(), [0x2a], "the read went on after the signal and got the byte written later")
    }

    /// The control: the same read, not retried, fails with EINTR — so the signal did interrupt it.
    func testReadInterruptedBySignalFailsWithEINTRWhenNotRetried() throws {
        let outcome = try interruptedRead(retryOnInterrupt: false)
        XCTAssertEqual(outcome.handled, 1)
        XCTAssertThrowsError(try outcome.result.get()) { error in
            XCTAssertEqual((error as? SystemError)?.errno, .interrupted)
            XCTAssertEqual("\(error)", "read: Interrupted system call")
        }
    }

    /// Starts a thread that reads one byte from a pipe, waits until the kernel has it sleeping in that read,
    /// sends it SIGUSR1 (handler without SA_RESTART), waits for the handler to have run, then writes a byte.
    private func interruptedRead(retryOnInterrupt: Bool) throws -> (handled: Int, result: Result<[UInt8], SystemError>) {
        let (readEnd, writeEnd) = try FileDescriptor.pipe()
        defer {
            try? readEnd.close()
            try? writeEnd.close()
        }
        handledSignals.store(0, ordering: .sequentiallyConsistent)
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in handledSignals.add(1, ordering: .sequentiallyConsistent) }
        action.sa_flags = 0  // no SA_RESTART: a blocked read returns EINTR
        sigemptyset(&action.sa_mask)
        var previous = sigaction()
        XCTAssertEqual(sigaction(SIGUSR1, &action, &previous), 0)
        defer { sigaction(SIGUSR1, &previous, nil) }

        let reader = ReaderThread(readEnd: readEnd, retryOnInterrupt: retryOnInterrupt)
        reader.start()
        let (thread, taskID) = reader.waitUntilReading()
        try waitUntilBlockedInRead(taskID, readEnd)
        XCTAssertEqual(pthread_kill(thread, SIGUSR1), 0)
        try waitFor("the signal handler to run") { handledSignals.load(ordering: .sequentiallyConsistent) == 1 }
        if retryOnInterrupt { try waitUntilBlockedInRead(taskID, readEnd) }  // back in read
        XCTAssertEqual(try writeEnd.writeAll([0x2a]), 1)
        let result = reader.waitForResult()
        return (handledSignals.load(ordering: .sequentiallyConsistent), result)
    }

    /// Waits until thread `taskID` of this process sleeps in `read(fd)`: `/proc/self/task/TID/syscall`
    /// names the system call a blocked thread is in, then its arguments, the descriptor first.
    private func waitUntilBlockedInRead(_ taskID: String, _ fd: FileDescriptor) throws {
        #if arch(x86_64)
        let read = "0"
        #else
        let read = "63"  // the generic table (arm64, riscv64)
        #endif
        try waitFor("thread \(taskID) to block in read") {
            guard let text = try? String(contentsOfFile: "/proc/self/task/\(taskID)/syscall", encoding: .utf8) else { return false }
            let fields = text.split(separator: " ")
            return fields.count > 1 && fields[0] == read && Int32(fields[1].dropFirst(2), radix: 16) == fd.rawValue
        }
    }

    /// Polls `condition` every millisecond; a safety net of 30 s keeps a broken test from hanging the suite.
    private func waitFor(_ what: String, _ condition: () -> Bool) throws {
        for _ in 0..<30_000 {
            if condition() { return }
            usleep(1000)
        }
        throw XCTSkip("gave up waiting for \(what)")
    }
}

/// A thread that publishes its pthread and kernel task id, then reads one byte.
private final class ReaderThread: @unchecked Sendable {
    private let readEnd: FileDescriptor
    private let retryOnInterrupt: Bool
    private let started = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private var thread = pthread_t()
    private var taskID = ""
    private var result: Result<[UInt8], SystemError> = .success([])

    init(readEnd: FileDescriptor, retryOnInterrupt: Bool) {
        self.readEnd = readEnd
        self.retryOnInterrupt = retryOnInterrupt
    }

    func start() {
        Thread {
            self.thread = pthread_self()
            // /proc/thread-self links to PID/task/TID.
            let link = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? ""
            self.taskID = String(link.split(separator: "/").last ?? "")
            self.started.signal()
            var byte: [UInt8] = [0]
            self.result = Result { () throws(SystemError) in
                let count = try byte.withUnsafeMutableBytes { raw in
                    Result { () throws(SystemError) in try self.readEnd.read(into: raw, retryOnInterrupt: self.retryOnInterrupt) }
                }.get()
                return Array(byte.prefix(count))
            }
            self.finished.signal()
        }.start()
    }

    /// The thread and its task id, once it is about to read (nothing between that and the read blocks).
    func waitUntilReading() -> (pthread_t, String) {
        started.wait()
        return (thread, taskID)
    }

    func waitForResult() -> Result<[UInt8], SystemError> {
        finished.wait()
        return result
    }
}

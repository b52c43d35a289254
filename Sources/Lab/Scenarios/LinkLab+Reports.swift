import Foundation
import Timeline

extension LinkLab {
    /// Marks the lab as failed with `message`: it is recorded on the timeline and in the reports (a red box
    /// in `timeline.html`, an error in `junit.xml`), and a temporary report folder is kept at close. For a
    /// failure the lab cannot see itself, such as an `XCTAssert` that does not throw.
    public func recordFailure(_ message: String) {
        let failure = RunError(step: nil, message: message, t: recorder.now())
        lock.lock()
        failures.append(failure)
        lock.unlock()
        _ = try? recorder.record(.scenario, TimelineKind.error, "the lab failed: \(message)", state: "error", details: ["message": .string(message)])
    }

    /// ``recordFailure(_:)-(String)`` with an error's description.
    public func recordFailure(_ error: any Error) {
        recordFailure("\(error)")
    }

    /// True once ``recordFailure(_:)-(String)`` was called (by the lab, when its body threw).
    public var hasFailed: Bool {
        lock.lock()
        defer { lock.unlock() }
        return !failures.isEmpty
    }

    /// Writes the reports of the lab's run into ``reportDirectory``; removes a temporary folder again when
    /// the lab did not fail, and says on stderr where the reports of a failed lab are.
    func finishReports() {
        lock.lock()
        let failures = self.failures
        let command = observedCommand
        lock.unlock()
        var written = false
        if let events = try? events() {
            let metadata = RunMetadata(
                name: options.name, description: "A LinkLab run in sandbox '\(sandbox.topology.name)'.", sandbox: sandbox.topology.name,
                startedAt: startedAt, duration: recorder.now(), steps: [], observeCommand: command)
            written = (try? ReportWriter.write(RunReport(metadata: metadata, events: events, expectations: [], errors: failures), to: reportDirectory)) != nil
        }
        if temporaryReports && failures.isEmpty {
            try? FileManager.default.removeItem(atPath: reportDirectory)
        } else if !failures.isEmpty {
            let what = written ? "\(reportDirectory)/timeline.html (and junit.xml, timeline.json, summary.md, events.jsonl)" : "\(reportDirectory)/events.jsonl"
            let message = failures[0].message
            // A wait that ran out has said where the reports are already.
            let line = message.contains(reportDirectory) ? "the lab failed: \(message)" : "the lab failed (\(message)); its reports: \(what)"
            FileHandle.standardError.write(Data("linkcond: \(line)\n".utf8))
        }
    }
}

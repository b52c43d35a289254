import Foundation
import JSONDocument
import Glibc
import LinkcondSystem
import NetNamespace
import Timeline

/// The user's own program, run in the client namespace, whose output lines become app-lane events.
final class ObservedProcess: @unchecked Sendable {
    let process: SpawnedProcess
    private let readFD: FileDescriptor
    private let reader: Thread

    init(command: String, namespace: NamedNamespace, recorder: TimelineRecorder) throws {
        let (readEnd, writeEnd): (FileDescriptor, FileDescriptor)
        do {
            (readEnd, writeEnd) = try FileDescriptor.pipe()
        } catch {
            throw NamespaceError.system(operation: "create a pipe for --observe", errno: error.errno.rawValue)
        }
        do {
            // A process group and a PID namespace of its own: `sh -c` starts the app as a child, and whatever the
            // app starts in turn — in the background, with setsid, as a daemon — lives in that namespace and
            // ends with the run (the namespace's first process dies with the shell's supervisor).
            process = try namespace.spawn(
                "/bin/sh", arguments: ["-c", command], standardOutput: writeEnd.rawValue, grouping: .newGroup, ownPIDNamespace: true)
        } catch {
            try? readEnd.close()
            try? writeEnd.close()
            throw error
        }
        try? writeEnd.close()
        readFD = readEnd
        let fd = readEnd
        reader = Thread {
            Self.readLines(fd: fd, recorder: recorder)
        }
        reader.start()
    }

    private static func readLines(fd: FileDescriptor, recorder: TimelineRecorder) {
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            guard let count = try? buffer.withUnsafeMutableBytes({ try fd.read(into: $0) }), count > 0 else { break }
            pending += buffer[0..<count]
            while let newline = pending.firstIndex(of: 0x0a) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                record(line: line, recorder: recorder)
            }
        }
        if !pending.isEmpty { record(line: String(decoding: pending, as: UTF8.self), recorder: recorder) }
        try? fd.close()
    }

    /// A JSON object's scalar fields become details and its `state` the lane's state; other lines are
    /// kept as text.
    static func record(line: String, recorder: TimelineRecorder) {
        let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { return }
        var details: [String: TimelineValue] = [:]
        var state: String?
        if let parsed = try? JSONParser.parse(trimmed), case let .object(members) = parsed.value {
            for (key, value) in members {
                switch value {
                case let .bool(flag): details[key] = .bool(flag)
                case let .number(number): details[key] = .number(number.value)
                case let .string(text): details[key] = .string(text)
                case .null: details[key] = .null
                default: details[key] = .string(value.description)
                }
            }
            if case let .string(text)? = members.first(where: { $0.key == "state" })?.value { state = text }
        } else {
            details["text"] = .string(trimmed)
        }
        let summary = state.map { "app: \($0)" } ?? "app: \(trimmed.prefix(120))"
        _ = try? recorder.record(.app, TimelineKind.appLine, summary, state: state, details: details)
    }

    /// Ends the whole process group (TERM, then KILL after 1 s) and reaps the shell.
    func stop() {
        process.terminate(grace: 1)
    }
}

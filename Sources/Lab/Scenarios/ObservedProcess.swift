import Foundation
import JSONDocument
import Glibc
import NetNamespace
import Timeline

/// The user's own program, run in the client namespace, whose output lines become app-lane events.
final class ObservedProcess: @unchecked Sendable {
    let process: SpawnedProcess
    private let readFD: Int32
    private let reader: Thread

    init(command: String, namespace: NamedNamespace, recorder: TimelineRecorder) throws {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw NamespaceError.system(operation: "create a pipe for --observe", errno: errno) }
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        do {
            // A process group of its own: `sh -c` starts the app as a child, and ending the run must end both.
            process = try namespace.spawn("/bin/sh", arguments: ["-c", command], standardOutput: fds[1], grouping: .newGroup)
        } catch {
            close(fds[0])
            close(fds[1])
            throw error
        }
        close(fds[1])
        readFD = fds[0]
        let fd = fds[0]
        reader = Thread {
            Self.readLines(fd: fd, recorder: recorder)
        }
        reader.start()
    }

    private static func readLines(fd: Int32, recorder: TimelineRecorder) {
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            pending += buffer[0..<count]
            while let newline = pending.firstIndex(of: 0x0a) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                record(line: line, recorder: recorder)
            }
        }
        if !pending.isEmpty { record(line: String(decoding: pending, as: UTF8.self), recorder: recorder) }
        close(fd)
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

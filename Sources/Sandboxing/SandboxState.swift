import Foundation
import Glibc

/// What `linkcond up` made, recorded so that `linkcond down` (or a cleanup after a crash) removes exactly
/// that and nothing else.
public struct SandboxState: Codable, Sendable, Equatable {
    /// A process linkcond started (the sandbox's server), identified by pid *and* start time so a reused
    /// pid is never mistaken for it.
    public struct RecordedProcess: Codable, Sendable, Equatable {
        public var pid: Int32
        /// Field 22 of `/proc/PID/stat` (clock ticks since boot).
        public var startTime: UInt64
        /// Where its output goes.
        public var logPath: String

        /// True when the process still runs and is the one that was recorded.
        public var isRunning: Bool {
            SandboxState.processStartTime(pid) == startTime
        }

        /// True when the recorded process is a child of this process that `waitpid` has not collected yet:
        /// running, or ended (a zombie) and waiting to be reaped.
        public var isUnreapedChild: Bool {
            guard let stat = SandboxState.processStat(pid) else { return false }
            return stat.parent == getpid() && stat.startTime == startTime
        }
    }

    /// The profile currently on the wire, as `linkcond apply` recorded it.
    public struct AppliedConditions: Codable, Sendable, Equatable {
        /// The profile's name.
        public var profile: String
        /// The file it was read from, nil for a profile made in code.
        public var source: String?
        /// ISO 8601 time of the apply.
        public var appliedAt: String

        /// A record of `profile` (read from `source`) applied now.
        public init(profile: String, source: String?, appliedAt: String = ISO8601DateFormatter().string(from: Date())) {
            self.profile = profile
            self.source = source
            self.appliedAt = appliedAt
        }
    }

    public var version = 1
    public var name: String
    public var cellular: Bool
    /// Namespaces created so far, in creation order.
    public var namespaces: [String] = []
    /// The server process, once started.
    public var server: RecordedProcess?
    /// True once `up` finished; false while it runs (or when it died half-way).
    public var complete = false
    /// ISO 8601 time of creation.
    public var createdAt: String
    /// The profile applied last, nil when the wire is clear.
    public var conditions: AppliedConditions?

    public init(name: String, cellular: Bool) {
        self.name = name
        self.cellular = cellular
        createdAt = ISO8601DateFormatter().string(from: Date())
    }

    /// Start time of `pid` from `/proc/PID/stat`, or nil when there is no such process.
    public static func processStartTime(_ pid: Int32) -> UInt64? {
        // A zombie (Z) or dead (X) process is not running, even though /proc still lists it.
        guard let stat = processStat(pid), stat.state != "Z", stat.state != "X" else { return nil }
        return stat.startTime
    }

    /// State, parent pid and start time of `pid` from `/proc/PID/stat`, zombies included.
    static func processStat(_ pid: Int32) -> (state: Substring, parent: Int32, startTime: UInt64)? {
        guard pid > 0, let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        // Fields after "comm)" start at field 3 (state); ppid is field 4, starttime field 22.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 19, let parent = Int32(fields[1]), let startTime = UInt64(fields[19]) else { return nil }
        return (fields[0], parent, startTime)
    }
}

/// The directory of state files: one `NAME.json` per sandbox, written atomically.
public struct SandboxStore: Sendable {
    /// Where state files live.
    public let directory: String

    /// The default store, `/run/linkcond` (tmpfs: state goes away with a reboot, as namespaces do).
    public static let standard = SandboxStore(directory: "/run/linkcond")

    public init(directory: String) {
        self.directory = directory
    }

    /// `DIRECTORY/NAME.json`.
    public func path(for name: String) -> String { "\(directory)/\(name).json" }
    /// `DIRECTORY/NAME.serve.log`.
    public func logPath(for name: String) -> String { "\(directory)/\(name).serve.log" }

    /// The recorded state of sandbox `name`, or nil when there is none.
    public func load(_ name: String) throws(SandboxError) -> SandboxState? {
        let path = path(for: name)
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        do {
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            return try JSONDecoder().decode(SandboxState.self, from: data)
        } catch {
            throw .state(path: path, detail: "cannot be read (\(error.localizedDescription)); remove it by hand if it is stale")
        }
    }

    /// Writes the state atomically (a temporary file renamed over the old one).
    public func save(_ state: SandboxState) throws(SandboxError) {
        let path = path(for: state.name)
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(state).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw .state(path: path, detail: "cannot be written (\(error.localizedDescription))")
        }
    }

    /// Removes the state file and the server log of `name`.
    public func remove(_ name: String) {
        unlink(path(for: name))
        unlink(logPath(for: name))
    }

    /// The names of every recorded sandbox, sorted.
    public func names() -> [String] {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return files.filter { $0.hasSuffix(".json") }.map { String($0.dropLast(5)) }.sorted()
    }
}

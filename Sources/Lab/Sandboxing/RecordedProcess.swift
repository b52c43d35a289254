import Glibc
import LinkcondSystem

/// A process linkcond started for a sandbox (its server, the userspace engine), and the proof that a
/// running process is that one.
///
/// A pid alone proves nothing: it is reused, and a state file can be edited. A process counts as this one
/// only when all three agree: its start time (field 22 of `/proc/PID/stat`), its executable
/// (`/proc/PID/exe`), and the marker linkcond put in its environment (`LINKCOND_SANDBOX`, `LINKCOND_ROLE`),
/// which names the store and the sandbox. Nothing else is ever signalled.
public struct RecordedProcess: Codable, Sendable, Equatable {
    /// What the process does for the sandbox.
    public enum Role: String, Codable, Sendable, CaseIterable {
        /// `linkcond serve`: HTTP probe endpoint, echo, DNS.
        case server
        /// `linkcond engine`: the userspace impairment engine in the wire namespace.
        case engine

        /// The word in the process's log file name: `NAME.serve.log`, `NAME.engine.log`.
        public var fileTag: String { self == .server ? "serve" : "engine" }
    }

    /// What it does.
    public var role: Role
    /// Its process id.
    public var pid: Int32
    /// Field 22 of `/proc/PID/stat` (clock ticks since boot).
    public var startTime: UInt64
    /// The executable it runs, as `/proc/PID/exe` showed it when it started.
    public var executable: String
    /// The value of `LINKCOND_SANDBOX` in its environment (``marker(store:sandbox:)``).
    public var marker: String

    /// A record of a process that was just started.
    public init(role: Role, pid: Int32, startTime: UInt64, executable: String, marker: String) {
        self.role = role
        self.pid = pid
        self.startTime = startTime
        self.executable = executable
        self.marker = marker
    }

    /// The environment variable that marks a sandbox's processes.
    public static let markerVariable = "LINKCOND_SANDBOX"
    /// The environment variable that names the process's role.
    public static let roleVariable = "LINKCOND_ROLE"

    /// `STORE_DIRECTORY/NAME`: unique per sandbox, so a test's sandbox and the user's of the same name never
    /// claim each other's processes.
    public static func marker(store: SandboxStore, sandbox: String) -> String { "\(store.directory)/\(sandbox)" }

    /// The environment entries a process of `role` is started with.
    public static func environment(marker: String, role: Role) -> [String: String] {
        [markerVariable: marker, roleVariable: role.rawValue]
    }

    /// True when the recorded process still runs and is provably the one recorded (start time,
    /// executable and marker all match). A zombie is not running.
    public var isRunning: Bool {
        guard let stat = ProcessInspector.stat(pid), stat.state != "Z", stat.state != "X" else { return false }
        return stat.startTime == startTime && ProcessInspector.executable(pid) == executable
            && ProcessInspector.environment(pid, contains: "\(Self.markerVariable)=\(marker)")
    }

    /// True when the recorded process runs but is stopped (`SIGSTOP`, a terminal's job control, a
    /// debugger): it exists, and does nothing.
    public var isStopped: Bool {
        guard isRunning, let stat = ProcessInspector.stat(pid) else { return false }
        return stat.state == "T" || stat.state == "t"
    }

    /// True when the recorded process is a child of this process that `waitpid` has not collected yet:
    /// running, or ended (a zombie) and waiting to be reaped.
    public var isUnreapedChild: Bool {
        guard let stat = ProcessInspector.stat(pid) else { return false }
        return stat.parent == getpid() && stat.startTime == startTime
    }

    /// Every running process that carries `marker` and runs `executableName` (a file name, e.g. `linkcond`),
    /// found by scanning `/proc`: how a cleanup finds a sandbox's processes when the state file is gone or
    /// was written before the process was recorded.
    public static func discover(marker: String, role: Role? = nil) -> [RecordedProcess] {
        guard let directory = opendir("/proc") else { return [] }
        defer { closedir(directory) }
        var found: [RecordedProcess] = []
        let markerEntry = "\(markerVariable)=\(marker)"
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let pid = Int32(name), pid != getpid() else { continue }
            let environment = ProcessInspector.environment(pid)
            guard environment.contains(markerEntry) else { continue }
            let roleName = environment.first { $0.hasPrefix("\(roleVariable)=") }.map { String($0.dropFirst(roleVariable.count + 1)) }
            guard let processRole = roleName.flatMap(Role.init(rawValue:)), role == nil || role == processRole,
                let stat = ProcessInspector.stat(pid), stat.state != "Z", stat.state != "X",
                let executable = ProcessInspector.executable(pid)
            else { continue }
            found.append(RecordedProcess(role: processRole, pid: pid, startTime: stat.startTime, executable: executable, marker: marker))
        }
        return found.sorted { $0.pid < $1.pid }
    }

    /// Ends the process if it is still provably this one: SIGTERM to its process group (it leads one:
    /// linkcond starts its processes in a session of their own), SIGKILL after `grace` seconds, and a wait
    /// for it when it is this process's child. Returns true when it was running.
    @discardableResult
    public func terminate(grace: Double = 2) -> Bool {
        guard isRunning else {
            collectIfChild()
            return false
        }
        let leadsGroup = ProcessInspector.stat(pid)?.group == pid
        kill(leadsGroup ? -pid : pid, SIGTERM)
        // A stopped process takes SIGTERM only once it runs again: let it, so it ends at once.
        if isStopped { kill(leadsGroup ? -pid : pid, SIGCONT) }
        var waited = 0.0
        while isRunning && waited < grace {
            _ = try? waitForChild(pid, options: WNOHANG)
            usleep(20_000)
            waited += 0.02
        }
        if isRunning { kill(leadsGroup ? -pid : pid, SIGKILL) }
        collectIfChild()
        return true
    }

    /// Collects (`waitpid`) the process when it is this process's child (a library user's sandbox, the tests). This
    /// waits: a multithreaded process reads "Z" in /proc as soon as its main thread has exited, while waitpid
    /// cannot collect it until its other threads have exited too.
    public func collectIfChild() {
        guard isUnreapedChild else { return }
        _ = try? waitForChild(pid)
    }
}

/// Reads what `/proc` says about a process.
public enum ProcessInspector {
    /// Fields of `/proc/PID/stat`.
    public struct Stat: Sendable, Equatable {
        /// `R`, `S`, `Z`…
        public var state: Substring
        /// The parent's pid.
        public var parent: Int32
        /// The process group.
        public var group: Int32
        /// Clock ticks since boot at which it started.
        public var startTime: UInt64
    }

    /// State, parent, group and start time of `pid`, zombies included; nil when there is no such process.
    public static func stat(_ pid: Int32) -> Stat? {
        // Read as bytes: the file is ASCII after the command name, and splitting a String by Character
        // costs more than the rest of a health check's process checks together.
        guard pid > 0, let bytes = readBytes("/proc/\(pid)/stat"), let close = bytes.lastIndex(of: UInt8(ascii: ")")) else { return nil }
        // Fields after "comm)" start at field 3 (state); ppid is field 4, pgrp 5, starttime 22.
        let fields = bytes[(close + 1)...].split(separator: UInt8(ascii: " "))
        func text(_ index: Int) -> String { String(decoding: fields[index], as: UTF8.self) }
        guard fields.count > 19, let parent = Int32(text(1)), let group = Int32(text(2)), let startTime = UInt64(text(19)) else { return nil }
        return Stat(state: Substring(text(0)), parent: parent, group: group, startTime: startTime)
    }

    /// Start time of `pid` when it runs (not a zombie), else nil.
    public static func startTime(_ pid: Int32) -> UInt64? {
        guard let stat = stat(pid), stat.state != "Z", stat.state != "X" else { return nil }
        return stat.startTime
    }

    /// The executable `pid` runs (`/proc/PID/exe`, without the " (deleted)" the kernel adds after the file
    /// was replaced, as a rebuild does).
    public static func executable(_ pid: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/\(pid)/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        let path = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return path.hasSuffix(" (deleted)") ? String(path.dropLast(10)) : path
    }

    /// The environment `pid` was started with (`/proc/PID/environ`); empty when it cannot be read.
    public static func environment(_ pid: Int32) -> [String] {
        guard let bytes = readBytes("/proc/\(pid)/environ") else { return [] }
        return bytes.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
    }

    /// True when `entry` (`NAME=VALUE`) is one of the entries of `pid`'s environment, compared as bytes.
    public static func environment(_ pid: Int32, contains entry: String) -> Bool {
        guard let bytes = readBytes("/proc/\(pid)/environ") else { return false }
        let wanted = Array(entry.utf8)
        return bytes.split(separator: 0).contains { $0.elementsEqual(wanted) }
    }

    /// The first MiB (and a page) of the file at `path`; nil when it cannot be read.
    private static func readBytes(_ path: String) -> [UInt8]? {
        guard let file = try? FileDescriptor.open(path, .readOnly) else { return nil }
        return file.closeAfter { try? file.readToEnd(maximumCount: (1 << 20) + 4096) }
    }
}

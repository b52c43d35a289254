import CSpawn
import Glibc
import LinkcondSystem

/// Where a spawned process stands among process groups and sessions.
public enum ProcessGrouping: Sendable {
    /// In the caller's process group and session: a foreground command (`linkcond exec`).
    case inherit
    /// A process group of its own (pgid = pid), so ``SpawnedProcess/terminate(grace:)`` ends it together
    /// with every process it started: an observed app started through `sh -c`.
    case newGroup
    /// A session of its own (`setsid`), detached from the terminal, and with it a group of its own: daemons
    /// such as the sandbox's server and the engine.
    case newSession
}

/// A process started inside a namespace.
public struct SpawnedProcess: Sendable {
    /// The child's process id.
    public let pid: pid_t
    /// True when the child leads a process group of its own (``ProcessGrouping/newGroup`` or
    /// ``ProcessGrouping/newSession``).
    public let leadsGroup: Bool

    /// A process this process started.
    public init(pid: pid_t, leadsGroup: Bool) {
        self.pid = pid
        self.leadsGroup = leadsGroup
    }

    /// Waits for the process to end and returns its exit code; a process killed by signal N gives
    /// 128 + N, as shells report it.
    public func wait() throws(NamespaceError) -> Int32 {
        do {
            return Self.exitCode(try waitForChild(pid).status)
        } catch {
            throw .system(operation: error.operation, errno: error.errno.rawValue)
        }
    }

    /// Sends `signal` to the process, and to its whole group when it leads one.
    public func send(signal: Int32) {
        kill(leadsGroup ? -pid : pid, signal)
    }

    /// Ends the process (and its group, when it leads one): SIGTERM, then SIGKILL when it has not ended
    /// after `grace` seconds; then reaps it. Returns its exit code as ``wait()`` does.
    @discardableResult
    public func terminate(grace: Double = 2) -> Int32 {
        send(signal: SIGTERM)
        let deadline = grace * 1000
        var waited = 0.0
        while waited < deadline {
            guard let result = try? waitForChild(pid, options: WNOHANG) else { return -1 }
            if result.pid == pid {
                // The leader is gone; its group may still have members (an app started through `sh -c`).
                if leadsGroup { kill(-pid, SIGKILL) }
                return Self.exitCode(result.status)
            }
            usleep(20_000)
            waited += 20
        }
        send(signal: SIGKILL)
        return Self.exitCode((try? waitForChild(pid))?.status ?? 0)
    }

    static func exitCode(_ status: Int32) -> Int32 {
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }
}

extension NamedNamespace {
    /// Starts a program inside the namespace, as `ip netns exec NAME PROGRAM ARGS...` does: the child
    /// joins the network namespace, gets a private mount namespace with `/sys` remounted for the
    /// namespace and every file of `/etc/netns/NAME/` bind-mounted over its `/etc/` twin (so
    /// `/etc/netns/NAME/resolv.conf` is its `/etc/resolv.conf`), then executes the program.
    ///
    /// - Parameters:
    ///   - program: a path, or a name looked up in `PATH`.
    ///   - arguments: the arguments after the program name.
    ///   - environment: the child's environment; nil passes this process's own.
    ///   - standardInput/standardOutput/standardError: descriptors for the child; nil inherits.
    ///   - grouping: the child's process group and session.
    ///
    /// The child gets descriptors 0, 1 and 2 only: every other descriptor of this process is closed at
    /// `execve`, so a spawned process never keeps the caller's sockets (or a namespace) alive.
    public func spawn(
        _ program: String, arguments: [String] = [], environment: [String: String]? = nil,
        standardInput: Int32? = nil, standardOutput: Int32? = nil, standardError: Int32? = nil,
        grouping: ProcessGrouping = .inherit, ownPIDNamespace: Bool = false
    ) throws(NamespaceError) -> SpawnedProcess {
        let executable = try Self.resolveExecutable(program, environment: environment)
        var binds: [(source: String, target: String)] = []
        if let directory = opendir(etcPath) {
            while let entry = readdir(directory) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                }
                // Only files that exist in /etc can be mounted over; iproute2 skips the others too.
                if name != ".", name != "..", access("/etc/\(name)", F_OK) == 0 {
                    binds.append(("\(etcPath)/\(name)", "/etc/\(name)"))
                }
            }
            closedir(directory)
        }
        let environmentLines = environment.map { $0.map { "\($0.key)=\($0.value)" }.sorted() } ?? Self.currentEnvironment()

        let cArgv = CStringArray([program] + arguments)
        let cEnvironment = CStringArray(environmentLines)
        let sources = CStringArray(binds.map(\.source))
        let targets = CStringArray(binds.map(\.target))
        var pid: pid_t = 0
        var step: Int32 = 0
        let code: Int32 = path.withCString { netnsPath in
            name.withCString { sysfsName in
                executable.withCString { executablePath in
                    var request = lc_spawn_request()
                    request.netns_path = netnsPath
                    request.sysfs_name = sysfsName
                    request.bind_sources = sources.constPointer
                    request.bind_targets = targets.constPointer
                    request.bind_count = Int32(binds.count)
                    request.executable = executablePath
                    request.argv = UnsafePointer(cArgv.pointer)
                    request.envp = UnsafePointer(cEnvironment.pointer)
                    request.stdin_fd = standardInput ?? -1
                    request.stdout_fd = standardOutput ?? -1
                    request.stderr_fd = standardError ?? -1
                    request.new_session = grouping == .newSession ? 1 : 0
                    request.new_process_group = grouping == .newGroup ? 1 : 0
                    request.working_directory = nil
                    request.own_pid_namespace = ownPIDNamespace ? 1 : 0
                    return lc_spawn(&request, &pid, &step)
                }
            }
        }
        if code != 0 {
            if UInt32(step) == LC_SPAWN_EXEC.rawValue { throw .cannotExecute(program: program, errno: code) }
            throw .system(operation: "run \(program) in \(name) (\(Self.describe(step: step)))", errno: code)
        }
        return SpawnedProcess(pid: pid, leadsGroup: grouping != .inherit)
    }

    private static func describe(step: Int32) -> String {
        switch UInt32(step) {
        case LC_SPAWN_FORK.rawValue: "fork"
        case LC_SPAWN_OPEN_NETNS.rawValue: "open the namespace"
        case LC_SPAWN_SETNS.rawValue: "join the namespace"
        case LC_SPAWN_UNSHARE_MOUNTS.rawValue: "make a private mount namespace"
        case LC_SPAWN_MAKE_SLAVE.rawValue: "make / a slave mount"
        case LC_SPAWN_BIND_ETC.rawValue: "bind-mount /etc/netns files"
        case LC_SPAWN_STDIO.rawValue: "set up standard input/output"
        case LC_SPAWN_SETSID.rawValue: "start a new session"
        case LC_SPAWN_CHDIR.rawValue: "change directory"
        case LC_SPAWN_PROCESS_GROUP.rawValue: "start a process group"
        case LC_SPAWN_CLOSE_FDS.rawValue: "close inherited descriptors"
        case LC_SPAWN_PID_NAMESPACE.rawValue: "make a PID namespace of its own"
        default: "execute"
        }
    }

    static func currentEnvironment() -> [String] {
        var lines: [String] = []
        var cursor = environ
        while let entry = cursor.pointee {
            lines.append(String(cString: entry))
            cursor += 1
        }
        return lines
    }

    /// The absolute path of `program`: itself when it contains a slash, else the first executable match
    /// in `PATH` (from `environment`, or this process's).
    static func resolveExecutable(_ program: String, environment: [String: String]?) throws(NamespaceError) -> String {
        if program.contains("/") {
            guard access(program, X_OK) == 0 else { throw .executableNotFound(program) }
            return program
        }
        let searchPath = environment?["PATH"] ?? getenv("PATH").map { String(cString: $0) }
            ?? "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        for directory in searchPath.split(separator: ":") {
            let candidate = "\(directory)/\(program)"
            var info = stat()
            if access(candidate, X_OK) == 0, stat(candidate, &info) == 0, info.st_mode & S_IFMT == S_IFREG {
                return candidate
            }
        }
        throw .executableNotFound(program)
    }
}

/// A NULL-terminated array of C strings that lives as long as the object.
final class CStringArray {
    let pointer: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>
    private let count: Int

    init(_ strings: [String]) {
        count = strings.count
        pointer = .allocate(capacity: strings.count + 1)
        for (index, string) in strings.enumerated() {
            pointer[index] = strdup(string)
        }
        pointer[strings.count] = nil
    }

    var constPointer: UnsafePointer<UnsafePointer<CChar>?> {
        UnsafeRawPointer(pointer).assumingMemoryBound(to: UnsafePointer<CChar>?.self)
    }

    deinit {
        for index in 0..<count { free(pointer[index]) }
        pointer.deallocate()
    }
}

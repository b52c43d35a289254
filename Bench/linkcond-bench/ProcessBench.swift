// The whole-process rows of linkcond-bench: `linkcond apply` from exec to exit against the processes a peer
// tool spawns for an equivalent change, and start-up on its own. Without netem (this host) the change is
// compared with the two `tc -n … qdisc replace … tbf` processes that change a qdisc this kernel has, one per
// namespace; linkcond's apply goes to the userspace engine of a sandbox of its own (LINKCOND_STORE of its
// own, removed at the end). Runs are interleaved, the order alternating, and every wait is bounded.
import Foundation
import Glibc
import LinkcondSystem
import Sandboxing
import NetNamespace
import Synchronization

/// A child process's wall time and CPU time (user + system, from `wait4`), in microseconds.
struct ProcessTiming {
    var wall: Double
    var cpu: Double
}

enum ProcessRunner {
    /// Runs `arguments` with `environment` added, output to /dev/null, waiting at most `seconds`; nil when it
    /// could not start, failed, or ran out of time (then it is killed and reaped).
    static func run(_ arguments: [String], environment: [String: String] = [:], seconds: Double = 30, stdout: Int32? = nil) -> ProcessTiming? {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        if let stdout {
            posix_spawn_file_actions_adddup2(&actions, stdout, 1)
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        }
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var merged = ProcessInfo.processInfo.environment
        for (key, value) in environment { merged[key] = value }
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let start = now()
        guard posix_spawn(&pid, arguments[0], &actions, nil, argv, envp) == 0 else { return nil }
        // Blocking wait (polling would take CPU from the child on a small machine); a watchdog thread
        // kills the child when the bound passes.
        let finished = Atomic<Bool>(false)
        let child = pid
        let watchdog = Thread {
            let deadline = start + UInt64(seconds * 1e9)
            while !finished.load(ordering: .acquiring) {
                if now() > deadline {
                    kill(child, SIGKILL)
                    return
                }
                usleep(10_000)
            }
        }
        watchdog.start()
        var usage = rusage()
        let status = (try? waitForChild(pid, usage: &usage))?.status ?? 0
        finished.store(true, ordering: .releasing)
        let wall = Double(now() - start) / 1000
        guard status == 0 else { return nil }
        let cpu = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e6 + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec)
        return ProcessTiming(wall: wall, cpu: cpu)
    }
}

enum ProcessBench {
    /// The rows: `linkcond apply` through the userspace engine against the tc pair (wall and CPU), and
    /// start-up (`linkcond --help` against `tc -V`). Failures become notes.
    static func rows(iterations: Int, linkcond: String?) -> [BenchRow] {
        guard let linkcond else {
            return [BenchRow(
                operation: "linkcond apply as a process", ours_us: nil, floor_us: nil, peers: [:],
                notes: ["no linkcond executable next to linkcond-bench"])]
        }
        let store = "/run/lcb-store-\(getpid())"
        let sandbox = "lcb\(getpid() % 100_000)"
        var environment = ["LINKCOND_STORE": store]
        if access(NetlinkBench.profilesDirectory + "/edge.json", R_OK) == 0 { environment["LINKCOND_PROFILES"] = NetlinkBench.profilesDirectory }
        var notes: [String] = []
        // The same apply with the store on tmpfs (/dev/shm), as /run is on most systems: a sandbox of its own
        // (its namespaces are named after it), measured in the same loop.
        let memoryStore = "/dev/shm/lcb-store-\(getpid())"
        let memorySandbox = "lcm\(getpid() % 100_000)"
        var memoryEnvironment = environment
        memoryEnvironment["LINKCOND_STORE"] = memoryStore
        defer {
            _ = ProcessRunner.run([linkcond, "down", "--name", sandbox], environment: environment, seconds: 60)
            rmdir(store)  // empty after 'down' (it removes every file of the sandbox)
            _ = ProcessRunner.run([linkcond, "down", "--name", memorySandbox], environment: memoryEnvironment, seconds: 60)
            rmdir(memoryStore)
        }
        let memoryUp = filesystemName(store).hasPrefix("tmpfs") ? nil
            : ProcessRunner.run([linkcond, "up", "--name", memorySandbox, "--backend", "userspace"], environment: memoryEnvironment, seconds: 60)
        guard ProcessRunner.run([linkcond, "up", "--name", sandbox, "--backend", "userspace"], environment: environment, seconds: 60) != nil else {
            return [BenchRow(
                operation: "linkcond apply as a process (userspace engine)", ours_us: nil, floor_us: nil, peers: [:],
                notes: ["'linkcond up --backend userspace' failed or took over 60 s"])]
        }
        guard let (a, b) = try? NetlinkBench.peerPair("lcb-a-\(getpid())") else {
            return [BenchRow(operation: "linkcond apply as a process (userspace engine)", ours_us: nil, floor_us: nil, peers: [:], notes: ["no veth pair for tc"])]
        }
        defer {
            try? a.delete()
            try? b.delete()
        }
        var apply: [ProcessTiming] = [], pair: [ProcessTiming] = [], help: [ProcessTiming] = [], version: [ProcessTiming] = []
        var memoryApply: [ProcessTiming] = []
        var failures = (apply: 0, pair: 0)
        let tc = "/usr/sbin/tc"
        func tbf(_ namespace: String, _ device: String, _ rate: String) -> [String] {
            [tc, "-n", namespace, "qdisc", "replace", "dev", device, "root", "handle", "1:", "tbf", "rate", rate, "burst", "1600", "limit", "3000"]
        }
        for index in 0..<iterations {
            let profile = index % 2 == 0 ? "3g" : "edge"
            let (down, up) = index % 2 == 0 ? ("780kbit", "330kbit") : ("240kbit", "200kbit")
            let runApply = {
                if let timing = ProcessRunner.run([linkcond, "apply", profile, "--name", sandbox], environment: environment) {
                    apply.append(timing)
                } else {
                    failures.apply += 1
                }
            }
            let runPair = {
                if let one = ProcessRunner.run(tbf(b.name, "c-wl0", down)), let two = ProcessRunner.run(tbf(a.name, "wl0", up)) {
                    pair.append(ProcessTiming(wall: one.wall + two.wall, cpu: one.cpu + two.cpu))
                } else {
                    failures.pair += 1
                }
            }
            if index % 2 == 0 { runApply(); runPair() } else { runPair(); runApply() }
            if memoryUp != nil, let timing = ProcessRunner.run([linkcond, "apply", profile, "--name", memorySandbox], environment: memoryEnvironment) {
                memoryApply.append(timing)
            }
            if let timing = ProcessRunner.run([linkcond, "--help"], environment: environment) { help.append(timing) }
            if let timing = ProcessRunner.run([tc, "-V"]) { version.append(timing) }
        }
        if failures.apply > 0 { notes.append("\(failures.apply) of \(iterations) linkcond apply runs failed or timed out") }
        if failures.pair > 0 { notes.append("\(failures.pair) of \(iterations) tc pairs failed or timed out") }
        let load = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3).joined(separator: " ") ?? "?"
        notes.append("host without netem: linkcond applies edge↔3g through the userspace engine; tc replaces a tbf on each end of a veth pair (2 processes); load average \(load)")
        notes.append("the store \(store) is on \(filesystemName(store)): an apply saves the state twice (pending, then confirmed), each put in place by RENAME_EXCHANGE and an unlink (a rename over the last waited for the disk there)")
        let pairName = "tc -n … qdisc replace ×2 (tbf)"
        var wallPeers = Summary(pair.map(\.wall)).map { [pairName: $0] } ?? [:]
        // pyroute2 as a script (a process per change, as a tool built on it runs): a tbf on each end.
        if let python = which("python3") {
            let script = "import sys; from pyroute2 import NetNS; a=NetNS(sys.argv[1]); b=NetNS(sys.argv[2]); "
                + "a.tc('replace','tbf',a.link_lookup(ifname='wl0')[0],0x10000,rate=sys.argv[3],burst=1600,limit=3000); "
                + "b.tc('replace','tbf',b.link_lookup(ifname='c-wl0')[0],0x10000,rate=sys.argv[3],burst=1600,limit=3000)"
            let runs = (0..<min(iterations, 20)).compactMap { index in
                timedProcess([python, "-c", script, a.name, b.name, index % 2 == 0 ? "780kbit" : "240kbit"])
            }
            if let summary = Summary(runs) { wallPeers["pyroute2 script (tbf)"] = summary } else { notes.append("pyroute2 is not installed (pip install pyroute2)") }
        }
        // tcconfig's tcset checks for sch_netem before it does anything, even for a rate alone.
        if let tcset = which("tcset") {
            if let one = timedProcess(["/usr/sbin/ip", "netns", "exec", a.name, tcset, "wl0", "--rate", "330Kbps", "--overwrite"], seconds: 60) {
                wallPeers["tcconfig tcset ×1 (rate only)"] = Summary([one])
            } else {
                notes.append("tcconfig's tcset refuses on this kernel (it requires sch_netem, even for a rate alone)")
            }
        }
        var rows = [
            BenchRow(
                operation: "linkcond apply edge↔3g as a process, userspace engine (verified), wall", ours_us: Summary(apply.map(\.wall)),
                floor_us: nil, peers: wallPeers, notes: notes),
            BenchRow(
                operation: "linkcond apply edge↔3g as a process, CPU time (user+system)", ours_us: Summary(apply.map(\.cpu)), floor_us: nil,
                peers: Summary(pair.map(\.cpu)).map { [pairName: $0] } ?? [:], notes: []),
        ]
        if let wall = Summary(memoryApply.map(\.wall)) {
            rows.append(BenchRow(
                operation: "linkcond apply edge↔3g as a process, the store on tmpfs (/dev/shm), wall", ours_us: wall, floor_us: nil,
                peers: Summary(pair.map(\.wall)).map { [pairName: $0] } ?? [:], notes: []))
            rows.append(BenchRow(
                operation: "linkcond apply edge↔3g as a process, the store on tmpfs (/dev/shm), CPU time", ours_us: Summary(memoryApply.map(\.cpu)),
                floor_us: nil, peers: Summary(pair.map(\.cpu)).map { [pairName: $0] } ?? [:], notes: []))
        }
        rows.append(BenchRow(
            operation: "process start-up: linkcond --help, wall", ours_us: Summary(help.map(\.wall)), floor_us: nil,
            peers: Summary(version.map(\.wall)).map { ["tc -V": $0] } ?? [:], notes: []))
        return rows
    }
}

/// `linkcond-bench health NAME`: the health check of an existing sandbox (LINKCOND_STORE), in process,
/// interleaved with what it did before (a thread and three dumps per namespace), for comparison.
enum HealthProbe {
    static func run(_ name: String) throws {
        let sandbox = Sandbox(topology: try SandboxTopology(name: name))
        guard case let .state(state) = sandbox.store.record(name) else { throw BenchFailure("no state for \(name)") }
        var times: [Double] = [], before: [Double] = []
        for round in 0..<100 {
            let checkNow = {
                let start = now()
                let problems = sandbox.problems(state)
                times.append(Double(now() - start) / 1000)
                if !problems.isEmpty { print("problems: \(problems)") }
            }
            let checkBefore = {
                let start = now()
                for role in SandboxTopology.Role.allCases where role != .wire || state.wire {
                    guard let namespace = try? NamedNamespace(existing: sandbox.topology.namespace(role)),
                        let links = try? sandbox.netlink(namespace)
                    else { continue }
                    _ = try? links.links()
                    _ = try? links.addresses()
                    _ = try? links.routes()
                }
                for process in state.processes { _ = process.isRunning }
                before.append(Double(now() - start) / 1000)
            }
            if round % 2 == 0 { checkNow(); checkBefore() } else { checkBefore(); checkNow() }
        }
        print(String(format: "health check: median %.0f µs, p95 %.0f µs; before (a thread per namespace, 3 dumps each): median %.0f µs, p95 %.0f µs",
            percentile(times, 0.5), percentile(times, 0.95), percentile(before, 0.5), percentile(before, 0.95)))
    }
}

/// The filesystem `path` is on, from `/proc/self/mounts` (the longest mount point above it): its type, and
/// `discard` when it is mounted so (a rename over a file, or a truncation, then waits for the disk:
/// FileReplacement in the system layer).
func filesystemName(_ path: String) -> String {
    guard let mounts = try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8) else { return "an unknown filesystem" }
    var best: (point: String, type: String, options: [Substring])?
    for line in mounts.split(separator: "\n") {
        let fields = line.split(separator: " ")
        guard fields.count >= 4 else { continue }
        let point = String(fields[1])
        let inside = point == "/" || path == point || path.hasPrefix(point + "/")
        if inside, point.count >= (best?.point.count ?? -1) { best = (point, String(fields[2]), fields[3].split(separator: ",")) }
    }
    guard let best else { return "an unknown filesystem" }
    return best.type + (best.options.contains("discard") ? " mounted 'discard'" : "")
}

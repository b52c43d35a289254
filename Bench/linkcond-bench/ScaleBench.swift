// `linkcond-bench scale [N]`: N sandboxes with the userspace backend (an engine and a server process each),
// each with a profile, on this machine: the time of each `linkcond up` and `linkcond apply` (as processes,
// as a user runs them), the memory each sandbox costs the kernel and in its processes, threads and file
// descriptors, the engines' CPU while idle, and an HTTP 204 from every client through its engine. Then
// `linkcond down --all`. Everything lives in a LINKCOND_STORE of its own and sandbox names of its own; every
// wait is bounded (each process, each check, the whole run), and a cleanup runs whatever happens (also after
// Ctrl-C or SIGTERM, and before a run reports). Nothing else on the machine is touched.
import Foundation
import Glibc
import LinkcondBase
import LinkcondSystem
import NetNamespace
import Sandboxing
import Synchronization

enum ScaleBench {
    /// Set by SIGINT/SIGTERM: stop making sandboxes and clean up.
    nonisolated(unsafe) static var interrupted: sig_atomic_t = 0

    static let profiles = ["lte", "3g", "wifi", "cable", "4g", "dsl"]

    struct Memory {
        var available: Int = 0  // kB
        var slab: Int = 0
        var unreclaimable: Int = 0

        static func now() -> Memory {
            var memory = Memory()
            for line in ((try? String(contentsOfFile: "/proc/meminfo", encoding: .utf8)) ?? "").split(separator: "\n") {
                let parts = line.split(separator: " ", omittingEmptySubsequences: true)
                guard parts.count >= 2, let value = Int(parts[1]) else { continue }
                switch parts[0] {
                case "MemAvailable:": memory.available = value
                case "Slab:": memory.slab = value
                case "SUnreclaim:": memory.unreclaimable = value
                default: break
                }
            }
            return memory
        }
    }

    /// A process of a sandbox, as the state file records it, with what /proc says about it.
    struct Member {
        var role: RecordedProcess.Role
        var pid: Int32
        var pss = 0, privateDirty = 0  // kB
        var threads = 0, descriptors = 0
    }

    static func run(count: Int, linkcond: String?, deadlineSeconds: Double = 1200) -> [BenchRow] {
        guard let linkcond else { return [BenchRow(operation: "scale", ours_us: nil, floor_us: nil, peers: [:], notes: ["no linkcond executable"])] }
        signal(SIGINT) { _ in ScaleBench.interrupted = 1 }
        signal(SIGTERM) { _ in ScaleBench.interrupted = 1 }
        let store = "/run/lcb-scale-\(getpid())"
        let prefix = "lcs\(getpid() % 100_000)x"
        var environment = ["LINKCOND_STORE": store]
        if access(NetlinkBench.profilesDirectory + "/edge.json", R_OK) == 0 { environment["LINKCOND_PROFILES"] = NetlinkBench.profilesDirectory }
        let deadline = now() + UInt64(deadlineSeconds * 1e9)
        func timeLeft() -> Bool { now() < deadline && interrupted == 0 }
        var notes: [String] = []
        var names: [String] = []
        let before = Memory.now()
        let threadsBefore = threadCount()
        var ups: [Double] = [], applies: [Double] = [], checks: [Double] = [], downTime: Double?
        var answered = 0
        var members: [Member] = []
        var idleCPU: Double?
        var after = before
        var threadsAfter = threadsBefore

        // Up and apply, one sandbox after the other, as a user would.
        for index in 1...max(1, count) {
            guard timeLeft() else {
                notes.append(interrupted != 0 ? "interrupted after \(names.count) sandboxes" : "the \(Int(deadlineSeconds)) s bound ran out after \(names.count) sandboxes")
                break
            }
            let name = "\(prefix)\(index)"
            guard let up = ProcessRunner.run([linkcond, "up", "--name", name, "--backend", "userspace"], environment: environment, seconds: 60) else {
                notes.append("'linkcond up' of sandbox \(index) failed or took over 60 s; stopped there")
                names.append(name)
                break
            }
            names.append(name)
            ups.append(up.wall)
            let profile = profiles[index % profiles.count]
            if let apply = ProcessRunner.run([linkcond, "apply", profile, "--name", name], environment: environment, seconds: 30) {
                applies.append(apply.wall)
            } else {
                notes.append("'linkcond apply \(profile)' on sandbox \(index) failed or took over 30 s")
            }
            if index % 50 == 0 { print("scale: \(index) sandboxes up (\(String(format: "%.0f", percentile(ups.suffix(50).map { $0 }, 0.5) / 1000)) ms per up lately)") }
        }
        let made = ups.count
        // Every sandbox the measurements below look at (a failed up is still cleaned up).
        if made > 0 && timeLeft() {
            after = Memory.now()
            threadsAfter = threadCount()
            members = inspect(store: SandboxStore(directory: store), names: names)
            idleCPU = engineIdleCPU(members.filter { $0.role == .engine }.map(\.pid), seconds: 5)
            // An HTTP 204 from every client, through its engine and its profile, a few at a time.
            let clients = names.prefix(made).map { "lc-\($0)-client" }
            let results = Mutex<[(Bool, Double)]>([])
            let next = Atomic<Int>(0)
            let workers = (0..<8).map { _ in
                Thread {
                    while interrupted == 0 {
                        let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
                        guard index < made else { return }
                        let start = now()
                        let ok = http204(client: clients[index], seconds: 15)
                        results.withLock { $0.append((ok, Double(now() - start) / 1000)) }
                    }
                }
            }
            workers.forEach { $0.start() }
            let waitUntil = now() + 300_000_000_000
            while results.withLock({ $0.count }) < made && now() < waitUntil && interrupted == 0 { usleep(50_000) }
            let outcome = results.withLock { $0 }
            answered = outcome.filter(\.0).count
            checks = outcome.filter(\.0).map(\.1)
            if outcome.count < made { notes.append("only \(outcome.count) of \(made) checks finished within 300 s") }
        }

        // Whatever happened: down every sandbox of this store, then make sure nothing of ours is left.
        let downStart = now()
        let down = ProcessRunner.run([linkcond, "down", "--all"], environment: environment, seconds: 600)
        downTime = down.map { _ in Double(now() - downStart) / 1000 }
        for name in names where FileManager.default.fileExists(atPath: "\(store)/\(name).json") {
            _ = ProcessRunner.run([linkcond, "down", "--name", name], environment: environment, seconds: 60)
        }
        let left = NamedNamespace.list().filter { $0.hasPrefix("lc-\(prefix)") }
        for namespace in left { try? NamedNamespace(existing: namespace).delete() }
        rmdir(store)
        if !left.isEmpty { notes.append("removed \(left.count) namespaces 'down' left behind") }
        if downTime == nil { notes.append("'linkcond down --all' failed or took over 600 s") }

        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)

        // Report.
        let perSandbox = { (kilobytes: Int) -> String in String(format: "%.1f MB", Double(kilobytes) / 1024 / Double(max(1, made))) }
        let engines = members.filter { $0.role == .engine }, servers = members.filter { $0.role == .server }
        func average(_ list: [Member], _ key: (Member) -> Int) -> String {
            list.isEmpty ? "-" : String(format: "%.1f", Double(list.map(key).reduce(0, +)) / Double(list.count))
        }
        let first = Array(ups.prefix(10)), last = Array(ups.suffix(10))
        var upNotes = notes
        upNotes.append("\(made) sandboxes; up: first 10 median \(BenchOutput.format(percentile(first, 0.5)).trimmingCharacters(in: .whitespaces)), last 10 median \(BenchOutput.format(percentile(last, 0.5)).trimmingCharacters(in: .whitespaces))")
        upNotes.append("memory per sandbox: \(perSandbox(before.available - after.available)) in all (MemAvailable), kernel slab \(perSandbox(after.slab - before.slab)) (unreclaimable \(perSandbox(after.unreclaimable - before.unreclaimable)))")
        upNotes.append("per engine: PSS \(average(engines) { $0.pss / 1024 }) MB (private dirty \(average(engines) { $0.privateDirty }) kB), \(average(engines) { $0.threads }) threads, \(average(engines) { $0.descriptors }) fds; per server: PSS \(average(servers) { $0.pss / 1024 }) MB, \(average(servers) { $0.threads }) threads, \(average(servers) { $0.descriptors }) fds; threads on the machine +\(threadsAfter - threadsBefore)")
        if let idleCPU { upNotes.append(String(format: "all %d engines idle: %.2f%% of one CPU together (5 s)", engines.count, idleCPU * 100)) }
        let load = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3).joined(separator: " ") ?? "?"
        upNotes.append("load average \(load)")
        return [
            BenchRow(operation: "scale: linkcond up, userspace engine, sandbox 1…\(made)", ours_us: Summary(ups), floor_us: nil, peers: [:], notes: upNotes),
            BenchRow(operation: "scale: linkcond apply with \(made) sandboxes up", ours_us: Summary(applies), floor_us: nil, peers: [:], notes: []),
            BenchRow(
                operation: "scale: HTTP 204 from each client through its engine and profile", ours_us: Summary(checks), floor_us: nil, peers: [:],
                notes: ["\(answered) of \(made) clients got 204"]),
            BenchRow(
                operation: "scale: linkcond down --all, \(made) sandboxes (whole command)", ours_us: downTime.flatMap { Summary([$0]) }, floor_us: nil,
                peers: [:], notes: []),
        ]
    }

    /// Every recorded process of the sandboxes, with its memory, threads and descriptors.
    static func inspect(store: SandboxStore, names: [String]) -> [Member] {
        var members: [Member] = []
        for name in names {
            guard case let .state(state) = store.record(name) else { continue }
            for process in state.processes {
                var member = Member(role: process.role, pid: process.pid)
                for line in ((try? String(contentsOfFile: "/proc/\(process.pid)/smaps_rollup", encoding: .utf8)) ?? "").split(separator: "\n") {
                    let parts = line.split(separator: " ", omittingEmptySubsequences: true)
                    guard parts.count >= 2, let value = Int(parts[1]) else { continue }
                    if parts[0] == "Pss:" { member.pss = value }
                    if parts[0] == "Private_Dirty:" { member.privateDirty = value }
                }
                member.threads = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(process.pid)/task").count) ?? 0
                member.descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(process.pid)/fd").count) ?? 0
                members.append(member)
            }
        }
        return members
    }

    /// The CPU the processes used together over `seconds`, as a fraction of one CPU.
    static func engineIdleCPU(_ pids: [Int32], seconds: Double) -> Double {
        func ticks() -> Int {
            pids.reduce(0) { total, pid in
                guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else { return total }
                let fields = stat[stat.index(after: close)...].split(separator: " ")
                return total + (fields.count > 12 ? (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0) : 0)
            }
        }
        let start = ticks()
        usleep(UInt32(seconds * 1e6))
        return Double(ticks() - start) / Double(sysconf(Int32(_SC_CLK_TCK))) / seconds
    }

    static func threadCount() -> Int {
        guard let stat = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return 0 }
        // "0.5 0.4 0.3 2/3541 12384": the total after the slash.
        return stat.split(separator: " ").dropFirst(3).first?.split(separator: "/").last.flatMap { Int($0) } ?? 0
    }

    /// GET /generate_204 from inside `client` to the sandbox server (198.19.0.2:80); true on a 204.
    static func http204(client: String, seconds: Double) -> Bool {
        guard let namespace = try? NamedNamespace(existing: client), let owned = try? namespace.openSocket(.tcp(.inet)) else { return false }
        let fd = owned.socket
        try? fd.setTimeout(seconds: Double(Int(seconds)))
        try? fd.setTimeout(seconds: Double(Int(seconds)), send: true)
        // Blocking: a connect that outlasts SO_SNDTIMEO ends "in progress" (false).
        guard (try? fd.connect(to: SocketAddress(ip: "198.19.0.2", port: 80)!)) == true else { return false }
        let request = Array("GET /generate_204 HTTP/1.1\r\nHost: server.linkcond.test\r\nConnection: close\r\n\r\n".utf8)
        guard (try? request.withUnsafeBytes({ try fd.send($0, flags: Int32(MSG_NOSIGNAL)) })) == request.count else { return false }
        var buffer = [UInt8](repeating: 0, count: 64)
        var got = 0
        while got < 12 {
            let count = try? buffer.withUnsafeMutableBytes { try fd.receive(into: UnsafeMutableRawBufferPointer(rebasing: $0[got...])) }
            guard let count, count > 0 else { break }
            got += count
        }
        return String(decoding: buffer.prefix(got), as: UTF8.self).hasPrefix("HTTP/1.1 204")
    }
}

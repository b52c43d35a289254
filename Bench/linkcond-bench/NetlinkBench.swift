// The switch rows of linkcond-bench: linkcond switching conditions in process against raw libmnl from C
// (CNetlinkFloor) sending the same requests on sockets held open, and `linkcond apply` as a process
// against the peers' processes (two `tc -n … qdisc replace`, pyroute2 as a script, tcconfig's tcset) and
// pyroute2 in process. With netem (the kernel VM) the real thing: profiles edge ↔ 3g on a sandbox. Without
// netem (this host) a proxy: a tbf graft on each of two namespaces, read back, through the same batch
// machinery — what is measured is then said in the row's name. Every wait is bounded.
import CMnl
import CNetlinkFloor
import Conditioning
import Foundation
import Glibc
import LinkcondBase
import LinkcondSystem
import NetNamespace
import Netlink
import Profiles
import RouteNetlink
import Sandboxing

/// Median and 95th percentile of samples in microseconds.
struct Summary: Encodable {
    let median: Double
    let p95: Double
    let samples: Int
    init?(_ values: [Double]) {
        guard !values.isEmpty else { return nil }
        median = percentile(values, 0.5)
        p95 = percentile(values, 0.95)
        samples = values.count
    }

    /// A summary worked out elsewhere (a histogram's quantiles).
    init(median: Double, p95: Double, samples: Int) {
        self.median = median
        self.p95 = p95
        self.samples = samples
    }
}

/// One row of the table and of `--json`.
struct BenchRow: Encodable {
    let operation: String
    let ours_us: Summary?
    let floor_us: Summary?
    let peers: [String: Summary]
    /// What did not happen (a peer missing, a wait that ran out), so a row never hides a gap.
    let notes: [String]
}

enum BenchOutput {
    static func format(_ value: Double?) -> String {
        guard let value else { return "        -  " }
        return value >= 1000 ? String(format: "%8.2f ms", value / 1000) : String(format: "%8.1f µs", value)
    }

    static func print(_ rows: [BenchRow], json: Bool, header: String) {
        if json {
            struct Document: Encodable { let rows: [BenchRow] }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            if let data = try? encoder.encode(Document(rows: rows)) { Swift.print(String(decoding: data, as: UTF8.self)) }
            return
        }
        Swift.print(header)
        Swift.print("")
        Swift.print("| operation | linkcond median | p95 | floor (libmnl) median | ratio | peers (median) |")
        Swift.print("|---|---|---|---|---|---|")
        for row in rows {
            let ratio = row.ours_us.flatMap { ours in row.floor_us.map { String(format: "%.2f×", ours.median / $0.median) } } ?? "-"
            let peers = row.peers.sorted { $0.key < $1.key }.map { "\($0.key) \(format($0.value.median).trimmingCharacters(in: .whitespaces))" }
            Swift.print("| \(row.operation) | \(format(row.ours_us?.median)) | \(format(row.ours_us?.p95)) | \(format(row.floor_us?.median)) | \(ratio) | \(peers.joined(separator: "; ")) |")
            for note in row.notes { Swift.print("|   note: \(note) | | | | | |") }
        }
    }
}

/// Waits at most `milliseconds` for `fd` to become readable; false when it did not.
func waitReadable(_ fd: Int32, milliseconds: Int32) -> Bool {
    var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    return poll(&entry, 1, milliseconds) == 1
}

/// Runs a process with a deadline; its wall time in microseconds, nil when it failed or ran out of time
/// (then it is killed).
func timedProcess(_ arguments: [String], environment: [String: String] = [:], seconds: Double = 30) -> Double? {
    ProcessRunner.run(arguments, environment: environment, seconds: seconds)?.wall
}

func which(_ name: String) -> String? {
    for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/sbin:/usr/bin").split(separator: ":") + ["/usr/sbin", "/root/.pyenv/shims"] {
        let path = "\(directory)/\(name)"
        if access(path, X_OK) == 0 { return path }
    }
    return nil
}

/// The raw-libmnl floor on one namespace: a socket opened there, wrapped for libmnl, and batches sent on it.
final class FloorSocket {
    let socket: NetlinkSocket
    let handle: OpaquePointer
    var sequence: UInt32 = 1
    var buffer = [UInt8](repeating: 0, count: 65_536)

    init(_ namespace: NamedNamespace) throws {
        socket = try NetlinkSocket(adopting: try namespace.openSocket(.routeNetlink))
        handle = lcfloor_wrap(socket.fileDescriptor)
    }

    /// Sends `batch` (requests laid end to end) and reads every answer; false on a refusal.
    func exchange(_ batch: inout [UInt8]) -> Bool {
        var replies: UInt32 = 0
        let result = batch.withUnsafeMutableBytes { bytes in
            buffer.withUnsafeMutableBytes { out in
                lcfloor_exchange(handle, bytes.baseAddress, bytes.count, &sequence, out.baseAddress, out.count, &replies)
            }
        }
        return result == 0
    }
}

enum NetlinkBench {
    static let profilesDirectory = ProcessInfo.processInfo.environment["LINKCOND_PROFILES"] ?? FileManager.default.currentDirectoryPath + "/profiles"

    /// The switch rows; `hasNetem` picks the real profiles or the tbf proxy.
    static func rows(iterations: Int, hasNetem: Bool, linkcond: String?) throws -> [BenchRow] {
        hasNetem ? try netemRows(iterations: iterations, linkcond: linkcond) : try tbfRows(iterations: iterations)
    }

    // MARK: With netem: a sandbox, edge ↔ 3g

    static func netemRows(iterations: Int, linkcond: String?) throws -> [BenchRow] {
        let store = SandboxStore(directory: "/run/lcb-netem-\(getpid())")
        defer { rmdir(store.directory) }
        let edge = try ProfileCatalog.find("edge", directory: profilesDirectory)
        let threeG = try ProfileCatalog.find("3g", directory: profilesDirectory)
        let ours = Sandbox(topology: try SandboxTopology(name: "bench\(getpid() % 100_000)"), store: store)
        let floor = Sandbox(topology: try SandboxTopology(name: "floor\(getpid() % 100_000)"), store: store)
        try ours.up()
        defer { _ = try? ours.down() }
        try floor.up()
        defer { _ = try? floor.down() }
        var rows: [BenchRow] = []

        // In process: one backend kept, as LinkLab and scenarios should keep it.
        let backend = NetemBackend(sandbox: ours)
        try backend.apply(edge)
        var netlink: [Double] = []
        var whole: [Double] = []
        var requests = 0

        // The floor: the same batches, byte for byte, from C on sockets held open in the floor sandbox.
        try NetemBackend(sandbox: floor).apply(edge)
        let clock = PacketSchedulerClock.current()
        let plans = try [edge, threeG].map { profile in
            (try NetemMapping.parameters(for: profile.uplink), try NetemMapping.parameters(for: profile.uplink, extraDelay: profile.dnsDelay),
             try NetemMapping.parameters(for: profile.downlink))
        }
        let client = try FloorSocket(NamedNamespace(existing: floor.topology.clientNamespace))
        let router = try FloorSocket(NamedNamespace(existing: floor.topology.routerNamespace))
        func handle(_ major: UInt16) -> TrafficControlHandle { TrafficControlHandle(major: major, minor: 0) }
        // After edge: 1:, 10:, 20:. Round k grafts the other handles with the other profile's parameters.
        let clientIndexes = RouteNetlinkClient(connection: try NetlinkConnection(), namespace: nil, interfaceIndexes: SandboxPlan.interfaceIndexes)
        var batches: [([UInt8], [UInt8])] = []
        for (round, plan) in [(1, plans[1]), (0, plans[0])] {
            let up = try clientIndexes.datagram(for: [
                .replaceQdisc(interface: "wl0", handle: handle(round == 1 ? 0x11 : 0x10), parent: TrafficControlHandle(major: 1, minor: 1), options: .netem(plan.0, clock: clock), graft: true),
                .replaceQdisc(interface: "wl0", handle: handle(round == 1 ? 0x21 : 0x20), parent: TrafficControlHandle(major: 1, minor: 2), options: .netem(plan.1, clock: clock), graft: true),
            ], readingBack: true)
            let down = try clientIndexes.datagram(for: [
                .replaceQdisc(interface: "c-wl0", handle: handle(round == 1 ? 2 : 1), parent: .root, options: .netem(plan.2, clock: clock), graft: true),
            ], readingBack: true)
            batches.append((up, down))
        }
        var floorTimes: [Double] = []
        var refused = 0
        // Interleaved, the order alternating, so load on the machine hits both alike.
        for index in 0..<iterations {
            let runOurs = { () throws in
                let start = now()
                let report = try backend.apply(index % 2 == 0 ? threeG : edge)
                whole.append(Double(now() - start) / 1000)
                netlink.append(report.duration * 1e6)
                requests = report.requests
            }
            let runFloor = {
                var (up, down) = batches[index % 2]
                let start = now()
                if !client.exchange(&up) { refused += 1 }
                if !router.exchange(&down) { refused += 1 }
                floorTimes.append(Double(now() - start) / 1000)
            }
            if index % 2 == 0 {
                try runOurs()
                runFloor()
            } else {
                runFloor()
                try runOurs()
            }
        }
        let note = refused == 0 ? [] : ["the floor's kernel refused \(refused) batches"]
        rows.append(BenchRow(
            operation: "switch edge↔3g in process, netlink (\(requests) requests, verified)", ours_us: Summary(netlink), floor_us: Summary(floorTimes),
            peers: [:], notes: note))
        rows.append(BenchRow(
            operation: "switch edge↔3g in process, NetemBackend.apply (state file included)", ours_us: Summary(whole),
            floor_us: Summary(floorTimes), peers: try pyroute2InProcess(iterations: iterations), notes: []))
        rows.append(try processRow(ours, linkcond: linkcond, iterations: min(iterations, 20)))
        return rows
    }

    /// pyroute2 holding its sockets open: root netem (`tbf`: a tbf, on a kernel without netem) replaced on
    /// both ends of a peer pair, per switch.
    static func pyroute2InProcess(iterations: Int, tbf: Bool = false) throws -> [String: Summary] {
        guard let python = which("python3") else { return [:] }
        let script = """
            import json, sys, time
            from pyroute2 import NetNS
            a, b, n, tbf = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == 'tbf'
            na, nb = NetNS(a), NetNS(b)
            ia, ib = na.link_lookup(ifname='wl0')[0], nb.link_lookup(ifname='c-wl0')[0]
            times = []
            for k in range(n):
                d = 100000 if k % 2 == 0 else 400000
                t = time.perf_counter_ns()
                if tbf:
                    r = '780kbit' if k % 2 == 0 else '240kbit'
                    na.tc('replace', 'tbf', ia, 0x10000, rate=r, burst=1600, limit=3000)
                    nb.tc('replace', 'tbf', ib, 0x10000, rate=r, burst=1600, limit=3000)
                else:
                    na.tc('replace', 'netem', ia, 0x10000, delay=d + 40000, limit=1000)
                    nb.tc('replace', 'netem', ib, 0x10000, delay=d, limit=1000)
                times.append((time.perf_counter_ns() - t) / 1000)
            print(json.dumps(times))
            """
        let pipe = Pipe()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-c", script, "lcb-py-\(getpid())-a", "lcb-py-\(getpid())-b", "\(iterations)", tbf ? "tbf" : "netem"]
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        let (a, b) = try peerPair("lcb-py-\(getpid())")
        defer { try? a.delete(); try? b.delete() }
        try process.run()
        guard waitReadable(pipe.fileHandleForReading.fileDescriptor, milliseconds: 120_000) else {
            process.terminate()
            return [:]
        }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard let times = try? JSONDecoder().decode([Double].self, from: data), let summary = Summary(times) else { return [:] }
        return ["pyroute2 (in process)": summary]
    }

    /// Two namespaces joined by a veth (wl0 / c-wl0), the peers' setting: root netem on each end.
    static func peerPair(_ prefix: String) throws -> (NamedNamespace, NamedNamespace) {
        let a = try NamedNamespace.create(prefix + "-a")
        let b = try NamedNamespace.create(prefix + "-b")
        let client = RouteNetlinkClient(connection: try a.openNetlinkConnection(), namespace: a.name)
        let fd = try OwnedFileDescriptor.open(b.path, .readOnly)
        try client.createVeth(name: "wl0", peerName: "c-wl0", peerIn: NamespaceDescriptor(fileDescriptor: fd.descriptor.rawValue, name: b.name))
        return (a, b)
    }

    /// `linkcond apply` as a whole process against the peers' processes doing the same switch.
    static func processRow(_ sandbox: Sandbox, linkcond: String?, iterations: Int) throws -> BenchRow {
        var notes: [String] = []
        var ours: [Double] = []
        let (a, b) = try peerPair("lcb-p-\(getpid())")
        defer { try? a.delete(); try? b.delete() }
        var peers: [String: Summary] = [:]
        let tc = "/usr/sbin/tc"
        var pair: [Double] = []
        var failedApplies = 0
        // linkcond apply and the tc pair interleaved, the order alternating.
        for index in 0..<iterations {
            let runOurs = {
                guard let linkcond else { return }
                let profile = index % 2 == 0 ? "3g" : "edge"
                if let time = timedProcess(
                    [linkcond, "apply", profile, "--name", sandbox.topology.name],
                    environment: ["LINKCOND_PROFILES": profilesDirectory, "LINKCOND_STORE": sandbox.store.directory]
                ) {
                    ours.append(time)
                } else {
                    failedApplies += 1
                }
            }
            let runPair = {
                let (down, up) = index % 2 == 0 ? ("100ms", "100ms") : ("400ms", "440ms")
                let (rateDown, rateUp) = index % 2 == 0 ? ("780kbit", "330kbit") : ("240kbit", "200kbit")
                guard let first = timedProcess([tc, "-n", b.name, "qdisc", "replace", "dev", "c-wl0", "root", "handle", "1:", "netem", "delay", down, "rate", rateDown]),
                    let second = timedProcess([tc, "-n", a.name, "qdisc", "replace", "dev", "wl0", "root", "handle", "1:", "netem", "delay", up, "rate", rateUp])
                else { return }
                pair.append(first + second)
            }
            if index % 2 == 0 { runOurs(); runPair() } else { runPair(); runOurs() }
        }
        if linkcond == nil { notes.append("no linkcond executable next to linkcond-bench") }
        if failedApplies > 0 { notes.append("\(failedApplies) of \(iterations) linkcond apply runs failed or timed out") }
        if let summary = Summary(pair) { peers["tc -n … qdisc replace ×2"] = summary } else { notes.append("tc did not run") }
        if let python = which("python3") {
            let script = "import sys; from pyroute2 import NetNS; a=NetNS(sys.argv[1]); b=NetNS(sys.argv[2]); "
                + "a.tc('replace','netem',a.link_lookup(ifname='wl0')[0],0x10000,delay=int(sys.argv[3]),limit=1000); "
                + "b.tc('replace','netem',b.link_lookup(ifname='c-wl0')[0],0x10000,delay=int(sys.argv[3]),limit=1000)"
            let runs = (0..<iterations).compactMap { index in timedProcess([python, "-c", script, a.name, b.name, index % 2 == 0 ? "100000" : "400000"]) }
            if let summary = Summary(runs) { peers["pyroute2 script"] = summary } else { notes.append("pyroute2 is not installed (pip install pyroute2)") }
        }
        if let tcset = which("tcset") {
            let runs = (0..<min(iterations, 6)).compactMap { index -> Double? in
                let delay = index % 2 == 0 ? "100ms" : "400ms"
                guard let one = timedProcess(["/usr/sbin/ip", "netns", "exec", a.name, tcset, "wl0", "--delay", delay, "--rate", "330Kbps", "--overwrite"], seconds: 60),
                    let two = timedProcess(["/usr/sbin/ip", "netns", "exec", b.name, tcset, "c-wl0", "--delay", delay, "--rate", "780Kbps", "--overwrite"], seconds: 60)
                else { return nil }
                return one + two
            }
            if let summary = Summary(runs) { peers["tcconfig tcset ×2"] = summary } else { notes.append("tcset ran but failed") }
        } else {
            notes.append("tcconfig's tcset is not installed (pip install tcconfig)")
        }
        return BenchRow(operation: "linkcond apply edge↔3g as a process (verified)", ours_us: Summary(ours), floor_us: nil, peers: peers, notes: notes)
    }

    // MARK: Without netem: tbf grafts as a proxy

    /// The proxy switch on two namespaces joined by a veth: a tbf grafted on each end in place of the other
    /// handle, each namespace's change and its read-back in one datagram. `ours` goes through
    /// RouteNetlinkClient, `floor` sends the same bytes from C; `step` alternates the handles.
    final class TbfSwitch {
        let a: NamedNamespace, b: NamedNamespace
        let clientA: RouteNetlinkClient, clientB: RouteNetlinkClient
        let floorA: FloorSocket, floorB: FloorSocket
        var step = 1  // the qdiscs installed by init have handle(1)

        init(prefix: String) throws {
            let (a, b) = try peerPair(prefix)
            self.a = a
            self.b = b
            do {
                let connectionA = try a.openNetlinkConnection(), connectionB = try b.openNetlinkConnection()
                let lookupA = RouteNetlinkClient(connection: connectionA, namespace: a.name)
                let lookupB = RouteNetlinkClient(connection: connectionB, namespace: b.name)
                clientA = RouteNetlinkClient(connection: connectionA, namespace: a.name, interfaceIndexes: ["wl0": try lookupA.index(of: "wl0")])
                clientB = RouteNetlinkClient(connection: connectionB, namespace: b.name, interfaceIndexes: ["c-wl0": try lookupB.index(of: "c-wl0")])
                floorA = try FloorSocket(a)
                floorB = try FloorSocket(b)
                try clientA.replaceQdisc(on: "wl0", handle: Self.handle(1), options: Self.options(1))
                try clientB.replaceQdisc(on: "c-wl0", handle: Self.handle(1), options: Self.options(1))
            } catch {
                try? a.delete()
                try? b.delete()
                throw error
            }
        }

        func remove() {
            try? a.delete()
            try? b.delete()
        }

        static func options(_ k: Int) -> QdiscOptions { .tbf(TokenBucketOptions(rate: k % 2 == 0 ? 97_500 : 30_000, burst: 1600, limit: 3000)) }
        static func handle(_ k: Int) -> TrafficControlHandle { TrafficControlHandle(major: k % 2 == 0 ? 2 : 1, minor: 0) }

        /// One switch through linkcond's client; microseconds.
        @inline(never)
        func ours() throws -> Double {
            step += 1
            let k = step
            let start = now()
            for (client, name) in [(clientA, "wl0"), (clientB, "c-wl0")] {
                let reply = try client.send([.replaceQdisc(interface: name, handle: Self.handle(k), parent: .root, options: Self.options(k), graft: true)], readingBack: true)
                if let error = reply.firstError { throw error }
                guard reply.qdiscs.contains(where: { $0.handle == Self.handle(k) && $0.kind == "tbf" }) else {
                    throw RouteNetlinkError.invalidArgument("tbf not read back")
                }
            }
            return Double(now() - start) / 1000
        }

        /// The same switch from C, the datagrams made before the clock starts; microseconds.
        @inline(never)
        func floor() throws -> Double {
            step += 1
            let k = step
            var one = try clientA.datagram(for: [.replaceQdisc(interface: "wl0", handle: Self.handle(k), parent: .root, options: Self.options(k), graft: true)], readingBack: true)
            var two = try clientB.datagram(for: [.replaceQdisc(interface: "c-wl0", handle: Self.handle(k), parent: .root, options: Self.options(k), graft: true)], readingBack: true)
            let start = now()
            let accepted = floorA.exchange(&one) && floorB.exchange(&two)
            let elapsed = Double(now() - start) / 1000
            guard accepted else { throw BenchFailure("the floor's tbf graft was refused") }
            return elapsed
        }
    }

    /// Ours and the floor, interleaved (one of each per iteration, the order alternating), so load on the
    /// machine hits both alike.
    static func tbfSwitch(iterations: Int) throws -> (ours: [Double], floor: [Double]) {
        let lab = try TbfSwitch(prefix: "lcb-t-\(getpid())")
        defer { lab.remove() }
        var ours: [Double] = [], floor: [Double] = []
        for _ in 0..<min(20, iterations) { _ = try lab.ours(); _ = try lab.floor() }  // warm up
        for k in 0..<iterations {
            if k % 2 == 0 {
                ours.append(try lab.ours())
                floor.append(try lab.floor())
            } else {
                floor.append(try lab.floor())
                ours.append(try lab.ours())
            }
        }
        return (ours, floor)
    }

    static func tbfRows(iterations: Int) throws -> [BenchRow] {
        let (ours, floor) = try tbfSwitch(iterations: iterations)
        let (a, b) = try peerPair("lcb-tp-\(getpid())")
        defer { try? a.delete(); try? b.delete() }
        var peers: [String: Summary] = [:]
        var pair: [Double] = []
        for k in 0..<min(iterations, 40) {
            let rate = k % 2 == 0 ? "780kbit" : "240kbit"
            guard let one = timedProcess(["/usr/sbin/tc", "-n", a.name, "qdisc", "replace", "dev", "wl0", "root", "handle", "1:", "tbf", "rate", rate, "burst", "1600", "limit", "3000"]),
                let two = timedProcess(["/usr/sbin/tc", "-n", b.name, "qdisc", "replace", "dev", "c-wl0", "root", "handle", "1:", "tbf", "rate", rate, "burst", "1600", "limit", "3000"])
            else { continue }
            pair.append(one + two)
        }
        if let summary = Summary(pair) { peers["tc -n … qdisc replace ×2"] = summary }
        let pyroute2 = try pyroute2InProcess(iterations: iterations, tbf: true)
        peers.merge(pyroute2) { first, _ in first }
        return [BenchRow(
            operation: "switch in process, proxy: tbf graft on 2 namespaces + read-back (no netem here)", ours_us: Summary(ours),
            floor_us: Summary(floor), peers: peers,
            notes: ["this kernel has no netem: the real switch (edge↔3g) runs in the kernel VM"] + (pyroute2.isEmpty ? ["pyroute2 did not run (pip install pyroute2)"] : []))]
    }
}

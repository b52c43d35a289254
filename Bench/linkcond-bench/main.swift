// linkcond-bench: linkcond against the floor (the same netlink requests from C, a bare C forwarder) and the
// peers (ip, tc, pyroute2, tcconfig's tcset), in one run, in throwaway namespaces and sandboxes of its own.
// Prints one table of medians and 95th percentiles (with --json the same rows as JSON); every wait is bounded.
//
//   sudo .build/release/linkcond-bench [iterations] [scale=N] [netlink-only] [no-prober] [--json]   everything (about 5 minutes)
//   sudo .build/release/linkcond-bench switch [N]      the in-process switch against the libmnl floor only
//   sudo .build/release/linkcond-bench apply [N]       linkcond apply as a process against the tc pair only
//   sudo .build/release/linkcond-bench scale [N]       N sandboxes with engines (default 200) only
//   sudo .build/release/linkcond-bench prober          the prober's detection of 100% loss only (about 3 minutes)
//   sudo .build/release/linkcond-bench engine [throughput] [rtt] [lateness] [timing] [polling] [jitter] [queues] [flood] [rounds=N]   the engine's detailed tables
//   sudo LINKCOND_STORE=DIR .build/release/linkcond-bench health NAME   the health check of a sandbox, in process
//
// Nothing outside the namespaces, sandboxes and stores it names after its process id is touched; they are
// removed at the end.
import Conditioning
import Netlink
import Foundation
import Glibc
import LinkcondBase
import LinkcondSystem
import NetNamespace
import PathMonitor
import RouteNetlink

func now() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

struct Row {
    let operation: String
    let ours: [Double]
    let peer: [Double]
    let peerName: String
}

func percentile(_ values: [Double], _ fraction: Double) -> Double {
    percentile(sorted: values.sorted(), fraction)
}

/// ``percentile(_:_:)`` of values already in order, for several quantiles of one large sample.
func percentile(sorted: [Double], _ fraction: Double) -> Double {
    guard !sorted.isEmpty else { return .nan }
    return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * fraction + 0.5))]
}

/// Runs a command with posix_spawn (the cheapest way a peer tool can run `ip`/`tc`) and waits for it, at
/// most 30 s (then it is killed); returns its exit status (-1 when it failed to start or was killed).
/// Output goes to `stdout` when given, else to /dev/null.
func runProcess(_ arguments: [String], stdout: FileHandle? = nil) -> Int32 {
    ProcessRunner.run(arguments, stdout: stdout?.fileDescriptor) == nil ? -1 : 0
}

func time(_ body: () throws -> Void) rethrows -> Double {
    let start = now()
    try body()
    return Double(now() - start) / 1000
}

guard geteuid() == 0 else {
    FileHandle.standardError.write(Data("linkcond-bench: needs root (it creates a throwaway network namespace)\n".utf8))
    exit(1)
}
// `linkcond-bench engine [throughput] [rtt] [lateness] [timing] [polling] [jitter] [queues] [flood]` runs only the userspace engine's rows (EngineBench*.swift).
if CommandLine.arguments.dropFirst().first == "engine" {
    EngineBench.run(parts: Set(CommandLine.arguments.dropFirst(2)))
    exit(0)
}
// `linkcond-bench switch [N]`: only the in-process switch, ours and the libmnl floor interleaved (for profiling).
if CommandLine.arguments.dropFirst().first == "switch" {
    let count = CommandLine.arguments.dropFirst(2).compactMap { Int($0) }.first ?? 1000
    let (ours, floor) = try NetlinkBench.tbfSwitch(iterations: count)
    let (o, f) = (percentile(ours, 0.5), percentile(floor, 0.5))
    print(String(format: "switch (tbf proxy, %d iterations): ours %.1f µs (p95 %.1f), floor %.1f µs (p95 %.1f), ratio %.2f×", count, o, percentile(ours, 0.95), f, percentile(floor, 0.95), o / f))
    exit(0)
}
if CommandLine.arguments.dropFirst().first == "exec" { _ = ProcessRunner.run(Array(CommandLine.arguments.dropFirst(2)), stdout: 1); exit(0) }
if CommandLine.arguments.dropFirst().first == "health" { try HealthProbe.run(CommandLine.arguments[2]); exit(0) }
// `linkcond-bench apply [N]`: only the whole-process rows (ProcessBench.swift).
if CommandLine.arguments.dropFirst().first == "apply" {
    let count = CommandLine.arguments.dropFirst(2).compactMap { Int($0) }.first ?? 30
    let executable = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("linkcond").path
    BenchOutput.print(
        ProcessBench.rows(iterations: count, linkcond: access(executable, X_OK) == 0 ? executable : nil), json: CommandLine.arguments.contains("--json"),
        header: "linkcond-bench apply: \(count) iterations")
    exit(0)
}
// `linkcond-bench scale [N]`: N sandboxes with engines and servers (ScaleBench.swift), 200 by default.
if CommandLine.arguments.dropFirst().first == "scale" {
    let count = CommandLine.arguments.dropFirst(2).compactMap { Int($0) }.first ?? 200
    let executable = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("linkcond").path
    BenchOutput.print(
        ScaleBench.run(count: count, linkcond: access(executable, X_OK) == 0 ? executable : nil), json: CommandLine.arguments.contains("--json"),
        header: "linkcond-bench scale: \(count) sandboxes, \(ProcessInfo.processInfo.activeProcessorCount) CPUs")
    exit(0)
}
// `linkcond-bench prober`: the prober's detection of 100% loss on LTE, 3G and Edge (ProberBench.swift).
if CommandLine.arguments.dropFirst().first == "prober" {
    let executable = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("linkcond").path
    BenchOutput.print(
        ProberBench.rows(linkcond: access(executable, X_OK) == 0 ? executable : nil), json: CommandLine.arguments.contains("--json"),
        header: "linkcond-bench prober")
    exit(0)
}
let iterations = CommandLine.arguments.dropFirst().compactMap { Int($0) }.first ?? 100
let json = CommandLine.arguments.contains("--json")
/// `scale=N` sets the sandboxes of the scale rows (default 20; `linkcond-bench scale 200` runs only those).
let scaleCount = CommandLine.arguments.first { $0.hasPrefix("scale=") }.flatMap { Int($0.dropFirst(6)) } ?? 20
let name = "lc-bench-\(getpid())"
let ip = "/usr/sbin/ip", tc = "/usr/sbin/tc"
let namespace = try NamedNamespace.create(name)
defer { try? namespace.delete() }
let client = RouteNetlinkClient(connection: try namespace.openNetlinkConnection(), namespace: name)
try client.setLink("lo", up: true)
try client.createVeth(name: "b0", index: 10, peerName: "b1", peerIndex: 11)
try client.setLink("b0", up: true)
try client.setLink("b1", up: true)
try client.addAddress(IPPrefix("198.18.200.1/24")!, to: "b0")
try client.addRoute(destination: nil, gateway: IPAddress("198.18.200.2")!, interface: "b0", metric: 10)

var rows: [Row] = []
var monitorMisses = 0

// 1. One link change: `ip link set` as a process versus one netlink request.
do {
    var ours: [Double] = []
    var peer: [Double] = []
    for index in 0..<iterations {
        let up = index % 2 == 1
        ours.append(try time { try client.setLink("b1", up: up) })
        peer.append(time { _ = runProcess([ip, "-n", name, "link", "set", "dev", "b1", up ? "up" : "down"]) })
    }
    try client.setLink("b1", up: true)
    rows.append(Row(operation: "link set down/up", ours: ours, peer: peer, peerName: "ip link set"))
}

// 2. Installing conditions: netem when the kernel has it (else pfifo), replace in place.
let hasNetem = (try? client.replaceQdisc(on: "b0", handle: TrafficControlHandle(major: 1, minor: 0), options: .netem(NetemParameters(), clock: .current()))) != nil
do {
    var ours: [Double] = []
    var peer: [Double] = []
    let clock = PacketSchedulerClock.current()
    for index in 0..<iterations {
        let delayMs = 10 + index % 50
        if hasNetem {
            var parameters = NetemParameters()
            parameters.delay = UInt64(delayMs) * 1_000_000
            parameters.rate = 30_000
            parameters.loss = NetemProbability.scaled(0.01)
            ours.append(try time {
                try client.replaceQdisc(on: "b0", handle: TrafficControlHandle(major: 1, minor: 0), options: .netem(parameters, clock: clock))
            })
            peer.append(time {
                _ = runProcess([tc, "-n", name, "qdisc", "replace", "dev", "b0", "root", "handle", "1:", "netem",
                                "delay", "\(delayMs)ms", "loss", "1%", "rate", "240kbit"])
            })
        } else {
            let limit = UInt32(100 + index)
            ours.append(try time {
                try client.replaceQdisc(on: "b0", handle: TrafficControlHandle(major: 1, minor: 0), options: .pfifo(limit: limit))
            })
            peer.append(time {
                _ = runProcess([tc, "-n", name, "qdisc", "replace", "dev", "b0", "root", "handle", "1:", "pfifo", "limit", "\(limit)"])
            })
        }
    }
    rows.append(Row(operation: hasNetem ? "qdisc replace (netem)" : "qdisc replace (pfifo; no netem here)", ours: ours, peer: peer, peerName: "tc qdisc replace"))
}

// 3. Reading conditions back: one dump, decoded, versus `tc -s -j qdisc show` parsed as JSON.
do {
    var ours: [Double] = []
    var peer: [Double] = []
    for _ in 0..<iterations {
        ours.append(try time { _ = try client.qdiscs() })
        peer.append(time {
            let pipe = Pipe()
            _ = runProcess([tc, "-n", name, "-s", "-j", "qdisc", "show"], stdout: pipe.fileHandleForWriting)
            try? pipe.fileHandleForWriting.close()
            _ = try? JSONSerialization.jsonObject(with: pipe.fileHandleForReading.readDataToEndOfFile())
        })
    }
    rows.append(Row(operation: "read qdiscs back", ours: ours, peer: peer, peerName: "tc -s -j qdisc show"))
}

// 4. Seeing a carrier loss: the path monitor's update versus the first line of `ip monitor link`.
do {
    let router = "lc-bench-r-\(getpid())"
    let routerNamespace = try NamedNamespace.create(router)
    defer { try? routerNamespace.delete() }
    let routerClient = RouteNetlinkClient(connection: try routerNamespace.openNetlinkConnection(), namespace: router)
    let descriptor = try OwnedFileDescriptor.open(namespace.path, .readOnly)
    try routerClient.createVeth(
        name: "w0", index: 20, in: NamespaceDescriptor(fileDescriptor: descriptor.descriptor.rawValue, name: name), peerName: "c0", peerIndex: 21)
    try routerClient.setLink("c0", up: true)
    try client.setLink("w0", up: true)
    try client.addAddress(IPPrefix("198.18.201.2/24")!, to: "w0")
    try client.deleteRoute(destination: nil, gateway: IPAddress("198.18.200.2")!, interface: "b0", metric: 10)
    try client.addRoute(destination: nil, gateway: IPAddress("198.18.201.1")!, interface: "w0", metric: 10)
    let monitor = PathMonitor(namespace: namespace)
    let latest = NSLock()
    nonisolated(unsafe) var seen: [UInt64] = []
    try monitor.start { update in
        latest.lock()
        seen.append(update.eventTime)
        latest.unlock()
    }
    usleep(200_000)
    var ours: [Double] = []
    var peer: [Double] = []
    for index in 0..<min(iterations, 60) {
        let up = index % 2 == 1
        latest.lock(); seen.removeAll(); latest.unlock()
        let start = now()
        try routerClient.setLink("c0", up: up)
        var deadline = 0
        while deadline < 2000 {
            latest.lock(); let first = seen.first; latest.unlock()
            if let first { ours.append(Double(first > start ? first - start : 0) / 1000); break }
            usleep(100)
            deadline += 1
        }
        // ip monitor: start it, change the link, time the first line it prints.
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ip)
        process.arguments = ["-n", name, "monitor", "link"]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        usleep(50_000)
        let peerStart = now()
        try routerClient.setLink("c0", up: !up)
        if waitReadable(pipe.fileHandleForReading.fileDescriptor, milliseconds: 2000) {
            peer.append(Double(now() - peerStart) / 1000)
        } else {
            monitorMisses += 1
        }
        process.terminate()
        process.waitUntilExit()
        try routerClient.setLink("c0", up: up)
        usleep(20_000)
    }
    monitor.cancel()
    rows.append(Row(operation: "see a carrier loss", ours: ours, peer: peer, peerName: "ip monitor link"))
}

let linkcondPath = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("linkcond").path
let linkcond = access(linkcondPath, X_OK) == 0 ? linkcondPath : nil
var table = rows.map { row in
    BenchRow(
        operation: row.operation, ours_us: Summary(row.ours), floor_us: nil, peers: Summary(row.peer).map { [row.peerName: $0] } ?? [:],
        notes: row.operation == "see a carrier loss" && monitorMisses > 0 ? ["ip monitor printed nothing within 2 s \(monitorMisses) times"] : [])
}
// The switch: in process against the libmnl floor (and, with netem, `linkcond apply` as a process against the peers).
table += try NetlinkBench.rows(iterations: iterations, hasNetem: hasNetem, linkcond: linkcond)
// `netlink-only` (the kernel VM, where TCG makes the rest slow) leaves out the userspace engine's rows.
if !CommandLine.arguments.contains("netlink-only") {
    // `linkcond apply` as a process through the userspace engine against the tc pair, and start-up.
    table += ProcessBench.rows(iterations: min(iterations, 40), linkcond: linkcond)
    // Sandboxes at scale (`linkcond-bench scale 200` for the full run).
    if scaleCount > 0 { table += ScaleBench.run(count: scaleCount, linkcond: linkcond, deadlineSeconds: 300) }
    // The userspace engine's data plane against the bare C forwarder and a bare veth pair.
    table += EngineBench.tableRows()
    // The engine's fidelity at the wire: ordered jitter at three rates, and each queue discipline under load.
    table += EngineFidelityBench.tableRows()
    // The prober's detection of 100% loss, adaptive against fixed timeouts (`no-prober` leaves it out).
    if !CommandLine.arguments.contains("no-prober") { table += ProberBench.rows(linkcond: linkcond) }
}
let loadAverage = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3).joined(separator: " ") ?? "?"
BenchOutput.print(
    table, json: json,
    header: "linkcond-bench: \(iterations) iterations, kernel \(ProcessInfo.processInfo.operatingSystemVersionString), \(ProcessInfo.processInfo.activeProcessorCount) CPUs, load average at the end \(loadAverage)")

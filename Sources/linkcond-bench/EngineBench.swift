import Foundation
import Glibc
import LinkEmulation
import NetNamespace
import PacketEngine
import RouteNetlink

/// The userspace engine's rows of linkcond-bench, measured side by side in one run:
/// - TCP throughput through the unconditioned engine, a bare veth pair and the bare C forwarder, with the
///   CPU each forwarder spends per Gbit/s;
/// - the round-trip time the engine adds over a bare veth pair (ICMP echo, median and p99);
/// - departure lateness under a 50 ms delay at 1,000 and 50,000 frames/s.
///
///   sudo .build/release/linkcond-bench engine
enum EngineBench {
    static let throughputSeconds = 3.0
    static let echoSamples = 1000

    struct ThroughputRow {
        var name: String
        var bitsPerSecond: Double
        /// Forwarder CPU seconds per wall second during the window; nil when there is no forwarder.
        var cpuLoad: Double?
    }

    struct LatenessRow {
        var name: String
        var sent: Int
        var summary: LatencySummary
        var late: Double
    }

    /// Runs every engine row and prints them. Failures are printed, never thrown: each row cleans up after itself.
    static func run() {
        let loadAverage = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3).joined(separator: " ") ?? "?"
        print("userspace engine: \(ProcessInfo.processInfo.activeProcessorCount) CPUs, load average \(loadAverage) (other work on the machine skews every row)")
        var throughput: [ThroughputRow] = []
        var echoes: [(String, [Double])] = []
        var lateness: [LatenessRow] = []
        attempt("bare veth pair") {
            let lab = try BenchLab(tag: "veth", throughWire: false)
            defer { lab.remove() }
            try waitForPath(lab)
            throughput.append(ThroughputRow(name: "bare veth pair (veth offloads)", bitsPerSecond: try tcp(lab), cpuLoad: nil))
            echoes.append(("bare veth pair", try BenchTraffic.echoRoundTrips(from: lab.client, to: BenchLab.routerV4, count: echoSamples)))
        }
        attempt("bare veth pair, offloads off") {
            let lab = try BenchLab(tag: "vethoff", throughWire: false, offloadsOff: true)
            defer { lab.remove() }
            try waitForPath(lab)
            throughput.append(ThroughputRow(name: "bare veth pair (offloads off)", bitsPerSecond: try tcp(lab), cpuLoad: nil))
        }
        attempt("bare C forwarder") {
            let lab = try BenchLab(tag: "bare", throughWire: true)
            defer { lab.remove() }
            let forwarder = try BareForwarder(lab.ends!)
            defer { forwarder.stop() }
            try waitForPath(lab)
            var cpu: [UInt64] = []
            var wall: [Double] = []
            let rate = try tcp(lab) { _ in
                cpu.append(forwarder.cpuTime)
                wall.append(BenchTraffic.seconds())
            }
            throughput.append(ThroughputRow(name: "bare C forwarder (offloads off)", bitsPerSecond: rate, cpuLoad: load(cpu, wall)))
            echoes.append(("bare C forwarder", try BenchTraffic.echoRoundTrips(from: lab.client, to: BenchLab.routerV4, count: echoSamples)))
        }
        attempt("engine") {
            let lab = try BenchLab(tag: "engine", throughWire: true)
            defer { lab.remove() }
            let runtime = try EngineRuntime(wire: lab.ends!, uplink: PassThroughScheduler(), downlink: PassThroughScheduler())
            defer { runtime.stop() }
            try runtime.start()
            try waitForPath(lab)
            var cpu: [UInt64] = []
            var wall: [Double] = []
            let rate = try tcp(lab) { _ in
                cpu.append(engineCPU(runtime))
                wall.append(BenchTraffic.seconds())
            }
            throughput.append(ThroughputRow(name: "engine, pass-through (offloads off)", bitsPerSecond: rate, cpuLoad: load(cpu, wall)))
            echoes.append(("engine, pass-through", try BenchTraffic.echoRoundTrips(from: lab.client, to: BenchLab.routerV4, count: echoSamples)))
        }
        attempt("departure lateness") {
            let lab = try BenchLab(tag: "late", throughWire: true)
            defer { lab.remove() }
            for (rate, spin) in [(1_000, UInt64(0)), (50_000, 0), (1_000, 50_000), (50_000, 50_000)] {
                let runtime = try EngineRuntime(
                    wire: lab.ends!, options: EngineOptions(spin: spin), uplink: FixedDelayScheduler(delay: 50_000_000, capacity: 8192),
                    downlink: FixedDelayScheduler(delay: 0))
                defer { runtime.stop() }
                try runtime.start()
                try waitForPath(lab)
                let sent = try BenchTraffic.pacedDatagrams(
                    from: lab.client, to: lab.router, address: BenchLab.routerV4, port: 40_500, rate: rate, seconds: 2)
                let statistics = runtime.statistics(of: .uplink)
                let late = Double(statistics.lateness.counts.enumerated().reduce(UInt64(0)) { total, bucket in
                    LatencyHistogram.bucketRange(bucket.offset).lowerBound > 200_000 ? total + bucket.element : total
                }) / Double(max(1, statistics.lateness.count))
                lateness.append(LatenessRow(
                    name: "\(rate.formatted()) frames/s, spin \(spin / 1000) µs", sent: sent, summary: statistics.lateness.summary, late: late))
                runtime.stop()
            }
        }
        printTables(throughput, echoes, lateness)
    }

    private static func attempt(_ row: String, _ body: () throws -> Void) {
        do {
            try body()
        } catch {
            print("  \(row): failed: \(error)")
        }
    }

    /// Pings until the path answers (neighbour resolution done), at most 5 s.
    private static func waitForPath(_ lab: BenchLab) throws {
        let deadline = BenchTraffic.seconds() + 5
        while BenchTraffic.seconds() < deadline {
            if try !BenchTraffic.echoRoundTrips(from: lab.client, to: BenchLab.routerV4, count: 1, gap: 0).isEmpty { return }
        }
        throw BenchFailure("no echo reply through \(lab.wire?.name ?? lab.client.name) within 5 s")
    }

    private static func tcp(_ lab: BenchLab, window: (Bool) -> Void = { _ in }) throws -> Double {
        try BenchTraffic.tcpThroughput(
            from: lab.client, to: lab.router, address: BenchLab.routerV4, port: 40_400, seconds: throughputSeconds, window: window)
    }

    private static func engineCPU<S>(_ runtime: EngineRuntime<S>) -> UInt64 {
        Direction.allCases.reduce(0) { total, direction in
            let statistics = runtime.statistics(of: direction)
            return total + statistics.userCPU + statistics.systemCPU
        }
    }

    private static func load(_ cpu: [UInt64], _ wall: [Double]) -> Double? {
        guard cpu.count == 2, wall.count == 2, wall[1] > wall[0] else { return nil }
        return Double(cpu[1] &- cpu[0]) / 1e9 / (wall[1] - wall[0])
    }
}

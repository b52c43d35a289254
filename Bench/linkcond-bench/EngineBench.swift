import EngineBenchIO
import Foundation
import Glibc
import LinkEmulation
import NetNamespace
import PacketEngine
import RouteNetlink

/// The userspace engine's rows of linkcond-bench, measured side by side in one run:
/// - TCP throughput through the unconditioned engine, a bare veth pair and the bare C forwarder, with the
///   CPU each forwarder spends per Gbit/s (rounds interleaved, best and median reported, so a burst of other
///   work on the machine hits every subject alike);
/// - the round-trip time the engine adds over a bare veth pair (ICMP echo, median and p99);
/// - departure lateness under a 50 ms delay at 1,000 and 50,000 frames/s;
/// - an unconditioned UDP flood, with where every lost datagram went (EngineBenchFlood.swift).
///
///   sudo .build/release/linkcond-bench engine
enum EngineBench {
    static let throughputSeconds = 2.0
    nonisolated(unsafe) static var rounds = 3
    static let echoSamples = 1000

    /// Something traffic crosses: a lab, and the forwarder running in it (if any).
    final class Subject {
        let name: String
        let lab: BenchLab
        /// CPU time of the forwarder so far, in nanoseconds; nil when nothing forwards (a bare veth pair).
        let cpuTime: (() -> UInt64)?
        /// True when the forwarder is a process of its own (its CPU is not in this process's).
        let separateProcess: Bool
        let measuresRTT: Bool
        private let stopForwarder: () -> Void
        var rates: [Double] = []
        var loads: [Double] = []
        /// Everything's CPU seconds per second: this process (traffic, kernel work done in its threads' context,
        /// the engine) plus a forwarder process.
        var totals: [Double] = []

        init(
            _ name: String, _ lab: BenchLab, measuresRTT: Bool, cpuTime: (() -> UInt64)? = nil, separateProcess: Bool = false,
            stop: @escaping () -> Void = {}
        ) {
            self.name = name
            self.lab = lab
            self.cpuTime = cpuTime
            self.separateProcess = separateProcess
            self.measuresRTT = measuresRTT
            stopForwarder = stop
        }

        func remove() {
            stopForwarder()
            lab.remove()
        }
    }

    struct LatenessRow {
        var name: String
        var summary: LatencySummary
        var late: Double
    }

    /// Runs the engine's rows and prints them: `parts` picks among `throughput`, `rtt`, `lateness`, `timing`, `polling`, `jitter`,
    /// `queues` and `flood`
    /// (empty: all), `rounds=N` sets the throughput rounds. Failures are printed, never thrown; everything is
    /// removed at the end.
    static func run(parts requested: Set<String> = []) {
        if let rounds = requested.first(where: { $0.hasPrefix("rounds=") }).flatMap({ Int($0.dropFirst(7)) }) { Self.rounds = max(1, rounds) }
        let parts = requested.filter { !$0.hasPrefix("rounds=") }
        let all = parts.isEmpty
        let loadAverage = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3).joined(separator: " ") ?? "?"
        print("userspace engine: \(ProcessInfo.processInfo.activeProcessorCount) CPUs, load average \(loadAverage) (other work on the machine skews every row)")
        var subjects: [Subject] = []
        defer { for subject in subjects { subject.remove() } }
        if all || parts.contains("throughput") || parts.contains("rtt") { attempt("set up") { subjects = try makeSubjects() } }
        for _ in 0..<(all || parts.contains("throughput") ? rounds : 0) {
            for subject in subjects {
                attempt(subject.name) {
                    var cpu: [UInt64] = []
                    var total: [UInt64] = []
                    var wall: [Double] = []
                    let rate = try BenchTraffic.tcpThroughput(
                        from: subject.lab.client, to: subject.lab.router, address: BenchLab.routerV4, port: 40_400, seconds: throughputSeconds
                    ) { _ in
                        let forwarder = subject.cpuTime?()
                        if let forwarder { cpu.append(forwarder) }
                        total.append(processCPU() + (subject.separateProcess ? forwarder ?? 0 : 0))
                        wall.append(BenchTraffic.seconds())
                    }
                    subject.rates.append(rate)
                    if cpu.count == 2 { subject.loads.append(Double(cpu[1] &- cpu[0]) / 1e9 / (wall[1] - wall[0])) }
                    subject.totals.append(Double(total[1] &- total[0]) / 1e9 / (wall[1] - wall[0]))
                }
            }
        }
        var echoes: [(String, [Double])] = []
        for subject in subjects where subject.measuresRTT && (all || parts.contains("rtt")) {
            attempt("round trips through \(subject.name)") {
                echoes.append((subject.name, try BenchTraffic.echoRoundTrips(from: subject.lab.client, to: BenchLab.routerV4, count: echoSamples)))
            }
        }
        var lateness: [LatenessRow] = []
        if all || parts.contains("lateness") { attempt("departure lateness") { lateness = try measureLateness() } }
        printTables(subjects, echoes, lateness)
        if all || parts.contains("timing") { EngineTimingBench.printDetailed() }
        if all || parts.contains("polling") { EngineTimingBench.printRoundTrips() }
        if all || parts.contains("jitter") { EngineFidelityBench.printJitter() }
        if all || parts.contains("queues") { EngineFidelityBench.printQueues() }
        if all || parts.contains("flood") {
            print("")
            print("Unconditioned UDP flood through the engine, 2 s, where every datagram went")
            for payload in [64, 1472] {
                attempt("flood of \(payload)-byte datagrams") {
                    let outcome = try EngineFlood.run(payload: payload, seconds: 2)
                    print("  \(payload) B: \(outcome.text)")
                }
            }
        }
        let dispatch = EngineBenchDispatch.measure()
        print("")
        print(String(
            format: "Scheduler call (offer, opaque pass-through model): specialized generic %.2f ns, unspecialized generic %.2f ns, existential %.2f ns",
            dispatch.specialized, dispatch.unspecialized, dispatch.existential))
    }

    /// The engine's rows of the one table: a bare veth pair (offloads off), the bare C forwarder (the floor)
    /// and the engine (default receive method), rounds interleaved; throughput as the time 1 MiB takes, CPU
    /// per Mbit forwarded, the echo round trip, and departure lateness under a 50 ms delay. Failures become notes.
    static func tableRows(rounds: Int = 3, echoes: Int = 500) -> [BenchRow] {
        var notes: [String] = []
        var subjects: [Subject] = []
        defer { for subject in subjects { subject.remove() } }
        func note(_ what: String, _ work: () throws -> Void) {
            do { try work() } catch { notes.append("\(what): failed: \(error)") }
        }
        do {
            subjects = try makeSubjects(compact: true)
        } catch {
            return [BenchRow(operation: "engine", ours_us: nil, floor_us: nil, peers: [:], notes: ["could not set up: \(error)"])]
        }
        for _ in 0..<rounds {
            for subject in subjects {
                note(subject.name) {
                    var cpu: [UInt64] = [], wall: [Double] = []
                    let rate = try BenchTraffic.tcpThroughput(
                        from: subject.lab.client, to: subject.lab.router, address: BenchLab.routerV4, port: 40_400, seconds: throughputSeconds
                    ) { _ in
                        if let forwarder = subject.cpuTime?() { cpu.append(forwarder) }
                        wall.append(BenchTraffic.seconds())
                    }
                    subject.rates.append(rate)
                    if cpu.count == 2 { subject.loads.append(Double(cpu[1] &- cpu[0]) / 1e9 / (wall[1] - wall[0])) }
                }
            }
        }
        var roundTrips: [String: [Double]] = [:]
        for subject in subjects {
            note("round trips through \(subject.name)") {
                roundTrips[subject.name] = try BenchTraffic.echoRoundTrips(from: subject.lab.client, to: BenchLab.routerV4, count: echoes)
            }
        }
        let (veth, bare, engine) = (subjects[0], subjects[1], subjects[2])
        // 1 MiB = 8,388,608 bits: microseconds = 8.388608e12 / rate in bit/s.
        func perMiB(_ subject: Subject) -> Summary? { Summary(subject.rates.filter { $0 > 0 }.map { 8_388_608e6 / $0 }) }
        // CPU seconds per Gbit (load / Gbit/s) = microseconds per Mbit.
        func cpuPerMbit(_ subject: Subject) -> Summary? {
            Summary(zip(subject.loads, subject.rates).filter { $0.1 > 0 }.map { $0.0 / ($0.1 / 1e9) * 1e3 })
        }
        var lateness: [BenchRow] = []
        // Default threads and SCHED_FIFO ones (what LINKCOND_ENGINE_PRIORITY asks for), at both rates.
        for (rate, realtime) in [(1_000, nil), (50_000, nil), (1_000, 10), (50_000, 10)] as [(Int, Int32?)] {
            let mode = realtime.map { ", SCHED_FIFO \($0)" } ?? ""
            note("departure lateness at \(rate) frames/s\(mode)") {
                let lab = try BenchLab(tag: "late", throughWire: true)
                defer { lab.remove() }
                let runtime = try EngineRuntime(
                    wire: lab.ends!, options: EngineOptions(realtimePriority: realtime), uplink: FixedDelayScheduler(delay: 50_000_000, capacity: 8192),
                    downlink: FixedDelayScheduler(delay: 0))
                defer { runtime.stop() }
                try runtime.start()
                try waitForPath(lab)
                _ = try BenchTraffic.pacedDatagrams(from: lab.client, to: lab.router, address: BenchLab.routerV4, port: 40_500, rate: rate, seconds: 2)
                let histogram = runtime.statistics(of: .uplink).lateness
                if let median = histogram.quantile(0.5), let p95 = histogram.quantile(0.95), let p99 = histogram.quantile(0.99) {
                    lateness.append(BenchRow(
                        operation: "engine: departure lateness, 50 ms delay, \(rate.formatted()) frames/s\(mode)",
                        ours_us: Summary(median: Double(median) / 1000, p95: Double(p95) / 1000, samples: Int(histogram.count)),
                        floor_us: nil, peers: [:],
                        notes: [String(format: "p99 %.1f µs, maximum %.2f ms (%llu frames)", Double(p99) / 1000, Double(histogram.maximum) / 1e6, histogram.count)]))
                }
            }
        }
        return [
            BenchRow(
                operation: "engine: TCP, 1 stream, time per MiB (from throughput; \(rounds) × \(Int(throughputSeconds)) s)", ours_us: perMiB(engine),
                floor_us: perMiB(bare), peers: perMiB(veth).map { ["bare veth pair, offloads off": $0] } ?? [:],
                notes: ["floor: a bare AF_PACKET forwarder in C between the same wire ends"] + notes),
            BenchRow(
                operation: "engine: forwarder CPU per Mbit forwarded", ours_us: cpuPerMbit(engine), floor_us: cpuPerMbit(bare), peers: [:], notes: []),
            BenchRow(
                operation: "engine: ICMP echo round trip through the wire (\(echoes) samples)", ours_us: Summary(roundTrips[engine.name] ?? []),
                floor_us: Summary(roundTrips[bare.name] ?? []), peers: Summary(roundTrips[veth.name] ?? []).map { ["bare veth pair": $0] } ?? [:],
                notes: []),
        ] + lateness + EngineFlood.rows()
    }


    private static func makeSubjects(compact: Bool = false) throws -> [Subject] {
        var subjects: [Subject] = []
        do {
            if compact {
                subjects.append(Subject("bare veth pair (offloads off)", try BenchLab(tag: "vethoff", throughWire: false, offloadsOff: true), measuresRTT: true))
            } else {
                subjects.append(Subject("bare veth pair (veth offloads)", try BenchLab(tag: "veth", throughWire: false), measuresRTT: true))
                subjects.append(Subject("bare veth pair (offloads off)", try BenchLab(tag: "vethoff", throughWire: false, offloadsOff: true), measuresRTT: false))
            }
            let bareLab = try BenchLab(tag: "bare", throughWire: true)
            let bare = try BareForwarder(bareLab.ends!)
            subjects.append(Subject("bare C forwarder (offloads off)", bareLab, measuresRTT: true, cpuTime: { bare.cpuTime }, separateProcess: true,
                stop: { bare.stop() }))
            if compact {
                let ringLab = try BenchLab(tag: "engring", throughWire: true)
                let ringEngine = try EngineRuntime(wire: ringLab.ends!, uplink: PassThroughScheduler(), downlink: PassThroughScheduler())
                try ringEngine.start()
                subjects.append(Subject("engine, ring (offloads off; default)", ringLab, measuresRTT: true, cpuTime: { engineCPU(ringEngine) },
                    stop: { ringEngine.stop() }))
                for subject in subjects { try waitForPath(subject.lab) }
                return subjects
            }
            let engineLab = try BenchLab(tag: "engine", throughWire: true)
            let engine = try EngineRuntime(
                wire: engineLab.ends!, options: EngineOptions(), uplink: PassThroughScheduler(), downlink: PassThroughScheduler(),
                source: BenchReaders.recvmmsg)
            try engine.start()
            subjects.append(Subject("engine, recvmmsg (offloads off)", engineLab, measuresRTT: true, cpuTime: { engineCPU(engine) }, stop: { engine.stop() }))
            let ringLab = try BenchLab(tag: "engring", throughWire: true)
            let ringEngine = try EngineRuntime(wire: ringLab.ends!, uplink: PassThroughScheduler(), downlink: PassThroughScheduler())
            try ringEngine.start()
            subjects.append(Subject("engine, ring (offloads off; default)", ringLab, measuresRTT: true, cpuTime: { engineCPU(ringEngine) },
                stop: { ringEngine.stop() }))
            let groLab = try BenchLab(tag: "enggro", throughWire: true, groOnPeers: true)
            let groEngine = try EngineRuntime(wire: groLab.ends!, uplink: PassThroughScheduler(), downlink: PassThroughScheduler())
            try groEngine.start()
            subjects.append(Subject("engine, ring, GRO on the peers", groLab, measuresRTT: true, cpuTime: { engineCPU(groEngine) },
                stop: { groEngine.stop() }))
            let segmentLab = try BenchLab(tag: "engseg", throughWire: true, mode: .segmentInEngine)
            let segmenting = try EngineRuntime(
                wire: segmentLab.ends!, options: EngineOptions(), uplink: PassThroughScheduler(), downlink: PassThroughScheduler(),
                source: BenchReaders.segmentingRecvmmsg(counters: SegmentationCounters()))
            try segmenting.start()
            subjects.append(Subject("engine, recvmmsg, GSO cut in the engine", segmentLab, measuresRTT: false, cpuTime: { engineCPU(segmenting) },
                stop: { segmenting.stop() }))
            let ringSegmentLab = try BenchLab(tag: "engringseg", throughWire: true, mode: .segmentInEngine)
            let ringSegmenting = try EngineRuntime(
                wire: ringSegmentLab.ends!, options: EngineOptions(), uplink: PassThroughScheduler(), downlink: PassThroughScheduler(),
                source: BenchReaders.segmentingRing(counters: SegmentationCounters()))
            try ringSegmenting.start()
            subjects.append(Subject("engine, ring, GSO cut in the engine", ringSegmentLab, measuresRTT: false, cpuTime: { engineCPU(ringSegmenting) },
                stop: { ringSegmenting.stop() }))
            let vnetLab = try BenchLab(tag: "barevnet", throughWire: true, keepOffloads: true)
            let vnet = try BareForwarder(vnetLab.ends!, vnet: true)
            subjects.append(Subject("bare C, GSO whole (partial csum; unsafe)", vnetLab, measuresRTT: false, cpuTime: { vnet.cpuTime },
                separateProcess: true, stop: { vnet.stop() }))
            for subject in subjects { try waitForPath(subject.lab) }
        } catch {
            for subject in subjects { subject.remove() }
            throw error
        }
        return subjects
    }

    private static func measureLateness() throws -> [LatenessRow] {
        let lab = try BenchLab(tag: "late", throughWire: true)
        defer { lab.remove() }
        let settings: [(rate: Int, timing: DepartureTiming, realtime: Int32?)] = [
            (1_000, .timerOnly, nil), (50_000, .timerOnly, nil), (1_000, .fixedLead(50_000), nil), (50_000, .fixedLead(50_000), nil),
            (1_000, .standard, nil), (50_000, .standard, nil), (1_000, .timerOnly, 10), (50_000, .timerOnly, 10), (50_000, .standard, 10),
        ]
        var rows: [LatenessRow] = []
        for (rate, timing, realtime) in settings {
            let runtime = try EngineRuntime(
                wire: lab.ends!, options: EngineOptions(departureTiming: timing, realtimePriority: realtime),
                uplink: FixedDelayScheduler(delay: 50_000_000, capacity: 8192), downlink: FixedDelayScheduler(delay: 0))
            defer { runtime.stop() }
            try runtime.start()
            try waitForPath(lab)
            _ = try BenchTraffic.pacedDatagrams(from: lab.client, to: lab.router, address: BenchLab.routerV4, port: 40_500, rate: rate, seconds: 2)
            let histogram = runtime.statistics(of: .uplink).lateness
            let late = histogram.counts.enumerated().reduce(UInt64(0)) { total, bucket in
                LatencyHistogram.bucketRange(bucket.offset).lowerBound > 200_000 ? total + bucket.element : total
            }
            rows.append(LatenessRow(
                name: "\(rate.formatted()) frames/s, \(timingName(timing))\(realtime.map { ", SCHED_FIFO \($0)" } ?? "")",
                summary: histogram.summary, late: Double(late) / Double(max(1, histogram.count))))
            runtime.stop()
        }
        return rows
    }

    static func timingName(_ timing: DepartureTiming) -> String {
        switch timing {
        case .timerOnly: "timer only"
        case .fixedLead(let lead): "lead \(lead / 1000) µs"
        case .adaptiveLead(let maximum): "adaptive lead ≤ \(maximum / 1000) µs"
        }
    }

    private static func attempt(_ row: String, _ body: () throws -> Void) {
        do {
            try body()
        } catch {
            print("  \(row): failed: \(error)")
        }
    }

    /// Pings until the path answers (neighbour resolution done), at most 5 s.
    static func waitForPath(_ lab: BenchLab) throws {
        let deadline = BenchTraffic.seconds() + 5
        while BenchTraffic.seconds() < deadline {
            if try !BenchTraffic.echoRoundTrips(from: lab.client, to: BenchLab.routerV4, count: 1, gap: 0).isEmpty { return }
        }
        throw BenchFailure("no echo reply through \(lab.wire?.name ?? lab.client.name) within 5 s")
    }

    /// User and system CPU time of this whole process so far (`getrusage(RUSAGE_SELF)`), in nanoseconds.
    private static func processCPU() -> UInt64 {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let user = UInt64(usage.ru_utime.tv_sec) * 1_000_000_000 + UInt64(usage.ru_utime.tv_usec) * 1000
        return user + UInt64(usage.ru_stime.tv_sec) * 1_000_000_000 + UInt64(usage.ru_stime.tv_usec) * 1000
    }

    static func engineCPU<S>(_ runtime: EngineRuntime<S>) -> UInt64 {
        Direction.allCases.reduce(0) { total, direction in
            let statistics = runtime.statistics(of: direction)
            return total + statistics.userCPU + statistics.systemCPU
        }
    }
}

import EngineBenchIO
import Foundation
import LinkEmulation
import LinkcondBase
import LinkcondSystem
import PacketEngine
import Synchronization

/// The engine's timing rows: the one-way excess over a 50 ms delay at 1,000 and 50,000 frames/s, from the
/// kernel's capture stamps as each datagram left the client's interface and reached the router's
/// (``OneWayProbe``), with the engine's timing as shipped, with its knobs off (arrival taken when read,
/// the timer alone wakes departures: the model before), and the transit of the bare C forwarder and of a
/// bare veth pair (no delay); the engine's CPU meanwhile and with no traffic; a timerfd's wake-up latency
/// on this machine (the floor of any departure that sleeps).
enum EngineTimingBench {
    static let delay: UInt64 = 50_000_000
    static let seconds = 2.0

    /// A configuration of the engine the one-way rows compare.
    struct Variant {
        var name: String
        var options: EngineOptions

        static let shipped = Variant(name: "engine (kernel stamps, adaptive lead)", options: EngineOptions())
        static let knobsOff = Variant(
            name: "engine, knobs off (read time, timer only)", options: EngineOptions(kernelArrivalStamps: false, departureTiming: .timerOnly))
        static let stampsOnly = Variant(name: "engine, kernel stamps, timer only", options: EngineOptions(departureTiming: .timerOnly))
        static let leadOnly = Variant(name: "engine, read time, adaptive lead", options: EngineOptions(kernelArrivalStamps: false))
    }

    /// What one run of the probe through a subject gave.
    struct OneWay {
        var name: String
        var rate: Int
        /// Excess over the delay (or the transit, with no delay), sorted, in nanoseconds.
        var excess: [Int64]
        var result: OneWayProbe.Result
        /// The engine's CPU seconds per second during the run (nil: not the engine).
        var engineLoad: Double?
        /// The engine's uplink timer wake-ups and departure spin during the run.
        var wakeups: LatencySummary?
        var spin: UInt64?
        /// The engine's uplink counters, when they show a frame lost or its stamp not used.
        var losses: String?

        func quantile(_ fraction: Double) -> Double {
            guard !excess.isEmpty else { return .nan }
            return Double(excess[min(excess.count - 1, Int(Double(excess.count - 1) * fraction + 0.5))]) / 1000
        }

        var summary: Summary? {
            excess.isEmpty ? nil : Summary(median: quantile(0.5), p95: quantile(0.95), samples: excess.count)
        }

        var text: String {
            String(
                format: "%@ at %@ frames/s: median %.1f µs, p99 %.1f µs, max %.1f µs, min %.1f µs (%d of %d sent seen at both ends%@)%@",
                name, rate.formatted(), quantile(0.5), quantile(0.99), quantile(1), quantile(0), excess.count, result.sent,
                result.captureDrops > 0 ? ", \(result.captureDrops) dropped by the captures" : "",
                engineLoad.map { String(format: "; engine CPU %.1f%%", $0 * 100) } ?? "")
        }
    }

    /// The one-way excess through the engine in `variant`, with `FixedDelayScheduler(delay)` on the uplink.
    static func engine(_ variant: Variant, rate: Int, lab: BenchLab) throws -> OneWay {
        let runtime = try EngineRuntime(
            wire: lab.ends!, options: variant.options, uplink: FixedDelayScheduler(delay: delay, capacity: 8192),
            downlink: FixedDelayScheduler(delay: 0))
        defer { runtime.stop() }
        try runtime.start()
        try EngineBench.waitForPath(lab)
        let before = EngineBench.engineCPU(runtime)
        let start = BenchTraffic.seconds()
        let result = try probe(lab, rate: rate)
        let load = Double(EngineBench.engineCPU(runtime) &- before) / 1e9 / (BenchTraffic.seconds() - start)
        let uplink = runtime.statistics(of: .uplink)
        let lost = uplink.dropped + uplink.receiveOverruns + uplink.sendFailures + uplink.stampFallbacks
        return OneWay(
            name: variant.name, rate: rate, excess: result.excess(over: delay), result: result, engineLoad: load, wakeups: uplink.timerWakeups.summary,
            spin: uplink.departureSpin,
            losses: lost == 0
                ? nil
                : "uplink: dropped \(uplink.dropped), receive overruns \(uplink.receiveOverruns), send failures \(uplink.sendFailures), stamp fallbacks \(uplink.stampFallbacks)")
    }

    /// The transit through `lab` as it is (a bare forwarder running in it, or a bare veth pair).
    static func transit(_ name: String, rate: Int, lab: BenchLab) throws -> OneWay {
        let result = try probe(lab, rate: rate)
        return OneWay(name: name, rate: rate, excess: result.excess(over: 0), result: result)
    }

    private static func probe(_ lab: BenchLab, rate: Int) throws -> OneWayProbe.Result {
        try OneWayProbe.measure(
            client: lab.client, clientInterface: "wl0", serverNamespace: lab.router, serverInterface: "c-wl0", server: BenchLab.routerV4,
            port: 40_600, rate: rate, seconds: seconds, settle: Double(delay) / 1e9 + 0.2)
    }

    /// The engine's CPU time over `seconds` with no traffic, in CPU seconds per second.
    static func idleLoad(lab: BenchLab, seconds: Double = 2) throws -> Double {
        let runtime = try EngineRuntime(
            wire: lab.ends!, uplink: FixedDelayScheduler(delay: delay), downlink: FixedDelayScheduler(delay: 0))
        defer { runtime.stop() }
        try runtime.start()
        try EngineBench.waitForPath(lab)
        // Let the path's last frames (the echo and its 50 ms delay) go.
        usleep(200_000)
        let before = EngineBench.engineCPU(runtime)
        let start = BenchTraffic.seconds()
        usleep(UInt32(seconds * 1e6))
        return Double(EngineBench.engineCPU(runtime) &- before) / 1e9 / (BenchTraffic.seconds() - start)
    }

    /// The timerfd probe: 2,000 wake-ups 1 ms apart.
    static func timerFloor() -> LatencySummary {
        TimerWakeProbe.measure(count: 2000, period: 1_000_000).summary
    }

    /// Every one-way run of the detailed table (`linkcond-bench engine timing`), and the idle load.
    static func detailed() -> (runs: [OneWay], idle: Double?, floor: LatencySummary, failures: [String]) {
        var runs: [OneWay] = []
        var failures: [String] = []
        var idle: Double?
        let floor = timerFloor()
        func attempt(_ what: String, _ body: () throws -> Void) {
            do { try body() } catch { failures.append("\(what): \(error)") }
        }
        attempt("set up") {
            let lab = try BenchLab(tag: "owe", throughWire: true)
            defer { lab.remove() }
            for rate in [1_000, 50_000] {
                for variant in [Variant.shipped, .knobsOff, .stampsOnly, .leadOnly] {
                    attempt("\(variant.name) at \(rate) frames/s") { runs.append(try engine(variant, rate: rate, lab: lab)) }
                }
            }
            attempt("idle engine") { idle = try idleLoad(lab: lab) }
        }
        attempt("bare C forwarder") {
            let lab = try BenchLab(tag: "owb", throughWire: true)
            defer { lab.remove() }
            let bare = try BareForwarder(lab.ends!)
            defer { bare.stop() }
            try EngineBench.waitForPath(lab)
            for rate in [1_000, 50_000] { runs.append(try transit("bare C forwarder, transit (no delay)", rate: rate, lab: lab)) }
        }
        attempt("bare veth pair") {
            let lab = try BenchLab(tag: "owv", throughWire: false, offloadsOff: true)
            defer { lab.remove() }
            try EngineBench.waitForPath(lab)
            for rate in [1_000, 50_000] { runs.append(try transit("bare veth pair, transit", rate: rate, lab: lab)) }
        }
        return (runs, idle, floor, failures)
    }

    /// Prints the detailed table.
    static func printDetailed() {
        let (runs, idle, floor, failures) = detailed()
        print("")
        print("One-way excess over a 50 ms delay (capture stamps at the client's wl0 and the router's c-wl0), \(Int(seconds)) s per run")
        for run in runs {
            print("  " + run.text)
            if let wakeups = run.wakeups, wakeups.count > 0 {
                print("      uplink timer wake-ups \(wakeups), departure spin \(String(format: "%.1f", Double(run.spin ?? 0) / 1e6)) ms")
            }
            if let losses = run.losses { print("      \(losses)") }
        }
        print("  engine idle (2 s, no traffic): " + (idle.map { String(format: "%.3f%% of a CPU", $0 * 100) } ?? "-"))
        print("  timerfd wake-up latency (2,000 wake-ups 1 ms apart, timer slack 1 ns): \(floor)")
        for failure in failures { print("  failed: \(failure)") }
    }
}

extension EngineTimingBench {
    /// A subject of the round-trip rows: a lab and what forwards in it.
    struct EchoSubject {
        var name: String
        var lab: BenchLab
        var cpu: (() -> UInt64)?
        var stop: () -> Void
        var samples: [Double] = []
        var udpSamples: [Double] = []
        var backToBack: [Double] = []
        var statistics: (() -> String)?
        var cpuSeconds: Double = 0
    }

    /// ICMP echo round trips through a bare veth pair, the bare C forwarder and the unconditioned engine
    /// with each polling setting, `rounds` rounds of `count` echoes (2 ms apart) interleaved; the engine's
    /// CPU meanwhile.
    static func roundTrips(rounds: Int = 5, count: Int = 200) throws -> [EchoSubject] {
        var subjects: [EchoSubject] = []
        defer { for subject in subjects { subject.stop(); subject.lab.remove() } }
        let veth = try BenchLab(tag: "rttv", throughWire: false, offloadsOff: true)
        subjects.append(EchoSubject(name: "bare veth pair", lab: veth, cpu: nil, stop: {}))
        let bareLab = try BenchLab(tag: "rttb", throughWire: true)
        let bare = try BareForwarder(bareLab.ends!)
        subjects.append(EchoSubject(name: "bare C forwarder", lab: bareLab, cpu: { bare.cpuTime }, stop: { bare.stop() }))
        let settings: [(String, TrafficPolling)] = [
            ("engine, polling (after traffic and for replies)", .withReplies),
            ("engine, polling after traffic only (standard)", .standard),
            ("engine, no polling", .off),
        ]
        for (index, (name, polling)) in settings.enumerated() {
            let lab = try BenchLab(tag: "rtt\(index)", throughWire: true)
            let runtime = try EngineRuntime(
                wire: lab.ends!, options: EngineOptions(polling: polling), uplink: PassThroughScheduler(), downlink: PassThroughScheduler())
            try runtime.start()
            subjects.append(EchoSubject(
                name: name, lab: lab, cpu: { EngineBench.engineCPU(runtime) }, stop: { runtime.stop() },
                statistics: {
                    Direction.allCases.map { direction in
                        let statistics = runtime.statistics(of: direction)
                        return "\(direction): polls found \(statistics.pollHits), poll spin \(statistics.pollSpin / 1000) µs, waits \(statistics.waits), spins preempted \(statistics.spinPreemptions)"
                    }.joined(separator: "; ")
                }))
        }
        for subject in subjects { try EngineBench.waitForPath(subject.lab) }
        for _ in 0..<rounds {
            for index in subjects.indices {
                let before = subjects[index].cpu?() ?? 0
                subjects[index].samples += try BenchTraffic.echoRoundTrips(from: subjects[index].lab.client, to: BenchLab.routerV4, count: count)
                subjects[index].udpSamples += try udpEchoRoundTrips(subjects[index].lab, port: 40_700, count: count)
                subjects[index].backToBack += try udpEchoRoundTrips(subjects[index].lab, port: 40_701, count: count, gap: 0)
                subjects[index].cpuSeconds += Double((subjects[index].cpu?() ?? 0) &- before) / 1e9
            }
        }
        let result = subjects
        return result
    }

    /// Prints the round-trip table.
    static func printRoundTrips() {
        print("")
        print("Unconditioned round trip, 2 ms apart, 5 × 200 interleaved: ICMP echo (the kernel answers), UDP echo (a userspace server answers);")
        print("added: over the bare veth pair")
        do {
            let subjects = try roundTrips()
            for (kind, samples) in [("ICMP", \EchoSubject.samples), ("UDP", \EchoSubject.udpSamples), ("UDP back to back", \EchoSubject.backToBack)] {
                let veth = subjects[0][keyPath: samples]
                for subject in subjects {
                    let values = subject[keyPath: samples]
                    let median = percentile(values, 0.5)
                    let p99 = percentile(values, 0.99)
                    print(String(
                        format: "  %@ %@: median %.1f µs (added %+.1f), p99 %.1f µs (added %+.1f), %d samples%@", kind, subject.name, median,
                        median - percentile(veth, 0.5), p99, p99 - percentile(veth, 0.99), values.count,
                        subject.cpu == nil || kind != "ICMP" ? "" : String(format: ", forwarder CPU %.1f ms (all three)", subject.cpuSeconds * 1000)))
                }
            }
            for subject in subjects { if let statistics = subject.statistics { print("  \(subject.name): \(statistics())") } }
        } catch {
            print("  failed: \(error)")
        }
    }
}

extension EngineTimingBench {
    /// `count` UDP echo round trips from the lab's client to a userspace echo server in its router namespace
    /// (what irtt measures), one at a time `gap` seconds apart; microseconds (a lost one, after 1 s, left out).
    static func udpEchoRoundTrips(_ lab: BenchLab, port: UInt16, count: Int, gap: Double = 0.002) throws -> [Double] {
        let server = try BenchTraffic.socket(in: lab.router, .udp(.inet), timeout: 0.1)
        do {
            try server.bind(to: SocketAddress(BenchLab.routerV4, port: port))
        } catch {
            try? server.close()
            throw BenchFailure("bind UDP \(BenchLab.routerV4):\(port): \(error)")
        }
        let stop = Atomic<Bool>(false)
        let done = DispatchSemaphore(value: 0)
        Thread {
            var buffer = [UInt8](repeating: 0, count: 2048)
            while !stop.load(ordering: .relaxed) {
                var sender = SocketAddressStorage()
                guard let got = try? buffer.withUnsafeMutableBytes({ try server.receive(into: $0, from: &sender) }), got > 0 else { continue }
                _ = try? buffer.withUnsafeBytes { try server.send(UnsafeRawBufferPointer(rebasing: $0[0..<got]), to: sender) }
            }
            try? server.close()
            done.signal()
        }.start()
        defer {
            stop.store(true, ordering: .relaxed)
            done.wait()
        }
        let client = try BenchTraffic.socket(in: lab.client, .udp(.inet), timeout: 1)
        defer { try? client.close() }
        _ = try client.connect(to: SocketAddress(BenchLab.routerV4, port: port))
        var samples: [Double] = []
        var reply = [UInt8](repeating: 0, count: 64)
        for sequence in 0..<UInt64(count) {
            let request = withUnsafeBytes(of: sequence.bigEndian) { [UInt8]($0) } + [UInt8](repeating: 0x42, count: 56)
            let start = BenchTraffic.seconds()
            guard (try? request.withUnsafeBytes { try client.send($0) }) == request.count else { continue }
            while BenchTraffic.seconds() - start < 1 {
                guard let got = try? reply.withUnsafeMutableBytes({ try client.receive(into: $0) }), got >= 8 else { break }
                if reply.prefix(8).elementsEqual(withUnsafeBytes(of: sequence.bigEndian) { [UInt8]($0) }) {
                    samples.append((BenchTraffic.seconds() - start) * 1e6)
                    break
                }
            }
            usleep(UInt32(gap * 1_000_000))
        }
        return samples
    }
}

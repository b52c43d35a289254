import EngineBenchIO
import Foundation
import Glibc
import LinkEmulation
import LinkcondBase
import PacketEngine
import Profiles

/// The engine's fidelity rows, from the kernel's capture stamps at the client's wl0 and the router's c-wl0
/// (``OneWayProbe``), through the engine as shipped with the profile model (``DirectionEmulator``) on the
/// uplink:
/// - **jitter**: `delay 20ms`, `jitter 2ms` normal under the ordered model, at 100, 1,000 and 10,000
///   frames/s: the measured one-way mean and standard deviation against the profile's, the order of
///   arrival (frames that came before one sent earlier) and the order holds the model made;
/// - **queues**: one CUBIC upload over `rate 2mbit delay 50ms` with each queue discipline, and a probe
///   every 20 ms beside it: the probe's standing delay (its one-way time less the 50 ms delay and its own
///   serialization), the upload's rate, and the queue's drops by reason and sojourn p50/p99.
///
///   sudo .build/release/linkcond-bench engine jitter queues
enum EngineFidelityBench {
    /// The engine as shipped between the lab's ends, the profile model with `uplink` on the uplink and nothing
    /// on the downlink, started and carrying traffic.
    static func startEngine(_ lab: BenchLab, uplink: LinkConditions) throws -> EngineRuntime<DirectionEmulator> {
        let runtime = try EngineRuntime(
            wire: lab.ends!, uplink: DirectionEmulator(conditions: uplink, options: DirectionOptions(direction: .uplink)),
            downlink: DirectionEmulator(conditions: .unconditioned, options: DirectionOptions(direction: .downlink)))
        do {
            try runtime.start()
            try EngineBench.waitForPath(lab)
        } catch {
            runtime.stop()
            throw error
        }
        return runtime
    }

    // MARK: jitter

    static let jitterDelay: UInt64 = 20_000_000
    static let jitterSpread: UInt64 = 2_000_000
    /// Long enough that σ's estimate moves by less than 2% from run to run (``sigmaStandardError``).
    static let jitterSeconds = 30.0
    /// The ordered model's correlation length for normal jitter: 6.44 × the jitter (SmoothJitter.slopeBound).
    static let jitterCorrelationLength = 6.44 * Double(jitterSpread) / 1e9

    /// The relative standard error of σ estimated from `seconds` of the ordered model's delays, densely
    /// sampled: for a Gaussian process with the Matérn-3/2 covariance ρ(τ) = (1 + λτ)e^(−λτ), λ = √3/ℓ, the
    /// sample variance's variance is 2σ⁴/T × ∫ρ² over the real line = 5σ⁴/(λT), so σ's is ½√(5/(λT)):
    /// 3.0% over 10 s, 1.7% over 30 s.
    static var sigmaStandardError: Double {
        0.5 * (5 / (3.0.squareRoot() / jitterCorrelationLength * jitterSeconds)).squareRoot()
    }

    /// One rate's measurement of the ordered jitter.
    struct JitterRun {
        var rate: Int
        var frames: Int
        var mean: Double
        var deviation: Double
        /// The spread from the quartiles, (p75 − p25) / 1.349, milliseconds: a normal's σ, which a few frames
        /// held up by a stall of the machine hardly move (the plain σ squares their lateness).
        var robustDeviation: Double
        var arrivedEarly: Int
        var orderHolds: UInt64
        /// The one-way times' median and 95th percentile, milliseconds.
        var median: Double
        var p95: Double
        /// The engine's own departure lateness over the run (the send's return less the due time).
        var lateness: LatencyHistogram

        /// The lateness's mean and standard deviation, milliseconds, from the histogram's bucket midpoints
        /// (about 6% resolution).
        var latenessMoments: (mean: Double, deviation: Double) {
            guard lateness.count > 0 else { return (.nan, .nan) }
            var sum = 0.0
            var squares = 0.0
            for (index, count) in lateness.counts.enumerated() where count > 0 {
                let range = LatencyHistogram.bucketRange(index)
                let middle = (Double(range.lowerBound) + Double(range.upperBound)) / 2 / 1e6
                sum += Double(count) * middle
                squares += Double(count) * middle * middle
            }
            let mean = sum / Double(lateness.count)
            return (mean, max(0, squares / Double(lateness.count) - mean * mean).squareRoot())
        }

        /// The frames that left more than `milliseconds` late.
        func lateFrames(over milliseconds: Double) -> UInt64 {
            let bound = UInt64(milliseconds * 1e6)
            return lateness.counts.enumerated().reduce(0) { $0 + (LatencyHistogram.bucketRange($1.offset).lowerBound > bound ? $1.element : 0) }
        }

        /// What the spread and the engine's lateness were, against the profile's.
        var measured: String {
            let wantDeviation = Double(jitterSpread) / 1e6
            let late = latenessMoments
            // Lateness independent of the drawn delay adds its variance to the delay's.
            let corrected = max(0, deviation * deviation - late.deviation * late.deviation).squareRoot()
            return String(
                format: "σ %.3f ms (%+.1f%%; the estimate's own standard error ±%.1f%%), from the quartiles %.3f ms (%+.1f%%), less the engine's lateness variance %.3f ms (%+.1f%%); "
                    + "engine lateness mean %.3f ms, σ %.3f ms, p99 %.3f ms, maximum %.2f ms, %llu frames over 1 ms late",
                deviation, (deviation / wantDeviation - 1) * 100, sigmaStandardError * 100, robustDeviation, (robustDeviation / wantDeviation - 1) * 100,
                corrected, (corrected / wantDeviation - 1) * 100, late.mean, late.deviation, Double(lateness.quantile(0.99) ?? 0) / 1e6,
                Double(lateness.maximum) / 1e6, lateFrames(over: 1))
        }

        var text: String {
            let wantMean = Double(jitterDelay) / 1e6
            return String(
                format: "%6@ frames/s: %6d frames, mean %.3f ms (%+.1f%%), %@; arrived before an earlier one %d, order holds %llu",
                rate.formatted(), frames, mean, (mean / wantMean - 1) * 100, measured, arrivedEarly, orderHolds)
        }
    }

    static func jitter(rate: Int, lab: BenchLab) throws -> JitterRun {
        let runtime = try startEngine(lab, uplink: LinkConditions(delay: jitterDelay, jitter: jitterSpread, distribution: .normal))
        defer { runtime.stop() }
        let result = try OneWayProbe.measure(
            client: lab.client, clientInterface: "wl0", serverNamespace: lab.router, serverInterface: "c-wl0", server: BenchLab.routerV4,
            port: 40_620, rate: rate, seconds: jitterSeconds, settle: 0.2)
        let counters = try runtime.perform(on: .uplink) { $0.counters }
        let lateness = runtime.statistics(of: .uplink).lateness
        let values = result.oneWay.map { Double($0) / 1e6 }
        let sorted = values.sorted()
        let mean = values.reduce(0, +) / Double(max(values.count, 1))
        let variance = values.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(max(values.count - 1, 1))
        return JitterRun(
            rate: rate, frames: values.count, mean: mean, deviation: variance.squareRoot(),
            robustDeviation: (percentile(sorted: sorted, 0.75) - percentile(sorted: sorted, 0.25)) / 1.349, arrivedEarly: result.overtaking,
            orderHolds: counters.orderHolds, median: percentile(sorted: sorted, 0.5), p95: percentile(sorted: sorted, 0.95), lateness: lateness)
    }

    static func printJitter() {
        print("")
        print(String(
            format: "Ordered jitter at the wire: delay %.0f ms, jitter %.0f ms normal; one-way from capture stamps, %.0f s per rate (the profile: mean %.3f ms, σ %.3f ms)",
            Double(jitterDelay) / 1e6, Double(jitterSpread) / 1e6, jitterSeconds, Double(jitterDelay) / 1e6, Double(jitterSpread) / 1e6))
        do {
            let lab = try BenchLab(tag: "jit", throughWire: true)
            defer { lab.remove() }
            for rate in [100, 1_000, 10_000] {
                do { print("  " + (try jitter(rate: rate, lab: lab)).text) } catch { print("  \(rate) frames/s failed: \(error)") }
            }
        } catch {
            print("  failed: \(error)")
        }
    }

    // MARK: queues

    static let queueRate: UInt64 = 2_000_000
    static let queueDelay: UInt64 = 50_000_000

    /// The disciplines compared, each as a profile would write it.
    static let queues: [(String, LinkQueue)] = [
        ("DropTail 1000 packets (the derived floor)", .dropTail(.packets(1000))),
        ("DropTail 100 packets", .dropTail(.packets(100))),
        ("DropTail 250ms", .dropTail(.time(250_000_000))),
        ("DropHead 100 packets", LinkQueue(.dropHead, limit: .packets(100))),
        ("CoDel (5 ms, 100 ms)", LinkQueue(.codel(CoDelSettings()))),
        ("PIE (15 ms)", LinkQueue(.pie(PIESettings()))),
        ("RED 30-90KB", LinkQueue(.red(REDSettings(minimum: 30_000, maximum: 90_000)))),
    ]

    struct QueueRun {
        var name: String
        var standing: [Double]
        var uploadRate: Double
        var counters: DirectionCounters

        var text: String {
            let sorted = standing.sorted()
            func at(_ q: Double) -> Double { sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * q + 0.5))] }
            let sojourn = [0.5, 0.99].map { counters.sojourn.quantile($0).map { String(format: "%.0f", Double($0) / 1e6) } ?? "-" }
            return String(
                format: "%@: standing delay p50 %.0f ms, p95 %.0f ms (%d probes); upload %.2f Mbit/s; drops tail %llu, head %llu, CoDel %llu, PIE %llu, RED %llu; sojourn p50 %@ ms, p99 %@ ms",
                name, at(0.5), at(0.95), sorted.count, uploadRate / 1e6, counters.tailDroppedFrames, counters.headDroppedFrames,
                counters.codelDroppedFrames, counters.pieDroppedFrames, counters.redDroppedFrames + counters.redForcedDroppedFrames, sojourn[0], sojourn[1])
        }
    }

    static func queue(_ name: String, _ queue: LinkQueue, lab: BenchLab, seconds: Double = 10) throws -> QueueRun {
        let runtime = try startEngine(lab, uplink: LinkConditions(rate: queueRate, delay: queueDelay, queue: queue))
        defer { runtime.stop() }
        let upload = ResultBox()
        let done = DispatchSemaphore(value: 0)
        let (client, router) = (lab.client, lab.router)
        Thread {
            upload.result = Result {
                try BenchTraffic.tcpThroughput(from: client, to: router, address: BenchLab.routerV4, port: 40_630, seconds: seconds, congestionControl: "cubic")
            }
            done.signal()
        }.start()
        // The queue's standing state: the probe starts once the upload has filled it (slow start is over).
        usleep(UInt32(seconds * 0.3 * 1e6))
        let probe = try OneWayProbe.measure(
            client: lab.client, clientInterface: "wl0", serverNamespace: lab.router, serverInterface: "c-wl0", server: BenchLab.routerV4,
            port: 40_631, rate: 50, seconds: seconds * 0.6, settle: 0.1)
        done.wait()
        let rate = try upload.result!.get()
        let counters = try runtime.perform(on: .uplink) { $0.counters }
        // The probe's own serialization (a 106-byte frame at the rate) is not queueing.
        let own = 106.0 * 8 / Double(queueRate) * 1e3
        let standing = probe.oneWay.map { Double($0 - Int64(queueDelay)) / 1e6 - own }
        return QueueRun(name: name, standing: standing, uploadRate: rate, counters: counters)
    }

    static func printQueues() {
        print("")
        print(String(
            format: "Queues under one CUBIC upload: rate %.0f Mbit/s, delay %.0f ms, 10 s; a probe every 20 ms for the last 6 s (capture stamps); standing delay = its one-way time less the delay",
            Double(queueRate) / 1e6, Double(queueDelay) / 1e6))
        for (name, queue) in queues {
            do {
                let lab = try BenchLab(tag: "q\(queues.firstIndex { $0.0 == name }!)", throughWire: true)
                defer { lab.remove() }
                print("  " + (try Self.queue(name, queue, lab: lab)).text)
            } catch {
                print("  \(name) failed: \(error)")
            }
        }
    }

    /// The upload thread's outcome.
    final class ResultBox: @unchecked Sendable {
        var result: Result<Double, Error>?
    }
}

extension EngineFidelityBench {
    /// The rows of the main table: the ordered jitter at each rate, and each queue's standing delay.
    static func tableRows() -> [BenchRow] {
        var rows: [BenchRow] = []
        do {
            let lab = try BenchLab(tag: "jit", throughWire: true)
            defer { lab.remove() }
            for rate in [100, 1_000, 10_000] {
                do {
                    let run = try jitter(rate: rate, lab: lab)
                    rows.append(BenchRow(
                        operation: "engine: one-way delay, delay 20 ms jitter 2 ms normal (ordered), \(rate.formatted()) frames/s, capture stamps",
                        ours_us: Summary(median: run.median * 1000, p95: run.p95 * 1000, samples: run.frames), floor_us: nil, peers: [:],
                        notes: [
                            String(
                                format: "mean %.3f ms (%+.1f%% of the profile's 20 ms); %d overtook an earlier one, %llu order holds",
                                run.mean, (run.mean / 20 - 1) * 100, run.arrivedEarly, run.orderHolds),
                            "against the profile's σ of 2 ms: " + run.measured,
                        ]))
                } catch {
                    rows.append(BenchRow(operation: "engine: ordered jitter at \(rate) frames/s", ours_us: nil, floor_us: nil, peers: [:], notes: ["failed: \(error)"]))
                }
            }
        } catch {
            rows.append(BenchRow(operation: "engine: ordered jitter", ours_us: nil, floor_us: nil, peers: [:], notes: ["could not set up: \(error)"]))
        }
        for (index, (name, queue)) in queues.enumerated() {
            do {
                let lab = try BenchLab(tag: "q\(index)", throughWire: true)
                defer { lab.remove() }
                let run = try Self.queue(name, queue, lab: lab)
                rows.append(BenchRow(
                    operation: "engine: standing delay beside one CUBIC upload, rate 2 Mbit/s delay 50 ms, \(name)",
                    ours_us: Summary(run.standing.map { $0 * 1000 }), floor_us: nil, peers: [:],
                    notes: [String(
                        format: "upload %.2f Mbit/s; drops: tail %llu, head %llu, CoDel %llu, PIE %llu, RED %llu", run.uploadRate / 1e6,
                        run.counters.tailDroppedFrames, run.counters.headDroppedFrames, run.counters.codelDroppedFrames, run.counters.pieDroppedFrames,
                        run.counters.redDroppedFrames + run.counters.redForcedDroppedFrames)]))
            } catch {
                rows.append(BenchRow(operation: "engine: standing delay, \(name)", ours_us: nil, floor_us: nil, peers: [:], notes: ["failed: \(error)"]))
            }
        }
        return rows
    }
}

import Foundation
import PacketEngine

/// The engine rows' tables.
extension EngineBench {
    static func printTables(_ subjects: [Subject], _ echoes: [(String, [Double])], _ lateness: [LatenessRow]) {
        if subjects.contains(where: { !$0.rates.isEmpty }) { printThroughput(subjects) }
        if !echoes.isEmpty { printRoundTrips(echoes) }
        if !lateness.isEmpty { printLateness(lateness) }
    }

    private static func column(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }

    private static func right(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
    }

    private static func micro(_ nanoseconds: UInt64?) -> String {
        guard let nanoseconds else { return "-" }
        return String(format: "%.1f µs", Double(nanoseconds) / 1000)
    }

    private static func printThroughput(_ subjects: [Subject]) {
        print("")
        print(column("TCP throughput, 1 stream, \(rounds) × \(Int(throughputSeconds)) s", 42) + right("best", 8) + right("median", 8)
            + right("fwd CPU", 9) + right("fwd s/Gbit", 12) + right("all s/Gbit", 12))
        for subject in subjects {
            let best = (subject.rates.max() ?? .nan) / 1e9
            let median = percentile(subject.rates, 0.5) / 1e9
            // The forwarder's CPU seconds per second, over the mean Gbit/s of the same rounds; then everything's
            // (traffic generator, kernel work in its threads, forwarder).
            let load = subject.loads.isEmpty ? nil : subject.loads.reduce(0, +) / Double(subject.loads.count)
            let meanGbit = subject.rates.isEmpty ? 0 : subject.rates.reduce(0, +) / Double(subject.rates.count) / 1e9
            print("  " + column(subject.name, 40) + right(String(format: "%.2f", best), 8) + right(String(format: "%.2f", median), 8)
                + right(load.map { String(format: "%.2f", $0) } ?? "-", 9)
                + right(load.map { String(format: "%.3f", $0 / max(meanGbit, 0.001)) } ?? "-", 12)
                + right(subject.totals.isEmpty ? "-" : String(format: "%.3f", subject.totals.reduce(0, +) / Double(subject.totals.count) / max(meanGbit, 0.001)), 12))
        }
    }

    private static func printRoundTrips(_ echoes: [(String, [Double])]) {
        print("")
        print(column("Round-trip time, ICMP echo, \(echoSamples) samples", 42) + right("median", 10) + right("p99", 10) + right("+median", 10)
            + right("+p99", 10) + right("lost", 6))
        let baseline = echoes.first?.1 ?? []
        for (index, (name, samples)) in echoes.enumerated() {
            let median = percentile(samples, 0.5)
            let p99 = percentile(samples, 0.99)
            let added = { (value: Double, fraction: Double) -> String in
                index == 0 || baseline.isEmpty ? "-" : String(format: "%+.1f", value - percentile(baseline, fraction))
            }
            print("  " + column(name, 40) + right(String(format: "%.1f µs", median), 10) + right(String(format: "%.1f µs", p99), 10)
                + right(added(median, 0.5), 10) + right(added(p99, 0.99), 10) + right("\(echoSamples - samples.count)", 6))
        }
    }

    private static func printLateness(_ rows: [LatenessRow]) {
        print("")
        print(column("Departure lateness, 50 ms delay, 2 s", 42) + right("frames", 9) + right("median", 11) + right("p99", 11) + right("max", 11)
            + right(">200µs", 8))
        for row in rows {
            print("  " + column(row.name, 40) + right("\(row.summary.count)", 9) + right(micro(row.summary.median), 11)
                + right(micro(row.summary.p99), 11) + right(micro(row.summary.maximum), 11) + right(String(format: "%.2f%%", row.late * 100), 8))
        }
    }
}

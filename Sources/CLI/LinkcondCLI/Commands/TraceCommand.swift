import Foundation
import JSONDocument
import Profiles

/// `linkcond trace summary FILE` and `linkcond trace from-csv CSV OUTPUT`: delivery traces (Mahimahi's
/// format) as a profile's `"trace"` uses them.
enum TraceCommand {
    static func run(_ parsed: ParsedCommand) throws -> Int32 {
        switch parsed.subcommandPath.dropFirst().first {
        case "summary": return try summary(parsed)
        case "from-csv": return try fromCSV(parsed)
        default:
            Output.print(CommandTree.root.helpText(for: parsed.commandPath))
            return 2
        }
    }

    private static func read(_ path: String, expected: String) throws -> String {
        String(decoding: try DocumentFile.read(path, maximumSize: 64 << 20, expected: expected), as: UTF8.self)
    }

    static func summary(_ parsed: ParsedCommand) throws -> Int32 {
        let path = parsed.positional("trace")!
        let trace: DeliveryTrace
        do {
            trace = try DeliveryTrace(parsing: try read(path, expected: "a delivery trace file"), source: path)
        } catch let error as EmulationInputError {
            throw CommandFailure(error.description)
        }
        let summary = trace.summary
        if parsed.flag("json") {
            struct Shown: Encodable {
                let file: String
                let durationSeconds: Double
                let opportunities: Int
                let meanBitsPerSecond: Double
                let percentiles: [String: Double]
                let perSecondBitsPerSecond: [Double]
            }
            try Output.json(Shown(
                file: path, durationSeconds: Double(summary.duration) / 1e9, opportunities: summary.opportunities,
                meanBitsPerSecond: summary.meanRate,
                percentiles: ["p5": summary.percentile(0.05), "p50": summary.percentile(0.5), "p95": summary.percentile(0.95),
                              "min": summary.percentile(0), "max": summary.percentile(1)],
                perSecondBitsPerSecond: summary.perSecondRates))
            return 0
        }
        func rate(_ bits: Double) -> String { Quantity.formatRate(UInt64(max(0, bits).rounded())) }
        Output.print("\(path): \(String(format: "%.3f", Double(summary.duration) / 1e9)) s (repeats), \(summary.opportunities) delivery opportunities of 1500 bytes")
        Output.print("  mean \(rate(summary.meanRate))")
        Output.print("  per second: min \(rate(summary.percentile(0))), p5 \(rate(summary.percentile(0.05))), median \(rate(summary.percentile(0.5))), p95 \(rate(summary.percentile(0.95))), max \(rate(summary.percentile(1)))")
        return 0
    }

    static func fromCSV(_ parsed: ParsedCommand) throws -> Int32 {
        let csv = parsed.positional("csv")!
        let output = parsed.positional("output")!
        let trace: DeliveryTrace
        do {
            trace = try DeliveryTrace(rateCSV: try read(csv, expected: "a CSV of TIME,RATE rows"), source: csv)
        } catch let error as EmulationInputError {
            throw CommandFailure(error.description)
        }
        // Written beside the output and renamed over it, so a reader never sees half a trace. (Foundation's
        // atomic write leaves a TemporaryDirectory.XXXXXX behind in /tmp on Linux for every file.)
        let temporary = output + ".tmp-\(getpid())"
        do {
            try Data(trace.text.utf8).write(to: URL(fileURLWithPath: temporary))
            guard rename(temporary, output) == 0 else {
                throw CommandFailure("cannot write \(output): \(String(cString: strerror(errno)))")
            }
        } catch let failure as CommandFailure {
            unlink(temporary)
            throw failure
        } catch {
            unlink(temporary)
            throw CommandFailure("cannot write \(output): \(error.localizedDescription)")
        }
        let summary = trace.summary
        Output.print("wrote \(output): \(summary.opportunities) opportunities over \(String(format: "%.3f", Double(summary.duration) / 1e9)) s, mean \(Quantity.formatRate(UInt64(summary.meanRate.rounded())))")
        return 0
    }
}

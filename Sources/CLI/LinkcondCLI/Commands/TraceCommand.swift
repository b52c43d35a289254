import Foundation
import LinkcondSystem
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
        try write(trace.text, to: output)
        let summary = trace.summary
        Output.print("wrote \(output): \(summary.opportunities) opportunities over \(String(format: "%.3f", Double(summary.duration) / 1e9)) s, mean \(Quantity.formatRate(UInt64(summary.meanRate.rounded())))")
        return 0
    }

    /// Writes `text` to `path`: a regular file (or a new one) is written beside it and renamed over it, so a
    /// reader never sees half a trace; anything else (a pipe, a device) is written in place. Every write is
    /// checked (a full disk, `/dev/full`, is an error, not a success).
    static func write(_ text: String, to path: String) throws {
        var info = stat()
        let inPlace = stat(path, &info) == 0 && info.st_mode & S_IFMT != S_IFREG
        let target = inPlace ? path : path + ".tmp-\(getpid())"
        var failure: Int32 = 0
        do throws(SystemError) {
            let file = try FileDescriptor.open(target, .writeOnly, options: [.create, .truncate])
            // Closed once, whatever the write did: its error (a full disk shows at close on some file
            // systems) counts as the write's.
            let written = Result { () throws(SystemError) in _ = try file.writeAll(text) }
            let closed = Result { () throws(SystemError) in try file.close() }
            try written.get()
            try closed.get()
        } catch {
            failure = error.errno.rawValue
        }
        if failure == 0 && !inPlace && rename(target, path) != 0 { failure = errno }
        if failure != 0 {
            if !inPlace { unlink(target) }
            throw CommandFailure("cannot write \(path): \(String(cString: strerror(failure)))")
        }
    }
}

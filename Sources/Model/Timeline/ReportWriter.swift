import Foundation
import Glibc
import LinkcondSystem

/// Writes every report of a run into one directory: `timeline.json`, `junit.xml`, `timeline.html` and
/// `summary.md` (`events.jsonl` is the recorder's). Metrics are computed once and shared by all of them.
public enum ReportWriter {
    /// The files `write` produces, in the order it writes them.
    public static let fileNames = ["timeline.json", "junit.xml", "timeline.html", "summary.md"]

    /// Renders the reports of `report` into `directory` (created if missing; existing report files are
    /// replaced atomically) and returns the paths written, in `fileNames` order.
    @discardableResult
    public static func write(_ report: RunReport, to directory: String) throws(TimelineError) -> [String] {
        try makeDirectories(directory)
        let metrics = TimelineMetrics(report)
        let contents: [String] = [
            try JSONReportWriter.render(report, metrics: metrics),
            JUnitWriter.render(report),
            HTMLReportWriter.render(report, metrics: metrics),
            MarkdownWriter.render(report, metrics: metrics),
        ]
        var written: [String] = []
        for (name, text) in zip(fileNames, contents) {
            let path = (directory as NSString).appendingPathComponent(name)
            try writeAtomically(Array(text.utf8), to: path)
            written.append(path)
        }
        return written
    }

    /// `mkdir -p`.
    static func makeDirectories(_ directory: String) throws(TimelineError) {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { throw .io(path: directory, operation: "use as a directory", errno: ENOTDIR) }
            return
        }
        let parent = (directory as NSString).deletingLastPathComponent
        if !parent.isEmpty, parent != directory { try makeDirectories(parent) }
        if mkdir(directory, 0o755) != 0 && errno != EEXIST {
            throw .io(path: directory, operation: "create the directory", errno: errno)
        }
    }

    /// Writes to `path.tmp`, then renames over `path`, so a reader never sees half a report.
    static func writeAtomically(_ bytes: [UInt8], to path: String) throws(TimelineError) {
        let temporary = path + ".tmp"
        let file: FileDescriptor
        do throws(SystemError) {
            file = try FileDescriptor.open(temporary, .writeOnly, options: [.create, .truncate])
        } catch {
            throw .io(path: temporary, operation: "create", errno: error.errno.rawValue)
        }
        do throws(SystemError) {
            try file.writeAll(bytes)
        } catch {
            try? file.close()
            unlink(temporary)
            throw .io(path: temporary, operation: "write", errno: error.errno.rawValue)
        }
        do throws(SystemError) {
            try file.close()
        } catch {
            unlink(temporary)
            throw .io(path: temporary, operation: "close", errno: error.errno.rawValue)
        }
        do throws(SystemError) {
            try FileReplacement.replace(path, with: temporary)
        } catch {
            unlink(temporary)
            throw .io(path: path, operation: "replace", errno: error.errno.rawValue)
        }
    }
}

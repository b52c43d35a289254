import Foundation
import Glibc
import JSONDocument
import LinkcondSystem

/// Writing to the terminal: results on stdout, one-sentence errors and progress on stderr.
///
/// Lines are written with `write(2)` as they come. A failed write to stdout (a full disk, `/dev/full`, a
/// closed pipe) is not fatal where it happens: the first failure is kept, later output is dropped, and
/// ``LinkcondCLI/run(_:)`` reports it and exits 1 (a closed pipe quietly).
enum Output {
    /// The first failed write to stdout, if any.
    nonisolated(unsafe) private(set) static var standardOutputFailure: SystemError?

    static func print(_ text: String) {
        write(text + "\n")
    }

    /// Writes `text` to stdout as it is (no newline added).
    static func write(_ text: String) {
        guard standardOutputFailure == nil else { return }
        do {
            try FileDescriptor.standardOutput.writeAll(text)
        } catch {
            standardOutputFailure = error
        }
    }

    static func error(_ text: String) {
        errorRaw("linkcond: \(text)")
    }

    static func errorRaw(_ text: String) {
        standardError(text + "\n")
    }

    /// Writes `text` to stderr as it is (no newline added).
    static func standardError(_ text: String) {
        // Nowhere left to report a failure to write to stderr.
        _ = try? FileDescriptor.standardError.writeAll(text)
    }

    /// Progress lines go to stderr, and only when it is a terminal (so scripts see clean output).
    static func progress(_ text: String) {
        if isatty(STDERR_FILENO) == 1 {
            errorRaw("linkcond: \(text)…")
        }
    }

    /// The exit code once the command has returned `code`: 1 with a sentence on stderr when writing to stdout
    /// failed (quietly for a closed pipe: the reader has stopped reading), else `code`.
    static func finish(_ code: Int32) -> Int32 {
        guard let failure = standardOutputFailure else { return code }
        if failure.errno != .brokenPipe {
            error("could not write the output to stdout: \(failure.errno) (is the disk full, or the output closed?)")
        }
        return code == 0 ? 1 : code
    }

    /// A JSON document, indented, on stdout.
    static func json(_ value: JSONValue) {
        print(JSONWriter.text(of: value, indent: 2))
    }

    static func json<T: Encodable>(_ value: T) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        print(String(decoding: try encoder.encode(value), as: UTF8.self))
    }
}

/// A failure the CLI reports with exit code 1: one clear sentence.
struct CommandFailure: Error, CustomStringConvertible {
    let description: String
    var exitCode: Int32 = 1

    init(_ description: String, exitCode: Int32 = 1) {
        self.description = description
        self.exitCode = exitCode
    }
}

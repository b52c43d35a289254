import Foundation
import Glibc
import JSONDocument

/// Writing to the terminal: results on stdout, one-sentence errors and progress on stderr.
enum Output {
    static func print(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    static func error(_ text: String) {
        FileHandle.standardError.write(Data("linkcond: \(text)\n".utf8))
    }

    static func errorRaw(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    /// Progress lines go to stderr, and only when it is a terminal (so scripts see clean output).
    static func progress(_ text: String) {
        if isatty(STDERR_FILENO) == 1 {
            FileHandle.standardError.write(Data("linkcond: \(text)…\n".utf8))
        }
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

import Foundation
import Netlink
import XCTest

/// One file of `Fixtures/`, as `scripts/capture-fixtures` writes it: `# key: value` header lines, then
/// bytes eight to a line. Reply fixtures hold several datagrams, each after a `# datagram: N` line.
struct Fixture: Sendable {
    struct Problem: Error, CustomStringConvertible {
        let description: String
    }

    /// The file name without `.txt`, e.g. `link-add-veth`.
    let name: String
    /// Header lines in file order (`datagram` markers excluded).
    let header: [Header]
    /// The datagrams; a request fixture has exactly one.
    let datagrams: [[UInt8]]

    struct Header: Sendable {
        let key: String
        let value: String
    }

    /// The folder the package copies `Fixtures/` to.
    static var directory: URL {
        get throws {
            guard let url = Bundle.module.url(forResource: "Fixtures", withExtension: nil) else {
                throw Problem(description: "the Fixtures folder is not in the test bundle")
            }
            return url
        }
    }

    /// Names of every fixture file, sorted.
    static func allNames() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasSuffix(".txt") }
            .map { String($0.dropLast(4)) }
            .sorted()
    }

    static func load(_ name: String) throws -> Fixture {
        let url = try directory.appendingPathComponent(name + ".txt")
        guard let text = try? String(contentsOf: url, encoding: .utf8) else {
            throw Problem(description: "no fixture \(name).txt; run scripts/capture-fixtures")
        }
        return try Fixture(name: name, text: text)
    }

    init(name: String, text: String) throws {
        self.name = name
        var header: [Header] = []
        var datagrams: [[UInt8]] = []
        var current: [UInt8]?
        for (number, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty { continue }
            if line.hasPrefix("#") {
                let body = line.dropFirst().trimmingCharacters(in: .whitespaces)
                guard let colon = body.firstIndex(of: ":") else {
                    throw Problem(description: "\(name).txt:\(number + 1): header line without 'key:'")
                }
                let key = String(body[..<colon])
                let value = body[body.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                if key == "datagram" {
                    if let current { datagrams.append(current) }
                    current = []
                } else {
                    header.append(Header(key: key, value: value))
                }
                continue
            }
            var bytes: [UInt8] = []
            for token in line.split(separator: " ") {
                guard token.count == 2, let byte = UInt8(token, radix: 16) else {
                    throw Problem(description: "\(name).txt:\(number + 1): '\(token)' is not a hex byte")
                }
                bytes.append(byte)
            }
            current = (current ?? []) + bytes
        }
        if let current { datagrams.append(current) }
        guard !datagrams.isEmpty else { throw Problem(description: "\(name).txt holds no bytes") }
        self.header = header
        self.datagrams = datagrams
    }

    /// Every value of header `key`, in order.
    func values(_ key: String) -> [String] {
        header.filter { $0.key == key }.map(\.value)
    }

    /// The one value of header `key`.
    func value(_ key: String) throws -> String {
        let found = values(key)
        guard found.count == 1 else {
            throw Problem(description: "\(name).txt has \(found.count) '# \(key):' lines, expected one")
        }
        return found[0]
    }

    /// `# command:`, with namespaces written NS, NS2, NS3.
    var command: String { get throws { try value("command") } }

    /// `# sequence:`, the nlmsg_seq iproute2 used.
    var sequence: UInt32 {
        get throws {
            guard let value = UInt32(try value("sequence")) else {
                throw Problem(description: "\(name).txt: '# sequence:' is not a u32")
            }
            return value
        }
    }

    /// `# ifindex:`, the index of the interface the command names.
    var interfaceIndex: Int32 {
        get throws {
            guard let value = Int32(try value("ifindex")) else {
                throw Problem(description: "\(name).txt: '# ifindex:' is not an s32")
            }
            return value
        }
    }

    /// `# netns-fd:`, the namespace descriptors iproute2 passed, in order.
    var namespaceFDs: [Int32] {
        get throws {
            let fds = try value("netns-fd").split(separator: " ").compactMap { Int32($0) }
            guard !fds.isEmpty else { throw Problem(description: "\(name).txt: '# netns-fd:' lists no descriptor") }
            return fds
        }
    }

    /// The bytes of a request fixture (one datagram, one message).
    var bytes: [UInt8] {
        get throws {
            guard datagrams.count == 1 else {
                throw Problem(description: "\(name).txt holds \(datagrams.count) datagrams, expected one")
            }
            return datagrams[0]
        }
    }

    /// `# expect-KIND: key=value key=value` lines, as dictionaries.
    func expectations(_ kind: String) -> [[String: String]] {
        values("expect-" + kind).map { line in
            var fields: [String: String] = [:]
            for pair in line.split(separator: " ") {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                fields[String(parts[0])] = parts.count == 2 ? String(parts[1]) : ""
            }
            return fields
        }
    }

    /// Every message of every datagram, through the production parser.
    func messages() throws -> [NetlinkMessage] {
        try datagrams.flatMap { datagram throws -> [NetlinkMessage] in try NetlinkMessage.parse(datagram: datagram) }
    }
}

/// `bytes` eight to a line with offsets, the line holding `mark` flagged, for failure messages.
func hexDump(_ bytes: [UInt8], marking mark: Int? = nil) -> String {
    stride(from: 0, to: max(bytes.count, 1), by: 8).map { start in
        let line = bytes[start..<min(start + 8, bytes.count)]
            .map { $0 < 16 ? "0" + String($0, radix: 16) : String($0, radix: 16) }
            .joined(separator: " ")
        let offset = String(start, radix: 16)
        let flag = mark.map { $0 >= start && $0 < start + 8 ? "   <-- first difference" : "" } ?? ""
        return String(repeating: "0", count: max(0, 4 - offset.count)) + offset + "  " + line + flag
    }.joined(separator: "\n")
}

/// The first offset where `a` and `b` differ (the shorter length when one is a prefix of the other).
func firstDifference(_ a: [UInt8], _ b: [UInt8]) -> Int? {
    if let index = zip(a, b).enumerated().first(where: { $0.element.0 != $0.element.1 })?.offset { return index }
    return a.count == b.count ? nil : min(a.count, b.count)
}

/// Host-order u16/u32 reads and writes on a byte array, for patching real messages in tests.
extension Array where Element == UInt8 {
    func u16(at offset: Int) -> UInt16 { withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: UInt16.self) } }
    func u32(at offset: Int) -> UInt32 { withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: UInt32.self) } }
    mutating func setU16(_ value: UInt16, at offset: Int) {
        withUnsafeMutableBytes { $0.storeBytes(of: value, toByteOffset: offset, as: UInt16.self) }
    }
}

/// Fails when linkcond's request is not byte for byte iproute2's, showing both dumps 8 bytes a line with
/// the first differing byte marked.
func assertSameRequest(
    _ actual: [UInt8], _ expected: [UInt8], name: String, command: String, file: StaticString, line: UInt
) {
    guard let difference = firstDifference(actual, expected) else { return }
    XCTFail(
        """
        \(name): linkcond's request differs from iproute2's at byte \(difference) \
        (0x\(String(difference, radix: 16))); \(actual.count) bytes built, \(expected.count) captured.
        command: \(command)
        linkcond:
        \(hexDump(actual, marking: difference))
        iproute2:
        \(hexDump(expected, marking: difference))
        """, file: file, line: line)
}

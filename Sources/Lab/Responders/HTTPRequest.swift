// Parsing of an HTTP/1.x request head (RFC 9112): request line and header fields. No socket code. The sandbox
// server's HTTP responder and the control API (`linkcond api`) both read requests with it.

/// Why a request head was rejected.
public enum HTTPParseError: Error, Equatable, Sendable {
    /// The request line is not `METHOD SP target SP HTTP/d.d`.
    case malformedRequestLine
    /// A header line has no colon, an invalid name, or is an obsolete folded line.
    case malformedHeader
    /// The version is well formed but not HTTP/1.x.
    case unsupportedVersion
    /// The head is larger than ``HTTPRequestHead/maximumSize``.
    case headTooLarge
}

/// The request line and header fields of an HTTP/1.x request.
public struct HTTPRequestHead: Equatable, Sendable {
    public var method: String
    /// The request target exactly as sent (`/generate_204?x=1`, `http://host/path`, `*`).
    public var target: String
    /// The path of the target without query or fragment (origin and absolute form), or nil for other forms.
    public var path: String?
    public var versionMajor: Int
    public var versionMinor: Int
    /// Header fields in order; names as sent.
    public var headers: [(name: String, value: String)]

    /// Largest request head read, blank line included: 8 KiB.
    public static let maximumSize = 8192

    public static func == (lhs: HTTPRequestHead, rhs: HTTPRequestHead) -> Bool {
        lhs.method == rhs.method && lhs.target == rhs.target && lhs.path == rhs.path
            && lhs.versionMajor == rhs.versionMajor && lhs.versionMinor == rhs.versionMinor
            && lhs.headers.map(\.name) == rhs.headers.map(\.name)
            && lhs.headers.map(\.value) == rhs.headers.map(\.value)
    }

    /// The value of the first header field named `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name.lowercased() == wanted }?.value
    }

    /// The index just past the blank line that ends the head (`\r\n\r\n` or `\n\n`), or nil when the head is
    /// not complete yet.
    public static func endOfHead(in buffer: [UInt8], searchingFrom start: Int = 0) -> Int? {
        var index = max(0, start)
        while index < buffer.count {
            if buffer[index] == 0x0A {
                if index + 1 < buffer.count, buffer[index + 1] == 0x0A { return index + 2 }
                if index + 2 < buffer.count, buffer[index + 1] == 0x0D, buffer[index + 2] == 0x0A { return index + 3 }
            }
            index += 1
        }
        return nil
    }

    /// Parses a head (with or without its final blank line). Empty lines before the request line are ignored.
    public static func parse(_ bytes: some Collection<UInt8>) throws(HTTPParseError) -> HTTPRequestHead {
        guard bytes.count <= maximumSize else { throw .headTooLarge }
        var lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false).map { line -> [UInt8] in
            line.last == 0x0D ? Array(line.dropLast()) : Array(line)
        }
        while let first = lines.first, first.isEmpty { lines.removeFirst() }
        while let last = lines.last, last.isEmpty { lines.removeLast() }
        guard let requestLine = lines.first else { throw .malformedRequestLine }

        let parts = requestLine.split(separator: 0x20, omittingEmptySubsequences: false)
        guard parts.count == 3,
              !parts[0].isEmpty, parts[0].allSatisfy(isTokenCharacter),
              !parts[1].isEmpty, parts[1].allSatisfy({ $0 > 0x20 && $0 != 0x7F })
        else { throw .malformedRequestLine }
        let version = Array(parts[2])
        guard version.count == 8, version.starts(with: Array("HTTP/".utf8)),
              isDigit(version[5]), version[6] == UInt8(ascii: "."), isDigit(version[7])
        else { throw .malformedRequestLine }
        let major = Int(version[5] - 0x30)
        let minor = Int(version[7] - 0x30)
        guard major == 1 else { throw .unsupportedVersion }

        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > 0,
                  line[..<colon].allSatisfy(isTokenCharacter)
            else { throw .malformedHeader }
            guard line[(colon + 1)...].allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }) else {
                throw .malformedHeader
            }
            let value = line[(colon + 1)...].drop { $0 == 0x20 || $0 == 0x09 }
            let trimmed = value.reversed().drop { $0 == 0x20 || $0 == 0x09 }.reversed()
            headers.append((String(decoding: line[..<colon], as: UTF8.self),
                            String(decoding: Array(trimmed), as: UTF8.self)))
        }

        let target = String(decoding: parts[1], as: UTF8.self)
        return HTTPRequestHead(method: String(decoding: parts[0], as: UTF8.self), target: target,
                               path: path(of: target), versionMajor: major, versionMinor: minor,
                               headers: headers)
    }

    /// The path of an origin-form (`/a?b`) or absolute-form (`http://host/a?b`) target; nil otherwise.
    static func path(of target: String) -> String? {
        var rest = Substring(target)
        if !rest.hasPrefix("/") {
            let lowered = rest.lowercased()
            if lowered.hasPrefix("http://") {
                rest = rest.dropFirst(7)
            } else if lowered.hasPrefix("https://") {
                rest = rest.dropFirst(8)
            } else {
                return nil
            }
            guard let slash = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) else { return "/" }
            rest = rest[slash...]
            if !rest.hasPrefix("/") { return "/" }
        }
        if let end = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) { rest = rest[..<end] }
        return String(rest)
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    /// RFC 9110 `tchar`.
    private static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "A")...UInt8(ascii: "Z"):
            return true
        default:
            return Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }
}

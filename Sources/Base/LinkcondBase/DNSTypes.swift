// DNS values (RFC 1035 section 3): record types, classes, response codes, names.

/// A DNS record type (QTYPE / TYPE).
public struct DNSRecordType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let a = DNSRecordType(rawValue: 1)
    public static let ns = DNSRecordType(rawValue: 2)
    public static let cname = DNSRecordType(rawValue: 5)
    public static let soa = DNSRecordType(rawValue: 6)
    public static let ptr = DNSRecordType(rawValue: 12)
    public static let mx = DNSRecordType(rawValue: 15)
    public static let txt = DNSRecordType(rawValue: 16)
    public static let aaaa = DNSRecordType(rawValue: 28)
    public static let opt = DNSRecordType(rawValue: 41)
    public static let https = DNSRecordType(rawValue: 65)
    public static let any = DNSRecordType(rawValue: 255)

    public var description: String {
        switch self {
        case .a: return "A"
        case .ns: return "NS"
        case .cname: return "CNAME"
        case .soa: return "SOA"
        case .ptr: return "PTR"
        case .mx: return "MX"
        case .txt: return "TXT"
        case .aaaa: return "AAAA"
        case .opt: return "OPT"
        case .https: return "HTTPS"
        case .any: return "ANY"
        default: return "TYPE\(rawValue)"
        }
    }
}

/// A DNS class (QCLASS / CLASS).
public struct DNSClass: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// The Internet class.
    public static let internet = DNSClass(rawValue: 1)
    public static let chaos = DNSClass(rawValue: 3)
    public static let any = DNSClass(rawValue: 255)
}

/// A DNS response code (RCODE).
public struct DNSResponseCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue & 0x0F }

    public static let noError = DNSResponseCode(rawValue: 0)
    public static let formatError = DNSResponseCode(rawValue: 1)
    public static let serverFailure = DNSResponseCode(rawValue: 2)
    public static let nameError = DNSResponseCode(rawValue: 3)
    public static let notImplemented = DNSResponseCode(rawValue: 4)
    public static let refused = DNSResponseCode(rawValue: 5)

    public var description: String {
        switch rawValue {
        case 0: return "NOERROR"
        case 1: return "FORMERR"
        case 2: return "SERVFAIL"
        case 3: return "NXDOMAIN"
        case 4: return "NOTIMP"
        case 5: return "REFUSED"
        default: return "RCODE\(rawValue)"
        }
    }
}

/// Why bytes are not a DNS message.
public enum DNSMessageError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The message ends before `offset` bytes could be read.
    case truncated(offset: Int)
    /// A label at `offset` uses a reserved label type (0x40 or 0x80).
    case invalidLabel(offset: Int)
    /// A name is longer than 255 bytes on the wire.
    case nameTooLong(offset: Int)
    /// A compression pointer at `offset` does not point strictly before the previous one, so it could loop.
    case pointerLoop(offset: Int)
    /// A name given as text is not a valid DNS name.
    case invalidName(String)

    public var description: String {
        switch self {
        case .truncated(let offset): return "DNS message truncated at byte \(offset)"
        case .invalidLabel(let offset): return "reserved DNS label type at byte \(offset)"
        case .nameTooLong(let offset): return "DNS name longer than 255 bytes at byte \(offset)"
        case .pointerLoop(let offset): return "DNS compression pointer at byte \(offset) does not point backwards"
        case .invalidName(let text): return "invalid DNS name '\(text)'"
        }
    }
}

/// A domain name as its labels, raw bytes with their case preserved (so a question is echoed exactly).
public struct DNSName: Sendable, Hashable, CustomStringConvertible {
    /// The labels, most specific first; empty for the root.
    public var labels: [[UInt8]]

    /// The root name `.`.
    public static let root = DNSName(uncheckedLabels: [])

    /// A name from labels; nil when a label is empty or longer than 63 bytes, or the name is longer than
    /// 255 bytes on the wire.
    public init?(labels: [[UInt8]]) {
        guard labels.allSatisfy({ (1...63).contains($0.count) }),
              labels.reduce(1, { $0 + $1.count + 1 }) <= 255
        else { return nil }
        self.labels = labels
    }

    /// A name from dotted text such as `server.linkcond.test` (a trailing dot is allowed; `.` or an empty
    /// string is the root). Nil when a label is empty or too long.
    public init?(_ text: String) {
        var body = Substring(text)
        if body.hasSuffix(".") { body = body.dropLast() }
        if body.isEmpty {
            self.init(uncheckedLabels: [])
            return
        }
        let labels = body.split(separator: ".", omittingEmptySubsequences: false).map { Array($0.utf8) }
        self.init(labels: labels)
    }

    init(uncheckedLabels: [[UInt8]]) {
        self.labels = uncheckedLabels
    }

    /// The number of bytes the name takes on the wire without compression.
    public var wireLength: Int { labels.reduce(1) { $0 + $1.count + 1 } }

    /// Dotted text without a trailing dot (`.` for the root). Bytes outside printable ASCII, dots and
    /// backslashes inside labels are escaped as `\DDD`.
    public var description: String {
        if labels.isEmpty { return "." }
        return labels.map { label in
            var text = ""
            for byte in label {
                if byte > 0x20 && byte < 0x7F && byte != UInt8(ascii: ".") && byte != UInt8(ascii: "\\") {
                    text.unicodeScalars.append(Unicode.Scalar(byte))
                } else {
                    let digits = String(byte)
                    text += "\\" + String(repeating: "0", count: 3 - digits.count) + digits
                }
            }
            return text
        }.joined(separator: ".")
    }

    /// The labels with ASCII letters lowered, for comparisons (DNS names compare case-insensitively).
    public var canonicalLabels: [[UInt8]] {
        labels.map { label in label.map { ($0 >= 0x41 && $0 <= 0x5A) ? $0 | 0x20 : $0 } }
    }

    /// Whether this name equals `other` or lies below it, ignoring ASCII case.
    public func isSubdomain(of other: DNSName) -> Bool {
        guard labels.count >= other.labels.count else { return false }
        return Array(canonicalLabels.suffix(other.labels.count)) == other.canonicalLabels
    }

    /// Whether both names are the same, ignoring ASCII case.
    public func isEquivalent(to other: DNSName) -> Bool {
        labels.count == other.labels.count && isSubdomain(of: other)
    }
}

// DNS messages (RFC 1035 section 4) as values: decoding from and encoding to wire bytes. No socket code.

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

/// An entry of the question section.
public struct DNSQuestion: Sendable, Hashable {
    public var name: DNSName
    public var type: DNSRecordType
    public var recordClass: DNSClass

    public init(name: DNSName, type: DNSRecordType, recordClass: DNSClass = .internet) {
        self.name = name
        self.type = type
        self.recordClass = recordClass
    }
}

/// A resource record. `data` is the RDATA as it was on the wire: names inside it are not decompressed.
public struct DNSResourceRecord: Sendable, Hashable {
    public var name: DNSName
    public var type: DNSRecordType
    /// The CLASS field, raw (an OPT record keeps its UDP payload size here).
    public var recordClass: UInt16
    public var ttl: UInt32
    public var data: [UInt8]

    public init(name: DNSName, type: DNSRecordType, recordClass: UInt16 = DNSClass.internet.rawValue,
                ttl: UInt32, data: [UInt8]) {
        self.name = name
        self.type = type
        self.recordClass = recordClass
        self.ttl = ttl
        self.data = data
    }
}

/// The fixed 12-byte header of a DNS message.
public struct DNSHeader: Sendable, Hashable {
    public var id: UInt16
    /// The second 16-bit word: QR, OPCODE, AA, TC, RD, RA, Z, AD, CD, RCODE.
    public var flags: UInt16
    public var questionCount: UInt16
    public var answerCount: UInt16
    public var authorityCount: UInt16
    public var additionalCount: UInt16

    /// The header at the start of `bytes`; nil when there are fewer than 12 bytes.
    public init?(bytes: [UInt8]) {
        guard bytes.count >= 12 else { return nil }
        func word(_ at: Int) -> UInt16 { UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1]) }
        id = word(0)
        flags = word(2)
        questionCount = word(4)
        answerCount = word(6)
        authorityCount = word(8)
        additionalCount = word(10)
    }

    public var isResponse: Bool { flags & 0x8000 != 0 }
    public var opcode: UInt8 { UInt8((flags >> 11) & 0x0F) }
    public var recursionDesired: Bool { flags & 0x0100 != 0 }
}

/// A whole DNS message.
public struct DNSMessage: Sendable, Hashable {
    public var id: UInt16
    /// QR: a response rather than a query.
    public var isResponse: Bool
    /// OPCODE; 0 is a standard query.
    public var opcode: UInt8
    /// AA.
    public var isAuthoritative: Bool
    /// TC.
    public var isTruncated: Bool
    /// RD.
    public var recursionDesired: Bool
    /// RA.
    public var recursionAvailable: Bool
    /// AD.
    public var authenticData: Bool
    /// CD.
    public var checkingDisabled: Bool
    public var responseCode: DNSResponseCode
    public var questions: [DNSQuestion]
    public var answers: [DNSResourceRecord]
    public var authorities: [DNSResourceRecord]
    public var additionals: [DNSResourceRecord]

    public init(
        id: UInt16, isResponse: Bool = false, opcode: UInt8 = 0, isAuthoritative: Bool = false,
        isTruncated: Bool = false, recursionDesired: Bool = false, recursionAvailable: Bool = false,
        authenticData: Bool = false, checkingDisabled: Bool = false, responseCode: DNSResponseCode = .noError,
        questions: [DNSQuestion] = [], answers: [DNSResourceRecord] = [],
        authorities: [DNSResourceRecord] = [], additionals: [DNSResourceRecord] = []
    ) {
        self.id = id
        self.isResponse = isResponse
        self.opcode = opcode & 0x0F
        self.isAuthoritative = isAuthoritative
        self.isTruncated = isTruncated
        self.recursionDesired = recursionDesired
        self.recursionAvailable = recursionAvailable
        self.authenticData = authenticData
        self.checkingDisabled = checkingDisabled
        self.responseCode = responseCode
        self.questions = questions
        self.answers = answers
        self.authorities = authorities
        self.additionals = additionals
    }

    /// A standard query with one question and RD set, as a stub resolver sends it.
    public static func query(id: UInt16, name: DNSName, type: DNSRecordType,
                             recursionDesired: Bool = true) -> DNSMessage {
        DNSMessage(id: id, recursionDesired: recursionDesired,
                   questions: [DNSQuestion(name: name, type: type)])
    }

    /// The header flags word.
    public var flags: UInt16 {
        var flags = UInt16(opcode & 0x0F) << 11 | UInt16(responseCode.rawValue & 0x0F)
        if isResponse { flags |= 0x8000 }
        if isAuthoritative { flags |= 0x0400 }
        if isTruncated { flags |= 0x0200 }
        if recursionDesired { flags |= 0x0100 }
        if recursionAvailable { flags |= 0x0080 }
        if authenticData { flags |= 0x0020 }
        if checkingDisabled { flags |= 0x0010 }
        return flags
    }

    // MARK: Decoding

    /// Decodes a message. Bytes after the last record the header announces are ignored.
    public init(bytes: [UInt8]) throws(DNSMessageError) {
        guard let header = DNSHeader(bytes: bytes) else { throw .truncated(offset: bytes.count) }
        self.init(id: header.id)
        let flags = header.flags
        isResponse = flags & 0x8000 != 0
        opcode = UInt8((flags >> 11) & 0x0F)
        isAuthoritative = flags & 0x0400 != 0
        isTruncated = flags & 0x0200 != 0
        recursionDesired = flags & 0x0100 != 0
        recursionAvailable = flags & 0x0080 != 0
        authenticData = flags & 0x0020 != 0
        checkingDisabled = flags & 0x0010 != 0
        responseCode = DNSResponseCode(rawValue: UInt8(flags & 0x000F))

        var reader = DNSReader(bytes: bytes, offset: 12)
        for _ in 0..<header.questionCount {
            let name = try reader.readName()
            let type = try reader.readUInt16()
            let recordClass = try reader.readUInt16()
            questions.append(DNSQuestion(name: name, type: DNSRecordType(rawValue: type),
                                         recordClass: DNSClass(rawValue: recordClass)))
        }
        answers = try reader.readRecords(count: header.answerCount)
        authorities = try reader.readRecords(count: header.authorityCount)
        additionals = try reader.readRecords(count: header.additionalCount)
    }

    // MARK: Encoding

    /// The wire bytes. Question and owner names are compressed against earlier names; RDATA is copied as is.
    public func encoded() -> [UInt8] {
        var writer = DNSWriter()
        writer.appendUInt16(id)
        writer.appendUInt16(flags)
        writer.appendUInt16(UInt16(clamping: questions.count))
        writer.appendUInt16(UInt16(clamping: answers.count))
        writer.appendUInt16(UInt16(clamping: authorities.count))
        writer.appendUInt16(UInt16(clamping: additionals.count))
        for question in questions.prefix(Int(UInt16.max)) {
            writer.appendName(question.name)
            writer.appendUInt16(question.type.rawValue)
            writer.appendUInt16(question.recordClass.rawValue)
        }
        for section in [answers, authorities, additionals] {
            for record in section.prefix(Int(UInt16.max)) {
                writer.appendName(record.name)
                writer.appendUInt16(record.type.rawValue)
                writer.appendUInt16(record.recordClass)
                writer.appendUInt16(UInt16(truncatingIfNeeded: record.ttl >> 16))
                writer.appendUInt16(UInt16(truncatingIfNeeded: record.ttl))
                let data = record.data.prefix(Int(UInt16.max))
                writer.appendUInt16(UInt16(data.count))
                writer.bytes.append(contentsOf: data)
            }
        }
        return writer.bytes
    }
}

/// Reads big-endian fields and (compressed) names from a message.
struct DNSReader {
    let bytes: [UInt8]
    var offset: Int

    /// Most compression pointers followed in one name.
    static let maximumPointers = 64

    mutating func readUInt16() throws(DNSMessageError) -> UInt16 {
        guard offset + 2 <= bytes.count else { throw .truncated(offset: bytes.count) }
        defer { offset += 2 }
        return UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }

    mutating func readUInt32() throws(DNSMessageError) -> UInt32 {
        let high = try readUInt16()
        let low = try readUInt16()
        return UInt32(high) << 16 | UInt32(low)
    }

    mutating func readBytes(_ count: Int) throws(DNSMessageError) -> [UInt8] {
        guard offset + count <= bytes.count else { throw .truncated(offset: bytes.count) }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    /// Reads a name, following compression pointers. Every pointer must point strictly before the place the
    /// previous jump started from, so the targets decrease and a loop is impossible.
    mutating func readName() throws(DNSMessageError) -> DNSName {
        var labels: [[UInt8]] = []
        var position = offset
        var resumeAt: Int?
        var limit = offset
        var wireLength = 1
        var pointers = 0
        while true {
            guard position < bytes.count else { throw .truncated(offset: bytes.count) }
            let length = Int(bytes[position])
            switch length & 0xC0 {
            case 0xC0:
                guard position + 1 < bytes.count else { throw .truncated(offset: bytes.count) }
                let target = (length & 0x3F) << 8 | Int(bytes[position + 1])
                pointers += 1
                guard target < limit, pointers <= Self.maximumPointers else { throw .pointerLoop(offset: position) }
                if resumeAt == nil { resumeAt = position + 2 }
                limit = target
                position = target
            case 0x00:
                if length == 0 {
                    offset = resumeAt ?? position + 1
                    return DNSName(uncheckedLabels: labels)
                }
                guard position + 1 + length <= bytes.count else { throw .truncated(offset: bytes.count) }
                wireLength += length + 1
                guard wireLength <= 255 else { throw .nameTooLong(offset: position) }
                labels.append(Array(bytes[(position + 1)...(position + length)]))
                position += 1 + length
            default:
                throw .invalidLabel(offset: position)
            }
        }
    }

    mutating func readRecords(count: UInt16) throws(DNSMessageError) -> [DNSResourceRecord] {
        var records: [DNSResourceRecord] = []
        for _ in 0..<count {
            let name = try readName()
            let type = try readUInt16()
            let recordClass = try readUInt16()
            let ttl = try readUInt32()
            let length = try readUInt16()
            let data = try readBytes(Int(length))
            records.append(DNSResourceRecord(name: name, type: DNSRecordType(rawValue: type),
                                             recordClass: recordClass, ttl: ttl, data: data))
        }
        return records
    }
}

/// Appends big-endian fields and names with compression.
struct DNSWriter {
    var bytes: [UInt8] = []
    /// Offsets of name suffixes already written, keyed by their canonical (lower-case) labels.
    private var suffixOffsets: [[[UInt8]]: Int] = [:]

    mutating func appendUInt16(_ value: UInt16) {
        bytes.append(UInt8(value >> 8))
        bytes.append(UInt8(value & 0xFF))
    }

    mutating func appendName(_ name: DNSName) {
        let canonical = name.canonicalLabels
        for index in name.labels.indices {
            let suffix = Array(canonical[index...])
            if let offset = suffixOffsets[suffix] {
                appendUInt16(0xC000 | UInt16(offset))
                return
            }
            if bytes.count < 0x4000 { suffixOffsets[suffix] = bytes.count }
            bytes.append(UInt8(name.labels[index].count))
            bytes.append(contentsOf: name.labels[index])
        }
        bytes.append(0)
    }
}

// DNS messages (RFC 1035 section 4) as values: decoding from and encoding to wire bytes. No socket code.

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

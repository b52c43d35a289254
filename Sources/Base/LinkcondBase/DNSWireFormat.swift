// Reading and writing DNS wire bytes: big-endian fields and (compressed) names.

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

/// Walks the netlink attributes (`struct nlattr`: u16 length, u16 type, payload, padding) in a byte range.
///
/// The decoder is "sticky": the first problem — an attribute running past the end, a length shorter than
/// the attribute header, a typed read of a payload with the wrong size — is recorded, iteration stops,
/// and typed reads return zero values. Callers walk the loop and check ``finish()`` once:
///
/// ```swift
/// var attributes = AttributeDecoder(payload[16...], operation: "decode link")
/// while attributes.next() {
///     switch attributes.type {
///     case IFLA_MTU: mtu = attributes.uint32()
///     default: break   // unknown attributes are skipped, never fatal
///     }
/// }
/// try attributes.finish()
/// ```
public struct AttributeDecoder {
    private let bytes: ArraySlice<UInt8>
    private var offset: Int
    private var current: Range<Int> = 0..<0
    private let operation: String

    /// The type of the current attribute, without the `NLA_F_NESTED` and `NLA_F_NET_BYTEORDER` bits.
    public private(set) var type: UInt16 = 0
    /// True when the current attribute had `NLA_F_NESTED` set.
    public private(set) var isNested = false
    /// The first problem met, if any.
    public private(set) var error: NetlinkError?

    /// A decoder over `bytes`; `operation` names what is being decoded, for errors.
    public init(_ bytes: ArraySlice<UInt8>, operation: String) {
        self.bytes = bytes
        self.offset = bytes.startIndex
        self.operation = operation
    }

    /// A decoder over a whole array.
    public init(_ bytes: [UInt8], operation: String) {
        self.init(bytes[...], operation: operation)
    }

    /// Moves to the next attribute. Returns false at the end or after the first error.
    public mutating func next() -> Bool {
        guard error == nil, offset < bytes.endIndex else { return false }
        let remaining = bytes.endIndex - offset
        guard remaining >= 4,
            let length = bytes.load(UInt16.self, at: offset - bytes.startIndex),
            let rawType = bytes.load(UInt16.self, at: offset - bytes.startIndex + 2)
        else {
            fail("\(remaining) trailing bytes are too few for an attribute header")
            return false
        }
        let attributeLength = Int(length)
        guard attributeLength >= 4 else {
            fail("attribute of type \(rawType) claims length \(attributeLength), shorter than its header")
            return false
        }
        guard attributeLength <= remaining else {
            fail("attribute of type \(rawType & 0x3fff) claims \(attributeLength) bytes, \(remaining) remain")
            return false
        }
        type = rawType & 0x3fff
        isNested = rawType & 0x8000 != 0
        current = (offset + 4)..<(offset + attributeLength)
        offset = min(bytes.endIndex, offset + netlinkAlign(attributeLength))
        return true
    }

    /// Throws the first problem met, if any.
    public func finish() throws(NetlinkError) {
        if let error { throw error }
    }

    /// The current attribute's payload.
    public var payload: ArraySlice<UInt8> { bytes[current] }

    /// The payload as a u8; records an error when it is not exactly one byte.
    public mutating func uint8() -> UInt8 { fixed(UInt8.self) }
    /// The payload as a host-order u16.
    public mutating func uint16() -> UInt16 { fixed(UInt16.self) }
    /// The payload as a host-order u32.
    public mutating func uint32() -> UInt32 { fixed(UInt32.self) }
    /// The payload as a host-order u64.
    public mutating func uint64() -> UInt64 { fixed(UInt64.self) }
    /// The payload as a host-order s32.
    public mutating func int32() -> Int32 { fixed(Int32.self) }

    /// The payload as a string, up to the first NUL (a missing NUL is tolerated).
    public func string() -> String {
        let content = payload.prefix { $0 != 0 }
        return String(decoding: content, as: UTF8.self)
    }

    /// The payload as a C struct; records an error when the payload is shorter than the struct.
    /// (Kernels may append fields to structs, so a longer payload is accepted.)
    /// Inlinable, so that callers in other modules get it specialized for their struct.
    @inlinable
    public mutating func structure<T: BitwiseCopyable>(_ type: T.Type) -> T? {
        guard let value = payload.load(T.self, at: 0) else {
            fail("attribute \(self.type) has \(payload.count) bytes, \(MemoryLayout<T>.size) expected")
            return nil
        }
        return value
    }

    /// A decoder over the current attribute's payload, for nested attributes.
    public func nested() -> AttributeDecoder {
        AttributeDecoder(payload, operation: operation)
    }

    private mutating func fixed<T: BitwiseCopyable & FixedWidthInteger>(_: T.Type) -> T {
        guard payload.count == MemoryLayout<T>.size, let value = payload.load(T.self, at: 0) else {
            fail("attribute \(type) has \(payload.count) bytes, \(MemoryLayout<T>.size) expected")
            return 0
        }
        return value
    }

    @usableFromInline
    mutating func fail(_ detail: String) {
        if error == nil {
            error = NetlinkError(kind: .malformed, operation: operation, detail: detail)
        }
        offset = bytes.endIndex
    }
}

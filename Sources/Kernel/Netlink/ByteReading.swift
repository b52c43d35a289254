/// Bounds-checked, alignment-free reads of host-order integers and C structs from bytes.
///
/// Netlink is host byte order and makes no alignment promise that survives slicing, so every read goes
/// through `loadUnaligned` after a bounds check; nothing here can read past the end of its buffer.
extension Collection where Element == UInt8, Index == Int {
    /// The value of type `T` stored at `offset`, or nil when the bytes end before it does.
    @inlinable
    public func load<T: BitwiseCopyable>(_ type: T.Type, at offset: Int) -> T? {
        let size = MemoryLayout<T>.size
        guard offset >= 0, offset <= count - size else { return nil }
        let start = startIndex + offset
        return self[start..<(start + size)].withContiguousStorageIfAvailable { buffer in
            UnsafeRawBufferPointer(buffer).loadUnaligned(as: T.self)
        } ?? Array(self[start..<(start + size)]).withUnsafeBytes { $0.loadUnaligned(as: T.self) }
    }
}

/// Appends the raw bytes of a C struct or integer.
@inlinable
public func rawBytes<T: BitwiseCopyable>(of value: T) -> [UInt8] {
    withUnsafeBytes(of: value) { Array($0) }
}

/// Rounds `length` up to netlink's 4-byte alignment (`NLMSG_ALIGN`/`NLA_ALIGN`).
@inlinable
public func netlinkAlign(_ length: Int) -> Int {
    (length + 3) & ~3
}

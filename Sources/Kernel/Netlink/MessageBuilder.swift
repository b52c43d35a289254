import CMnl
import Glibc

/// Builds one netlink request in a buffer it owns, with libmnl doing the header and attribute layout.
///
/// Nests are opened and closed by hand (``beginNest(_:nestedFlag:)``/``endNest(_:)``) so that callers can
/// choose whether `NLA_F_NESTED` is set — iproute2 does not set it on `IFLA_LINKINFO` or `TCA_OPTIONS`, and
/// the kernel's rtnetlink policies accept both — and so that a nest can start with a raw C struct followed
/// by attributes, the shape `TCA_OPTIONS` takes for netem and `VETH_INFO_PEER` takes for veth.
///
/// Problems (the message not fitting) are sticky and reported by ``finish()``.
public final class NetlinkMessageBuilder {
    /// A position in the message where a nest starts.
    public struct Nest {
        fileprivate let offset: Int
    }

    private var buffer: UnsafeMutableRawPointer
    /// Bytes allocated so far: a small block first, doubled as attributes need it, never past ``capacity``.
    /// Nothing is zero-filled ahead: the bytes of each piece are cleared just before it is written (the
    /// padding included), and only the first ``length`` bytes are ever read.
    private var allocated: Int
    /// The capacity of the buffer in bytes: the most the message may grow to.
    public let capacity: Int
    private var header: UnsafeMutablePointer<nlmsghdr> { buffer.assumingMemoryBound(to: nlmsghdr.self) }
    private var overflowed: String?

    /// The first block allocated: enough for every request linkcond sends but the largest netem ones.
    static let initialAllocation = 512

    /// A request of `type` (e.g. `RTM_NEWLINK`) with `flags` (e.g. `NLM_F_REQUEST | NLM_F_CREATE`).
    /// The sequence number is set by the socket when the message is sent (see ``sequence``).
    public init(type: UInt16, flags: UInt16, capacity: Int = 16_384) {
        self.capacity = capacity
        allocated = max(MemoryLayout<nlmsghdr>.size, min(capacity, Self.initialAllocation))
        buffer = UnsafeMutableRawPointer.allocate(byteCount: allocated, alignment: 8)
        let header = mnl_nlmsg_put_header(buffer)!
        header.pointee.nlmsg_type = type
        header.pointee.nlmsg_flags = flags
    }

    deinit {
        buffer.deallocate()
    }

    /// `nlmsg_type`.
    public var type: UInt16 { header.pointee.nlmsg_type }

    /// `nlmsg_flags`.
    public var flags: UInt16 {
        get { header.pointee.nlmsg_flags }
        set { header.pointee.nlmsg_flags = newValue }
    }

    /// `nlmsg_seq`. Sockets set it when sending; golden-byte tests set it to the value in a fixture.
    public var sequence: UInt32 {
        get { header.pointee.nlmsg_seq }
        set { header.pointee.nlmsg_seq = newValue }
    }

    /// Current length of the message (`nlmsg_len`).
    public var length: Int { Int(header.pointee.nlmsg_len) }

    private func room(for bytes: Int, _ what: @autoclosure () -> String) -> Bool {
        if overflowed != nil { return false }
        let needed = length + netlinkAlign(bytes)
        if needed > capacity {
            overflowed = "\(what()) needs \(netlinkAlign(bytes)) bytes, \(capacity - length) left"
            return false
        }
        if needed > allocated { grow(to: needed) }
        // libmnl before 1.0.5 leaves an attribute's alignment padding as it finds it: clear what is written.
        (buffer + length).initializeMemory(as: UInt8.self, repeating: 0, count: needed - length)
        return true
    }

    /// Moves the message to a block of at least `needed` bytes (doubling, at most ``capacity``).
    private func grow(to needed: Int) {
        var size = allocated
        while size < needed { size *= 2 }
        size = min(size, capacity)
        let larger = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 8)
        larger.copyMemory(from: buffer, byteCount: length)
        buffer.deallocate()
        buffer = larger
        allocated = size
    }

    /// Appends a C struct at the tail, padded to 4 bytes: the family header (`ifinfomsg`, `tcmsg`…) right
    /// after the netlink header, or the struct that starts a nest such as `TCA_OPTIONS` for netem.
    /// Inlinable, so that callers get it specialized for their struct.
    @inlinable
    public func putStruct<T: BitwiseCopyable>(_ value: T) {
        withUnsafeBytes(of: value) { putStruct(bytes: $0, named: T.self) }
    }

    @usableFromInline
    func putStruct(bytes: UnsafeRawBufferPointer, named type: Any.Type) {
        guard room(for: bytes.count, "struct \(type)") else { return }
        let tail = mnl_nlmsg_put_extra_header(header, bytes.count)!
        tail.copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
    }

    /// Appends raw bytes as an attribute payload.
    public func put(_ type: UInt16, bytes: [UInt8]) {
        bytes.withUnsafeBytes { put(type, rawBytes: $0) }
    }

    /// Appends a C struct as an attribute payload (e.g. `TCA_NETEM_CORR`).
    /// Inlinable, so that callers get it specialized for their struct.
    @inlinable
    public func put<T: BitwiseCopyable>(_ type: UInt16, structure value: T) {
        withUnsafeBytes(of: value) { put(type, rawBytes: $0) }
    }

    /// Appends `bytes` as an attribute payload.
    @usableFromInline
    func put(_ type: UInt16, rawBytes bytes: UnsafeRawBufferPointer) {
        guard room(for: 4 + bytes.count, "attribute \(type)") else { return }
        if !mnl_attr_put_check(header, allocated, type, bytes.count, bytes.baseAddress) { overflowed = "attribute \(type)" }
    }

    /// Appends a u8 attribute.
    public func put(_ type: UInt16, uint8 value: UInt8) {
        guard room(for: 5, "attribute \(type)") else { return }
        if !mnl_attr_put_u8_check(header, allocated, type, value) { overflowed = "attribute \(type)" }
    }

    /// Appends a host-order u16 attribute.
    public func put(_ type: UInt16, uint16 value: UInt16) {
        guard room(for: 6, "attribute \(type)") else { return }
        if !mnl_attr_put_u16_check(header, allocated, type, value) { overflowed = "attribute \(type)" }
    }

    /// Appends a host-order u32 attribute.
    public func put(_ type: UInt16, uint32 value: UInt32) {
        guard room(for: 8, "attribute \(type)") else { return }
        if !mnl_attr_put_u32_check(header, allocated, type, value) { overflowed = "attribute \(type)" }
    }

    /// Appends a host-order u64 attribute.
    public func put(_ type: UInt16, uint64 value: UInt64) {
        guard room(for: 12, "attribute \(type)") else { return }
        if !mnl_attr_put_u64_check(header, allocated, type, value) { overflowed = "attribute \(type)" }
    }

    /// Appends a NUL-terminated string attribute (libmnl's `strz`, iproute2's `addattr_l(.., strlen + 1)`).
    public func put(_ type: UInt16, string value: String) {
        guard room(for: 4 + value.utf8.count + 1, "attribute \(type)") else { return }
        if !mnl_attr_put_strz_check(header, allocated, type, value) { overflowed = "attribute \(type)" }
    }

    /// Opens a nest of `type`. With `nestedFlag` the type carries `NLA_F_NESTED`.
    public func beginNest(_ type: UInt16, nestedFlag: Bool = false) -> Nest {
        let offset = length
        put(nestedFlag ? type | UInt16(NLA_F_NESTED) : type, bytes: [])
        return Nest(offset: offset)
    }

    /// Closes a nest: its length becomes everything appended since ``beginNest(_:nestedFlag:)``.
    public func endNest(_ nest: Nest) {
        guard overflowed == nil else { return }
        guard length - nest.offset <= Int(UInt16.max) else {
            overflowed = "a nest of \(length - nest.offset) bytes exceeds the 65535 an attribute can hold"
            return
        }
        let nestLength = UInt16(length - nest.offset)
        buffer.storeBytes(of: nestLength, toByteOffset: nest.offset, as: UInt16.self)
    }

    /// The finished message, or the reason it could not be built.
    public func finish() throws(NetlinkError) -> [UInt8] {
        if let overflowed {
            throw NetlinkError(kind: .overflow, operation: "build netlink message", detail: overflowed)
        }
        return bytes
    }

    /// The message as it stands.
    public var bytes: [UInt8] {
        Array(UnsafeRawBufferPointer(start: buffer, count: length))
    }

    /// Appends the finished message to `datagram` (one copy, no intermediate array), or throws the reason
    /// it could not be built, as ``finish()`` does.
    func appendFinished(to datagram: inout [UInt8]) throws(NetlinkError) {
        if let overflowed {
            throw NetlinkError(kind: .overflow, operation: "build netlink message", detail: overflowed)
        }
        datagram.append(contentsOf: UnsafeRawBufferPointer(start: buffer, count: length))
    }
}

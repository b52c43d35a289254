import CMnl

/// One netlink message received from the kernel: the `nlmsghdr` fields and the payload after it.
public struct NetlinkMessage: Sendable, Equatable {
    /// Size of `struct nlmsghdr`.
    public static let headerLength = 16

    /// `nlmsg_type`, e.g. `RTM_NEWLINK` or `NLMSG_ERROR`.
    public var type: UInt16
    /// `nlmsg_flags`.
    public var flags: UInt16
    /// `nlmsg_seq`.
    public var sequence: UInt32
    /// `nlmsg_pid`: for replies, the port id of the socket the request came from.
    public var portID: UInt32
    /// The bytes after the header, without trailing alignment padding.
    public var payload: [UInt8]

    /// A value with these fields.
    public init(type: UInt16, flags: UInt16 = 0, sequence: UInt32 = 0, portID: UInt32 = 0, payload: [UInt8] = []) {
        self.type = type
        self.flags = flags
        self.sequence = sequence
        self.portID = portID
        self.payload = payload
    }

    /// Splits one datagram into its messages.
    ///
    /// Every length is checked against the datagram: a header that claims more bytes than there are, or
    /// fewer than a header, makes the whole datagram malformed (the kernel never sends such a thing, so it
    /// means the bytes are not what they claim to be).
    public static func parse<Bytes: Collection>(datagram: Bytes) throws(NetlinkError) -> [NetlinkMessage]
    where Bytes.Element == UInt8, Bytes.Index == Int {
        var messages: [NetlinkMessage] = []
        var offset = 0
        let total = datagram.count
        while offset < total {
            guard total - offset >= headerLength,
                let length = datagram.load(UInt32.self, at: offset),
                let type = datagram.load(UInt16.self, at: offset + 4),
                let flags = datagram.load(UInt16.self, at: offset + 6),
                let sequence = datagram.load(UInt32.self, at: offset + 8),
                let portID = datagram.load(UInt32.self, at: offset + 12)
            else {
                throw NetlinkError(
                    kind: .malformed, operation: "decode netlink message",
                    detail: "\(total - offset) trailing bytes are too few for a header at offset \(offset)")
            }
            let messageLength = Int(length)
            guard messageLength >= headerLength, messageLength <= total - offset else {
                throw NetlinkError(
                    kind: .malformed, operation: "decode netlink message",
                    detail: "message at offset \(offset) claims \(messageLength) bytes, \(total - offset) remain")
            }
            let start = datagram.startIndex + offset
            let payload = Array(datagram[(start + headerLength)..<(start + messageLength)])
            messages.append(
                NetlinkMessage(type: type, flags: flags, sequence: sequence, portID: portID, payload: payload))
            offset += netlinkAlign(messageLength)
        }
        return messages
    }

    /// True when every length in `datagram` is consistent, so that ``parse(datagram:)`` would not throw:
    /// a check that copies nothing, for readers that walk the datagram where it lies.
    static func isWellFormed(datagram: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        let total = datagram.count
        while offset < total {
            guard total - offset >= headerLength else { return false }
            let length = Int(datagram.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
            guard length >= headerLength, length <= total - offset else { return false }
            offset += netlinkAlign(length)
        }
        return true
    }

    /// The message as bytes on the wire (header included). Used by tests and fakes.
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(Self.headerLength + payload.count)
        out += rawBytes(of: UInt32(Self.headerLength + payload.count))
        out += rawBytes(of: type)
        out += rawBytes(of: flags)
        out += rawBytes(of: sequence)
        out += rawBytes(of: portID)
        out += payload
        while out.count % 4 != 0 { out.append(0) }
        return out
    }
}

extension NetlinkMessage {
    /// `NLMSG_NOOP`.
    public static let noop = UInt16(NLMSG_NOOP)
    /// `NLMSG_ERROR`: an ack (error 0) or a refusal.
    public static let error = UInt16(NLMSG_ERROR)
    /// `NLMSG_DONE`: the end of a dump.
    public static let done = UInt16(NLMSG_DONE)
    /// `NLMSG_OVERRUN`.
    public static let overrun = UInt16(NLMSG_OVERRUN)

    /// Decodes the payload of an `NLMSG_ERROR` (or of an `NLMSG_DONE` that carries an error) into the errno
    /// it carries (0 for an ack) and the extended-ack message and offset, if any.
    ///
    /// Layout (`struct nlmsgerr`): an `int` error, then the request's header — only the header when the
    /// kernel capped the ack (`NLM_F_CAPPED`), the whole request otherwise — then, with `NLM_F_ACK_TLVS`,
    /// attributes `NLMSGERR_ATTR_MSG` (string) and `NLMSGERR_ATTR_OFFS` (u32).
    public func decodeError(operation: String) throws(NetlinkError) -> (errno: Int32, message: String?, offset: UInt32?) {
        guard let code = payload.load(Int32.self, at: 0) else {
            throw NetlinkError(kind: .malformed, operation: operation, detail: "error message without an error code")
        }
        guard code != .min else {
            throw NetlinkError(kind: .malformed, operation: operation, detail: "error code \(code) is not an errno")
        }
        var tlvStart: Int
        if type == Self.done {
            tlvStart = 4
        } else {
            guard let innerLength = payload.load(UInt32.self, at: 4) else {
                throw NetlinkError(
                    kind: .malformed, operation: operation, detail: "error message without the request's header")
            }
            let capped = flags & UInt16(NLM_F_CAPPED) != 0
            tlvStart = 4 + (capped ? Self.headerLength : netlinkAlign(Int(innerLength)))
        }
        var message: String?
        var offset: UInt32?
        if flags & UInt16(NLM_F_ACK_TLVS) != 0, tlvStart <= payload.count {
            var decoder = AttributeDecoder(payload[tlvStart...], operation: operation)
            while decoder.next() {
                switch Int32(decoder.type) {
                case Int32(NLMSGERR_ATTR_MSG.rawValue): message = decoder.string()
                case Int32(NLMSGERR_ATTR_OFFS.rawValue): offset = decoder.uint32()
                default: break
                }
            }
            // A broken TLV area must not hide the errno: keep what decoded.
        }
        return (-code, message, offset)
    }
}

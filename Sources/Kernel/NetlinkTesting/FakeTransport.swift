import CMnl
import Foundation
import Glibc
import Netlink

// What tests of netlink code need besides the code under test (mdlayher/netlink's `nltest`): small,
// independent encoders for the bytes the kernel sends, so tests describe replies by their parts and
// compute expectations from those parts rather than from the code under test; and a fake transport that
// records what is sent and answers from a script, so the real framing, sequence checks and error
// decoding run unchanged. For tests only: nothing in the products links it.

/// The host-order bytes of an integer (netlink is host byte order).
public func hostBytes<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
    withUnsafeBytes(of: value) { Array($0) }
}

/// `bytes` padded with zeros to netlink's 4-byte alignment.
public func padded(_ bytes: [UInt8]) -> [UInt8] {
    bytes + [UInt8](repeating: 0, count: (4 - bytes.count % 4) % 4)
}

/// One `struct nlattr` with its payload, padded.
public func attribute(_ type: UInt16, _ payload: [UInt8]) -> [UInt8] {
    padded(hostBytes(UInt16(4 + payload.count)) + hostBytes(type) + payload)
}

/// A NUL-terminated string attribute.
public func stringAttribute(_ type: UInt16, _ text: String) -> [UInt8] {
    attribute(type, Array(text.utf8) + [0])
}

/// One netlink message: `struct nlmsghdr` then `payload`, padded.
public func message(type: UInt16, flags: UInt16 = 0, sequence: UInt32, portID: UInt32, payload: [UInt8] = []) -> [UInt8] {
    padded(
        hostBytes(UInt32(16 + payload.count)) + hostBytes(type) + hostBytes(flags) + hostBytes(sequence)
            + hostBytes(portID) + payload)
}

public let nlmsgError = UInt16(NLMSG_ERROR)
public let nlmsgDone = UInt16(NLMSG_DONE)
public let nlmsgOverrun = UInt16(NLMSG_OVERRUN)
public let flagMulti = UInt16(NLM_F_MULTI)
public let flagDumpInterrupted = UInt16(NLM_F_DUMP_INTR)
public let flagCapped = UInt16(NLM_F_CAPPED)
public let flagAckTLVs = UInt16(NLM_F_ACK_TLVS)
public let attrMessage = UInt16(NLMSGERR_ATTR_MSG.rawValue)
public let attrOffset = UInt16(NLMSGERR_ATTR_OFFS.rawValue)

/// The `nlmsg_seq` of a request's bytes.
public func sequence(of request: [UInt8]) -> UInt32 {
    request.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 8, as: UInt32.self) }
}

/// The `nlmsg_flags` of a request's bytes.
public func flags(of request: [UInt8]) -> UInt16 {
    request.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 6, as: UInt16.self) }
}

/// An `NLMSG_ERROR` answering `request`, as `netlink_ack()` lays it out: the negative errno, then the
/// request's header (capped) or the whole request (uncapped), then the extended-ack attributes.
public func errorReply(
    to request: [UInt8], portID: UInt32, errno code: Int32, capped: Bool = true, text: String? = nil, offset: UInt32? = nil
) -> [UInt8] {
    var tlvs: [UInt8] = []
    if let text { tlvs += stringAttribute(attrMessage, text) }
    if let offset { tlvs += attribute(attrOffset, hostBytes(offset)) }
    var flags: UInt16 = capped ? flagCapped : 0
    if !tlvs.isEmpty { flags |= flagAckTLVs }
    let echoed = capped ? Array(request.prefix(16)) : padded(request)
    return message(
        type: nlmsgError, flags: flags, sequence: sequence(of: request), portID: portID,
        payload: hostBytes(-code) + echoed + tlvs)
}

/// The ack (`NLMSG_ERROR` with error 0) for `request`.
public func ack(to request: [UInt8], portID: UInt32) -> [UInt8] {
    errorReply(to: request, portID: portID, errno: 0)
}

/// `NLMSG_DONE` closing a dump: its payload is the dump's error code (0), then optional ext-ack attributes.
public func done(sequence: UInt32, portID: UInt32, flags: UInt16 = flagMulti, errno code: Int32 = 0, text: String? = nil) -> [UInt8] {
    let tlvs = text.map { stringAttribute(attrMessage, $0) } ?? []
    return message(
        type: nlmsgDone, flags: tlvs.isEmpty ? flags : flags | flagAckTLVs, sequence: sequence, portID: portID,
        payload: hostBytes(-code) + tlvs)
}

/// A transport that records what is sent and answers from a script, so NetlinkConnection's framing,
/// sequence checks and error decoding run unchanged. Receiving with nothing queued fails with EAGAIN
/// (a real socket with a timeout does the same) instead of blocking the test forever.
public final class FakeTransport: NetlinkTransport, @unchecked Sendable {
    /// The port id replies are addressed to.
    public let portID: UInt32
    private let lock = NSLock()
    private var sentDatagrams: [[UInt8]] = []
    private var queue: [[UInt8]] = []
    /// Called with each sent request; returns the datagrams the "kernel" answers with.
    private let respond: ([UInt8], Int) -> [[UInt8]]

    /// A transport with port id `portID` whose "kernel" answers each sent datagram with `respond`.
    public init(portID: UInt32 = 0x1234, respond: @escaping ([UInt8], _ attempt: Int) -> [[UInt8]] = { _, _ in [] }) {
        self.portID = portID
        self.respond = respond
    }

    /// Every request sent so far, in order.
    public var sent: [[UInt8]] { lock.withLock { sentDatagrams } }

    /// Queues datagrams to be received before anything `respond` produces.
    public func enqueue(_ datagrams: [UInt8]...) {
        lock.withLock { queue += datagrams }
    }

    /// Records `bytes` and queues the script's answers.
    public func send(_ bytes: [UInt8]) throws(NetlinkError) {
        let attempt = lock.withLock { () -> Int in
            sentDatagrams.append(bytes)
            return sentDatagrams.count - 1
        }
        let replies = respond(bytes, attempt)
        lock.withLock { queue += replies }
    }

    /// The next queued datagram; `EAGAIN` when none is queued.
    public func receive() throws(NetlinkError) -> [UInt8] {
        let next = lock.withLock { () -> [UInt8]? in queue.isEmpty ? nil : queue.removeFirst() }
        guard let next else {
            throw NetlinkError(kind: .system, operation: "fake receive", errno: EAGAIN)
        }
        return next
    }
}

/// One message of a datagram a fake transport was sent: its header fields and its bytes.
public struct SentMessage: Sendable, Equatable {
    /// `nlmsg_type`.
    public let type: UInt16
    /// `nlmsg_flags`.
    public let flags: UInt16
    /// `nlmsg_seq`.
    public let sequence: UInt32
    /// The whole message, header included, unpadded.
    public let bytes: [UInt8]

    /// The bytes after the header.
    public var payload: [UInt8] { Array(bytes.dropFirst(16)) }

    /// The messages laid end to end in `datagram` (a request, or a batch of them).
    public static func split(_ datagram: [UInt8]) -> [SentMessage] {
        var messages: [SentMessage] = []
        var offset = 0
        while datagram.count - offset >= 16 {
            let length = datagram.withUnsafeBytes { Int($0.loadUnaligned(fromByteOffset: offset, as: UInt32.self)) }
            guard length >= 16, offset + length <= datagram.count else { break }
            let bytes = Array(datagram[offset..<(offset + length)])
            messages.append(SentMessage(type: bytes.u16(2), flags: bytes.u16(3), sequence: bytes.u32(2), bytes: bytes))
            offset += (length + 3) & ~3
        }
        return messages
    }
}

extension Array where Element == UInt8 {
    fileprivate func u16(_ halfword: Int) -> UInt16 { withUnsafeBytes { $0.loadUnaligned(fromByteOffset: halfword * 2, as: UInt16.self) } }
    fileprivate func u32(_ word: Int) -> UInt32 { withUnsafeBytes { $0.loadUnaligned(fromByteOffset: word * 4, as: UInt32.self) } }
}

extension FakeTransport {
    /// A transport whose "kernel" answers every message of every datagram on its own, as the kernel does
    /// for a batch: `answer` returns the datagrams that message gets (an ack, a reply then an ack, a dump).
    public convenience init(portID: UInt32 = 0x1234, answeringEachMessage answer: @escaping (SentMessage) -> [[UInt8]]) {
        self.init(portID: portID) { datagram, _ in SentMessage.split(datagram).flatMap(answer) }
    }

    /// Every message sent so far, batches split, in order.
    public var sentMessages: [SentMessage] { sent.flatMap(SentMessage.split) }
}

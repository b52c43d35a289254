import CMnl
import Foundation
import Glibc
import Netlink

// Small, independent encoders for the bytes the kernel sends, so tests describe replies by their parts
// and compute expectations from those parts rather than from the code under test.

/// The host-order bytes of an integer (netlink is host byte order).
func hostBytes<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
    withUnsafeBytes(of: value) { Array($0) }
}

/// `bytes` padded with zeros to netlink's 4-byte alignment.
func padded(_ bytes: [UInt8]) -> [UInt8] {
    bytes + [UInt8](repeating: 0, count: (4 - bytes.count % 4) % 4)
}

/// One `struct nlattr` with its payload, padded.
func attribute(_ type: UInt16, _ payload: [UInt8]) -> [UInt8] {
    padded(hostBytes(UInt16(4 + payload.count)) + hostBytes(type) + payload)
}

/// A NUL-terminated string attribute.
func stringAttribute(_ type: UInt16, _ text: String) -> [UInt8] {
    attribute(type, Array(text.utf8) + [0])
}

/// One netlink message: `struct nlmsghdr` then `payload`, padded.
func message(type: UInt16, flags: UInt16 = 0, sequence: UInt32, portID: UInt32, payload: [UInt8] = []) -> [UInt8] {
    padded(
        hostBytes(UInt32(16 + payload.count)) + hostBytes(type) + hostBytes(flags) + hostBytes(sequence)
            + hostBytes(portID) + payload)
}

let nlmsgError = UInt16(NLMSG_ERROR)
let nlmsgDone = UInt16(NLMSG_DONE)
let nlmsgOverrun = UInt16(NLMSG_OVERRUN)
let flagMulti = UInt16(NLM_F_MULTI)
let flagDumpInterrupted = UInt16(NLM_F_DUMP_INTR)
let flagCapped = UInt16(NLM_F_CAPPED)
let flagAckTLVs = UInt16(NLM_F_ACK_TLVS)
let attrMessage = UInt16(NLMSGERR_ATTR_MSG.rawValue)
let attrOffset = UInt16(NLMSGERR_ATTR_OFFS.rawValue)

/// The `nlmsg_seq` of a request's bytes.
func sequence(of request: [UInt8]) -> UInt32 {
    request.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 8, as: UInt32.self) }
}

/// The `nlmsg_flags` of a request's bytes.
func flags(of request: [UInt8]) -> UInt16 {
    request.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 6, as: UInt16.self) }
}

/// An `NLMSG_ERROR` answering `request`, as `netlink_ack()` lays it out: the negative errno, then the
/// request's header (capped) or the whole request (uncapped), then the extended-ack attributes.
func errorReply(
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
func ack(to request: [UInt8], portID: UInt32) -> [UInt8] {
    errorReply(to: request, portID: portID, errno: 0)
}

/// `NLMSG_DONE` closing a dump: its payload is the dump's error code (0), then optional ext-ack attributes.
func done(sequence: UInt32, portID: UInt32, flags: UInt16 = flagMulti, errno code: Int32 = 0, text: String? = nil) -> [UInt8] {
    let tlvs = text.map { stringAttribute(attrMessage, $0) } ?? []
    return message(
        type: nlmsgDone, flags: tlvs.isEmpty ? flags : flags | flagAckTLVs, sequence: sequence, portID: portID,
        payload: hostBytes(-code) + tlvs)
}

/// A transport that records what is sent and answers from a script, so NetlinkConnection's framing,
/// sequence checks and error decoding run unchanged. Receiving with nothing queued fails with EAGAIN
/// (a real socket with a timeout does the same) instead of blocking the test forever.
final class FakeTransport: NetlinkTransport, @unchecked Sendable {
    let portID: UInt32
    private let lock = NSLock()
    private var sentDatagrams: [[UInt8]] = []
    private var queue: [[UInt8]] = []
    /// Called with each sent request; returns the datagrams the "kernel" answers with.
    private let respond: ([UInt8], Int) -> [[UInt8]]

    init(portID: UInt32 = 0x1234, respond: @escaping ([UInt8], _ attempt: Int) -> [[UInt8]] = { _, _ in [] }) {
        self.portID = portID
        self.respond = respond
    }

    /// Every request sent so far, in order.
    var sent: [[UInt8]] { lock.withLock { sentDatagrams } }

    /// Queues datagrams to be received before anything `respond` produces.
    func enqueue(_ datagrams: [UInt8]...) {
        lock.withLock { queue += datagrams }
    }

    func send(_ bytes: [UInt8]) throws(NetlinkError) {
        let attempt = lock.withLock { () -> Int in
            sentDatagrams.append(bytes)
            return sentDatagrams.count - 1
        }
        let replies = respond(bytes, attempt)
        lock.withLock { queue += replies }
    }

    func receive() throws(NetlinkError) -> [UInt8] {
        let next = lock.withLock { () -> [UInt8]? in queue.isEmpty ? nil : queue.removeFirst() }
        guard let next else {
            throw NetlinkError(kind: .system, operation: "fake receive", errno: EAGAIN)
        }
        return next
    }
}

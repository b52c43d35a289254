import CMnl
import Glibc
import Synchronization

/// Requests and dumps over a netlink transport, each tied to its replies.
///
/// Every request gets the next sequence number; replies are matched on sequence number and port id, and
/// anything else (a late reply to an earlier request) is skipped. `NLMSG_ERROR` becomes a
/// ``NetlinkError`` with the kernel's extended-ack message. Calls are serialised, so one connection can be
/// shared between threads.
public final class NetlinkConnection: Sendable {
    private struct State: ~Copyable {
        var transport: any NetlinkTransport
        var nextSequence: UInt32
    }

    private let state: Mutex<State>
    /// The transport's port id.
    public let portID: UInt32

    /// A connection over `transport`. `firstSequence` defaults to the current time, as iproute2 does;
    /// golden-byte tests inject the value their fixture was captured with.
    public init(transport: sending any NetlinkTransport, firstSequence: UInt32? = nil) {
        portID = transport.portID
        let first = firstSequence ?? UInt32(truncatingIfNeeded: time(nil))
        state = Mutex(State(transport: transport, nextSequence: first))
    }

    /// A connection over a new `NETLINK_ROUTE` socket in the calling thread's network namespace.
    public convenience init() throws(NetlinkError) {
        self.init(transport: try NetlinkSocket())
    }

    /// Sends `message` with `NLM_F_REQUEST | NLM_F_ACK` added and waits for the kernel's answer.
    ///
    /// Returns the messages the kernel sent before the ack (none for most requests; the object for
    /// `NLM_F_ECHO` or a `RTM_GET*` request without `NLM_F_DUMP`). Throws the kernel's refusal as a
    /// ``NetlinkError`` of kind `.kernel` named `operation`.
    @discardableResult
    public func request(_ message: NetlinkMessageBuilder, operation: String) throws(NetlinkError) -> [NetlinkMessage] {
        message.flags |= UInt16(NLM_F_REQUEST | NLM_F_ACK)
        return try exchange(message, operation: operation, dump: false)
    }

    /// Sends `message` with `NLM_F_REQUEST | NLM_F_DUMP` added and collects every reply up to `NLMSG_DONE`.
    ///
    /// When the kernel marks the dump as interrupted (`NLM_F_DUMP_INTR`: the table changed while it was
    /// read) the whole dump is read again, up to `retries` more times; after that a ``NetlinkError`` of
    /// kind `.dumpInterrupted` is thrown.
    public func dump(_ message: NetlinkMessageBuilder, operation: String, retries: Int = 3) throws(NetlinkError) -> [NetlinkMessage] {
        message.flags |= UInt16(NLM_F_REQUEST | NLM_F_DUMP)
        var attempt = 0
        while true {
            do {
                return try exchange(message, operation: operation, dump: true)
            } catch where error.kind == .dumpInterrupted && attempt < retries {
                attempt += 1
            }
        }
    }

    private func exchange(_ message: NetlinkMessageBuilder, operation: String, dump: Bool) throws(NetlinkError) -> [NetlinkMessage] {
        try state.withLock { (state: inout State) throws(NetlinkError) -> [NetlinkMessage] in
            let sequence = state.nextSequence
            state.nextSequence &+= 1
            message.sequence = sequence
            let bytes = try message.finish()
            try state.transport.send(bytes)
            return try Self.collect(
                from: state.transport, sequence: sequence, portID: portID, operation: operation, dump: dump)
        }
    }

    private static func collect(
        from transport: any NetlinkTransport, sequence: UInt32, portID: UInt32, operation: String, dump: Bool
    ) throws(NetlinkError) -> [NetlinkMessage] {
        var replies: [NetlinkMessage] = []
        var interrupted = false
        while true {
            let datagram = try transport.receive()
            let messages: [NetlinkMessage]
            do {
                messages = try NetlinkMessage.parse(datagram: datagram)
            } catch {
                throw error.withOperation(operation)
            }
            for message in messages {
                // Replies carry our sequence number and our port id; anything else belongs to an
                // earlier, abandoned request (or is a notification) and is skipped.
                guard message.sequence == sequence, message.portID == portID || message.portID == 0 else {
                    continue
                }
                if message.flags & UInt16(NLM_F_DUMP_INTR) != 0 { interrupted = true }
                switch message.type {
                case NetlinkMessage.noop:
                    continue
                case NetlinkMessage.error:
                    let (code, text, offset) = try message.decodeError(operation: operation)
                    if code != 0 {
                        throw NetlinkError(
                            kind: .kernel, operation: operation, errno: code, kernelMessage: text, kernelOffset: offset)
                    }
                    if !dump { return replies }
                case NetlinkMessage.done:
                    let (code, text, offset) = try message.decodeError(operation: operation)
                    if code != 0 {
                        throw NetlinkError(
                            kind: .kernel, operation: operation, errno: code, kernelMessage: text, kernelOffset: offset)
                    }
                    if interrupted {
                        throw NetlinkError(kind: .dumpInterrupted, operation: operation, errno: EINTR)
                    }
                    return replies
                case NetlinkMessage.overrun:
                    throw NetlinkError(kind: .overrun, operation: operation, errno: ENOBUFS)
                default:
                    replies.append(message)
                }
            }
        }
    }
}

/// A socket joined to multicast groups, for following kernel notifications (`ip monitor`).
public final class NetlinkListener: @unchecked Sendable {
    /// The underlying socket (its descriptor can be polled).
    public let socket: NetlinkSocket

    /// Opens a `NETLINK_ROUTE` socket in the calling thread's namespace and joins `groups`
    /// (e.g. `RTNLGRP_LINK`, `RTNLGRP_IPV4_IFADDR`).
    public init(groups: [UInt32]) throws(NetlinkError) {
        socket = try NetlinkSocket(receiveBufferBytes: 4 << 20)
        for group in groups { try socket.join(group: group) }
    }

    /// Waits for the next datagram of notifications and decodes it. Throws kind `.overrun` when the kernel
    /// dropped notifications (`ENOBUFS`): the listener's picture is stale and must be rebuilt from a dump.
    public func receive() throws(NetlinkError) -> [NetlinkMessage] {
        try NetlinkMessage.parse(datagram: try socket.receive())
    }
}

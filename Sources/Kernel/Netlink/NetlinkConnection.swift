import CMnl
import Glibc
import LinkcondSystem
import Synchronization

/// One request of a batch sent with ``NetlinkConnection/send(_:)``: a message, what answers it, and the
/// operation it stands for (named like the `ip`/`tc` command that sends the same request).
public struct NetlinkRequest {
    /// How the kernel answers a request, and so which flags the connection adds.
    public enum Answer: Sendable, Equatable {
        /// An ack or a refusal (`NLM_F_REQUEST | NLM_F_ACK`); whatever the kernel sends before the ack
        /// (the object, for `NLM_F_ECHO`) is returned.
        case ack
        /// A dump (`NLM_F_REQUEST | NLM_F_DUMP`), every message up to `NLMSG_DONE`.
        case dump
        /// The one reply of a get sent without an ack (`NLM_F_REQUEST` alone), as `ip link show dev` asks.
        case reply
    }

    /// The message; the connection sets its sequence number and adds the flags of ``answer``.
    public let message: NetlinkMessageBuilder
    /// Writes ``operation``: only when an error needs it, so a request that succeeds never formats its name.
    private let describe: () -> String
    /// The operation, e.g. `tc -n lc-client qdisc replace dev wl0 parent 1:1 handle 11: netem delay 400ms`.
    public var operation: String { describe() }
    /// What answers it.
    public let answer: Answer

    /// A request of `message` named `operation` (worked out only when an error needs it), answered as
    /// `answer` says.
    public init(_ message: NetlinkMessageBuilder, operation: @escaping @autoclosure () -> String, answer: Answer = .ack) {
        self.message = message
        self.describe = operation
        self.answer = answer
    }

    var addedFlags: UInt16 {
        switch answer {
        case .ack: UInt16(NLM_F_REQUEST | NLM_F_ACK)
        case .dump: UInt16(NLM_F_REQUEST | NLM_F_DUMP)
        case .reply: UInt16(NLM_F_REQUEST)
        }
    }
}

/// What a connection has sent so far, counted as it goes (not worked out by callers).
public struct NetlinkStatistics: Sendable, Equatable {
    /// Netlink request messages sent; a batch of four counts four, a dump read again counts again.
    public var requests = 0
    /// Datagrams sent: one per request, or one per batch (round trips to the kernel).
    public var datagrams = 0

    /// Counts of nothing sent.
    public init() {}

    /// What was sent between `earlier` and these counts.
    public func since(_ earlier: NetlinkStatistics) -> NetlinkStatistics {
        var difference = NetlinkStatistics()
        difference.requests = requests - earlier.requests
        difference.datagrams = datagrams - earlier.datagrams
        return difference
    }
}

/// Requests and dumps over a netlink transport, each tied to its replies.
///
/// Every request gets the next sequence number; replies are matched on sequence number and port id, and
/// anything else (a late reply to an earlier request) is skipped. `NLMSG_ERROR` becomes a
/// ``NetlinkError`` with the kernel's extended-ack message. Calls are serialised, so one connection can be
/// shared between threads. Every request is counted (``statistics``).
///
/// Several requests can go in one datagram (``send(_:)``): the kernel handles the messages of a datagram
/// one after the other (`netlink_rcv_skb`), acks each that asks for it, and goes on after a refusal, so
/// a batch costs one round trip and every request still gets its own answer.
public final class NetlinkConnection: Sendable {
    private struct State: ~Copyable {
        var transport: any NetlinkTransport
        var nextSequence: UInt32
        var statistics = NetlinkStatistics()
        /// The datagram being sent, kept so that its memory is reused from one exchange to the next.
        var datagram: [UInt8] = []
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

    /// A connection over a new close-on-exec `NETLINK_ROUTE` socket in the calling thread's network
    /// namespace. Equivalent to the socket every `ip`/`tc` command opens (`rtnl_open`).
    public convenience init() throws(NetlinkError) {
        self.init(transport: try NetlinkSocket())
    }

    /// A connection over `socket`, a `NETLINK_ROUTE` socket opened where the connection is to work (see
    /// `NetNamespace`'s socket factory).
    public convenience init(adopting socket: consuming OwnedSocket) throws(NetlinkError) {
        self.init(transport: try NetlinkSocket(adopting: socket))
    }

    /// What this connection has sent so far.
    public var statistics: NetlinkStatistics { state.withLock { $0.statistics } }

    /// Sends `message` with `NLM_F_REQUEST | NLM_F_ACK` added and waits for the kernel's answer.
    ///
    /// Returns the messages the kernel sent before the ack (none for most requests; the object for
    /// `NLM_F_ECHO` or a `RTM_GET*` request without `NLM_F_DUMP`). Throws the kernel's refusal as a
    /// ``NetlinkError`` of kind `.kernel` named `operation`.
    @discardableResult
    public func request(_ message: NetlinkMessageBuilder, operation: String) throws(NetlinkError) -> [NetlinkMessage] {
        try single(NetlinkRequest(message, operation: operation, answer: .ack))
    }

    /// Sends a get with `NLM_F_REQUEST` alone, as iproute2 asks for one object (`ip link show dev wl0`),
    /// and returns the kernel's one reply. A refusal (`ENODEV`…) is thrown as with ``request(_:operation:)``.
    public func get(_ message: NetlinkMessageBuilder, operation: String) throws(NetlinkError) -> [NetlinkMessage] {
        try single(NetlinkRequest(message, operation: operation, answer: .reply))
    }

    /// Sends `message` with `NLM_F_REQUEST | NLM_F_DUMP` added and collects every reply up to `NLMSG_DONE`.
    ///
    /// When the kernel marks the dump as interrupted (`NLM_F_DUMP_INTR`: the table changed while it was
    /// read) the whole dump is read again, up to `retries` more times; after that a ``NetlinkError`` of
    /// kind `.dumpInterrupted` is thrown.
    public func dump(_ message: NetlinkMessageBuilder, operation: String, retries: Int = 3) throws(NetlinkError) -> [NetlinkMessage] {
        var attempt = 0
        while true {
            do {
                return try single(NetlinkRequest(message, operation: operation, answer: .dump))
            } catch where error.kind == .dumpInterrupted && attempt < retries {
                attempt += 1
            }
        }
    }

    /// Sends `requests` in one datagram and returns each one's answer, in order: the messages it got, or
    /// the kernel's refusal of that request alone. At most one dump, and it must come last (the kernel
    /// runs one dump per socket at a time and would refuse a second with `EBUSY`); an interrupted dump is
    /// read again on its own, up to `dumpRetries` times.
    ///
    /// Throws only what concerns the whole batch: a message that does not fit, a failed send or receive,
    /// a malformed reply.
    public func send(_ requests: [NetlinkRequest], dumpRetries: Int = 3) throws(NetlinkError) -> [Result<[NetlinkMessage], NetlinkError>] {
        precondition(requests.dropLast().allSatisfy { $0.answer != .dump }, "a batch holds at most one dump, last")
        guard !requests.isEmpty else { return [] }
        var results = try exchange(requests).map(\.result)
        let index = requests.count - 1
        if requests[index].answer == .dump, case .failure(let error) = results[index], error.kind == .dumpInterrupted, dumpRetries > 0 {
            results[index] = Result { () throws(NetlinkError) in
                try dump(requests[index].message, operation: requests[index].operation, retries: dumpRetries - 1)
            }
        }
        return results
    }

    private func single(_ request: NetlinkRequest) throws(NetlinkError) -> [NetlinkMessage] {
        switch try exchange([request])[0] {
        case let .messages(messages): return messages
        case let .failure(error): throw error
        }
    }

    /// A request's answer. Not `Result`: a generic type with a protocol requirement costs a scan of every
    /// conformance record the first time a process uses it, and single requests (a short-lived command's
    /// usual kind) need none.
    private enum Outcome {
        case messages([NetlinkMessage])
        case failure(NetlinkError)

        var result: Result<[NetlinkMessage], NetlinkError> {
            switch self {
            case let .messages(messages): .success(messages)
            case let .failure(error): .failure(error)
            }
        }
    }

    private func exchange(_ requests: [NetlinkRequest]) throws(NetlinkError) -> [Outcome] {
        try state.withLock { (state: inout State) throws(NetlinkError) -> [Outcome] in
            let first = state.nextSequence
            state.datagram.removeAll(keepingCapacity: true)
            for request in requests {
                request.message.flags |= request.addedFlags
                request.message.sequence = state.nextSequence
                try request.message.appendFinished(to: &state.datagram)
                state.nextSequence &+= 1
            }
            try state.transport.send(state.datagram)
            state.statistics.requests += requests.count
            state.statistics.datagrams += 1
            return try Self.collect(from: state.transport, first: first, requests: requests, portID: portID)
        }
    }

    /// What one request of a batch has got so far.
    private struct Answered {
        var replies: [NetlinkMessage] = []
        var outcome: Outcome?
        var interrupted = false
    }

    /// Reads datagrams until every request of the batch (sequence numbers `first`, `first + 1`…) has its
    /// answer. Datagrams are read in the transport's buffer; only the messages a request returns (dump
    /// entries, echoes) are copied out, acks are read where they lie.
    private static func collect(
        from transport: any NetlinkTransport, first: UInt32, requests: [NetlinkRequest], portID: UInt32
    ) throws(NetlinkError) -> [Outcome] {
        var answered = [Answered](repeating: Answered(), count: requests.count)
        var open = requests.count
        while open > 0 {
            try transport.receiveInPlace { (datagram: UnsafeRawBufferPointer) throws(NetlinkError) in
                if !NetlinkMessage.isWellFormed(datagram: datagram) {
                    // The exact complaint comes from the full parser.
                    let pending = answered.firstIndex { $0.outcome == nil } ?? 0
                    do throws(NetlinkError) {
                        _ = try NetlinkMessage.parse(datagram: datagram)
                    } catch {
                        throw error.withOperation(requests[pending].operation)
                    }
                }
                var offset = 0
                while offset < datagram.count {
                    let length = Int(datagram.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
                    defer { offset += netlinkAlign(length) }
                    let type = datagram.loadUnaligned(fromByteOffset: offset + 4, as: UInt16.self)
                    let flags = datagram.loadUnaligned(fromByteOffset: offset + 6, as: UInt16.self)
                    let sequence = datagram.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self)
                    let sender = datagram.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self)
                    // Replies carry one of our sequence numbers and our port id; anything else belongs to an
                    // earlier, abandoned request (or is a notification) and is skipped. Sequence numbers of a
                    // batch are consecutive (and may wrap), so the index is the distance from the first.
                    let index = Int(sequence &- first)
                    guard index < requests.count, answered[index].outcome == nil, sender == portID || sender == 0 else { continue }
                    let payload = UnsafeRawBufferPointer(rebasing: datagram[(offset + NetlinkMessage.headerLength)..<(offset + length)])
                    func message() -> NetlinkMessage {
                        NetlinkMessage(type: type, flags: flags, sequence: sequence, portID: sender, payload: Array(payload))
                    }
                    let answer = requests[index].answer
                    if flags & UInt16(NLM_F_DUMP_INTR) != 0 { answered[index].interrupted = true }
                    switch type {
                    case NetlinkMessage.noop:
                        continue
                    case NetlinkMessage.error, NetlinkMessage.done:
                        // An ack (error 0) with its request's header is read where it lies; anything else is
                        // decoded in full.
                        if payload.count < (type == NetlinkMessage.error ? 8 : 4) || payload.loadUnaligned(as: Int32.self) != 0 {
                            let operation = requests[index].operation
                            let (code, text, kernelOffset) = try message().decodeError(operation: operation)
                            if code != 0 {
                                answered[index].outcome = .failure(NetlinkError(
                                    kind: .kernel, operation: operation, errno: code, kernelMessage: text, kernelOffset: kernelOffset))
                                open -= 1
                                continue
                            }
                        }
                        if type == NetlinkMessage.error && answer == .dump {
                            continue  // an ack of the dump request itself; the dump goes on
                        } else if answered[index].interrupted {
                            answered[index].outcome = .failure(NetlinkError(kind: .dumpInterrupted, operation: requests[index].operation, errno: EINTR))
                        } else {
                            answered[index].outcome = .messages(answered[index].replies)
                        }
                        open -= 1
                    case NetlinkMessage.overrun:
                        throw NetlinkError(kind: .overrun, operation: requests[index].operation, errno: ENOBUFS)
                    default:
                        answered[index].replies.append(message())
                        if answer == .reply {
                            answered[index].outcome = .messages(answered[index].replies)
                            open -= 1
                        }
                    }
                }
            }
        }
        return answered.map { $0.outcome! }
    }
}

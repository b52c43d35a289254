import CMnl
import Glibc
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
    /// The operation, e.g. `tc -n lc-client qdisc replace dev wl0 parent 1:1 handle 11: netem delay 400ms`.
    public let operation: String
    /// What answers it.
    public let answer: Answer

    /// A request of `message` named `operation`, answered as `answer` says.
    public init(_ message: NetlinkMessageBuilder, operation: String, answer: Answer = .ack) {
        self.message = message
        self.operation = operation
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
        let dumps = requests.indices.filter { requests[$0].answer == .dump }
        precondition(dumps.count <= 1 && (dumps.first.map { $0 == requests.count - 1 } ?? true), "a batch holds at most one dump, last")
        guard !requests.isEmpty else { return [] }
        var results = try exchange(requests)
        if let index = dumps.first, case .failure(let error) = results[index], error.kind == .dumpInterrupted, dumpRetries > 0 {
            results[index] = Result { () throws(NetlinkError) in
                try dump(requests[index].message, operation: requests[index].operation, retries: dumpRetries - 1)
            }
        }
        return results
    }

    private func single(_ request: NetlinkRequest) throws(NetlinkError) -> [NetlinkMessage] {
        try exchange([request])[0].get()
    }

    private func exchange(_ requests: [NetlinkRequest]) throws(NetlinkError) -> [Result<[NetlinkMessage], NetlinkError>] {
        try state.withLock { (state: inout State) throws(NetlinkError) -> [Result<[NetlinkMessage], NetlinkError>] in
            var datagram: [UInt8] = []
            var sequences: [UInt32] = []
            for request in requests {
                request.message.flags |= request.addedFlags
                request.message.sequence = state.nextSequence
                let bytes = try request.message.finish()
                sequences.append(state.nextSequence)
                state.nextSequence &+= 1
                datagram += bytes
            }
            try state.transport.send(datagram)
            state.statistics.requests += requests.count
            state.statistics.datagrams += 1
            return try Self.collect(
                from: state.transport, sequences: sequences, requests: requests, portID: portID)
        }
    }

    /// Reads datagrams until every request of the batch has its answer.
    private static func collect(
        from transport: any NetlinkTransport, sequences: [UInt32], requests: [NetlinkRequest], portID: UInt32
    ) throws(NetlinkError) -> [Result<[NetlinkMessage], NetlinkError>] {
        let first = sequences[0]
        var replies = [[NetlinkMessage]](repeating: [], count: requests.count)
        var outcomes = [Result<[NetlinkMessage], NetlinkError>?](repeating: nil, count: requests.count)
        var interrupted = [Bool](repeating: false, count: requests.count)
        var open = requests.count
        func resolve(_ index: Int, _ outcome: Result<[NetlinkMessage], NetlinkError>) {
            outcomes[index] = outcome
            open -= 1
        }
        while open > 0 {
            let datagram = try transport.receive()
            let messages: [NetlinkMessage]
            do {
                messages = try NetlinkMessage.parse(datagram: datagram)
            } catch {
                let pending = outcomes.firstIndex { $0 == nil } ?? 0
                throw error.withOperation(requests[pending].operation)
            }
            for message in messages {
                // Replies carry one of our sequence numbers and our port id; anything else belongs to an
                // earlier, abandoned request (or is a notification) and is skipped. Sequence numbers of a
                // batch are consecutive (and may wrap), so the index is the distance from the first.
                let index = Int(message.sequence &- first)
                guard index < requests.count, outcomes[index] == nil,
                    message.portID == portID || message.portID == 0
                else { continue }
                let request = requests[index]
                if message.flags & UInt16(NLM_F_DUMP_INTR) != 0 { interrupted[index] = true }
                switch message.type {
                case NetlinkMessage.noop:
                    continue
                case NetlinkMessage.error, NetlinkMessage.done:
                    let (code, text, offset) = try message.decodeError(operation: request.operation)
                    if code != 0 {
                        resolve(index, .failure(NetlinkError(
                            kind: .kernel, operation: request.operation, errno: code, kernelMessage: text, kernelOffset: offset)))
                    } else if message.type == NetlinkMessage.error && request.answer == .dump {
                        continue  // an ack of the dump request itself; the dump goes on
                    } else if interrupted[index] {
                        resolve(index, .failure(NetlinkError(kind: .dumpInterrupted, operation: request.operation, errno: EINTR)))
                    } else {
                        resolve(index, .success(replies[index]))
                    }
                case NetlinkMessage.overrun:
                    throw NetlinkError(kind: .overrun, operation: request.operation, errno: ENOBUFS)
                default:
                    replies[index].append(message)
                    if request.answer == .reply { resolve(index, .success(replies[index])) }
                }
            }
        }
        return outcomes.map { $0! }
    }
}

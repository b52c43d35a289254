import Glibc
import LinkcondBase
import LinkcondSystem
import NetNamespace
import RouteNetlink

/// A non-blocking, close-on-exec socket owned by one probe; closed when the value goes away.
///
/// Sockets are opened inside the prober's namespace by the socket factory (only `socket(2)` runs there)
/// and used afterwards from the prober's own thread: a socket stays in the namespace it was created in.
final class ProbeSocket {
    private let owned: OwnedSocket
    private var socket: SocketDescriptor { owned.socket }
    /// The descriptor, for poll.
    var fd: Int32 { owned.socket.rawValue }

    private init(_ owned: consuming OwnedSocket) {
        self.owned = owned
    }

    /// What to open: TCP or UDP of an address's family.
    struct Kind {
        var kind: SocketKind

        static func tcp(_ address: IPAddress) -> Kind { Kind(kind: .tcp(address.family.domain)) }

        static func udp(_ address: IPAddress) -> Kind { Kind(kind: .udp(address.family.domain)) }
    }

    /// Opens one socket per kind inside `namespace` (nil: the calling thread's own), all or nothing.
    static func open(_ kinds: [Kind], in namespace: NamedNamespace?) -> Result<[ProbeSocket], ProbeFailure> {
        var batch: SocketBatch
        do {
            batch = try NamedNamespace.openSockets(kinds.map(\.kind), in: namespace, nonBlocking: true)
        } catch {
            if case let .system(operation, code) = error, operation.hasPrefix("socket ") { return .failure(.system("socket", code)) }
            return .failure(ProbeFailure(text: "enter namespace \(namespace?.name ?? "?"): \(error)"))
        }
        var sockets: [ProbeSocket] = []
        for index in kinds.indices { sockets.append(ProbeSocket(batch.take(index)!)) }
        return .success(sockets)
    }

    /// Starts a connect (TCP) or sets the peer (UDP). Nil when it completed or is in progress, the failure
    /// otherwise.
    func connect(to address: IPAddress, port: UInt16) -> ProbeFailure? {
        do {
            try socket.connect(to: SocketAddress(address, port: port))
            return nil
        } catch {
            return .system("connect", error.errno.rawValue)
        }
    }

    /// After POLLOUT on a connecting socket: nil when it is connected, the failure otherwise (SO_ERROR).
    func connectionError() -> ProbeFailure? {
        do {
            return try socket.pendingError().map { .system("connect", $0.rawValue) }
        } catch {
            return .system("getsockopt(SO_ERROR)", error.errno.rawValue)
        }
    }

    /// Segments the kernel has retransmitted on this TCP socket so far (`tcpi_total_retrans` of
    /// `TCP_INFO`), SYNs included; nil when it cannot tell.
    func retransmissions() -> UInt32? {
        (try? socket.option(.tcpInfo, as: tcp_info.self))?.tcpi_total_retrans
    }

    /// Sends what it can without blocking (no SIGPIPE): the byte count, 0 when the buffer is full, or the failure.
    func send(_ bytes: ArraySlice<UInt8>) -> Result<Int, ProbeFailure> {
        do throws(SystemError) {
            return .success(try bytes.withUnsafeBytes { buffer in
                Result { () throws(SystemError) in try socket.send(buffer, flags: Int32(MSG_NOSIGNAL)) }
            }.get())
        } catch where error.errno == .wouldBlock {
            return .success(0)
        } catch {
            return .failure(.system("send", error.errno.rawValue))
        }
    }

    /// Reads what is there without blocking: the bytes (empty at end of stream), nil when nothing is
    /// waiting, or the failure (an ICMP error reported on a connected socket, a reset).
    func receive(capacity: Int = 4096) -> Result<[UInt8], ProbeFailure>? {
        var buffer = [UInt8](repeating: 0, count: capacity)
        do throws(SystemError) {
            let count = try buffer.withUnsafeMutableBytes { raw in
                Result { () throws(SystemError) in try socket.receive(into: raw, flags: Int32(MSG_DONTWAIT)) }
            }.get()
            return .success(Array(buffer[..<count]))
        } catch where error.errno == .wouldBlock {
            return nil
        } catch {
            return .failure(.system("receive", error.errno.rawValue))
        }
    }
}

/// Why a probe failed, as the text that goes into ``ProbeResult/error``.
struct ProbeFailure: Error, Equatable, CustomStringConvertible {
    var text: String
    /// True for ``timedOut(after:)``: the probe's timeout passed.
    var isTimeout = false

    var description: String { text }

    /// `operation: strerror(code)`, e.g. `connect: Connection refused`.
    static func system(_ operation: String, _ code: Int32) -> ProbeFailure {
        ProbeFailure(text: "\(operation): \(String(cString: strerror(code)))")
    }

    /// `timed out after 0.5 s` (the seconds rounded to milliseconds).
    static func timedOut(after seconds: Double) -> ProbeFailure {
        ProbeFailure(text: "timed out after \((seconds * 1000).rounded() / 1000) s", isTimeout: true)
    }

    static let cancelled = ProbeFailure(text: "cancelled")
}

/// Monotonic time in seconds, for deadlines.
enum ProbeClock {
    static func now() -> Double {
        MonotonicClock.seconds()
    }

    /// Monotonic nanoseconds as seconds.
    static func seconds(_ nanoseconds: UInt64) -> Double {
        Double(nanoseconds) / 1e9
    }

    /// Waits (poll(2)) until one of `fds` is ready for its events, until `deadline` (monotonic seconds), or
    /// for at most `slice` seconds, so the caller can look at cancellation. Returns the revents per fd.
    static func wait(_ fds: [(fd: Int32, events: Int16)], until deadline: Double, slice: Double = 0.1) -> [Int16] {
        var pollers = fds.map { pollfd(fd: $0.fd, events: $0.events, revents: 0) }
        let seconds = max(0, min(deadline - now(), slice))
        let milliseconds = Int32((seconds * 1000).rounded(.up))
        if pollers.isEmpty {
            usleep(UInt32(milliseconds) * 1000)
            return []
        }
        guard let ready = try? poll(&pollers, timeoutMilliseconds: milliseconds), ready > 0 else { return pollers.map { _ in 0 } }
        return pollers.map(\.revents)
    }
}

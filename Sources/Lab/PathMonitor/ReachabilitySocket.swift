import Glibc
import LinkcondBase
import NetNamespace
import RouteNetlink

/// A non-blocking, close-on-exec socket owned by one probe; closed when the value goes away.
///
/// Sockets are created inside the prober's namespace (``open(_:in:)`` runs only `socket(2)` there, on
/// `NamedNamespace.run`'s thread) and used afterwards from the prober's own thread: a socket stays in the
/// namespace it was created in.
final class ProbeSocket {
    let fd: Int32

    private init(fd: Int32) {
        self.fd = fd
    }

    deinit { close(fd) }

    /// What to open: `(address family, SOCK_STREAM or SOCK_DGRAM)`.
    struct Kind {
        var family: Int32
        var type: Int32

        static func tcp(_ address: IPAddress) -> Kind {
            Kind(family: address.family.socketDomain, type: Int32(SOCK_STREAM.rawValue))
        }

        static func udp(_ address: IPAddress) -> Kind {
            Kind(family: address.family.socketDomain, type: Int32(SOCK_DGRAM.rawValue))
        }
    }

    /// Opens one socket per kind inside `namespace` (nil: the calling thread's own), all or nothing.
    static func open(_ kinds: [Kind], in namespace: NamedNamespace?) -> Result<[ProbeSocket], ProbeFailure> {
        let create = { () -> Result<[Int32], ProbeFailure> in
            var fds: [Int32] = []
            for kind in kinds {
                let fd = socket(kind.family, kind.type | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
                guard fd >= 0 else {
                    let failure = ProbeFailure.system("socket", errno)
                    fds.forEach { close($0) }
                    return .failure(failure)
                }
                fds.append(fd)
            }
            return .success(fds)
        }
        let created: Result<[Int32], ProbeFailure>
        if let namespace {
            do {
                created = try namespace.run(create)
            } catch {
                created = .failure(ProbeFailure(text: "enter namespace \(namespace.name): \(error)"))
            }
        } else {
            created = create()
        }
        return created.map { $0.map(ProbeSocket.init(fd:)) }
    }

    /// Starts a connect (TCP) or sets the peer (UDP). Nil when it completed or is in progress, the failure
    /// otherwise.
    func connect(to address: IPAddress, port: UInt16) -> ProbeFailure? {
        let result = SocketAddress(address, port: port).withSockaddr { Glibc.connect(fd, $0, $1) }
        if result == 0 || errno == EINPROGRESS { return nil }
        return .system("connect", errno)
    }

    /// After POLLOUT on a connecting socket: nil when it is connected, the failure otherwise (SO_ERROR).
    func connectionError() -> ProbeFailure? {
        var code: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &length) == 0 else { return .system("getsockopt(SO_ERROR)", errno) }
        return code == 0 ? nil : .system("connect", code)
    }

    /// Segments the kernel has retransmitted on this TCP socket so far (`tcpi_total_retrans` of
    /// `TCP_INFO`), SYNs included; nil when it cannot tell.
    func retransmissions() -> UInt32? {
        var info = tcp_info()
        var length = socklen_t(MemoryLayout<tcp_info>.size)
        guard getsockopt(fd, Int32(IPPROTO_TCP), TCP_INFO, &info, &length) == 0 else { return nil }
        return info.tcpi_total_retrans
    }

    /// Sends what it can without blocking (no SIGPIPE): the byte count, 0 when the buffer is full, or the failure.
    func send(_ bytes: ArraySlice<UInt8>) -> Result<Int, ProbeFailure> {
        let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if sent >= 0 { return .success(sent) }
        if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return .success(0) }
        return .failure(.system("send", errno))
    }

    /// Reads what is there without blocking: the bytes (empty at end of stream), nil when nothing is
    /// waiting, or the failure (an ICMP error reported on a connected socket, a reset).
    func receive(capacity: Int = 4096) -> Result<[UInt8], ProbeFailure>? {
        var buffer = [UInt8](repeating: 0, count: capacity)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        if count >= 0 { return .success(Array(buffer[..<count])) }
        if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return nil }
        return .failure(.system("receive", errno))
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
        let ready = poll(&pollers, nfds_t(pollers.count), milliseconds)
        guard ready > 0 else { return pollers.map { _ in 0 } }
        return pollers.map(\.revents)
    }
}

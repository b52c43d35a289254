import Foundation
import Glibc
import JSONDocument
import LinkcondBase
import LinkcondSystem
import Synchronization

/// The engine's side of its control socket: a Unix stream socket (mode 0600) on which each connection
/// carries one request line and gets one answer line.
///
/// No client can hold the others up: every connection is served on a thread of its own, at most
/// ``maximumConnections`` at once (one more is answered at once that the engine is busy), and a request
/// must arrive whole — up to ``EngineMessageCodec/maximumMessage`` bytes and its newline — within
/// ``requestDeadline`` seconds of the connection, however slowly it trickles in; a client that is late is
/// cut off without an answer and costs nothing to the others.
public final class EngineControlServer: @unchecked Sendable {
    /// Connections served at once at most.
    public let maximumConnections: Int
    /// Seconds a client has to send its whole request.
    public let requestDeadline: Double
    /// The socket's path.
    public let path: String
    private let listener: SocketDescriptor
    private let handle: @Sendable (Result<EngineRequest, DocumentError>) -> EngineResponse
    private let busy: @Sendable () -> EngineResponse
    private let active = Atomic<Int>(0)
    private let stopped = Atomic<Bool>(false)

    /// Listens at `path` (a stale socket of an earlier engine there is replaced), mode 0600. `handle` answers a
    /// request, or why one could not be read; `busy` answers a connection beyond the limit. Nothing is served
    /// before ``start()``.
    public init(
        path: String, maximumConnections: Int = 16, requestDeadline: Double = 2,
        handle: @escaping @Sendable (Result<EngineRequest, DocumentError>) -> EngineResponse,
        busy: @escaping @Sendable () -> EngineResponse
    ) throws(EngineControlError) {
        self.path = path
        self.maximumConnections = maximumConnections
        self.requestDeadline = requestDeadline
        self.handle = handle
        self.busy = busy
        listener = try EngineControlSocket.listen(at: path)
    }

    /// Accepts connections on a thread of its own until ``stop()``.
    public func start() {
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "linkcond.engine.control"
        thread.start()
    }

    /// Stops accepting, closes the listener and removes the socket file. Connections being served finish
    /// within their deadline on their own threads.
    public func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        // Wakes the accepting thread (its accept fails from now on); the listener is closed there.
        try? listener.shutdown(.readWrite)
        unlink(path)
    }

    /// Connections being served now.
    public var activeConnections: Int { active.load(ordering: .relaxed) }

    private func acceptLoop() {
        defer { try? listener.close() }
        while !stopped.load(ordering: .relaxed) {
            let connection: SocketDescriptor
            do {
                connection = try listener.accept()
            } catch where error.errno == .connectionAbort {
                continue
            } catch {
                return  // the listener was shut down
            }
            guard active.add(1, ordering: .relaxed).newValue <= maximumConnections else {
                // Answered at once, without reading: the engine is not held up by it either.
                EngineControlSocket.answer(busy(), on: connection, path: path)
                try? connection.close()
                active.subtract(1, ordering: .relaxed)
                continue
            }
            let thread = Thread { [self] in
                serve(connection)
                try? connection.close()
                active.subtract(1, ordering: .relaxed)
            }
            thread.name = "linkcond.engine.client"
            thread.start()
        }
    }

    private func serve(_ connection: SocketDescriptor) {
        let deadline = MonotonicClock.nanoseconds() + UInt64(requestDeadline * 1e9)
        let line: [UInt8]
        do {
            line = try EngineControlSocket.readLine(connection, path: path, deadline: deadline)
        } catch {
            return  // late, closed or too long: no answer
        }
        let request: Result<EngineRequest, DocumentError>
        do {
            request = .success(try EngineMessageCodec.request(line))
        } catch {
            request = .failure(error)
        }
        EngineControlSocket.answer(handle(request), on: connection, path: path)
    }
}

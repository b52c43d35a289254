import Foundation
import Glibc
import JSONDocument
import LinkcondBase
import LinkcondSystem
import Sandboxing
import Synchronization

/// `linkcond api`: the sandboxes, their conditions, their events and scenario runs over HTTP/1.1 with JSON, for
/// test runners in any language — on a Unix socket (0600) and, when asked, a loopback TCP port with a bearer
/// token. The endpoints are ``APIRoute``'s (and `api/openapi.yaml`'s).
///
/// No client can stall another, as on the engine's control socket: each connection is served on a thread of
/// its own, at most ``APIConfiguration/maximumConnections`` at once (one more gets 503 at once, unread), a
/// request must arrive whole — head up to 8 KiB, body up to 1 MiB — within ``APIConfiguration/requestDeadline``
/// however slowly it trickles, and every answer is written with a send timeout. Changes of one sandbox wait for
/// each other through its lock, as commands do; reads never wait.
public final class ControlAPIServer: @unchecked Sendable {
    /// How it serves.
    public let configuration: APIConfiguration
    /// The endpoints listened on, as bound (a TCP port 0 becomes the port the kernel chose).
    public private(set) var endpoints: [APIEndpoint] = []
    /// The token TCP clients send (`Authorization: Bearer …`); nil without a TCP endpoint.
    public let token: APIToken?
    private var listeners: [(socket: SocketDescriptor, endpoint: APIEndpoint)] = []
    private let active = Atomic<Int>(0)
    private let streams = Atomic<Int>(0)
    private let stopped = StopFlag()
    private let timers = TimedChanges()
    private let events = EventStreams()
    private var handlers: SandboxEndpoints!
    private var attached: AttachmentEndpoints!

    /// A server for `configuration`; nothing listens before ``start()``.
    public init(_ configuration: APIConfiguration) {
        self.configuration = configuration
        token = configuration.endpoints.contains(where: \.needsToken) ? configuration.token ?? APIToken.generate() : nil
        let stopped = self.stopped
        handlers = SandboxEndpoints(configuration: configuration, timers: timers, isStopping: { stopped.isSet })
        attached = AttachmentEndpoints(configuration: configuration, timers: timers, isStopping: { stopped.isSet })
    }

    /// Listens on every endpoint and accepts on a thread each; returns the endpoints as bound. With a TCP
    /// endpoint the token is written to ``APIConfiguration/tokenPath(in:)`` first.
    @discardableResult
    public func start() throws(APIError) -> [APIEndpoint] {
        if let token {
            mkdir(configuration.store.directory, 0o755)
            try token.store(at: APIConfiguration.tokenPath(in: configuration.store))
        } else {
            mkdir(configuration.store.directory, 0o755)
        }
        for endpoint in configuration.endpoints {
            do {
                listeners.append(try endpoint.listen())
            } catch {
                stop()
                throw error
            }
        }
        endpoints = listeners.map(\.endpoint)
        for listener in listeners {
            let thread = Thread { [self] in acceptLoop(listener.socket, endpoint: listener.endpoint) }
            thread.name = "linkcond.api.accept"
            thread.start()
        }
        return endpoints
    }

    /// Stops: no new connections, every event stream ends, the timed conditions it holds are put back (within
    /// `seconds`), the socket file and the token go. Requests being served finish on their own threads.
    public func stop(waiting seconds: Double = 10) {
        guard stopped.set() else { return }
        for listener in listeners {
            try? listener.socket.shutdown(.readWrite)
            if case let .unix(path) = listener.endpoint { unlink(path) }
        }
        if token != nil { unlink(APIConfiguration.tokenPath(in: configuration.store)) }
        events.endAll("the API server stopped")
        timers.endAll(waiting: seconds)
    }

    /// Connections being served now.
    public var activeConnections: Int { active.load(ordering: .relaxed) }

    private func acceptLoop(_ listener: SocketDescriptor, endpoint: APIEndpoint) {
        defer { try? listener.close() }
        while !stopped.isSet {
            let connection: SocketDescriptor
            do {
                connection = try listener.accept()
            } catch where error.errno == .connectionAbort || error.errno == .tooManyOpenFiles {
                if error.errno == .tooManyOpenFiles { usleep(10_000) }
                continue
            } catch {
                return  // the listener was shut down
            }
            guard active.add(1, ordering: .relaxed).newValue <= configuration.maximumConnections else {
                // Answered at once, unread: the server is not held up by it either.
                ResponseWriter(socket: connection).send(.error(APIError(
                    503, "the API is serving as many connections as it takes at once (\(configuration.maximumConnections)); try again",
                    headers: [APIHeader("Retry-After", "1")])))
                Self.finish(connection)
                active.subtract(1, ordering: .relaxed)
                continue
            }
            let thread = Thread { [self] in
                serve(connection, endpoint: endpoint)
                Self.finish(connection)
                active.subtract(1, ordering: .relaxed)
            }
            thread.name = "linkcond.api.client"
            thread.start()
        }
    }

    private func serve(_ connection: SocketDescriptor, endpoint: APIEndpoint) {
        let writer = ResponseWriter(socket: connection)
        let request: APIRequest
        do {
            let deadline = MonotonicClock.nanoseconds() + UInt64(configuration.requestDeadline * 1e9)
            guard let read = try RequestReader(socket: connection, deadline: deadline).read() else { return }
            request = read
        } catch {
            writer.send(.error(error))
            return
        }
        if endpoint.needsToken, let token, !token.accepts(request.header("Authorization")) {
            writer.send(.error(APIError(
                401, "this endpoint needs 'Authorization: Bearer TOKEN', with the token in \(APIConfiguration.tokenPath(in: configuration.store))",
                headers: [APIHeader("WWW-Authenticate", "Bearer realm=\"linkcond\"")])))
            return
        }
        do {
            let (route, name) = try APIRoute.find(method: request.method, path: request.path)
            if route == .events {
                try stream(name ?? "", request, writer: writer, connection: connection)
                return
            }
            if route == .attachmentEvents {
                try streamAttachment(name ?? "", request, writer: writer, connection: connection)
                return
            }
            writer.send(try answer(route, name: name ?? "", request))
        } catch {
            writer.send(.error(APIError.from(error)))
        }
    }

    private func answer(_ route: APIRoute, name: String, _ request: APIRequest) throws -> APIResponse {
        switch route {
        case .listSandboxes: try handlers.list()
        case .createSandbox: try handlers.create(request)
        case .status, .statusAlias: try handlers.status(name)
        case .deleteSandbox: try handlers.delete(name)
        case .apply: try handlers.apply(name, request)
        case .clear: try handlers.clear(name, request)
        case .show: try handlers.show(name)
        case .run: try handlers.run(name, request)
        case .profiles: try handlers.profiles()
        case .profile: try handlers.profile(name)
        case .scenarios: try handlers.scenarios()
        case .listAttachments: try attached.list()
        case .attach: try attached.attach(request)
        case .attachmentStatus, .attachmentStatusAlias: try attached.status(name)
        case .detach: try attached.detach(name)
        case .attachmentApply: try attached.apply(name, request)
        case .attachmentClear: try attached.clear(name, request)
        case .attachmentShow: try attached.show(name)
        case .attachmentRun: try attached.run(name, request)
        case .events, .attachmentEvents: throw APIError(500, "events are a stream")
        }
    }

    /// `GET /v1/sandboxes/NAME/events[?probe=false]`: JSON lines until the client leaves, the sandbox goes away
    /// or the server stops (a last line `{"lane": "stream", "end": REASON}` says which of the last two).
    private func stream(_ name: String, _ request: APIRequest, writer: ResponseWriter, connection: SocketDescriptor) throws {
        try streaming(writer: writer, connection: connection, gone: "the sandbox's client namespace went away (it was removed or rebuilt)") {
            let sandbox = try handlers.sandbox(name)
            guard sandbox.look(for: "events").state?.complete == true else { throw APIError.from(SandboxError.notUp(name: name)) }
            return try events.subscribe(sandbox, probe: request.query["probe"] != "false")
        }
    }

    /// `GET /v1/attachments/NAME/events`: the path as seen inside the attachment's target, as `linkcond monitor
    /// --name ATTACHMENT` streams it (no prober: `?probe=true` is refused, as `--probe` is), until the client
    /// leaves, the attachment is detached or the server stops.
    private func streamAttachment(_ name: String, _ request: APIRequest, writer: ResponseWriter, connection: SocketDescriptor) throws {
        try streaming(writer: writer, connection: connection, gone: "the attachment's target namespace went away (it was detached)") {
            let target = try attached.targetNamespace(name, probe: request.query["probe"] == "true")
            return try events.subscribe(key: "\(attached.store.directory)/\(name)#attachment", probe: false) { target }
        }
    }

    /// Streams the subscription `subscribe` makes, within the cap on streams; `gone` is the last line's reason
    /// when the namespace watched goes away.
    private func streaming(
        writer: ResponseWriter, connection: SocketDescriptor, gone: String, subscribe: () throws -> EventStreams.Subscription
    ) throws {
        guard streams.add(1, ordering: .relaxed).newValue <= configuration.maximumStreams else {
            streams.subtract(1, ordering: .relaxed)
            throw APIError(503, "the API is serving as many event streams as it takes at once (\(configuration.maximumStreams)); try again",
                           headers: [APIHeader("Retry-After", "1")])
        }
        defer { streams.subtract(1, ordering: .relaxed) }
        let subscription = try subscribe()
        defer { events.unsubscribe(subscription) }
        guard writer.startStream() else { return }
        var checked = MonotonicClock.nanoseconds()
        while true {
            let (lines, ended) = subscription.next(waiting: 0.25)
            for line in lines where !writer.sendLine(line) { return }
            var reason = ended
            if reason == nil, MonotonicClock.nanoseconds() - checked > 250_000_000 {
                checked = MonotonicClock.nanoseconds()
                if Self.peerLeft(connection) { return }
                if events.isGone(subscription) { reason = gone }
            }
            if let reason {
                _ = writer.sendLine(#"{"end":\#(JSONWriter.quoted(reason)),"lane":"stream"}"#)
                writer.endStream()
                return
            }
        }
    }

    /// Closes a connection so the client reads the whole answer: what it sent and was not read (a request
    /// refused before its body, one answered 503 unread) would otherwise turn the close into a reset that
    /// can discard the answer. Only what has arrived is read, without waiting.
    private static func finish(_ connection: SocketDescriptor) {
        try? connection.shutdown(.write)
        var buffer = [UInt8](repeating: 0, count: 16384)
        for _ in 0..<4 {
            let count = buffer.withUnsafeMutableBytes { raw in (try? connection.receive(into: raw, flags: Int32(MSG_DONTWAIT))) ?? 0 }
            if count <= 0 { break }
        }
        try? connection.close()
    }

    /// True once the client closed its side (or the connection broke): readable with nothing to read.
    private static func peerLeft(_ connection: SocketDescriptor) -> Bool {
        guard let ready = try? connection.fileDescriptor.poll(for: Int16(POLLIN), timeoutMilliseconds: 0), ready != 0 else { return false }
        var byte: UInt8 = 0
        let count = withUnsafeMutableBytes(of: &byte) { raw in (try? connection.receive(into: raw, flags: Int32(MSG_DONTWAIT | MSG_PEEK))) ?? 0 }
        return count == 0
    }
}

/// Set once, when the server stops; read from any thread.
private final class StopFlag: Sendable {
    private let value = Atomic<Bool>(false)

    var isSet: Bool { value.load(ordering: .relaxed) }

    /// Sets the flag; false when it was set already.
    func set() -> Bool { !value.exchange(true, ordering: .acquiringAndReleasing) }
}

import Dispatch
import Foundation
import Glibc
import LinkcondBase
import LinkcondSystem
import NetNamespace
import Synchronization

/// The sandbox's server side: HTTP probe endpoint, TCP/UDP echo and DNS, on every configured address.
///
/// ```swift
/// let server = ResponderServer(configuration: ResponderConfiguration())
/// try server.start()      // every socket is bound before anything is served
/// ...
/// server.stop()
/// ```
///
/// Each listening socket is served on its own dedicated thread, and each TCP connection on a thread of its
/// own (at most ``ResponderConfiguration/maxConnections`` at once). A server can be started again after
/// ``stop()``.
public final class ResponderServer: Sendable {
    /// What the server answers and where it listens.
    public let configuration: ResponderConfiguration
    private let current = Mutex<ResponderRun?>(nil)

    public init(configuration: ResponderConfiguration = ResponderConfiguration()) {
        self.configuration = configuration
    }

    deinit {
        stop()
    }

    /// Whether the server is running.
    public var isRunning: Bool {
        current.withLock { $0 != nil }
    }

    /// The endpoints the running server listens on, e.g. `[::]:80/tcp`; empty when stopped.
    public var endpoints: [String] {
        current.withLock { run in run?.listeners.map(\.endpoint) ?? [] }
    }

    /// Validates the configuration, binds every socket (TCP and UDP, every bind address) and then starts
    /// serving. When any socket cannot be set up, nothing has been started and the error names the endpoint.
    ///
    /// The sockets are opened in `namespace` by the socket factory (nil: the calling thread's namespace) and
    /// serve there; the serving threads need not be in it.
    public func start(in namespace: NamedNamespace? = nil) throws(ResponderError) {
        _ = try startRun(in: namespace)
    }

    private func startRun(in namespace: NamedNamespace? = nil) throws(ResponderError) -> ResponderRun {
        try current.withLock { (current: inout ResponderRun?) throws(ResponderError) -> ResponderRun in
            guard current == nil else { throw .alreadyRunning }
            let run = try ResponderRun(configuration: configuration, namespace: namespace)
            run.startThreads()
            current = run
            return run
        }
    }

    /// Stops serving: wakes and ends every listener and connection thread, waits for them (up to five
    /// seconds) and closes every socket. Does nothing when the server is not running.
    public func stop() {
        let run = current.withLock { current -> ResponderRun? in
            defer { current = nil }
            return current
        }
        run?.stop()
    }

    /// Starts the server and serves until the process receives SIGTERM or SIGINT (or ``stop()`` is called),
    /// then stops it. The previous dispositions of both signals are restored afterwards.
    /// - Returns: the signal that ended the run, or nil when ``stop()`` ended it.
    @discardableResult
    public func runUntilTerminated() throws(ResponderError) -> Int32? {
        let signals = [SIGTERM, SIGINT]
        let received = Mutex<Int32?>(nil)
        let queue = DispatchQueue(label: "linkcond.responders.signals")
        // Dispatch delivers the signals; their own disposition must not end the process meanwhile.
        let previous = signals.map { signal($0, SIG_IGN) }
        let sources = signals.map { signalNumber in
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: queue)
            source.setEventHandler { [weak self] in
                received.withLock { $0 = $0 ?? signalNumber }
                self?.stop()
            }
            source.resume()
            return source
        }
        defer {
            for source in sources { source.cancel() }
            for (signalNumber, disposition) in zip(signals, previous) { signal(signalNumber, disposition) }
        }
        let run = try startRun()
        run.waitUntilStopped()
        return received.withLock { $0 }
    }
}

/// The services the server runs on each bind address.
enum ResponderService: String, Sendable, CaseIterable {
    case http, echoTCP, echoUDP, dnsUDP, dnsTCP

    var transport: TransportProtocol {
        switch self {
        case .http, .echoTCP, .dnsTCP: return .tcp
        case .echoUDP, .dnsUDP: return .udp
        }
    }

    func port(in configuration: ResponderConfiguration) -> UInt16 {
        switch self {
        case .http: return configuration.httpPort
        case .echoTCP, .echoUDP: return configuration.echoPort
        case .dnsUDP, .dnsTCP: return configuration.dnsPort
        }
    }
}

/// One bound socket.
struct Listener: Sendable {
    let fd: SocketDescriptor
    let service: ResponderService
    /// E.g. `[::]:80/tcp`.
    let endpoint: String
}

/// One start-to-stop lifetime of a ``ResponderServer``: its sockets, its threads, its open connections.
final class ResponderRun: Sendable {
    let configuration: ResponderConfiguration
    let zone: DNSZone
    let listeners: [Listener]
    /// Read end of the stop socket pair; it becomes readable (and stays so) when the run stops.
    private let stopReadFD: SocketDescriptor
    private let stopWriteFD: SocketDescriptor
    private let threads = DispatchGroup()
    /// Entered while the run lives; left when ``stop()`` has finished.
    private let lifetime = DispatchGroup()
    private let connections = Mutex(ConnectionTable())

    private struct ConnectionTable {
        var open: Set<SocketDescriptor> = []
        var stopping = false
    }

    /// Validates the configuration and binds every socket, opened in `namespace` (nil: the calling thread's);
    /// on failure closes what it opened.
    init(configuration: ResponderConfiguration, namespace: NamedNamespace?) throws(ResponderError) {
        self.configuration = configuration
        zone = try DNSZone(configuration: configuration)
        guard configuration.maxConnections > 0 else {
            throw .invalidConfiguration("maxConnections must be positive, not \(configuration.maxConnections)")
        }
        guard !configuration.bindAddresses.isEmpty else {
            throw .invalidConfiguration("bindAddresses is empty")
        }
        var addresses: [(ResponderService, SocketAddress)] = []
        for text in configuration.bindAddresses {
            guard SocketAddress(ip: text, port: 0) != nil else {
                throw .invalidAddress(field: "bindAddresses", value: text)
            }
            for service in ResponderService.allCases {
                addresses.append((service, SocketAddress(ip: text, port: service.port(in: configuration))!))
            }
        }
        let endpoints = addresses.map { "\($0.1.text)/\($0.0.transport.rawValue)" }
        let kinds = addresses.map { $0.0.transport.kind($0.1.family) }
        // Every socket from one thread in the namespace, before anything is bound.
        var sockets: SocketBatch
        do {
            sockets = try NamedNamespace.openSockets(kinds, in: namespace, nonBlocking: true)
        } catch {
            // The factory names the kind that failed (`socket AF_INET6 SOCK_STREAM…`): blame its first endpoint.
            let code: Int32 = if case let .system(_, code) = error { code } else { EIO }
            let failed = kinds.firstIndex { error.description.hasPrefix("socket \($0)") } ?? 0
            throw .cannotListen(endpoint: endpoints[failed], step: "socket", errno: code)
        }
        let stop: (SocketDescriptor, SocketDescriptor)
        do {
            stop = try SocketDescriptor.pair(nonBlocking: true)
        } catch {
            throw .systemCall("socketpair", errno: error.errno.rawValue)
        }
        var listeners: [Listener] = []
        for (index, (service, address)) in addresses.enumerated() {
            let socket = sockets.take(index)!.release()
            do {
                try Sockets.listen(socket, on: address, transport: service.transport)
                listeners.append(Listener(fd: socket, service: service, endpoint: endpoints[index]))
            } catch {
                try? socket.close()
                for listener in listeners { try? listener.fd.close() }
                try? stop.0.close()
                try? stop.1.close()
                throw error
            }
        }
        self.listeners = listeners
        stopReadFD = stop.0
        stopWriteFD = stop.1
        lifetime.enter()
    }

    /// Starts one dedicated thread per listener.
    func startThreads() {
        for listener in listeners {
            spawn(name: "linkcond-\(listener.service.rawValue) \(listener.endpoint)", stackSize: 1 << 20) {
                switch listener.service {
                case .http:
                    let portalFlagPath = self.configuration.portalFlagPath
                    self.acceptLoop(listener) { HTTPResponder.serve(connection: $0, portalFlagPath: portalFlagPath) }
                case .echoTCP:
                    self.acceptLoop(listener) { EchoResponder.serveTCP(connection: $0) }
                case .dnsTCP:
                    let zone = self.zone
                    self.acceptLoop(listener) { DNSResponder.serveTCP(connection: $0, zone: zone) }
                case .echoUDP:
                    EchoResponder.serveUDP(socket: listener.fd, run: self)
                case .dnsUDP:
                    DNSResponder.serveUDP(socket: listener.fd, zone: self.zone, run: self)
                }
            }
        }
    }

    /// Blocks until ``stop()`` has finished.
    func waitUntilStopped() {
        lifetime.wait()
    }

    /// Ends the run: wakes every thread, waits for them, closes every socket. Called once.
    func stop() {
        defer { lifetime.leave() }
        _ = try? [UInt8(1)].withUnsafeBytes { try stopWriteFD.send($0) }
        connections.withLock { table in
            table.stopping = true
            for fd in table.open { try? fd.shutdown(.readWrite) }
        }
        guard threads.wait(timeout: .now() + .seconds(5)) == .success else {
            // A thread is stuck; leave its descriptors open rather than let a reused number be closed
            // under it.
            return
        }
        for listener in listeners { try? listener.fd.close() }
        try? stopReadFD.close()
        try? stopWriteFD.close()
    }

    /// Waits until `fd` is readable. False when the run is stopping.
    func waitUntilReadable(_ fd: SocketDescriptor) -> Bool {
        var fds = [pollfd(fd: fd.rawValue, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: stopReadFD.rawValue, events: Int16(POLLIN), revents: 0)]
        while true {
            guard (try? poll(&fds, timeoutMilliseconds: -1)) != nil else { return false }
            if fds[1].revents != 0 { return false }
            if fds[0].revents != 0 { return true }
        }
    }

    /// Accepts connections on a TCP listener until the run stops, each served by `handler` on its own thread.
    /// The handler owns nothing: the connection is closed after it returns.
    private func acceptLoop(_ listener: Listener, handler: @escaping @Sendable (SocketDescriptor) -> Void) {
        while waitUntilReadable(listener.fd) {
            let fd: SocketDescriptor
            do {
                fd = try listener.fd.accept()  // accept4: close-on-exec from the start
            } catch {
                switch error.errno {
                case .tooManyOpenFiles, .tooManyOpenFilesInSystem, .noBufferSpace, .noMemory:
                    usleep(50_000)
                default:
                    break
                }
                continue
            }
            guard register(fd) else {
                try? fd.close()
                continue
            }
            spawn(name: "linkcond-\(listener.service.rawValue) connection", stackSize: 512 << 10) {
                handler(fd)
                self.unregisterAndClose(fd)
            }
        }
    }

    private func register(_ fd: SocketDescriptor) -> Bool {
        connections.withLock { table in
            guard !table.stopping, table.open.count < configuration.maxConnections else { return false }
            table.open.insert(fd)
            return true
        }
    }

    private func unregisterAndClose(_ fd: SocketDescriptor) {
        connections.withLock { table in
            table.open.remove(fd)
            try? fd.close()
        }
    }

    private func spawn(name: String, stackSize: Int, body: @escaping @Sendable () -> Void) {
        threads.enter()
        let group = threads
        let thread = Thread {
            body()
            group.leave()
        }
        thread.name = name
        thread.stackSize = stackSize
        thread.start()
    }
}

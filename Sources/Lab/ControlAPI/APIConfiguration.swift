import Sandboxing

/// How `linkcond api` serves.
public struct APIConfiguration: Sendable {
    /// The sandboxes' store (``SandboxStore/standard`` for `linkcond api`).
    public var store: SandboxStore
    /// The `linkcond` executable: the sandbox servers (`linkcond serve`) and engines it starts run it.
    public var executable: String
    /// Where to listen.
    public var endpoints: [APIEndpoint]
    /// The token TCP endpoints require; nil makes one when there is a TCP endpoint.
    public var token: APIToken?
    /// Connections served at once at most (event streams included); one more is answered 503 at once.
    public var maximumConnections: Int
    /// Event streams at once at most.
    public var maximumStreams: Int
    /// Seconds a client has to send its whole request, however slowly it trickles in.
    public var requestDeadline: Double
    /// Where scenario runs put their reports unless a request says: `STORE/reports/SANDBOX/SCENARIO-TIME`.
    public var reportRoot: String
    /// The profile catalog (nil: the usual lookup).
    public var catalogDirectory: String?

    /// The default socket: `STORE/linkcond-api.sock`.
    public static func socketPath(in store: SandboxStore) -> String { "\(store.directory)/linkcond-api.sock" }
    /// Where the token of TCP endpoints is kept: `STORE/linkcond-api.token` (0600).
    public static func tokenPath(in store: SandboxStore) -> String { "\(store.directory)/linkcond-api.token" }

    /// A configuration: by default the Unix socket in the store, 128 connections, 64 streams, 5 s per request.
    public init(
        store: SandboxStore = .standard, executable: String, endpoints: [APIEndpoint]? = nil, token: APIToken? = nil,
        maximumConnections: Int = 128, maximumStreams: Int = 64, requestDeadline: Double = 5, reportRoot: String? = nil,
        catalogDirectory: String? = nil
    ) {
        self.store = store
        self.executable = executable
        self.endpoints = endpoints ?? [.unix(path: Self.socketPath(in: store))]
        self.token = token
        self.maximumConnections = maximumConnections
        self.maximumStreams = maximumStreams
        self.requestDeadline = requestDeadline
        self.reportRoot = reportRoot ?? "\(store.directory)/reports"
        self.catalogDirectory = catalogDirectory
    }
}

import Foundation
import Glibc
import JSONDocument
import LinkcondSystem

/// What `linkcond up` made, recorded so that `linkcond down` removes exactly that.
///
/// The state is a record, not an authority: `down` removes only what it can tie to this sandbox by name
/// (``SandboxTopology/allNamespaces``) and processes it can prove it started (``RecordedProcess``), so a
/// state file that names anything else — edited, corrupted, or another sandbox's — never makes it touch that.
/// Intent is recorded before each step acts, and names are derived from the sandbox's name, so a crash at any
/// instant leaves nothing a cleanup cannot find.
public struct SandboxState: Sendable, Equatable {
    /// The conditions on one client link, as the last apply on it recorded them.
    public struct AppliedConditions: Sendable, Equatable {
        /// The profile's name.
        public var profile: String
        /// The file it was read from, nil for a profile made in code.
        public var source: String?
        /// ISO 8601 time of the apply.
        public var appliedAt: String
        /// The traffic it applies to (`tcp 198.19.0.0/24 port 443`); nil for all traffic.
        public var targets: [String]?
        /// The profile as applied, as its document in the profile format (delivery traces named by the path
        /// they were read from), so that what is on the wire can be compared with it and put back; nil in a
        /// file of an earlier version, which recorded the name alone.
        public var document: JSONValue?

        /// A record of `profile` (read from `source`) applied now.
        public init(
            profile: String, source: String?, appliedAt: String = SandboxState.timestamp(), targets: [String]? = nil,
            document: JSONValue? = nil
        ) {
            self.profile = profile
            self.source = source
            self.appliedAt = appliedAt
            self.targets = targets
            self.document = document
        }
    }

    /// A change of conditions that was sent and not confirmed: written before the request goes out and
    /// removed once the answer confirms it (the change then becomes the links' ``AppliedConditions``). One
    /// left behind means a command died, or got no answer, half-way: what the links hold is then found out
    /// by asking the backend, not assumed (``SandboxState/conditions`` may or may not still be true).
    public struct PendingChange: Sendable, Equatable {
        /// `apply` or `clear`.
        public var operation: String
        /// The links it acts on.
        public var links: [String]
        /// Its number (``SandboxState/generation`` when it was made).
        public var generation: UInt64
        /// What an apply puts on the links; nil for a clear.
        public var conditions: AppliedConditions?
        /// ISO 8601 time it was sent.
        public var startedAt: String

        /// A change of `operation` on `links`.
        public init(operation: String, links: [String], generation: UInt64, conditions: AppliedConditions?, startedAt: String = SandboxState.timestamp()) {
            self.operation = operation
            self.links = links
            self.generation = generation
            self.conditions = conditions
            self.startedAt = startedAt
        }
    }

    /// The format of this file. Version 2 files (one profile for the links it names) are read too.
    public static let currentVersion = 3
    /// The versions this linkcond reads.
    public static let readableVersions = 2...currentVersion

    public var version = SandboxState.currentVersion
    /// The sandbox's name; a state file whose name differs from its file name is not trusted.
    public var name: String
    /// Whether the client has a cellular link.
    public var cellular: Bool
    /// Whether a wire namespace sits between the client and the router (userspace backend).
    public var wire: Bool
    /// Which conditioning backend the sandbox was built for (`netem`, `userspace`), as the layer above says.
    public var backend: String?
    /// Namespaces about to be created or created, in creation order (recorded before each is made).
    public var namespaces: [String] = []
    /// Processes started for the sandbox (its server, the engine).
    public var processes: [RecordedProcess] = []
    /// True once `up` finished; false while it runs (or when it died half-way).
    public var complete = false
    /// ISO 8601 time of creation.
    public var createdAt: String
    /// The conditions on each client link, by the link's name (`wifi`, `cellular`); a link without an entry
    /// is clear.
    public var conditions: [String: AppliedConditions] = [:]
    /// The number of the last change of conditions made (each apply or clear takes the next).
    public var generation: UInt64 = 0
    /// A change sent and not confirmed yet (see ``PendingChange``); nil normally.
    public var pending: PendingChange?
    /// Conditions on for a while, and what comes back after (see ``TimedChange``), one per timed apply whose
    /// links no later change took over; empty normally.
    public var timedChanges: [TimedChange] = []
    /// For an attachment (linkcond conditioning a namespace it does not own): what it attached to and did,
    /// the journal detach works from; nil for a sandbox.
    public var attachment: AttachmentRecord?

    /// A fresh record for sandbox `name`.
    public init(name: String, cellular: Bool, wire: Bool = false, backend: String? = nil) {
        self.name = name
        self.cellular = cellular
        self.wire = wire
        self.backend = backend
        createdAt = Self.timestamp()
    }

    /// The time now as ISO 8601 in UTC (`2026-12-01T13:52:09Z`), what ISO8601DateFormatter writes, from
    /// `gmtime_r` and `strftime`: the formatter loads ICU's calendar and time-zone data, about 1 ms of a
    /// `linkcond apply` that takes a few.
    public static func timestamp() -> String {
        var seconds = time(nil)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        var text = [CChar](repeating: 0, count: 32)
        let length = strftime(&text, text.count, "%Y-%m-%dT%H:%M:%SZ", &parts)
        return String(decoding: text.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The sandbox's server process, once started.
    public var server: RecordedProcess? { processes.first { $0.role == .server } }
    /// The userspace engine's process, once started.
    public var engine: RecordedProcess? { processes.first { $0.role == .engine } }
}

/// The directory of state files: one `NAME.json` per sandbox, written atomically, plus each sandbox's
/// lock, logs, portal flag and engine socket, all named after the sandbox.
public struct SandboxStore: Sendable, Equatable {
    /// Where state files live.
    public let directory: String

    /// The default store: `LINKCOND_STORE` when set, else `/run/linkcond` (tmpfs: state goes away with a
    /// reboot, as namespaces do).
    public static let standard = SandboxStore(
        directory: getenv("LINKCOND_STORE").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/run/linkcond")

    /// A store in `directory` (tests use temporary ones).
    public init(directory: String) {
        self.directory = directory
    }

    /// `DIRECTORY/NAME.json`.
    public func path(for name: String) -> String { "\(directory)/\(name).json" }
    /// `DIRECTORY/NAME.serve.log`: the server's output.
    public func logPath(for name: String) -> String { log(for: name, role: .server) }
    /// `DIRECTORY/NAME.ROLE.log`: a process's output (`serve`, `engine`).
    public func log(for name: String, role: RecordedProcess.Role) -> String { "\(directory)/\(name).\(role.fileTag).log" }
    /// `DIRECTORY/NAME.lock`: the sandbox's lock (``SandboxLock``).
    public func lockPath(for name: String) -> String { "\(directory)/\(name).lock" }
    /// `DIRECTORY/NAME.portal`: while it exists, the server answers as a captive portal.
    public func portalFlagPath(for name: String) -> String { "\(directory)/\(name).portal" }
    /// `DIRECTORY/NAME.engine.sock`: the userspace engine's control socket.
    public func engineSocketPath(for name: String) -> String { "\(directory)/\(name).engine.sock" }

    /// Every file of sandbox `name` this store can hold, lock excluded (its holder removes it last).
    public func files(of name: String) -> [String] {
        [path(for: name), portalFlagPath(for: name), engineSocketPath(for: name)]
            + RecordedProcess.Role.allCases.map { log(for: name, role: $0) }
            + temporaryFiles(of: name)
    }

    private func temporaryPrefix(_ name: String) -> String { ".\(name).json.tmp." }

    /// Half-written state files of `name` (a writer killed between create and rename).
    func temporaryFiles(of name: String) -> [String] {
        let prefix = temporaryPrefix(name)
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return entries.filter { $0.hasPrefix(prefix) }.map { "\(directory)/\($0)" }
    }

    /// What reading a state file found.
    public enum Record: Sendable, Equatable {
        /// No state file.
        case missing
        /// A state file that reads as this sandbox's.
        case state(SandboxState)
        /// A state file that cannot be trusted: unreadable, truncated, of another sandbox. `detail` says why.
        case unreadable(detail: String)
    }

    /// Reads the state file of `name` without judging it.
    public func record(_ name: String) -> Record {
        let path = path(for: name)
        var info = stat()
        guard lstat(path, &info) == 0 else { return .missing }
        guard info.st_mode & S_IFMT == S_IFREG else { return .unreadable(detail: "is not a regular file") }
        guard let data = Self.contents(of: path) else { return .unreadable(detail: "cannot be read") }
        let state: SandboxState
        do {
            state = try SandboxState.decode(file: data)
        } catch {
            return .unreadable(detail: data.allSatisfy({ [0x20, 0x0a, 0x0d, 0x09].contains($0) }) ? "is empty" : "is not a linkcond state file (\(error.reason))")
        }
        guard state.name == name else { return .unreadable(detail: "names sandbox '\(state.name)', not '\(name)'") }
        guard SandboxState.readableVersions.contains(state.version) else {
            return .unreadable(detail: "has version \(state.version); this linkcond reads versions \(SandboxState.readableVersions.lowerBound) to \(SandboxState.currentVersion)")
        }
        return .state(state)
    }

    /// The bytes of the file at `path`, nil when it cannot be read.
    private static func contents(of path: String) -> [UInt8]? {
        guard let file = try? FileDescriptor.open(path, .readOnly, options: .noFollow) else { return nil }
        return file.closeAfter { try? file.readToEnd() }
    }

    /// The recorded state of sandbox `name`, nil when there is none; throws when the file cannot be trusted.
    public func load(_ name: String) throws(SandboxError) -> SandboxState? {
        switch record(name) {
        case .missing: return nil
        case let .state(state): return state
        case let .unreadable(detail):
            throw .state(path: path(for: name), detail: "\(detail); 'linkcond down\(SandboxError.nameOption(name))' cleans up from the sandbox's names alone")
        }
    }

    /// Writes the state atomically: a temporary file of this process put in the old one's place
    /// (``FileReplacement/replace(_:with:)``).
    public func save(_ state: SandboxState) throws(SandboxError) {
        let path = path(for: state.name)
        let temporary = "\(directory)/\(temporaryPrefix(state.name))\(getpid())"
        do {
            if mkdir(directory, 0o755) != 0 && errno != EEXIST {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            }
            let file: FileDescriptor
            do throws(SystemError) {
                file = try FileDescriptor.open(temporary, .writeOnly, options: [.create, .truncate, .noFollow])
            } catch {
                throw SandboxError.state(path: temporary, detail: "cannot be created (\(error.errno))")
            }
            // Not fsync'ed: the replacement is what makes the write atomic for every reader, and a crash of the
            // machine, the one thing fsync guards against, takes the namespaces the file describes with it
            // (the default store, /run, is a tmpfs on most systems, where fsync does nothing anyway). On a disk
            // it cost an apply 0.5 to 4 ms.
            do throws(SystemError) {
                try file.closeAfter { () throws(SystemError) in try file.writeAll(state.fileText.utf8) }
                try FileReplacement.replace(path, with: temporary)
            } catch {
                unlink(temporary)
                throw SandboxError.state(path: path, detail: "cannot be written (\(error.errno))")
            }
        } catch let error as SandboxError {
            throw error
        } catch {
            unlink(temporary)
            throw .state(path: path, detail: "cannot be written (\(error.localizedDescription))")
        }
    }

    /// Removes every file of sandbox `name` (state, logs, portal flag, engine socket, half-written state);
    /// returns the ones that existed.
    @discardableResult
    public func remove(_ name: String) -> [String] {
        files(of: name).filter { unlink($0) == 0 }
    }

    /// The names of every sandbox with a state file, sorted.
    public func names() -> [String] {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return files.filter { $0.hasSuffix(".json") && !$0.hasPrefix(".") }.map { String($0.dropLast(5)) }
            .filter(SandboxTopology.isValidName).sorted()
    }
}

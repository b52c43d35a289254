import Foundation
import Glibc
import NetNamespace
import Netlink
import RouteNetlink
import Synchronization
import XCTest

// Host-integration tier (DESIGN.md, "Tests"): real namespaces, veths, addresses, routes and qdiscs.
//
// Rules every test here follows:
// - Nothing in the host's own network namespace is changed; the host is only ever read.
// - Every namespace has a name unique to this process (`lcit<pid>-<counter>-<tag>`), and a teardown block
//   removes it even when the test fails, so tests can run in parallel processes.
// - Addresses come only from 198.18.0.0/15 and 2001:2::/48.

/// Unique names for namespaces and sandboxes.
enum UniqueName {
    private static let counter = Atomic<Int>(0)

    static func next() -> Int {
        counter.add(1, ordering: .relaxed).newValue
    }

    /// `lcit<pid>-<n>-<tag>`: a namespace name no other test (or test process) uses.
    static func namespace(_ tag: String) -> String {
        "lcit\(getpid())-\(next())-\(tag)"
    }

    /// `it<pid>-<n>`: a sandbox name (1–20 characters of [a-z0-9-]); its namespaces are `lc-it<pid>-<n>-*`.
    static func sandbox() -> String {
        "it\(getpid())-\(next())"
    }
}

/// The prefix every namespace these tests make (directly or through a sandbox) starts with, for this process.
enum OwnNames {
    static var namespacePrefix: String { "lcit\(getpid())-" }
    static var sandboxNamespacePrefix: String { "lc-it\(getpid())-" }

    static func isOurs(_ name: String) -> Bool {
        name.hasPrefix(namespacePrefix) || name.hasPrefix(sandboxNamespacePrefix)
    }
}

/// Base class: skips everything when not root, and checks after each test that it left no namespace of its own.
class IntegrationTestCase: XCTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        guard geteuid() == 0 else {
            throw XCTSkip("requires root: creates network namespaces, veths, addresses, routes and qdiscs (run 'sudo swift test')")
        }
    }

    /// Every test reaps what it (or the library code it drives) started: a child left unreaped fails the test
    /// that left it, named with its command (not a later test that happens to look), and is then reaped here so
    /// the tests after it are not blamed. Runs after the teardown blocks (sandboxes removed, labs closed).
    override func tearDownWithError() throws {
        if !zombieChildren().isEmpty {
            assertNoZombieChildren("\(name) left unreaped children")
            reapChildren(zombieChildren())
        }
        try super.tearDownWithError()
    }

    /// The attempt of ``measuredAgainIfTheMachineStalled(attempts:_:)`` under way: its failures are held, and
    /// its teardown blocks run when it ends, until it is judged or voided.
    private let attemptLock = NSLock()
    private var currentAttempt: MeasurementAttempt?

    func beginAttempt() { attemptLock.withLock { currentAttempt = MeasurementAttempt() } }

    func endAttempt() -> MeasurementAttempt {
        attemptLock.withLock {
            defer { currentAttempt = nil }
            return currentAttempt ?? MeasurementAttempt()
        }
    }

    override func recordFailure(withDescription description: String, inFile filePath: String, atLine lineNumber: Int, expected: Bool) {
        let held = attemptLock.withLock { () -> Bool in
            guard currentAttempt != nil else { return false }
            currentAttempt?.failures.append(.init(description: description, file: filePath, line: lineNumber, expected: expected))
            return true
        }
        if !held { super.recordFailure(withDescription: description, inFile: filePath, atLine: lineNumber, expected: expected) }
    }

    override func addTeardownBlock(_ block: @escaping () -> Void) {
        let held = attemptLock.withLock { () -> Bool in
            guard currentAttempt != nil else { return false }
            currentAttempt?.cleanups.append(block)
            return true
        }
        if !held { super.addTeardownBlock(block) }
    }

    /// Creates a uniquely named namespace that is deleted again when the test ends, pass or fail.
    func makeNamespace(_ tag: String) throws -> NamedNamespace {
        let name = UniqueName.namespace(tag)
        addTeardownBlock { Cleanup.removeNamespace(name) }
        return try NamedNamespace.create(name)
    }

    /// A typed rtnetlink client whose socket lives in `namespace`.
    func netlink(_ namespace: NamedNamespace) throws -> RouteNetlinkClient {
        RouteNetlinkClient(connection: try namespace.openNetlinkConnection(), namespace: namespace.name)
    }

    /// Opens `/run/netns/NAME` for the duration of `body` (for `createVeth(in:)` / `moveLink(to:)`).
    func withDescriptor<T>(_ namespace: NamedNamespace, _ body: (NamespaceDescriptor) throws -> T) throws -> T {
        let fd = open(namespace.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw NamespaceError.system(operation: "open \(namespace.path)", errno: errno)
        }
        defer { close(fd) }
        return try body(NamespaceDescriptor(fileDescriptor: fd, name: namespace.name))
    }

    /// Runs `body`, expects it to throw an error of type `E`, and returns that error (nil, with a failure, otherwise).
    @discardableResult
    func expectError<E: Error, T>(
        _ type: E.Type, _ body: () throws -> T, file: StaticString = #filePath, line: UInt = #line
    ) -> E? {
        do {
            let value = try body()
            XCTFail("expected \(E.self), got a result: \(value)", file: file, line: line)
            return nil
        } catch let error as E {
            return error
        } catch {
            XCTFail("expected \(E.self), got \(Swift.type(of: error)): \(error)", file: file, line: line)
            return nil
        }
    }

    /// The kernel-refusal `NetlinkError` inside a `RouteNetlinkError`, or nil with a failure.
    func kernelRefusal(
        _ error: RouteNetlinkError?, file: StaticString = #filePath, line: UInt = #line
    ) -> NetlinkError? {
        guard let error else { return nil }
        guard case let .netlink(inner) = error else {
            XCTFail("expected RouteNetlinkError.netlink, got \(error)", file: file, line: line)
            return nil
        }
        XCTAssertEqual(inner.kind, .kernel, "\(inner)", file: file, line: line)
        return inner
    }
}

enum Cleanup {
    /// Deletes a named namespace (and its /etc/netns directory) if it is still there.
    static func removeNamespace(_ name: String) {
        if let namespace = try? NamedNamespace(existing: name) {
            try? namespace.delete()
        }
        // delete() removes /etc/netns/NAME too; this covers a namespace that vanished with its etc dir left.
        if access("\(NamedNamespace.etcDirectory)/\(name)", F_OK) == 0 {
            _ = try? FileManager.default.removeItem(atPath: "\(NamedNamespace.etcDirectory)/\(name)")
        }
    }
}

/// Polls `condition` until it is true or `timeout` seconds have passed; returns its last value.
/// Operational state of a veth follows carrier changes through the kernel's linkwatch, asynchronously.
func eventually(timeout: Double = 3, interval: Double = 0.02, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while true {
        if try condition() { return true }
        if Date() >= deadline { return false }
        usleep(UInt32(interval * 1_000_000))
    }
}

// MARK: Subprocesses (iproute2 as an independent witness)

struct CommandResult {
    var status: Int32
    var output: String
    var errorOutput: String
}

/// A tool a test needs is not installed: the test fails (it never passes without its witness).
struct MissingTool: Error, CustomStringConvertible {
    var path: String
    var description: String { "\(path) is not installed; scripts/install-deps --test installs what the tests need" }
}

enum Command {
    static let ip = "/usr/sbin/ip"
    static let tc = "/usr/sbin/tc"

    static func isAvailable(_ path: String) -> Bool { access(path, X_OK) == 0 }

    /// Runs a program in the host's namespace with Foundation.Process and collects its output.
    static func run(_ executable: String, _ arguments: [String]) throws -> CommandResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe()
        let errorOutput = Pipe()
        process.standardOutput = output
        process.standardError = errorOutput
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let outData = output.fileHandleForReading.readDataToEndOfFile()
        let errData = errorOutput.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return CommandResult(
            status: process.terminationStatus, output: String(decoding: outData, as: UTF8.self),
            errorOutput: String(decoding: errData, as: UTF8.self))
    }

    /// Runs a program with its output through files and no other descriptor of this process (bash closes
    /// every one above 2 first): what a program leaves running in the background (conmon, after `podman run
    /// -d`) keeps what it inherited, and Foundation's Process, which learns of the exit through a socket the
    /// child inherits, or a pipe of output, would not end until that exits too.
    static func runThroughFiles(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws -> CommandResult {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("lcit-out-\(getpid())-\(UniqueName.next())").path
        let paths = [base + ".out", base + ".err"]
        defer { for path in paths { try? FileManager.default.removeItem(atPath: path) } }
        var handles: [FileHandle] = []
        for path in paths {
            guard FileManager.default.createFile(atPath: path, contents: nil), let handle = FileHandle(forWritingAtPath: path) else {
                throw NamespaceError.system(operation: "create \(path)", errno: errno)
            }
            handles.append(handle)
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        let closeAndRun = #"for fd in $(ls /proc/$$/fd); do if [ "$fd" -gt 2 ]; then eval "exec $fd>&-"; fi; done; exec "$0" "$@""#
        process.arguments = ["-c", closeAndRun, executable] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        process.standardOutput = handles[0]
        process.standardError = handles[1]
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        for handle in handles { try? handle.close() }
        let read = { (path: String) in String(decoding: FileManager.default.contents(atPath: path) ?? Data(), as: UTF8.self) }
        return CommandResult(status: process.terminationStatus, output: read(paths[0]), errorOutput: read(paths[1]))
    }

    /// `ip ARGS...`. A missing iproute2 fails the test (scripts/install-deps installs it): a witness that is
    /// not there must never turn a check into a silent pass.
    static func ip(_ arguments: [String]) throws -> CommandResult {
        guard isAvailable(ip) else { throw MissingTool(path: ip) }
        return try run(ip, arguments)
    }

    /// `tc ARGS...`; a missing iproute2 fails the test.
    static func tc(_ arguments: [String]) throws -> CommandResult {
        guard isAvailable(tc) else { throw MissingTool(path: tc) }
        return try run(tc, arguments)
    }

    /// Runs a program with `environment` added to this process's, optionally feeding it nothing on stdin.
    static func run(_ executable: String, _ arguments: [String], environment: [String: String]) throws -> CommandResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        let output = Pipe()
        let errorOutput = Pipe()
        process.standardOutput = output
        process.standardError = errorOutput
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let outData = output.fileHandleForReading.readDataToEndOfFile()
        let errData = errorOutput.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return CommandResult(
            status: process.terminationStatus, output: String(decoding: outData, as: UTF8.self),
            errorOutput: String(decoding: errData, as: UTF8.self))
    }

    /// The names `ip netns list` prints (it may add ` (id: N)`).
    static func ipNetnsList() throws -> [String] {
        let result = try ip(["netns", "list"])
        XCTAssertEqual(result.status, 0, result.errorOutput)
        return result.output.split(separator: "\n").compactMap { line in
            line.split(separator: " ").first.map(String.init)
        }
    }
}

// MARK: Processes started in namespaces

/// Runs `program` in `namespace` with its standard output in a pipe; returns the exit code and the output.
func spawnCapturing(
    _ namespace: NamedNamespace, _ program: String, _ arguments: [String] = [], environment: [String: String]? = nil
) throws -> (status: Int32, output: String) {
    var fds: [Int32] = [-1, -1]
    guard pipe(&fds) == 0 else { throw NamespaceError.system(operation: "pipe", errno: errno) }
    // Close-on-exec, so no other child inherits the write end and keeps the pipe open (the child's
    // stdout is a dup2 copy, which does not inherit the flag).
    for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    let nullFD = open("/dev/null", O_RDONLY | O_CLOEXEC)
    defer { if nullFD >= 0 { close(nullFD) } }
    let process: SpawnedProcess
    do {
        process = try namespace.spawn(
            program, arguments: arguments, environment: environment, standardInput: nullFD, standardOutput: fds[1])
    } catch {
        close(fds[0])
        close(fds[1])
        throw error
    }
    close(fds[1])
    let output = readAll(fds[0])
    close(fds[0])
    return (try process.wait(), output)
}

/// Reads a descriptor to end of file.
func readAll(_ fd: Int32) -> String {
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count < 0 && errno == EINTR { continue }
        if count <= 0 { break }
        bytes.append(contentsOf: buffer[..<count])
    }
    return String(decoding: bytes, as: UTF8.self)
}

/// The inode of the network namespace the calling thread is in.
func currentThreadNamespaceInode() -> UInt {
    var info = stat()
    guard stat("/proc/thread-self/ns/net", &info) == 0 else { return 0 }
    return UInt(info.st_ino)
}

/// The inode of a namespace file such as `/run/netns/NAME`.
func namespaceInode(_ path: String) -> UInt {
    var info = stat()
    guard stat(path, &info) == 0 else { return 0 }
    return UInt(info.st_ino)
}

/// Reads a small file, trimmed; nil when it cannot be read.
func readTrimmed(_ path: String) -> String? {
    (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
}

/// Processes (other than this one) whose command line mentions `needle`, e.g. `serve --name NAME`.
func processes(commandLineContaining needle: String) -> [Int32] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return entries.compactMap { entry -> Int32? in
        guard let pid = Int32(entry), pid != getpid(),
            let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline"), !data.isEmpty
        else { return nil }
        let text = String(decoding: data.map { $0 == 0 ? 32 : $0 }, as: UTF8.self)
        return text.contains(needle) ? pid : nil
    }
}

/// Children of this process that ended and were never reaped.
///
/// A multithreaded child shows "Z" as soon as its main thread has exited, while `waitpid` cannot collect it
/// until its other threads have exited too (so a non-blocking wait right then misses it).
func zombieChildren() -> [Int32] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return entries.compactMap { entry -> Int32? in
        guard let pid = Int32(entry), let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        // After "comm)": field 3 is the state, field 4 the parent pid.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 1, fields[0] == "Z", Int32(fields[1]) == getpid() else { return nil }
        return pid
    }
}

/// A child process for a failure message: pid, name, state, parent, threads not yet exited and command line,
/// e.g. `812 (linkcond) state Z, parent 300, 3 threads, cmdline: - (a zombie keeps only its name)`. A zombie
/// has no memory left, so its command line reads empty; its name (`comm`, up to 15 characters of the
/// executable's name) is what remains.
func describeProcess(_ pid: Int32) -> String {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")")
    else { return "\(pid) (gone)" }
    let name = stat[stat.index(after: open)..<close]
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    let threads = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task"))?.count ?? 0
    let cmdline = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline").map { data in
        String(decoding: data.map { $0 == 0 ? 32 : $0 }, as: UTF8.self).trimmingCharacters(in: .whitespaces)
    } ?? ""
    return "\(pid) (\(name)) state \(fields.first ?? "?"), parent \(fields.count > 1 ? fields[1] : "?"), "
        + "\(threads) thread\(threads == 1 ? "" : "s"), cmdline: \(cmdline.isEmpty ? "- (a zombie keeps only its name)" : cmdline)"
}

/// Fails when this process has unreaped children, naming each (``describeProcess(_:)``). Waits up to `grace`
/// seconds first, in case the code that started a child is reaping it on another thread right now.
func assertNoZombieChildren(
    _ message: String = "unreaped children left", grace: Double = 1, file: StaticString = #filePath, line: UInt = #line
) {
    _ = eventually(timeout: grace, interval: 0.02) { zombieChildren().isEmpty }
    let zombies = zombieChildren()
    XCTAssertEqual(zombies, [], "\(message): \(zombies.map(describeProcess).joined(separator: "; "))", file: file, line: line)
}

/// Reaps the given children (zombies: they have ended, so this returns once their last thread has).
func reapChildren(_ pids: [Int32]) {
    for pid in pids {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    }
}

// MARK: Host snapshot (read-only)

/// What the host's own namespace holds: links, addresses, routes and qdiscs, without counters.
/// Taken twice — over linkcond's own netlink code (opened on the test thread, which is in the host
/// namespace; only dumps are sent) and with iproute2 — so a decoding bug cannot hide a change.
struct HostSnapshot: Equatable {
    var links: [String]
    var addresses: [String]
    var routes: [String]
    var qdiscs: [String]
    var ipLinks: String
    var ipAddresses: String
    var ipRoutes: String
    var tcQdiscs: String

    static func take() throws -> HostSnapshot {
        let host = RouteNetlinkClient(connection: try NetlinkConnection(), namespace: nil)
        let links = try host.links().map { link in
            "\(link.index) \(link.name) kind=\(link.kind ?? "-") flags=\(String(link.flags.rawValue, radix: 16)) type=\(link.hardwareType) "
                + "mtu=\(link.mtu) mac=\(link.hardwareAddressText) oper=\(link.operationalState) carrier=\(link.carrier) link=\(link.linkIndex.map(String.init) ?? "-")"
        }.sorted()
        let addresses = try host.addresses().map { "\($0.interfaceIndex) \($0.prefix) scope=\($0.scope) flags=\($0.flags)" }.sorted()
        let routes = try host.routes().map { route in
            "\(route.family) \(route.destination.map(\.description) ?? "default") via=\(route.gateway.map(\.description) ?? "-") "
                + "oif=\(route.outputInterface.map(String.init) ?? "-") metric=\(route.metric.map(String.init) ?? "-") "
                + "table=\(route.table) type=\(route.type) scope=\(route.scope) proto=\(route.routingProtocol)"
        }.sorted()
        let qdiscs = try host.qdiscs().map { qdisc in
            "\(qdisc.interfaceIndex) \(qdisc.kind) handle=\(qdisc.handle) parent=\(qdisc.parent) options=\(qdisc.options)"
        }.sorted()
        return HostSnapshot(
            links: links, addresses: addresses, routes: routes, qdiscs: qdiscs,
            ipLinks: try witness(Command.ip, ["-d", "link", "show"]),
            ipAddresses: try witness(Command.ip, ["addr", "show"]),
            ipRoutes: try witness(Command.ip, ["route", "show", "table", "all"])
                + (try witness(Command.ip, ["-6", "route", "show", "table", "all"])),
            tcQdiscs: try witness(Command.tc, ["qdisc", "show"]))
    }

    /// iproute2's text with the few fields that change on their own (lifetimes, expiry timers) removed.
    private static func witness(_ program: String, _ arguments: [String]) throws -> String {
        guard Command.isAvailable(program) else { return "(\(program) not installed)" }
        let result = try Command.run(program, arguments)
        let volatile = ["valid_lft", "preferred_lft", "expires", "used", "age"]
        return result.output.split(separator: "\n").map { line in
            var words = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            var index = 0
            while index < words.count {
                if volatile.contains(words[index]) {
                    words.removeSubrange(index..<min(index + 2, words.count))
                } else {
                    index += 1
                }
            }
            return words.joined(separator: " ")
        }.joined(separator: "\n")
    }
}

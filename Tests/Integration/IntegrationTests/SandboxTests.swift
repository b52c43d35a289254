import Conditioning
import Foundation
import Glibc
import LinkcondBase
import NetNamespace
import Netlink
import RouteNetlink
import Sandboxing
import Synchronization
import XCTest

/// Sandboxes for the sandbox tests: unique names, a private store, and a cleanup that runs pass or fail.
class SandboxTestCase: IntegrationTestCase {
    /// The built `linkcond` executable (it sits next to the test bundle in the build directory).
    func linkcondExecutable() throws -> String {
        var candidates: [String] = []
        if let explicit = ProcessInfo.processInfo.environment["LINKCOND_EXECUTABLE"] { candidates.append(explicit) }
        candidates.append(Bundle.main.bundleURL.appendingPathComponent("linkcond").path)
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        if length > 0 {
            let exe = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            candidates.append(URL(fileURLWithPath: exe).deletingLastPathComponent().appendingPathComponent("linkcond").path)
        }
        guard let found = candidates.first(where: { access($0, X_OK) == 0 }) else {
            throw MissingTool(path: "linkcond (looked at \(candidates.joined(separator: ", ")); run 'swift build' first)")
        }
        return found
    }

    /// A store directory of this test's own (`<prefix>-<pid>-<n>` in the temporary directory), removed at the end.
    func makeStore(prefix: String) throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(getpid())-\(UniqueName.next())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: directory) }
        return directory
    }

    /// A unique sandbox name whose leftovers (in `store` and the kernel) are removed at the end, whatever happens.
    func makeName(store: String) -> String {
        let name = UniqueName.sandbox()
        addTeardownBlock { SandboxCleanup.remove(name: name, storeDirectory: store) }
        return name
    }

    /// A sandbox with a unique name and a store in a temporary directory of its own; removed after the test.
    func makeSandbox() throws -> Sandbox {
        let name = UniqueName.sandbox()
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("lcit-store-\(getpid())-\(UniqueName.next())").path
        addTeardownBlock { SandboxCleanup.remove(name: name, storeDirectory: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let topology = try SandboxTopology(name: name)
        XCTAssertTrue(topology.namespaces.allSatisfy(OwnNames.isOurs))
        return Sandbox(topology: topology, store: SandboxStore(directory: directory))
    }

    func serverLaunch(_ sandbox: Sandbox) throws -> Sandbox.ServerLaunch {
        .process(executable: try linkcondExecutable(), arguments: ["serve", "--name", sandbox.topology.name])
    }

    /// Waits until a TCP connection from the client to `server`:`port` succeeds; returns the seconds it took,
    /// or nil after `timeout`.
    ///
    /// `up` returns once the server answers on IPv4 only; IPv6 through the router needs about two more seconds
    /// (the router cannot send neighbour solicitations before its link-local address has passed DAD and
    /// linkwatch), so IPv6 checks wait here first.
    func waitUntilReachable(_ client: NamedNamespace, _ server: IPAddress, port: UInt16, timeout: Double = 6) throws -> Double? {
        let start = Date()
        let reached = try eventually(timeout: timeout, interval: 0.05) {
            let code = try client.run { () throws -> Int32 in
                let fd = try TestSocket.open(for: server, type: Int32(SOCK_STREAM.rawValue), timeout: 0.2)
                defer { close(fd) }
                return TestSocket.connect(fd, server, port: port)
            }
            return code == 0
        }
        return reached ? Date().timeIntervalSince(start) : nil
    }

    /// Asserts that nothing of the sandbox is left: namespaces, /etc/netns, state, log, server process.
    func assertNothingLeft(
        _ sandbox: Sandbox, serverPID: Int32? = nil, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let listed = try Command.ipNetnsList()
        for name in sandbox.topology.namespaces {
            XCTAssertFalse(NamedNamespace.exists(name), "\(name) still exists", file: file, line: line)
            XCTAssertFalse(listed.contains(name), "`ip netns list` still shows \(name)", file: file, line: line)
            XCTAssertFalse(
                FileManager.default.fileExists(atPath: "\(NamedNamespace.etcDirectory)/\(name)"),
                "/etc/netns/\(name) still exists", file: file, line: line)
        }
        let name = sandbox.topology.name
        XCTAssertNil(try sandbox.store.load(name), "state file left", file: file, line: line)
        XCTAssertFalse(FileManager.default.fileExists(atPath: sandbox.store.path(for: name)), file: file, line: line)
        XCTAssertFalse(FileManager.default.fileExists(atPath: sandbox.store.logPath(for: name)), "server log left", file: file, line: line)
        if let serverPID {
            XCTAssertNil(ProcessInspector.startTime(serverPID), "server \(serverPID) still exists", file: file, line: line)
        }
        XCTAssertEqual(processes(commandLineContaining: "serve --name \(name) "), [], "server processes left", file: file, line: line)
        assertNoZombieChildren(file: file, line: line)
    }
}

enum SandboxCleanup {
    /// Removes whatever of sandbox `name` is left, however a test ended.
    static func remove(name: String, storeDirectory: String) {
        if let topology = try? SandboxTopology(name: name) {
            let sandbox = Sandbox(topology: topology, store: SandboxStore(directory: storeDirectory))
            let state = try? sandbox.store.load(name)
            _ = try? sandbox.down()
            if let server = state?.server, server.isRunning {
                kill(server.pid, SIGKILL)
                var status: Int32 = 0
                waitpid(server.pid, &status, 0)
            }
            // The server and, with the userspace backend, the engine (`linkcond engine --name NAME --store DIR`).
            for pid in processes(commandLineContaining: "serve --name \(name) ") + processes(commandLineContaining: "engine --name \(name) ") {
                kill(pid, SIGKILL)
                var status: Int32 = 0
                waitpid(pid, &status, 0)
            }
            for namespace in topology.allNamespaces {
                Cleanup.removeNamespace(namespace)
            }
        }
        try? FileManager.default.removeItem(atPath: storeDirectory)
    }
}

/// Counts calls; `Sandbox.up`'s `isCancelled` must be `@Sendable`.
final class CallCounter: Sendable {
    private let count = Mutex(0)
    /// Increments and returns the new count.
    func increment() -> Int { count.withLock { $0 += 1; return $0 } }
    var value: Int { count.withLock { $0 } }
}

final class SandboxTests: SandboxTestCase {
    func testUpServesProbeAndEchoThenDownLeavesNothing() throws {
        let sandbox = try makeSandbox()
        let name = sandbox.topology.name
        let launch = try serverLaunch(sandbox)
        var steps: [String] = []
        XCTAssertEqual(try sandbox.up(server: launch, progress: { steps.append($0) }), .created)
        XCTAssertTrue(steps.contains { $0.contains("starting the server") }, "\(steps)")

        // What the state file recorded.
        let state = try XCTUnwrap(try sandbox.store.load(name))
        XCTAssertTrue(state.complete)
        XCTAssertFalse(state.cellular)
        XCTAssertEqual(state.namespaces, sandbox.topology.namespaces)
        let server = try XCTUnwrap(state.server)
        XCTAssertTrue(server.isRunning)
        XCTAssertEqual(server.executable, URL(fileURLWithPath: try linkcondExecutable()).resolvingSymlinksInPath().path)
        XCTAssertEqual(server.marker, sandbox.marker)
        XCTAssertTrue(ProcessInspector.environment(server.pid).contains("LINKCOND_SANDBOX=\(sandbox.store.directory)/\(name)"))
        XCTAssertTrue(sandbox.isHealthy(state))
        let listed = try Command.ipNetnsList()
        for namespace in sandbox.topology.namespaces {
            XCTAssertTrue(listed.contains(namespace), "`ip netns list` lacks \(namespace)")
        }
        let client = try sandbox.clientNamespace()
        XCTAssertEqual(client.name, "lc-\(name)-client")
        XCTAssertEqual(
            try String(contentsOfFile: "\(client.etcPath)/resolv.conf", encoding: .utf8), SandboxPlan.clientResolvConf)
        let router = try NamedNamespace(existing: sandbox.topology.routerNamespace)
        XCTAssertEqual(try router.run { readTrimmed("/proc/sys/net/ipv4/ip_forward") }, "1")
        XCTAssertEqual(try router.run { readTrimmed("/proc/sys/net/ipv6/conf/all/forwarding") }, "1")

        try checkStatus(sandbox, serverPID: server.pid)
        XCTAssertNotNil(
            try waitUntilReachable(client, SandboxPlan.serverIPv6, port: SandboxPlan.httpPort),
            "the server never became reachable over IPv6")
        try checkHTTPProbe(client)
        try checkEcho(client)

        // exec runs as the device and passes the exit code back.
        XCTAssertEqual(try sandbox.exec("/bin/sh", arguments: ["-c", "test -e /sys/class/net/wl0 && ! test -e /sys/class/net/c-wl0 && exit 3"]), 3)

        // A healthy sandbox is left alone.
        XCTAssertEqual(try sandbox.up(server: launch), .alreadyUp)
        XCTAssertEqual(try sandbox.store.load(name)?.server?.pid, server.pid, "alreadyUp must not restart the server")

        XCTAssertTrue(try sandbox.down())
        try assertNothingLeft(sandbox, serverPID: server.pid)
        XCTAssertFalse(try sandbox.down(), "a second down has nothing to remove")
        XCTAssertNil(try sandbox.status())
        let notUp = expectError(SandboxError.self) { try sandbox.clientNamespace() }
        if case .notUp(name)? = notUp {} else { XCTFail("expected .notUp, got \(String(describing: notUp))") }
    }

    private func checkStatus(_ sandbox: Sandbox, serverPID: Int32) throws {
        // Operational state follows carrier through linkwatch, asynchronously: poll briefly.
        var status = try XCTUnwrap(try sandbox.status())
        _ = try eventually {
            status = try XCTUnwrap(try sandbox.status())
            return status.namespaces.allSatisfy { $0.interfaces.allSatisfy { $0.name == "lo" || $0.operationalState == "UP" } }
        }
        XCTAssertTrue(status.healthy)
        XCTAssertTrue(status.complete)
        XCTAssertTrue(status.serverRunning)
        XCTAssertEqual(status.serverPID, serverPID)
        XCTAssertEqual(status.namespaces.map(\.name), sandbox.topology.namespaces)
        XCTAssertEqual(status.namespaces.map(\.role), ["client", "router", "server"])
        XCTAssertTrue(status.namespaces.allSatisfy(\.exists))

        func interface(_ role: String, _ name: String) -> SandboxStatus.Interface? {
            status.namespaces.first { $0.role == role }?.interfaces.first { $0.name == name }
        }
        func interfaceNames(_ role: String) -> Set<String> {
            Set(status.namespaces.first { $0.role == role }?.interfaces.map(\.name) ?? [])
        }
        XCTAssertEqual(interfaceNames("client"), ["lo", "wl0"])
        XCTAssertEqual(interfaceNames("router"), ["lo", "c-wl0", "s0"])
        XCTAssertEqual(interfaceNames("server"), ["lo", "eth0"])

        let expected: [(String, String, [String])] = [
            ("client", "wl0", ["198.18.1.2/24", "2001:2:0:1::2/64"]),
            ("router", "c-wl0", ["198.18.1.1/24", "2001:2:0:1::1/64"]),
            ("router", "s0", ["198.19.0.1/24", "2001:2:0:100::1/64"]),
            ("server", "eth0", ["198.19.0.2/24", "2001:2:0:100::2/64"]),
        ]
        for (role, name, addresses) in expected {
            guard let entry = interface(role, name) else {
                XCTFail("\(role) has no \(name)")
                continue
            }
            XCTAssertEqual(entry.kind, "veth", "\(role) \(name)")
            XCTAssertTrue(entry.up, "\(role) \(name)")
            XCTAssertTrue(entry.carrier, "\(role) \(name)")
            XCTAssertEqual(entry.operationalState, "UP", "\(role) \(name)")
            XCTAssertEqual(entry.mtu, 1500)
            XCTAssertEqual(entry.hardwareAddress.split(separator: ":").count, 6)
            XCTAssertEqual(Set(entry.addresses), Set(addresses), "\(role) \(name)")
        }
        XCTAssertEqual(interface("client", "lo")?.up, true, "lo must be up in every namespace")

        let clientRoutes = status.namespaces[0].defaultRoutes
        XCTAssertTrue(clientRoutes.contains("default via 198.18.1.1 dev wl0 metric 100"), "\(clientRoutes)")
        XCTAssertTrue(clientRoutes.contains("default via 2001:2:0:1::1 dev wl0 metric 100"), "\(clientRoutes)")
        XCTAssertEqual(status.namespaces[1].defaultRoutes, [], "the router needs no default route")
        let serverRoutes = status.namespaces[2].defaultRoutes
        XCTAssertTrue(serverRoutes.contains { $0.hasPrefix("default via 198.19.0.1 dev eth0") }, "\(serverRoutes)")
        XCTAssertTrue(serverRoutes.contains { $0.hasPrefix("default via 2001:2:0:100::1 dev eth0") }, "\(serverRoutes)")

        // iproute2 sees the same client routes.
        let witness = try Command.ip(["-n", sandbox.topology.clientNamespace, "route", "show", "default"])
        XCTAssertEqual(witness.output.trimmingCharacters(in: .whitespacesAndNewlines), "default via 198.18.1.1 dev wl0 metric 100")
    }

    private func checkHTTPProbe(_ client: NamedNamespace) throws {
        // A missing curl fails the test: the HTTP checks through DNS are part of what it proves.
        guard findInPath("curl") != nil else { throw MissingTool(path: "curl") }
        for family in ["-4", "-6"] {
            let (status, output) = try spawnCapturing(
                client, "curl",
                [family, "-s", "--noproxy", "*", "--max-time", "5", "-o", "/dev/null", "-w", "%{http_code}",
                 "http://server.\(SandboxPlan.zone)/generate_204"])
            XCTAssertEqual(status, 0, "curl \(family) exited \(status)")
            XCTAssertEqual(output, "204", "curl \(family)")
        }
        // Straight to the addresses too, no DNS involved.
        let (status, output) = try spawnCapturing(
            client, "curl",
            ["-s", "--noproxy", "*", "--max-time", "5", "-o", "/dev/null", "-w", "%{http_code}",
             "http://[\(SandboxPlan.serverIPv6)]/generate_204"])
        XCTAssertEqual(status, 0)
        XCTAssertEqual(output, "204")
    }

    private func checkEcho(_ client: NamedNamespace) throws {
        let port = SandboxPlan.echoPort
        for server in [SandboxPlan.serverIPv4, SandboxPlan.serverIPv6] {
            // TCP: opened and connected inside the client namespace, used from here.
            let stream = try client.run { () throws -> Int32 in
                let fd = try TestSocket.open(for: server, type: Int32(SOCK_STREAM.rawValue))
                let code = TestSocket.connect(fd, server, port: port)
                guard code == 0 else {
                    close(fd)
                    throw TestSocket.Failure(what: "connect \(server) port \(port)", code: code)
                }
                return fd
            }
            defer { close(stream) }
            let payload = TestSocket.payload("tcp \(server)")
            try TestSocket.sendAll(stream, payload)
            XCTAssertEqual(try TestSocket.receive(stream, count: payload.count), payload, "TCP echo via \(server)")

            // UDP: the answer comes from the server's address and the echo port.
            let datagram = try client.run { try TestSocket.open(for: server, type: Int32(SOCK_DGRAM.rawValue), timeout: 1) }
            defer { close(datagram) }
            let udpPayload = TestSocket.payload("udp \(server)")
            var answer: (bytes: [UInt8], source: IPAddress?, port: UInt16)?
            for _ in 0..<3 where answer == nil {
                XCTAssertEqual(TestSocket.send(datagram, udpPayload, to: server, port: port), 0)
                answer = try? TestSocket.receive(datagram)
            }
            XCTAssertEqual(answer?.bytes, udpPayload, "UDP echo via \(server)")
            XCTAssertEqual(answer?.source, server)
            XCTAssertEqual(answer?.port, port)
        }
    }

    func testInterruptedUpRemovesEverythingItMade() throws {
        let executable = try linkcondExecutable()
        // up checks isCancelled before each namespace (3), before linking, before addressing, before starting
        // the server and while waiting for it: 7 checks at least. Cancelling at each one must undo everything.
        for cancelAt in 1...7 {
            let sandbox = try makeSandbox()
            let counter = CallCounter()
            var steps: [String] = []
            let error = expectError(SandboxError.self) {
                try sandbox.up(
                    server: .process(executable: executable, arguments: ["serve", "--name", sandbox.topology.name]),
                    isCancelled: { counter.increment() >= cancelAt }, progress: { steps.append($0) })
            }
            guard case .interrupted? = error else {
                XCTFail("cancel at check \(cancelAt): expected .interrupted, got \(String(describing: error))")
                continue
            }
            XCTAssertEqual(counter.value, cancelAt, "up went on asking after it was cancelled")
            XCTAssertEqual(steps.last, "removing what was made", "cancel at \(cancelAt): \(steps)")
            if cancelAt == 7 {
                XCTAssertTrue(steps.contains { $0.hasPrefix("starting the server") }, "the server was never started: \(steps)")
            }
            try assertNothingLeft(sandbox)
            XCTAssertFalse(try sandbox.down(), "cancel at \(cancelAt): a state file survived")
        }
    }

    func testCellularAddsASecondUplinkWithAHigherMetric() throws {
        let sandbox = try makeSandbox()
        let topology = sandbox.topology
        XCTAssertEqual(try sandbox.up(cellular: true), .created)
        let client = try sandbox.clientNamespace()
        let clientLinks = try sandbox.netlink(client)
        XCTAssertEqual(Set(try clientLinks.links().map(\.name)), ["lo", "wl0", "ww0"])
        let routerLinks = try sandbox.netlink(try NamedNamespace(existing: topology.routerNamespace))
        XCTAssertEqual(Set(try routerLinks.links().map(\.name)), ["lo", "c-wl0", "c-ww0", "s0"])
        XCTAssertEqual(try clientLinks.link(named: "ww0").kind, "veth")

        let wl0 = try clientLinks.index(of: "wl0")
        let ww0 = try clientLinks.index(of: "ww0")
        let defaults = try clientLinks.routes().filter { $0.isDefault && $0.table == .main && $0.type == .unicast }
        func route(_ family: AddressFamily, _ index: Int32) -> Route? {
            defaults.first { $0.family == family && $0.outputInterface == index }
        }
        XCTAssertEqual(route(.inet, wl0)?.metric, 100)
        XCTAssertEqual(route(.inet, wl0)?.gateway, IPAddress("198.18.1.1"))
        XCTAssertEqual(route(.inet, ww0)?.metric, 200)
        XCTAssertEqual(route(.inet, ww0)?.gateway, IPAddress("198.18.2.1"))
        XCTAssertEqual(route(.inet6, wl0)?.metric, 100)
        XCTAssertEqual(route(.inet6, wl0)?.gateway, IPAddress("2001:2:0:1::1"))
        XCTAssertEqual(route(.inet6, ww0)?.metric, 200)
        XCTAssertEqual(route(.inet6, ww0)?.gateway, IPAddress("2001:2:0:2::1"))
        XCTAssertEqual(defaults.count, 4, "\(defaults)")
        let status = try XCTUnwrap(try sandbox.status())
        XCTAssertTrue(status.cellular)
        XCTAssertTrue(status.namespaces[0].defaultRoutes.contains("default via 198.18.2.1 dev ww0 metric 200"), "\(status.namespaces[0].defaultRoutes)")
        XCTAssertTrue(status.namespaces[0].interfaces.first { $0.name == "ww0" }?.addresses.contains("198.18.2.2/24") == true)

        // Packets prefer wifi; with wifi down they take cellular; with both down they go nowhere.
        // (A TCP connect to the router's server-side address with no listener comes back as ECONNREFUSED:
        // proof that the SYN got there and the RST came back.)
        let target = SandboxPlan.serverSubnet.routerIPv4.address
        func connectFromClient() throws -> Int32 {
            try client.run { () throws -> Int32 in
                let fd = try TestSocket.open(for: target, type: Int32(SOCK_STREAM.rawValue), timeout: 2)
                defer { close(fd) }
                return TestSocket.connect(fd, target, port: 9)
            }
        }
        func routeDevice() throws -> String {
            try Command.ip(["-n", client.name, "-o", "route", "get", target.description]).output
        }
        XCTAssertEqual(try connectFromClient(), ECONNREFUSED)
        XCTAssertTrue(try routeDevice().contains("dev wl0"), (try? routeDevice()) ?? "")
        try clientLinks.setLink("wl0", up: false)
        XCTAssertEqual(try connectFromClient(), ECONNREFUSED, "no failover to cellular")
        XCTAssertTrue(try routeDevice().contains("dev ww0"), (try? routeDevice()) ?? "")
        try clientLinks.setLink("ww0", up: false)
        XCTAssertEqual(try connectFromClient(), ENETUNREACH)

        // Asking for the other variant rebuilds the sandbox without cellular.
        XCTAssertEqual(try sandbox.up(cellular: false), .rebuilt)
        let rebuilt = try sandbox.netlink(try sandbox.clientNamespace())
        XCTAssertEqual(Set(try rebuilt.links().map(\.name)), ["lo", "wl0"])
        XCTAssertEqual(try sandbox.store.load(topology.name)?.cellular, false)
        XCTAssertTrue(try sandbox.down())
        try assertNothingLeft(sandbox)
    }

    func testBrokenSandboxIsRebuilt() throws {
        let sandbox = try makeSandbox()
        XCTAssertEqual(try sandbox.up(), .created)
        // Someone removed the router behind linkcond's back.
        try NamedNamespace(existing: sandbox.topology.routerNamespace).delete()
        let broken = try XCTUnwrap(try sandbox.status())
        XCTAssertFalse(broken.healthy)
        XCTAssertEqual(broken.namespaces.map(\.exists), [true, false, true])

        XCTAssertEqual(try sandbox.up(), .rebuilt)
        let status = try XCTUnwrap(try sandbox.status())
        XCTAssertTrue(status.healthy)
        XCTAssertTrue(status.namespaces.allSatisfy(\.exists))
        XCTAssertNil(status.serverPID)
        XCTAssertTrue(try sandbox.down())
        try assertNothingLeft(sandbox)
    }

    func testDeadServerMakesTheSandboxUnhealthyAndUpRestartsIt() throws {
        let sandbox = try makeSandbox()
        let launch = try serverLaunch(sandbox)
        XCTAssertEqual(try sandbox.up(server: launch), .created)
        let first = try XCTUnwrap(try sandbox.store.load(sandbox.topology.name)?.server)
        XCTAssertTrue(first.isRunning)

        // The server dies (this process started it, so it reaps it).
        kill(first.pid, SIGKILL)
        var status: Int32 = 0
        XCTAssertEqual(waitpid(first.pid, &status, 0), first.pid)
        XCTAssertFalse(first.isRunning)
        let broken = try XCTUnwrap(try sandbox.status())
        XCTAssertFalse(broken.serverRunning)
        XCTAssertFalse(broken.healthy)

        XCTAssertEqual(try sandbox.up(server: launch), .rebuilt)
        let second = try XCTUnwrap(try sandbox.store.load(sandbox.topology.name)?.server)
        XCTAssertNotEqual(second.pid, first.pid)
        XCTAssertTrue(second.isRunning)
        XCTAssertEqual(try sandbox.status()?.healthy, true)
        let client = try sandbox.clientNamespace()
        let code = try client.run { () throws -> Int32 in
            let fd = try TestSocket.open(for: SandboxPlan.serverIPv4, type: Int32(SOCK_STREAM.rawValue))
            defer { close(fd) }
            return TestSocket.connect(fd, SandboxPlan.serverIPv4, port: SandboxPlan.httpPort)
        }
        XCTAssertEqual(code, 0, "the restarted server does not answer")
        XCTAssertTrue(try sandbox.down())
        try assertNothingLeft(sandbox, serverPID: second.pid)
    }

    func testNamesAndAbsentSandboxes() throws {
        for bad in ["", "Upper", "under_score", "-lead", String(repeating: "a", count: 21), "dot.ted", "spa ce"] {
            let error = expectError(SandboxError.self) { try SandboxTopology(name: bad) }
            if case .invalidName(bad)? = error {} else { XCTFail("\(bad.debugDescription): got \(String(describing: error))") }
        }
        XCTAssertEqual(try SandboxTopology(name: String(repeating: "a", count: 20)).clientNamespace, "lc-\(String(repeating: "a", count: 20))-client")
        XCTAssertEqual(try SandboxTopology().namespaces, ["lc-client", "lc-router", "lc-server"])

        let sandbox = try makeSandbox()
        XCTAssertNil(try sandbox.status())
        XCTAssertFalse(try sandbox.down())
        let error = expectError(SandboxError.self) { try sandbox.exec("/bin/true", arguments: []) }
        if case .notUp(sandbox.topology.name)? = error {} else { XCTFail("expected .notUp, got \(String(describing: error))") }
        XCTAssertEqual(error?.description.contains("linkcond up --name \(sandbox.topology.name)"), true)
    }
}

/// The first executable `name` in this process's PATH, or nil.
func findInPath(_ name: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    return path.split(separator: ":").map { "\($0)/\(name)" }.first { access($0, X_OK) == 0 }
}

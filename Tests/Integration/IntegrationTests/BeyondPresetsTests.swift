import Conditioning
import Foundation
import Glibc
import LinkcondBase
import LinkcondSystem
import NetNamespace
import Profiles
import Sandboxing
import Synchronization
import XCTest

/// Conditions beyond the presets, with real traffic through a sandbox: a trace-driven link delivers the
/// trace's rate, targeted and untargeted traffic side by side get different treatment, and each client link
/// keeps a profile of its own. Run against each backend in `LINKCOND_BACKENDS` (default: the one `auto`
/// picks here) that can hold the profile (a trace needs the userspace engine).
final class BeyondPresetsTests: SandboxTestCase {
    private var backends: [BackendChoice] {
        let listed = ProcessInfo.processInfo.environment["LINKCOND_BACKENDS"]?.split(separator: ",").compactMap {
            BackendChoice(rawValue: String($0).trimmingCharacters(in: .whitespaces))
        }
        return listed?.isEmpty == false ? listed! : [.auto]
    }

    /// A sandbox with a server, built for `backend`.
    private func conditionedSandbox(_ backend: BackendChoice, cellular: Bool = false) throws -> (Sandbox, any ConditioningBackend) {
        let sandbox = try makeSandbox()
        let executable = try linkcondExecutable()
        let conditioning = SandboxConditioning(sandbox: sandbox, engineExecutable: executable)
        let prepared = try conditioning.prepare(backend, cellular: cellular, server: try serverLaunch(sandbox))
        return (sandbox, prepared.backend)
    }

    // MARK: Traces

    /// 12 Mbit/s for 1 s, then 4 Mbit/s for 1 s, repeating (mean 8 Mbit/s): a sender that keeps the queue
    /// full (13 Mbit/s of full-size datagrams) sees the trace's mean at the receiver over 20 s, within 5 %.
    func testATraceDrivenLinkDeliversTheTracesRate() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("lcbp-\(getpid())-\(UniqueName.next())").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: folder) }
        let trace = try DeliveryTrace(rateCSV: "0,12mbit\n1,4mbit\n")
        try trace.text.write(toFile: "\(folder)/wave.trace", atomically: false, encoding: .utf8)
        try #"{"name": "wave", "downlink": {"trace": "wave.trace", "delay": "20ms"}}"#.write(
            toFile: "\(folder)/wave.json", atomically: false, encoding: .utf8)
        let profile = try ProfileParser.load(path: "\(folder)/wave.json")
        XCTAssertEqual(profile.downlink.trace?.summary.meanRate ?? 0, 8_000_000, accuracy: 12_000)

        let (sandbox, backend) = try conditionedSandbox(.userspace)
        XCTAssertEqual(backend.kind, .userspace)
        _ = try backend.apply(profile, links: nil)
        let arrivals = try blast(
            from: try sandbox.namespace(.server), to: try sandbox.clientNamespace(), address: SandboxPlan.wifiSubnet.peerIPv4.address,
            bitsPerSecond: 13_000_000, seconds: 22)
        // Wire bytes of each datagram: 1472 of payload, 8 of UDP, 20 of IPv4 and 14 of Ethernet, as the trace counts them.
        let frameBytes = 1472 + 8 + 20 + 14
        guard let first = arrivals.first else { return XCTFail("nothing arrived") }
        let window = (start: first + 1.0, end: first + 21.0)
        let inWindow = arrivals.filter { $0 >= window.start && $0 < window.end }.count
        let measured = Double(inWindow * frameBytes * 8) / (window.end - window.start)
        let mean = trace.summary.meanRate
        print("TRACE mean \(Int(mean)) bit/s, measured \(Int(measured)) bit/s over 20 s (\(inWindow) frames)")
        XCTAssertEqual(measured, mean, accuracy: 0.05 * mean, "the trace's mean is \(mean) bit/s; measured \(measured)")
        XCTAssertTrue(try sandbox.down())
    }

    /// Sends `seconds` of full-size UDP datagrams at `bitsPerSecond` (wire bits) from `sender` to `address` in
    /// `receiver`; returns the monotonic arrival times of what arrived.
    private func blast(
        from sender: NamedNamespace, to receiver: NamedNamespace, address: IPAddress, bitsPerSecond: Double, seconds: Double
    ) throws -> [Double] {
        let port: UInt16 = 9_100
        let receiving = try receiver.run { () throws -> Int32 in
            let fd = try TestSocket.open(for: address, type: Int32(SOCK_DGRAM.rawValue), timeout: 0.2)
            var size: Int32 = 8 << 20
            setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, socklen_t(MemoryLayout<Int32>.size))
            try TestSocket.bind(fd, address, port: port)
            return fd
        }
        defer { close(receiving) }
        let sending = try sender.run { try TestSocket.open(for: address, type: Int32(SOCK_DGRAM.rawValue)) }
        defer { close(sending) }
        let arrivals = Mutex<[Double]>([])
        let done = Atomic<Bool>(false)
        let thread = Thread {
            var buffer = [UInt8](repeating: 0, count: 2048)
            while !done.load(ordering: .relaxed) {
                let count = buffer.withUnsafeMutableBytes { recv(receiving, $0.baseAddress, $0.count, 0) }
                if count > 0 { arrivals.withLock { $0.append(MonotonicClock.seconds()) } }
            }
        }
        thread.start()
        let datagram = [UInt8](repeating: 0x6c, count: 1472)
        let interval = Double((1472 + 8 + 20 + 14) * 8) / bitsPerSecond
        let start = MonotonicClock.seconds()
        var index = 0
        while MonotonicClock.seconds() - start < seconds {
            let due = start + Double(index) * interval
            let wait = due - MonotonicClock.seconds()
            if wait > 0 { usleep(UInt32(wait * 1e6)) }
            _ = TestSocket.send(sending, datagram, to: address, port: port)
            index += 1
        }
        usleep(300_000)
        done.store(true, ordering: .relaxed)
        while !thread.isFinished { usleep(10_000) }
        return arrivals.withLock { $0 }
    }

    // MARK: Targets

    /// A profile aimed at the server's UDP echo port (IPv4) only: echoes there take the profile's round trip,
    /// while a TCP connect to port 80 and an echo over IPv6 in the same run do not; then the same profile aimed
    /// at the server's IPv6 address, the other way round.
    func testTargetedAndUntargetedTrafficSideBySide() throws {
        for choice in backends {
            let (sandbox, backend) = try conditionedSandbox(choice)
            let client = try sandbox.clientNamespace()
            var profile = Profile(
                name: "aimed", downlink: LinkConditions(delay: 100_000_000), uplink: LinkConditions(delay: 100_000_000))
            profile.targets = [try TrafficTarget(to: "\(SandboxPlan.serverIPv4)/32", protocol: "udp", port: SandboxPlan.echoPort)]
            _ = try backend.apply(profile, links: nil)
            let v4Echo = try echoRoundTrip(client, SandboxPlan.serverIPv4)
            let v6Echo = try echoRoundTrip(client, SandboxPlan.serverIPv6)
            let connect = try connectTime(client, SandboxPlan.serverIPv4)
            print("TARGET \(backend.kind) udp v4 \(v4Echo) s (targeted), udp v6 \(v6Echo) s, tcp v4 \(connect) s")
            XCTAssertGreaterThanOrEqual(v4Echo, 0.199, "\(backend.kind): the targeted echo did not get 2 × 100 ms")
            XCTAssertLessThan(v4Echo, 0.260)
            XCTAssertLessThan(v6Echo, 0.050, "\(backend.kind): untargeted IPv6 was delayed")
            XCTAssertLessThan(connect, 0.050, "\(backend.kind): untargeted TCP was delayed")

            profile.targets = [try TrafficTarget(to: "\(SandboxPlan.serverIPv6)")]
            _ = try backend.apply(profile, links: nil)
            let v4After = try echoRoundTrip(client, SandboxPlan.serverIPv4)
            let v6After = try echoRoundTrip(client, SandboxPlan.serverIPv6)
            XCTAssertLessThan(v4After, 0.050, "\(backend.kind): IPv4 is no longer a target")
            XCTAssertGreaterThanOrEqual(v6After, 0.199, "\(backend.kind): IPv6 is the target now")
            XCTAssertTrue(try sandbox.down())
        }
    }

    /// The fastest of three UDP echo round trips to port 7 at `server`.
    private func echoRoundTrip(_ client: NamedNamespace, _ server: IPAddress) throws -> Double {
        let fd = try client.run { try TestSocket.open(for: server, type: Int32(SOCK_DGRAM.rawValue), timeout: 2) }
        defer { close(fd) }
        var best = Double.infinity
        for attempt in 0..<3 {
            let payload = TestSocket.payload("echo \(attempt)")
            let start = MonotonicClock.seconds()
            XCTAssertEqual(TestSocket.send(fd, payload, to: server, port: SandboxPlan.echoPort), 0)
            while true {
                let (bytes, _, _) = try TestSocket.receive(fd)
                if bytes == payload { break }
            }
            best = min(best, MonotonicClock.seconds() - start)
        }
        return best
    }

    /// The fastest of three TCP connects to port 80 at `server`, in seconds.
    private func connectTime(_ client: NamedNamespace, _ server: IPAddress) throws -> Double {
        var best = Double.infinity
        for _ in 0..<3 {
            let start = MonotonicClock.seconds()
            let socket = try client.openSocket(.tcp(server.family.domain), nonBlocking: true)
            try socket.socket.connect(to: SocketAddress(server, port: SandboxPlan.httpPort), timeout: 2)
            best = min(best, MonotonicClock.seconds() - start)
        }
        return best
    }

    // MARK: Per link

    /// Wifi with 2 × 50 ms and cellular with 2 × 150 ms at the same time: a socket bound to each interface
    /// sees its own link's round trip.
    func testEachLinkKeepsAProfileOfItsOwn() throws {
        for choice in backends {
            let (sandbox, backend) = try conditionedSandbox(choice, cellular: true)
            let wifi = Profile(name: "near", downlink: LinkConditions(delay: 50_000_000), uplink: LinkConditions(delay: 50_000_000))
            let cellular = Profile(name: "far", downlink: LinkConditions(delay: 150_000_000), uplink: LinkConditions(delay: 150_000_000))
            _ = try backend.apply(wifi, links: [.wifi])
            _ = try backend.apply(cellular, links: [.cellular])
            let client = try sandbox.clientNamespace()
            let overWifi = try echoRoundTrip(client, SandboxPlan.serverIPv4, device: SandboxPlan.wifiInterface)
            let overCellular = try echoRoundTrip(client, SandboxPlan.serverIPv4, device: SandboxPlan.cellularInterface)
            print("LINKS \(backend.kind) wifi \(overWifi) s, cellular \(overCellular) s")
            XCTAssertEqual(overWifi, 0.100, accuracy: 0.030, "\(backend.kind): wifi")
            XCTAssertEqual(overCellular, 0.300, accuracy: 0.030, "\(backend.kind): cellular")
            XCTAssertTrue(try sandbox.down())
        }
    }

    /// The fastest of three UDP echo round trips through `device` (SO_BINDTODEVICE).
    private func echoRoundTrip(_ client: NamedNamespace, _ server: IPAddress, device: String) throws -> Double {
        let fd = try client.run { () throws -> Int32 in
            let fd = try TestSocket.open(for: server, type: Int32(SOCK_DGRAM.rawValue), timeout: 2)
            let bound = device.withCString { setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, $0, socklen_t(device.utf8.count)) }
            guard bound == 0 else { throw TestSocket.Failure(what: "SO_BINDTODEVICE \(device)", code: errno) }
            return fd
        }
        defer { close(fd) }
        var best = Double.infinity
        for attempt in 0..<3 {
            let payload = TestSocket.payload("link \(device) \(attempt)")
            let start = MonotonicClock.seconds()
            XCTAssertEqual(TestSocket.send(fd, payload, to: server, port: SandboxPlan.echoPort), 0)
            while true {
                let (bytes, _, _) = try TestSocket.receive(fd)
                if bytes == payload { break }
            }
            best = min(best, MonotonicClock.seconds() - start)
        }
        return best
    }
}

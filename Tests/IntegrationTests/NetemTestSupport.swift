import Profiles
import Conditioning
import Foundation
import Glibc
import LinkcondBase
import NetNamespace
import RouteNetlink
import Sandboxing
import Synchronization
import XCTest

// Support for the kernel-VM tier (DESIGN.md, "Tests", tier 3): profiles measured with real packets.
//
// The tests skip on a kernel without sch_netem (the host of these machines) unless LINKCOND_REQUIRE_NETEM=1,
// in which case a missing netem fails them: scripts/vm-inside sets it, so the VM tier can never pass by
// skipping. Every test uses its own uniquely named sandbox with a private state store (SandboxTestCase),
// removed again however the test ends.

// MARK: netem availability

/// Why a netem test must fail rather than skip.
struct NetemRequirementError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

enum NetemAvailability {
    static let requireVariable = "LINKCOND_REQUIRE_NETEM"
    static var isRequired: Bool { ProcessInfo.processInfo.environment[requireVariable] == "1" }

    private static let probed = Mutex<Probe?>(nil)

    struct Probe: Sendable {
        var present: Bool
        var detail: String
    }

    /// Whether the running kernel has sch_netem, as `linkcond doctor` finds it (it tries to make a netem
    /// qdisc in a throwaway namespace of its own). Probed once per process.
    static func probe() -> Probe {
        probed.withLock { cached in
            if let cached { return cached }
            let result: Probe
            do {
                if let netem = try KernelDoctor.check().first(where: { $0.name == "netem" }) {
                    result = Probe(present: netem.present, detail: netem.detail)
                } else {
                    result = Probe(present: false, detail: "the kernel probe reported nothing about netem")
                }
            } catch {
                result = Probe(present: false, detail: "the kernel probe failed: \(error)")
            }
            cached = result
            return result
        }
    }
}

// MARK: the test case base

/// Base class of the netem tests: root and a kernel with netem, or a skip (a failure when netem is required).
class NetemTestCase: SandboxTestCase {
    override func setUpWithError() throws {
        let variable = NetemAvailability.requireVariable
        if NetemAvailability.isRequired && geteuid() != 0 {
            throw NetemRequirementError("\(variable)=1 requires the netem tests to run, but they need root")
        }
        try super.setUpWithError()
        let probe = NetemAvailability.probe()
        guard probe.present else {
            if NetemAvailability.isRequired {
                throw NetemRequirementError("\(variable)=1 but this kernel has no usable sch_netem: \(probe.detail)")
            }
            throw XCTSkip("needs a kernel with sch_netem (\(probe.detail)); scripts/vm-test runs these tests in a VM "
                + "with a stock Debian kernel; set \(variable)=1 to make a missing netem a failure")
        }
    }

    /// The source tree's profile catalog (`profiles/`, found from this file's path).
    func catalog() throws -> ProfileCatalog {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path
        return try ProfileCatalog.locate(directory: repository + "/profiles")
    }

    /// A fresh sandbox (own name, own store), its netem backend and a measurement between its client and
    /// server. Before returning, a few unconditioned round trips resolve every neighbour on the path (client,
    /// router and server, both ways), so no later measurement waits for ARP through a slow or lossy link.
    func makeMeasuredSandbox(server: Bool = false) throws -> NetemSandbox {
        let sandbox = try makeSandbox()
        try sandbox.up(server: server ? try serverLaunch(sandbox) : .none)
        let measurement = try LinkMeasurement(sandbox: sandbox.topology)
        let warmUp = try measurement.roundTrips(count: 3, timeout: 2)
        guard !warmUp.samples.isEmpty else {
            throw NetemRequirementError("the unconditioned sandbox \(sandbox.topology.name) carries no packets")
        }
        return NetemSandbox(sandbox: sandbox, backend: NetemBackend(sandbox: sandbox), measurement: measurement)
    }

    /// The unconditioned baseline of this VM, measured once per test run, before any profile.
    func baseline(_ measured: NetemSandbox) throws -> NetemBaseline {
        if let known = NetemBaseline.shared.withLock({ $0 }) { return known }
        let measurement = measured.measurement
        let roundTrips = try measurement.roundTrips(count: 20, timeout: 1)
        var throughput: [LinkMeasurement.Direction: Double] = [:]
        var received: [LinkMeasurement.Direction: String] = [:]
        for direction in [LinkMeasurement.Direction.uplink, .downlink] {
            // Full-size datagrams as fast as one socket sends them, into a receive buffer large enough for all:
            // what the VM's path (sending, forwarding, delivering to the socket) carries at all.
            let burst = NetemQueueBurst(count: 4000, payload: NetemThroughput.payload)
            let result = try burst.send(direction, measured, settle: 0.3)
            throughput[direction] = Double(result.received * netemWireBytes(payload: burst.payload) * 8) / max(result.sendSeconds, 1e-3)
            received[direction] = "\(result.received)/\(result.sent) in \(NetemFormat.ms(result.sendSeconds))"
        }
        let baseline = NetemBaseline(
            roundTripMedian: roundTrips.median ?? 0, roundTripSamples: roundTrips.samples, throughput: throughput)
        print("NETEM baseline (unconditioned, measured once): round trip median \(NetemFormat.ms(baseline.roundTripMedian)) "
            + "(max \(NetemFormat.ms(roundTrips.samples.max() ?? 0)), \(roundTrips.samples.count)/\(roundTrips.sent) answered); "
            + "path capacity uplink \(NetemFormat.rate(throughput[.uplink] ?? 0)) (\(received[.uplink] ?? "")), "
            + "downlink \(NetemFormat.rate(throughput[.downlink] ?? 0)) (\(received[.downlink] ?? ""))")
        NetemBaseline.shared.withLock { $0 = baseline }
        return baseline
    }
}

/// A sandbox under test with its backend and measurement.
struct NetemSandbox {
    var sandbox: Sandbox
    var backend: NetemBackend
    var measurement: LinkMeasurement
    var topology: SandboxTopology { sandbox.topology }
}

/// What the VM does without conditions.
struct NetemBaseline: Sendable {
    static let shared = Mutex<NetemBaseline?>(nil)

    /// Median UDP round trip client → server → client, seconds.
    var roundTripMedian: Double
    var roundTripSamples: [Double]
    /// Wire bits per second a blast of full-size datagrams reaches, per direction.
    var throughput: [LinkMeasurement.Direction: Double]
}

// MARK: what a profile predicts

/// One direction of a profile, as numbers a measurement can be compared with.
struct NetemDirectionModel {
    var direction: LinkMeasurement.Direction
    var conditions: LinkConditions

    init(_ direction: LinkMeasurement.Direction, of profile: Profile) {
        self.direction = direction
        conditions = direction == .uplink ? profile.uplink : profile.downlink
    }

    /// Bits per second, nil for unlimited.
    var rate: Double? { conditions.rate.map { Double($0) } }
    /// Seconds.
    var delay: Double { Double(conditions.delay) / 1e9 }
    /// The jitter as given (seconds): the half-width of a uniform spread, one standard deviation of a normal one.
    var jitter: Double { Double(conditions.jitter) / 1e9 }

    /// The standard deviation of the added delay, in seconds; nil where it is not a simple function of the
    /// jitter (pareto tables).
    var delayDeviation: Double? {
        guard conditions.jitter > 0 else { return 0 }
        switch conditions.distribution {
        case nil, .uniform?: return jitter / 3.0.squareRoot()
        case .normal?: return jitter
        case .pareto?, .paretonormal?: return nil
        }
    }

    /// The mean fraction of packets lost; nil for a model this test does not predict (4-state).
    var expectedLoss: Double? {
        switch conditions.loss {
        case nil: return 0
        case let .random(probability, _)?: return probability
        case let .gilbertElliott(p, r, oneMinusH, oneMinusK)?:
            guard p + r > 0 else { return oneMinusK }
            let bad = p / (p + r)
            return bad * oneMinusH + (1 - bad) * oneMinusK
        case .fourState?: return nil
        }
    }

    /// How much correlation widens the spread of a loss count, as a factor on the binomial variance:
    /// (1 + λ) / (1 − λ) for a lag-one correlation λ of successive loss decisions.
    var lossVarianceInflation: Double {
        let lag: Double
        switch conditions.loss {
        case let .random(_, correlation)?: lag = correlation
        case let .gilbertElliott(p, r, _, _)?: lag = max(0, 1 - p - r)
        default: lag = 0
        }
        return (1 + min(lag, 0.9)) / (1 - min(lag, 0.9))
    }

    /// Features whose effect on loss and throughput these tests do not model.
    var unmodelled: [String] {
        var names: [String] = []
        if (conditions.duplicate?.probability ?? 0) > 0 { names.append("duplicate") }
        if (conditions.corrupt?.probability ?? 0) > 0 { names.append("corrupt") }
        if (conditions.reorder?.probability ?? 0) > 0 { names.append("reorder") }
        if conditions.slot != nil { names.append("slot") }
        if case .fourState? = conditions.loss { names.append("4-state loss") }
        return names
    }

    /// Seconds a packet of `wireBytes` takes at the rate (0 when unlimited).
    func serialization(_ wireBytes: Int) -> Double {
        rate.map { Double(wireBytes * 8) / $0 } ?? 0
    }

    /// The queue limit netem should hold for this direction.
    func queueLimit(extraDelay: UInt64 = 0) -> UInt32 {
        conditions.queueLimit ?? NetemMapping.derivedQueueLimit(for: conditions, extraDelay: extraDelay)
    }
}

/// Bytes a qdisc counts for a UDP datagram over IPv4 on a veth: payload, UDP (8), IPv4 (20), Ethernet (14).
func netemWireBytes(payload: Int) -> Int { payload + 8 + 20 + 14 }

// MARK: the measurement table

enum NetemFormat {
    static func ms(_ seconds: Double) -> String { String(format: "%.1f ms", seconds * 1000) }
    static func rate(_ bitsPerSecond: Double) -> String {
        if bitsPerSecond >= 1e6 { return String(format: "%.2f mbit/s", bitsPerSecond / 1e6) }
        return String(format: "%.1f kbit/s", bitsPerSecond / 1e3)
    }
    static func percent(_ fraction: Double) -> String { String(format: "%.2f%%", fraction * 100) }
}

/// Rows of expected-versus-measured numbers, printed as one block per test so the CI log shows them.
/// Every line starts with `NETEM ` (scripts/vm-inside collects them).
final class NetemTable: @unchecked Sendable {
    struct Row {
        var check: String
        var direction: String
        var expected: String
        var measured: String
        var verdict: String
    }

    let title: String
    private let rows = Mutex<[Row]>([])

    init(_ title: String) { self.title = title }

    func add(_ check: String, _ direction: String, expected: String, measured: String, verdict: String) {
        rows.withLock { $0.append(Row(check: check, direction: direction, expected: expected, measured: measured, verdict: verdict)) }
    }

    /// Adds a row and asserts `passed`; the row says ok or FAIL.
    func check(
        _ passed: Bool, _ check: String, _ direction: String, expected: String, measured: String, _ message: @autoclosure () -> String,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        add(check, direction, expected: expected, measured: measured, verdict: passed ? "ok" : "FAIL")
        XCTAssertTrue(passed, "\(title): \(check) \(direction): expected \(expected), measured \(measured). \(message())", file: file, line: line)
    }

    func print() {
        let rows = rows.withLock { $0 }
        let widths = [12, 9, 34, 34]
        func pad(_ text: String, _ width: Int) -> String { text.count >= width ? text : text + String(repeating: " ", count: width - text.count) }
        var lines = ["NETEM == \(title)"]
        lines.append("NETEM " + pad("check", widths[0]) + " " + pad("direction", widths[1]) + " " + pad("expected", widths[2]) + " "
            + pad("measured", widths[3]) + " verdict")
        for row in rows {
            lines.append("NETEM " + pad(row.check, widths[0]) + " " + pad(row.direction, widths[1]) + " " + pad(row.expected, widths[2])
                + " " + pad(row.measured, widths[3]) + " " + row.verdict)
        }
        Swift.print(lines.joined(separator: "\n"))
        fflush(nil)
    }
}

// MARK: socket counters

/// The UDP counters of one namespace (`/proc/net/snmp` as seen from inside it).
struct NetemUDPCounters {
    var inDatagrams: Int
    /// Datagrams that reached a socket whose receive buffer was full: delivered by the link, lost by the reader.
    var receiveBufferErrors: Int

    static func read(_ namespace: NamedNamespace) throws -> NetemUDPCounters {
        let text = try namespace.run { try String(contentsOfFile: "/proc/thread-self/net/snmp", encoding: .utf8) }
        let lines = text.split(separator: "\n").filter { $0.hasPrefix("Udp: ") }
        guard lines.count >= 2 else { throw NetemRequirementError("no Udp lines in /proc/net/snmp of \(namespace.name)") }
        let names = lines[0].split(separator: " ").dropFirst().map(String.init)
        let values = lines[1].split(separator: " ").dropFirst().map { Int($0) ?? 0 }
        let table = Dictionary(zip(names, values), uniquingKeysWith: { first, _ in first })
        return NetemUDPCounters(inDatagrams: table["InDatagrams"] ?? 0, receiveBufferErrors: table["RcvbufErrors"] ?? 0)
    }
}

// MARK: running two measurements at once

/// Runs `first` on a thread of its own and `second` on this one; returns both results (or the first error).
func netemInParallel<A, B>(_ first: @escaping @Sendable () throws -> A, _ second: () throws -> B) throws -> (A, B) {
    let box = NetemResultBox<A>()
    let done = DispatchSemaphore(value: 0)
    let thread = Thread {
        box.result = Result { try first() }
        done.signal()
    }
    thread.start()
    let secondResult = Result { try second() }
    done.wait()
    return (try box.result!.get(), try secondResult.get())
}

/// Hands a result from one thread to another (the semaphore orders the accesses).
final class NetemResultBox<T>: @unchecked Sendable {
    var result: Result<T, any Error>?
    init() {}
}

// MARK: tc as an independent decoder

/// One qdisc as `tc -s -j qdisc show` prints it.
struct NetemTCQdisc {
    var kind: String
    var handle: String
    var parent: String?
    var root: Bool
    var options: [String: Any]
    var packets: Int
    var drops: Int
    var backlogPackets: Int

    static func show(namespace: String, interface: String) throws -> [NetemTCQdisc] {
        guard Command.isAvailable(Command.tc) else { throw MissingTool(path: Command.tc) }
        let result = try Command.run(Command.tc, ["-s", "-j", "-n", namespace, "qdisc", "show", "dev", interface])
        guard result.status == 0 else {
            throw NetemRequirementError("tc -n \(namespace) qdisc show dev \(interface) failed: \(result.errorOutput)")
        }
        guard let list = try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [[String: Any]] else {
            throw NetemRequirementError("tc printed no JSON list: \(result.output)")
        }
        return list.map { entry in
            NetemTCQdisc(
                kind: entry["kind"] as? String ?? "?", handle: entry["handle"] as? String ?? "?",
                parent: entry["parent"] as? String, root: NetemTCJSON.bool(entry["root"]) ?? false,
                options: entry["options"] as? [String: Any] ?? [:], packets: NetemTCJSON.int(entry["packets"]) ?? 0,
                drops: NetemTCJSON.int(entry["drops"]) ?? 0, backlogPackets: NetemTCJSON.int(entry["qlen"]) ?? 0)
        }
    }
}

enum NetemTCJSON {
    static func double(_ value: Any?) -> Double? {
        if let number = value as? NSNumber { return number.doubleValue }
        if let number = value as? Double { return number }
        if let number = value as? Int { return Double(number) }
        return nil
    }

    static func int(_ value: Any?) -> Int? { double(value).map { Int($0) } }

    static func bool(_ value: Any?) -> Bool? {
        if let flag = value as? Bool { return flag }
        return (value as? NSNumber)?.boolValue
    }
}

/// What tc should show for one netem qdisc, from the profile itself (not from linkcond's netlink encoding).
struct ExpectedNetem {
    var conditions: LinkConditions
    var extraDelay: UInt64 = 0

    /// The differences between `options` (tc's JSON) and the conditions; empty when they match.
    func differences(_ options: [String: Any]) -> [String] {
        var differences: [String] = []
        func near(_ a: Double?, _ b: Double, _ tolerance: Double) -> Bool {
            guard let a else { return false }
            return abs(a - b) <= tolerance
        }
        func expect(_ name: String, _ value: Double?, _ wanted: Double, tolerance: Double) {
            if !near(value, wanted, tolerance) {
                differences.append("\(name): tc shows \(value.map { "\($0)" } ?? "nothing"), the profile says \(wanted)")
            }
        }
        var allowed: Set<String> = ["limit", "ecn", "gap", "seed"]

        // delay, jitter, correlation (tc prints seconds and fractions; %g keeps six significant digits).
        let delay = Double(conditions.delay + extraDelay) / 1e9
        let jitter = Double(conditions.jitter) / 1e9
        let correlation = conditions.jitter > 0 ? conditions.delayCorrelation : 0
        let delayObject = options["delay"] as? [String: Any]
        allowed.insert("delay")
        if delay == 0 && jitter == 0 {
            if let delayObject {
                expect("delay", NetemTCJSON.double(delayObject["delay"]), 0, tolerance: 1e-9)
                expect("jitter", NetemTCJSON.double(delayObject["jitter"]), 0, tolerance: 1e-9)
            }
        } else if let delayObject {
            expect("delay", NetemTCJSON.double(delayObject["delay"]), delay, tolerance: max(2e-6, delay * 1e-5))
            expect("jitter", NetemTCJSON.double(delayObject["jitter"]), jitter, tolerance: max(2e-6, jitter * 1e-5))
            expect("delay correlation", NetemTCJSON.double(delayObject["correlation"]), correlation, tolerance: 1e-4)
        } else {
            differences.append("delay: tc shows none, the profile says \(delay) s ± \(jitter) s")
        }

        // loss
        func expectGilbertElliott(_ p: Double, _ r: Double, _ oneMinusH: Double, _ oneMinusK: Double) {
            guard let model = options["loss-gemodel"] as? [String: Any] else {
                differences.append("loss: tc shows no loss-gemodel")
                return
            }
            for (key, wanted) in [("p", p), ("r", r), ("1-h", oneMinusH), ("1-k", oneMinusK)] {
                expect("loss gemodel \(key)", NetemTCJSON.double(model[key]), wanted, tolerance: 1e-4)
            }
        }
        switch conditions.loss {
        case let .random(probability, lossCorrelation)? where probability > 0:
            allowed.formUnion(["loss-random", "loss-gemodel"])
            if let loss = options["loss-random"] as? [String: Any] {
                expect("loss", NetemTCJSON.double(loss["loss"]), probability, tolerance: 1e-6)
                expect("loss correlation", NetemTCJSON.double(loss["correlation"]), lossCorrelation, tolerance: 1e-4)
            } else if lossCorrelation > 0 {
                // The equivalent Gilbert model (mean loss P, lag-one correlation c): p = (1 − c)·P,
                // r = (1 − c)·(1 − P), 1-h = 100%, 1-k = 0%. See NetemDirectionModel.expectedLoss.
                expectGilbertElliott((1 - lossCorrelation) * probability, (1 - lossCorrelation) * (1 - probability), 1, 0)
            } else {
                differences.append("loss: tc shows no loss-random, the profile says \(probability)")
            }
        case let .gilbertElliott(p, r, oneMinusH, oneMinusK)?:
            allowed.insert("loss-gemodel")
            expectGilbertElliott(p, r, oneMinusH, oneMinusK)
        case .fourState?:
            allowed.insert("loss-state")
            if options["loss-state"] == nil { differences.append("loss: tc shows no loss-state") }
        default:
            if let loss = options["loss-random"] as? [String: Any], (NetemTCJSON.double(loss["loss"]) ?? 0) != 0 {
                differences.append("loss: tc shows \(loss), the profile has none (left over?)")
            }
            allowed.insert("loss-random")
        }

        // rate, in bytes per second
        if let rate = conditions.rate {
            allowed.insert("rate")
            if let object = options["rate"] as? [String: Any] {
                expect("rate (bytes/s)", NetemTCJSON.double(object["rate"]), Double(rate / 8), tolerance: 0.5)
            } else {
                differences.append("rate: tc shows none, the profile says \(rate) bit/s")
            }
        }

        for (key, chance) in [("duplicate", conditions.duplicate), ("corrupt", conditions.corrupt)] where (chance?.probability ?? 0) > 0 {
            allowed.insert(key)
        }
        if (conditions.reorder?.probability ?? 0) > 0 { allowed.insert("reorder") }
        if conditions.slot != nil { allowed.insert("slot") }

        let limit = conditions.queueLimit ?? NetemMapping.derivedQueueLimit(for: conditions, extraDelay: extraDelay)
        expect("limit", NetemTCJSON.double(options["limit"]), Double(limit), tolerance: 0)
        if NetemTCJSON.bool(options["ecn"]) ?? false != conditions.ecn {
            differences.append("ecn: tc shows \(String(describing: options["ecn"])), the profile says \(conditions.ecn)")
        }
        let gap = (conditions.reorder?.probability ?? 0) > 0 ? Double(conditions.reorder?.gap ?? 1) : 0
        if let shown = NetemTCJSON.double(options["gap"]), shown != gap, !(gap == 0 && shown == 0) {
            differences.append("gap: tc shows \(shown), expected \(gap)")
        }

        let unexpected = Set(options.keys).subtracting(allowed)
        for key in unexpected.sorted() {
            differences.append("tc shows '\(key)' (\(options[key] ?? "")) which the profile does not set (left over from an earlier profile?)")
        }
        return differences
    }

    /// A short summary of the netem options, for the table.
    static func summary(_ options: [String: Any]) -> String {
        var words: [String] = []
        if let delay = options["delay"] as? [String: Any] {
            let value = NetemTCJSON.double(delay["delay"]) ?? 0
            let jitter = NetemTCJSON.double(delay["jitter"]) ?? 0
            words.append(jitter > 0 ? "\(NetemFormat.ms(value))±\(NetemFormat.ms(jitter))" : NetemFormat.ms(value))
        }
        if let loss = options["loss-random"] as? [String: Any] {
            let correlation = NetemTCJSON.double(loss["correlation"]) ?? 0
            words.append("loss \(NetemFormat.percent(NetemTCJSON.double(loss["loss"]) ?? 0))"
                + (correlation > 0 ? " corr \(NetemFormat.percent(correlation))" : ""))
        }
        if let model = options["loss-gemodel"] as? [String: Any] {
            words.append("gemodel p \(NetemFormat.percent(NetemTCJSON.double(model["p"]) ?? 0)) r \(NetemFormat.percent(NetemTCJSON.double(model["r"]) ?? 0))")
        }
        if let rate = options["rate"] as? [String: Any] { words.append(NetemFormat.rate((NetemTCJSON.double(rate["rate"]) ?? 0) * 8)) }
        words.append("limit \(NetemTCJSON.int(options["limit"]) ?? 0)")
        return words.joined(separator: " ")
    }
}

/// A burst of datagrams sent as fast as one socket can, with forced large socket buffers at both ends (so
/// neither the sender's send buffer nor the receiver's receive buffer limits or loses anything: only a
/// qdisc can drop), counted at the receiver and in netem's drop counter.
struct NetemQueueBurst {
    var count: Int
    var payload: Int

    struct Result {
        var sent: Int
        var received: Int
        var drops: Int
        var sendSeconds: Double
    }

    /// Sends the burst `direction`-wise, waits `settle` seconds (or, by default, the 300 ms delay plus the burst's
    /// time at 50 Mbit/s plus slack), then reads until 0.3 s pass with nothing. `drops` is netem's drop counter
    /// (-1 without netem on the site).
    func send(_ direction: LinkMeasurement.Direction, _ measured: NetemSandbox, settle: Double? = nil) throws -> Result {
        let topology = measured.topology
        let client = try NamedNamespace(existing: topology.clientNamespace)
        let server = try NamedNamespace(existing: topology.serverNamespace)
        let clientAddress = SandboxPlan.wifiSubnet.peerIPv4.address
        let (from, fromAddress, to, toAddress) = direction == .uplink
            ? (client, clientAddress, server, SandboxPlan.serverIPv4) : (server, SandboxPlan.serverIPv4, client, clientAddress)
        let site = direction == .uplink
            ? (topology.clientNamespace, SandboxPlan.wifiInterface, "1:1") : (topology.routerNamespace, SandboxPlan.routerWifiInterface, "")
        func netemDrops() throws -> Int {
            let qdiscs = try NetemTCQdisc.show(namespace: site.0, interface: site.1)
            return qdiscs.first { $0.kind == "netem" && (site.2.isEmpty ? $0.root : $0.parent == site.2) }?.drops ?? -1
        }
        let receiver = try to.run { () throws -> Int32 in
            let fd = try TestSocket.open(for: toAddress, type: Int32(SOCK_DGRAM.rawValue), timeout: 0.3)
            Self.force(fd, SO_RCVBUFFORCE, 64 << 20)
            try TestSocket.bind(fd, toAddress, port: 0)
            return fd
        }
        defer { close(receiver) }
        let sender = try from.run { () throws -> Int32 in
            let fd = try TestSocket.open(for: fromAddress, type: Int32(SOCK_DGRAM.rawValue), timeout: 2)
            Self.force(fd, SO_SNDBUFFORCE, 64 << 20)
            try TestSocket.bind(fd, fromAddress, port: 0)
            return fd
        }
        defer { close(sender) }
        let port = Self.port(of: receiver)
        let dropsBefore = try netemDrops()
        let bytes = [UInt8](repeating: 0x5a, count: payload)
        var sent = 0
        let start = Date()
        for _ in 0..<count where TestSocket.send(sender, bytes, to: toAddress, port: port) == 0 {
            sent += 1
        }
        let sendSeconds = Date().timeIntervalSince(start)
        // The delay, the burst's time on the link, and some slack; then read until 0.3 s pass with nothing.
        let wait = settle ?? (0.3 + Double(count * netemWireBytes(payload: payload) * 8) / 50e6 + 0.4)
        usleep(UInt32(wait * 1_000_000))
        var received = 0
        while (try? TestSocket.receive(receiver)) != nil { received += 1 }
        let dropsAfter = try netemDrops()
        return Result(sent: sent, received: received, drops: dropsBefore < 0 ? -1 : dropsAfter - dropsBefore, sendSeconds: sendSeconds)
    }

    static func force(_ fd: Int32, _ option: Int32, _ size: Int32) {
        var value = size
        setsockopt(fd, SOL_SOCKET, option, &value, socklen_t(MemoryLayout<Int32>.size))
    }

    static func port(of fd: Int32) -> UInt16 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return TestSocket.decode(storage).1
    }
}

// MARK: - the checks
// The measurements behind NetemProfileTests, with the tolerances README.md states ("Tolerances").

/// The two-sided 99.9% normal quantile: loss bounds hold 999 times in 1000 for a correct link.
let netemZ999 = 3.29

enum NetemRoundTrip {
    /// LinkMeasurement's probe: a 4-byte sequence number and 60 bytes of filler.
    static let payload = 64
    /// Answered probes wanted without jitter (the delay is fixed; five show that) and with jitter.
    static let probes = 5
    static let jitteredProbes = 40
    /// What TCG scheduling and timer latency may add to a round trip, on top of the unconditioned baseline.
    static let noise = 0.015
    /// And a share of the delay (timer expiry in a TCG guest drifts a little with long timers).
    static let relativeNoise = 0.01
    /// netem never sends early; 1 ms covers the clocks' granularity.
    static let early = 0.001
}

enum NetemLoss {
    /// Bytes after the 4-byte sequence number LinkMeasurement writes: none (46 bytes on the wire).
    static let payload = 4
    /// Paced at 80% of the link rate, so no queue builds and nothing is tail-dropped.
    static let rateShare = 0.8
    /// At most this share of netem's queue limit is in flight (waiting out the delay) at any time.
    static let queueShare = 0.6
    /// The most packets per second the VM sends per direction (its readers keep up with about that much).
    static let maximumPacketsPerSecond = 2000.0
    /// Packets for a loss-free direction: a 1% loss would show in 500 packets with probability 99.3%.
    static let lossFreeCount = 500
    static let totalLossCount = 100
    static let minimumCount = 1000
    static let maximumCount = 6000
}

enum NetemThroughput {
    /// Full-size datagrams: 1514 bytes on the wire.
    static let payload = 1472
    /// Seconds of link time each direction is measured for (less at high rates, see maximumPackets).
    static let seconds = 2.5
    /// The most packets per direction (what a TCG guest sends in a few seconds).
    static let maximumPackets = 8000
    /// Sent 10% faster than the rate, so the queue never runs empty, and grows by at most 10% of the burst.
    static let paceFactor = 1.1
    static let upperFactor = 1.05
    static let lowerFactor = 0.9
    /// The lower bound is checked only when the unconditioned VM carries at least this multiple of the rate.
    static let headroom = 2.0
    /// Both directions are measured at once when together they need no more than this (bits per second).
    static let parallelLimit = 10e6
}

struct NetemLossPlan: Sendable {
    var direction: LinkMeasurement.Direction
    var expected: Double?
    var count: Int
    var interval: Double
    var drain: Double
    /// Allowed |measured − expected| (fraction).
    var bound: Double
    /// The profile asks for correlated random loss.
    var correlated: Bool

    init(_ model: NetemDirectionModel) {
        direction = model.direction
        expected = model.expectedLoss
        if case let .random(_, correlation)? = model.conditions.loss { correlated = correlation > 0 } else { correlated = false }
        let bits = Double(netemWireBytes(payload: NetemLoss.payload) * 8)
        // Below the rate, and few enough that the packets in flight (all of them wait the delay inside netem)
        // stay well below its queue limit: a tail drop is not the loss being measured.
        let inFlightTime = model.delay + 4 * model.jitter
        let packetsPerSecond = min(
            NetemLoss.maximumPacketsPerSecond, model.rate.map { NetemLoss.rateShare * $0 / bits } ?? .infinity,
            inFlightTime > 0 ? NetemLoss.queueShare * Double(model.queueLimit()) / inFlightTime : .infinity)
        interval = 1 / packetsPerSecond
        drain = model.delay + 4 * model.jitter + 0.3
        switch expected {
        case nil:
            count = NetemLoss.minimumCount
            bound = 1
        case let p? where p >= 1:
            count = NetemLoss.totalLossCount
            bound = 0
        case let p? where p <= 0:
            count = NetemLoss.lossFreeCount
            bound = 0
        case let p?:
            // Enough packets that the 99.9% bound is within ±20% of the loss (at least ±0.5 points).
            let variance = p * (1 - p) * model.lossVarianceInflation
            let halfWidth = max(0.2 * p, 0.005)
            let wanted = (netemZ999 * netemZ999 * variance / (halfWidth * halfWidth)).rounded(.up)
            count = Int(min(Double(NetemLoss.maximumCount), max(Double(NetemLoss.minimumCount), wanted)))
            bound = netemZ999 * (variance / Double(count)).squareRoot()
        }
    }
}

struct NetemThroughputPlan: Sendable {
    var direction: LinkMeasurement.Direction
    var rate: Double
    var count: Int
    var interval: Double
    var drain: Double

    /// Nil when the direction has no rate or drops everything.
    init?(_ model: NetemDirectionModel) {
        guard let rate = model.rate, (model.expectedLoss ?? 0) < 1 else { return nil }
        direction = model.direction
        self.rate = rate
        let bits = Double(netemWireBytes(payload: NetemThroughput.payload) * 8)
        let loss = min(model.expectedLoss ?? 0, 0.5)
        // What is lost never reaches the queue: send that much more to keep the link busy.
        interval = bits / (rate * NetemThroughput.paceFactor / (1 - loss))
        let inFlight = rate / bits * (model.delay + 3 * model.jitter)
        let limit = Double(model.queueLimit())
        var packets = (rate * NetemThroughput.seconds / bits).rounded(.up)
        packets = min(packets, Double(NetemThroughput.maximumPackets))
        // The queue grows by 1 − 1/1.1 of what is sent; with what is in flight it stays below 90% of the limit.
        packets = min(packets, (NetemThroughput.paceFactor / (NetemThroughput.paceFactor - 1) * (0.9 * limit - inFlight)).rounded(.down))
        count = max(20, Int(packets))
        drain = model.delay + 4 * model.jitter + bits / rate + 0.3
    }
}

extension NetemTestCase {
    // MARK: tc read-back

    /// Checks with `tc -s -j` what each site holds: on the client's wl0 a prio root with the uplink netem at
    /// 1:1 and the uplink-plus-DNS-delay netem at 1:2; on the router's c-wl0 the downlink netem at the root.
    func checkReadBack(
        _ profile: Profile, _ measured: NetemSandbox, _ table: NetemTable, step: String = "",
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let topology = measured.topology
        let prefix = step.isEmpty ? "" : step + " "
        let client = try NetemTCQdisc.show(namespace: topology.clientNamespace, interface: SandboxPlan.wifiInterface)
        let root = client.first { $0.root }
        let structure = client.map { "\($0.kind) \($0.handle) \($0.parent ?? "root")" }.joined(separator: ", ")
        table.check(
            root?.kind == "prio" && root?.handle == "1:" && client.count == 3
                && client.filter({ $0.kind == "netem" }).map(\.parent) .sorted { ($0 ?? "") < ($1 ?? "") } == ["1:1", "1:2"],
            prefix + "tc tree", "uplink", expected: "prio 1: + netem at 1:1, 1:2", measured: structure, "wl0 holds the wrong tree",
            file: file, line: line)
        for (parent, extraDelay, label) in [("1:1", UInt64(0), "uplink"), ("1:2", profile.dnsDelay, "dns-up")] {
            guard let leaf = client.first(where: { $0.parent == parent && $0.kind == "netem" }) else { continue }
            let expected = ExpectedNetem(conditions: profile.uplink, extraDelay: extraDelay)
            let differences = expected.differences(leaf.options)
            table.check(
                differences.isEmpty, prefix + "tc netem", label, expected: expected.summary, measured: ExpectedNetem.summary(leaf.options),
                differences.joined(separator: "; "), file: file, line: line)
        }
        let router = try NetemTCQdisc.show(namespace: topology.routerNamespace, interface: SandboxPlan.routerWifiInterface)
        let routerRoot = router.first { $0.root }
        table.check(
            routerRoot?.kind == "netem" && router.count == 1, prefix + "tc tree", "downlink", expected: "netem at the root",
            measured: router.map { "\($0.kind) \($0.handle) \($0.parent ?? "root")" }.joined(separator: ", "),
            "c-wl0 holds the wrong tree", file: file, line: line)
        if let routerRoot, routerRoot.kind == "netem" {
            let expected = ExpectedNetem(conditions: profile.downlink)
            let differences = expected.differences(routerRoot.options)
            table.check(
                differences.isEmpty, prefix + "tc netem", "downlink", expected: expected.summary,
                measured: ExpectedNetem.summary(routerRoot.options), differences.joined(separator: "; "), file: file, line: line)
        }
    }

    // MARK: round trips

    /// Measures round trips and compares them with the profile: the delays of both directions plus the probe's
    /// serialization at each rate, on top of the unconditioned baseline. Returns the median (nil: no answers).
    @discardableResult
    func checkRoundTrips(
        _ profile: Profile, _ measured: NetemSandbox, _ baseline: NetemBaseline, _ table: NetemTable, step: String = "",
        file: StaticString = #filePath, line: UInt = #line
    ) throws -> Double? {
        let name = (step.isEmpty ? "" : step + " ") + "round trip"
        let up = NetemDirectionModel(.uplink, of: profile)
        let down = NetemDirectionModel(.downlink, of: profile)
        let measurement = measured.measurement
        if (up.expectedLoss ?? 0) >= 1 || (down.expectedLoss ?? 0) >= 1 {
            let result = try measurement.roundTrips(count: 3, timeout: 1)
            table.check(
                result.samples.isEmpty, name, "both", expected: "no answer", measured: "\(result.samples.count)/\(result.sent) answered",
                "a profile that loses everything answered a probe", file: file, line: line)
            return nil
        }
        let probe = netemWireBytes(payload: NetemRoundTrip.payload)
        let floor = up.delay + down.delay + up.serialization(probe) + down.serialization(probe)
        let expected = floor + baseline.roundTripMedian
        let jittered = up.conditions.jitter > 0 || down.conditions.jitter > 0
        let deviations = [up.delayDeviation, down.delayDeviation]
        let sigma: Double? = deviations.contains { $0 == nil } ? nil : deviations.reduce(0) { $0 + $1! * $1! }.squareRoot()
        let wanted = jittered ? NetemRoundTrip.jitteredProbes : NetemRoundTrip.probes
        let timeout = floor + 6 * (up.jitter + down.jitter) + 0.5
        var samples: [Double] = []
        var sent = 0
        while samples.count < wanted && sent < 3 * wanted {
            let batch = try measurement.roundTrips(count: wanted - samples.count, timeout: timeout)
            samples += batch.samples
            sent += batch.sent
        }
        guard samples.count >= 3 else {
            table.check(false, name, "both", expected: NetemFormat.ms(expected), measured: "\(samples.count)/\(sent) answered", "too few answers",
                        file: file, line: line)
            return nil
        }
        let sorted = samples.sorted()
        let median = sorted[sorted.count / 2]
        let mean = samples.reduce(0, +) / Double(samples.count)
        let deviation = (samples.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(samples.count - 1)).squareRoot()
        let answered = "\(samples.count)/\(sent)"
        if !jittered {
            let noise = NetemRoundTrip.noise + NetemRoundTrip.relativeNoise * floor
            let upper = expected + noise
            table.check(
                sorted[0] >= floor - NetemRoundTrip.early && median <= upper, name, "both",
                expected: "\(NetemFormat.ms(expected)) (-\(NetemFormat.ms(expected - floor + NetemRoundTrip.early)) +\(NetemFormat.ms(noise)))",
                measured: "median \(NetemFormat.ms(median)), min \(NetemFormat.ms(sorted[0])) (\(answered))",
                "a fixed delay: no probe may come back before \(NetemFormat.ms(floor)), the median no later than \(NetemFormat.ms(upper))",
                file: file, line: line)
        } else if let sigma {
            // The median of n samples has a standard error of about 1.2533 σ/√n; the VM may add its noise on top.
            let spread = netemZ999 * 1.2533 * sigma / Double(samples.count).squareRoot()
            let lower = expected - spread - NetemRoundTrip.early
            let upper = expected + spread + NetemRoundTrip.noise + NetemRoundTrip.relativeNoise * floor
            table.check(
                median >= lower && median <= upper, name, "both",
                expected: "\(NetemFormat.ms(expected)) (-\(NetemFormat.ms(expected - lower)) +\(NetemFormat.ms(upper - expected)))",
                measured: "median \(NetemFormat.ms(median)) (\(answered))", "the median is outside the 99.9% band", file: file, line: line)
            table.check(
                deviation >= 0.5 * sigma && deviation <= 1.6 * sigma, (step.isEmpty ? "" : step + " ") + "jitter", "both",
                expected: "σ \(NetemFormat.ms(sigma)) (×0.5…×1.6)", measured: "σ \(NetemFormat.ms(deviation))",
                "the spread of the round trips does not match the profile's jitter", file: file, line: line)
        } else {
            table.add(name, "both", expected: "≥ \(NetemFormat.ms(floor - up.jitter - down.jitter)) (pareto: not predicted)",
                      measured: "median \(NetemFormat.ms(median)) (\(answered))", verdict: "info")
        }
        return median
    }

    // MARK: loss

    /// Sends a paced stream each way at once and compares the share that does not arrive with the profile.
    /// Datagrams the receiving socket dropped for want of buffer space (the VM's reader falling behind) are
    /// counted apart: they crossed the link.
    func checkLoss(
        _ profile: Profile, _ measured: NetemSandbox, _ table: NetemTable, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let measurement = measured.measurement
        let plans = [NetemLossPlan(NetemDirectionModel(.uplink, of: profile)), NetemLossPlan(NetemDirectionModel(.downlink, of: profile))]
        let receivers = [
            try NamedNamespace(existing: measured.topology.serverNamespace), try NamedNamespace(existing: measured.topology.clientNamespace),
        ]
        let before = try receivers.map(NetemUDPCounters.read)
        let upPlan = plans[0]
        let (up, down) = try netemInParallel(
            { try measurement.deliver(.uplink, count: upPlan.count, payload: NetemLoss.payload, interval: upPlan.interval, drain: upPlan.drain) },
            { try measurement.deliver(.downlink, count: plans[1].count, payload: NetemLoss.payload, interval: plans[1].interval, drain: plans[1].drain) })
        let after = try receivers.map(NetemUDPCounters.read)
        for (index, delivery) in [up, down].enumerated() {
            let plan = plans[index]
            let socketDrops = after[index].receiveBufferErrors - before[index].receiveBufferErrors
            let lost = delivery.sent - delivery.received - socketDrops
            let fraction = delivery.sent == 0 ? 1 : Double(lost) / Double(delivery.sent)
            var measuredText = "\(NetemFormat.percent(fraction)) (\(lost)/\(delivery.sent) lost"
            measuredText += socketDrops > 0 ? ", \(socketDrops) socket drops)" : ")"
            let direction = plan.direction.rawValue
            switch plan.expected {
            case nil:
                table.add("loss", direction, expected: "not predicted (N=\(plan.count))", measured: measuredText, verdict: "info")
            case let p? where p >= 1:
                table.check(
                    delivery.received == 0 && delivery.sent > 0, "loss", direction, expected: "100% (N=\(plan.count))",
                    measured: measuredText, "something crossed a link that loses everything", file: file, line: line)
            case let p? where p <= 0:
                table.check(
                    lost == 0 && delivery.sent == plan.count, "loss", direction, expected: "0 lost (N=\(plan.count))", measured: measuredText,
                    "a loss-free profile lost packets", file: file, line: line)
            case let p?:
                table.check(
                    abs(fraction - p) <= plan.bound && delivery.sent == plan.count, "loss", direction,
                    expected: "\(NetemFormat.percent(p)) ± \(String(format: "%.2f", plan.bound * 100)) (N=\(plan.count))",
                    measured: measuredText, "outside the 99.9% binomial bound" + (plan.correlated
                        ? " (netem's 'loss random P CORR' compares P with a correlated random number whose spread shrinks "
                            + "with CORR, so it drops far less than P; the equivalent Gilbert model keeps the mean)" : ""),
                    file: file, line: line)
            }
        }
    }

    // MARK: throughput

    /// Sends full-size datagrams slightly faster than the rate for about 2.5 s of link time and compares the
    /// receiver's wire bit rate with the profile's: never above 1.05 × rate; at least 0.9 × rate where the
    /// unconditioned VM carries twice the rate.
    func checkThroughput(
        _ profile: Profile, _ measured: NetemSandbox, _ baseline: NetemBaseline, _ table: NetemTable,
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let models = [NetemDirectionModel(.uplink, of: profile), NetemDirectionModel(.downlink, of: profile)]
        let plans: [NetemThroughputPlan?] = models.map { NetemThroughputPlan($0) }
        for (model, plan) in zip(models, plans) where plan == nil {
            let reason = model.rate == nil ? "unlimited: not measured" : "nothing crosses: not measured"
            table.add("throughput", model.direction.rawValue, expected: reason, measured: "-", verdict: "info")
        }
        let active = plans.compactMap { $0 }
        guard !active.isEmpty else { return }
        let measurement = measured.measurement
        let receivers = try active.map { plan in
            try NamedNamespace(existing: plan.direction == .uplink ? measured.topology.serverNamespace : measured.topology.clientNamespace)
        }
        let before = try receivers.map(NetemUDPCounters.read)
        func run(_ plan: NetemThroughputPlan) throws -> LinkMeasurement.Delivery {
            try measurement.deliver(plan.direction, count: plan.count, payload: NetemThroughput.payload, interval: plan.interval, drain: plan.drain)
        }
        var deliveries: [LinkMeasurement.Delivery]
        if active.count == 2 && active.reduce(0, { $0 + $1.rate }) <= NetemThroughput.parallelLimit {
            let first = active[0]
            let (a, b) = try netemInParallel({ try measurement.deliver(first.direction, count: first.count, payload: NetemThroughput.payload, interval: first.interval, drain: first.drain) },
                                        { try run(active[1]) })
            deliveries = [a, b]
        } else {
            deliveries = try active.map(run)
        }
        let after = try receivers.map(NetemUDPCounters.read)
        for (index, plan) in active.enumerated() {
            let delivery = deliveries[index]
            let socketDrops = after[index].receiveBufferErrors - before[index].receiveBufferErrors
            let direction = plan.direction.rawValue
            guard let measuredRate = delivery.wireBitsPerSecond else {
                table.check(false, "throughput", direction, expected: NetemFormat.rate(plan.rate), measured: "\(delivery.received) received",
                            "too few packets arrived to measure a rate", file: file, line: line)
                continue
            }
            var text = "\(NetemFormat.rate(measuredRate)) (\(delivery.received)/\(delivery.sent), \(String(format: "%.2f", delivery.receiveSpan)) s"
            text += socketDrops > 0 ? ", \(socketDrops) socket drops)" : ")"
            let capacity = baseline.throughput[plan.direction] ?? 0
            let upper = NetemThroughput.upperFactor * plan.rate
            table.check(
                measuredRate <= upper, "throughput", direction, expected: "≤ \(NetemFormat.rate(upper)) (rate \(NetemFormat.rate(plan.rate)))",
                measured: text, "faster than the profile's rate", file: file, line: line)
            if capacity >= NetemThroughput.headroom * plan.rate && socketDrops == 0 {
                let lower = NetemThroughput.lowerFactor * plan.rate
                table.check(
                    measuredRate >= lower, "throughput", direction, expected: "≥ \(NetemFormat.rate(lower))", measured: NetemFormat.rate(measuredRate),
                    "slower than the profile's rate although the VM carries \(NetemFormat.rate(capacity)) unconditioned", file: file, line: line)
            } else {
                let reason = socketDrops > 0 && capacity >= NetemThroughput.headroom * plan.rate
                    ? "the reader fell behind (\(socketDrops) socket drops)" : "the VM carries \(NetemFormat.rate(capacity))"
                table.add("throughput", direction, expected: "≥ 0.9 × rate: not checked", measured: reason, verdict: "note")
                print("NETEM note: \(profile.name) \(direction): lower throughput bound not checked: \(reason) "
                    + "(the bound needs twice the profile's \(NetemFormat.rate(plan.rate)) unconditioned, and a reader that keeps up)")
            }
        }
    }

    /// Applies a catalog profile to a fresh sandbox and checks everything: tc read-back, round trip, loss and
    /// throughput each way. Prints the measurement table.
    func measureProfile(named name: String, file: StaticString = #filePath, line: UInt = #line) throws {
        try measureProfile(try catalog().profile(named: name), file: file, line: line)
    }

    /// ``measureProfile(named:file:line:)`` for a profile made in code.
    func measureProfile(_ profile: Profile, file: StaticString = #filePath, line: UInt = #line) throws {
        let measured = try makeMeasuredSandbox()
        let baseline = try baseline(measured)
        let table = NetemTable("profile \(profile.name)")
        defer { table.print() }
        let unmodelled = NetemDirectionModel(.uplink, of: profile).unmodelled + NetemDirectionModel(.downlink, of: profile).unmodelled
        if !unmodelled.isEmpty {
            table.add("note", "both", expected: "not modelled: \(Set(unmodelled).sorted().joined(separator: ", "))",
                      measured: "loss/throughput approximate", verdict: "note")
        }
        let report = try measured.backend.apply(profile)
        table.add("apply", "both", expected: "\(report.sites.count) sites", measured: String(format: "%d requests, %.0f ms", report.requests, report.duration * 1000),
                  verdict: "info")
        try checkReadBack(profile, measured, table, file: file, line: line)
        try checkRoundTrips(profile, measured, baseline, table, file: file, line: line)
        try checkLoss(profile, measured, table, file: file, line: line)
        try checkThroughput(profile, measured, baseline, table, file: file, line: line)
        XCTAssertTrue(try measured.sandbox.down(), file: file, line: line)
    }
}

extension ExpectedNetem {
    /// The profile's side, in the form of ``summary(_:)``.
    var summary: String {
        var words: [String] = []
        let delay = Double(conditions.delay + extraDelay) / 1e9
        let jitter = Double(conditions.jitter) / 1e9
        if delay > 0 || jitter > 0 { words.append(jitter > 0 ? "\(NetemFormat.ms(delay))±\(NetemFormat.ms(jitter))" : NetemFormat.ms(delay)) }
        if case let .random(probability, correlation)? = conditions.loss, probability > 0 {
            words.append("loss \(NetemFormat.percent(probability))" + (correlation > 0 ? " corr \(NetemFormat.percent(correlation))" : ""))
        }
        if case let .gilbertElliott(p, r, _, _)? = conditions.loss {
            words.append("gemodel p \(NetemFormat.percent(p)) r \(NetemFormat.percent(r))")
        }
        if let rate = conditions.rate { words.append(NetemFormat.rate(Double(rate))) }
        words.append("limit \(conditions.queueLimit ?? NetemMapping.derivedQueueLimit(for: conditions, extraDelay: extraDelay))")
        return words.joined(separator: " ")
    }
}

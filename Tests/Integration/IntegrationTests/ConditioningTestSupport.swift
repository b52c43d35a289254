import Conditioning
import Foundation
import Glibc
import JSONDocument
import LinkcondBase
import NetNamespace
import Profiles
import RouteNetlink
import Sandboxing
import Synchronization
import XCTest

@testable import LinkEmulation

// Support for the conditioning suite (DESIGN.md, "Tests"): profiles measured with real packets, against
// either backend — netem qdiscs (the kernel-VM tier, whose kernel has sch_netem) and the userspace engine
// (the host tier, whose kernel does not; and the VM tier again).
//
// Which backends run is set by LINKCOND_BACKENDS (a comma-separated list of `netem`, `userspace`); by
// default every backend is tried, and the netem classes skip on a kernel without sch_netem unless
// LINKCOND_REQUIRE_NETEM=1, in which case a missing netem fails them: scripts/vm-inside sets both, so the VM
// tier can never pass by skipping. Every test uses its own uniquely named sandbox with a private state store
// (SandboxTestCase), removed again however the test ends.

// MARK: which backends

/// Why a conditioning test must fail rather than skip.
struct ConditioningRequirementError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// The backends the conditioning suite measures (`LINKCOND_BACKENDS`).
enum TestBackends {
    static let variable = "LINKCOND_BACKENDS"

    /// The value as set, nil when unset or empty.
    static var setting: String? {
        guard let text = ProcessInfo.processInfo.environment[variable]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else {
            return nil
        }
        return text
    }

    /// The selected backends: those LINKCOND_BACKENDS names, or every backend when it is unset (the netem
    /// classes then skip where the kernel lacks netem: what runs is whatever works on this kernel). A value
    /// that names anything else is an error, so a typo cannot silently run nothing.
    static func selected() throws -> [BackendKind] {
        guard let text = setting else { return BackendKind.allCases }
        var kinds: [BackendKind] = []
        for word in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !word.isEmpty {
            guard let kind = BackendKind(rawValue: word) else {
                throw ConditioningRequirementError(
                    "\(variable)=\(text): '\(word)' is not a backend (expected a comma-separated list of "
                        + "\(BackendKind.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            if !kinds.contains(kind) { kinds.append(kind) }
        }
        return kinds
    }
}

// MARK: netem availability

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

/// Base class of the conditioning tests. Each concrete class names its backend (``backendKind``); its tests
/// run when LINKCOND_BACKENDS selects that backend and, for netem, when the kernel has it (otherwise a skip
/// that says why; a failure when LINKCOND_REQUIRE_NETEM=1).
class ConditioningTestCase: SandboxTestCase {
    /// The backend the class's tests condition the sandbox with. Every concrete subclass overrides it.
    class var backendKind: BackendKind {
        fatalError("\(self) must override backendKind: a conditioning test names the backend it measures")
    }

    /// ``backendKind``, for instance code.
    var kind: BackendKind { Self.backendKind }

    override func setUpWithError() throws {
        let kind = Self.backendKind
        let require = NetemAvailability.requireVariable
        if kind == .netem && NetemAvailability.isRequired && geteuid() != 0 {
            throw ConditioningRequirementError("\(require)=1 requires the netem tests to run, but they need root")
        }
        try super.setUpWithError()
        guard try TestBackends.selected().contains(kind) else {
            let setting = "\(TestBackends.variable)=\(TestBackends.setting ?? "")"
            if kind == .netem && NetemAvailability.isRequired {
                throw ConditioningRequirementError("\(require)=1 requires the netem tests to run, but \(setting) does not select netem")
            }
            throw XCTSkip("\(setting) does not select the \(kind.rawValue) backend")
        }
        switch kind {
        case .netem:
            let probe = NetemAvailability.probe()
            guard probe.present else {
                if NetemAvailability.isRequired {
                    throw ConditioningRequirementError("\(require)=1 but this kernel has no usable sch_netem: \(probe.detail)")
                }
                throw XCTSkip("the netem backend needs a kernel with sch_netem (\(probe.detail)); the same checks run here against "
                    + "the userspace engine (EngineProfileTests…), and scripts/vm-test runs these in a VM with a stock Debian kernel; "
                    + "set \(require)=1 to make a missing netem a failure")
            }
        case .userspace:
            // The engine is a `linkcond engine` process: without the executable nothing can be measured.
            _ = try linkcondExecutable()
        }
    }

    /// The source tree's profile catalog (`profiles/`, found from this file's path).
    func catalog() throws -> ProfileCatalog {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().path
        return try ProfileCatalog.locate(directory: repository + "/profiles")
    }

    /// Brings `sandbox` up in the shape a backend needs (a wire namespace with its engine for the userspace
    /// backend; by default this class's backend) and returns the backend, through ``SandboxConditioning``,
    /// as `linkcond apply` does.
    func bringUp(_ sandbox: Sandbox, server: Bool = false, cellular: Bool = false, kind: BackendKind? = nil) throws -> any ConditioningBackend {
        let kind = kind ?? self.kind
        let conditioning = SandboxConditioning(sandbox: sandbox, engineExecutable: try linkcondExecutable())
        let choice: BackendChoice = kind == .netem ? .netem : .userspace
        let (backend, _) = try conditioning.prepare(choice, cellular: cellular, server: server ? try serverLaunch(sandbox) : .none)
        XCTAssertEqual(backend.kind, kind, "the sandbox was built for another backend")
        return backend
    }

    /// A fresh sandbox (own name, own store), its backend (by default this class's) and a measurement between
    /// its client and server. Before returning, a few unconditioned round trips resolve every neighbour on
    /// the path (client, router and server, both ways), so no later measurement waits for ARP through a slow
    /// or lossy link.
    func makeMeasuredSandbox(server: Bool = false, kind: BackendKind? = nil) throws -> MeasuredSandbox {
        let kind = kind ?? self.kind
        let sandbox = try makeSandbox()
        let backend = try bringUp(sandbox, server: server, kind: kind)
        let measurement = try LinkMeasurement(sandbox: sandbox.topology)
        let warmUp = try measurement.roundTrips(count: 3, timeout: 2)
        guard !warmUp.samples.isEmpty else {
            throw ConditioningRequirementError("the unconditioned sandbox \(sandbox.topology.name) (\(kind.rawValue)) carries no packets")
        }
        return MeasuredSandbox(sandbox: sandbox, kind: kind, backend: backend, measurement: measurement)
    }

    /// The control for round trips: the unconditioned round trip of this sandbox with its backend (through
    /// the engine's pass-through for the userspace backend), measured in the test itself just before the
    /// conditions go on, so it shows the machine as the measurement finds it.
    func baseline(_ measured: MeasuredSandbox, path: String = "sandbox") throws -> MeasuredBaseline {
        let roundTrips = try measured.measurement.roundTrips(count: 20, timeout: 1)
        guard roundTrips.samples.count >= 10 else {
            throw ConditioningRequirementError("the unconditioned sandbox answered \(roundTrips.samples.count) of \(roundTrips.sent) round trips")
        }
        let baseline = MeasuredBaseline(roundTrips: Samples(roundTrips.samples))
        print("\(MeasurementTable.prefix) baseline \(path) \(measured.kind.rawValue) (unconditioned, this \(path)): round trip median "
            + "\(MeasureFormat.ms(baseline.roundTripMedian)), 90th percentile \(MeasureFormat.ms(baseline.roundTrips.quantile(0.9))) "
            + "(\(roundTrips.samples.count)/\(roundTrips.sent) answered)")
        return baseline
    }
}

/// A sandbox under test with its backend and measurement — or an attachment's link (AttachmentProfileTests),
/// whose sites and wire namespace are its own.
struct MeasuredSandbox {
    var sandbox: Sandbox
    var kind: BackendKind
    var backend: any ConditioningBackend
    var measurement: LinkMeasurement
    var topology: SandboxTopology { sandbox.topology }
    /// Where netem holds each direction's conditions: the client's wl0 (uplink) and the router's c-wl0
    /// (downlink) in a sandbox; both ends of the wire in an attachment.
    var uplinkSite: (namespace: String, interface: String)
    var downlinkSite: (namespace: String, interface: String)
    /// The namespace the engine's sites are in.
    var wireNamespace: String
    /// True for an attachment's wire, whose two ends also carry the ingress qdisc of its mirred redirect.
    var spliced = false

    /// A sandbox's.
    init(sandbox: Sandbox, kind: BackendKind, backend: any ConditioningBackend, measurement: LinkMeasurement) {
        self.sandbox = sandbox
        self.kind = kind
        self.backend = backend
        self.measurement = measurement
        uplinkSite = (sandbox.topology.clientNamespace, SandboxPlan.wifiInterface)
        downlinkSite = (sandbox.topology.routerNamespace, SandboxPlan.routerWifiInterface)
        wireNamespace = sandbox.topology.wireNamespace
    }

    /// The engine's control socket (userspace backend).
    var engineSocket: String { sandbox.store.engineSocketPath(for: topology.name) }

    /// Frames the conditions dropped on `direction`'s site so far (loss and tail drops together): netem's drop
    /// counter as `tc -s -j` shows it, or the engine's lost and queue-dropped counters; -1 when the site holds
    /// no conditions.
    func drops(_ direction: LinkMeasurement.Direction) throws -> Int {
        switch kind {
        case .netem:
            let (namespace, interface, parent) = direction == .uplink
                ? (uplinkSite.namespace, uplinkSite.interface, "1:1") : (downlinkSite.namespace, downlinkSite.interface, "")
            let qdiscs = try NetemTCQdisc.show(namespace: namespace, interface: interface)
            return qdiscs.first { $0.kind == "netem" && (parent.isEmpty ? $0.root : $0.parent == parent) }?.drops ?? -1
        case .userspace:
            let counters = try EngineWitness.show(engineSocket).direction(direction).counters
            return counters.lost + counters.queueDropped
        }
    }
}

/// What the machine does without conditions, with one backend in place: UDP round trips client → server →
/// client, seconds.
struct MeasuredBaseline: Sendable {
    var roundTrips: Samples

    var roundTripMedian: Double { roundTrips.median }
    /// How far above its median an unconditioned round trip goes on this machine now (90th percentile −
    /// median): what the path without any timer adds to a conditioned probe's spread.
    var spread: Double { roundTrips.quantile(0.9) - roundTrips.median }
}

// MARK: what a profile predicts

/// One direction of a profile, as numbers a measurement can be compared with.
///
/// The numbers are the same for both backends wherever this suite measures: its probes travel alone (one
/// round-trip probe in flight at a time, loss streams paced below the rate), so nothing queues, and the
/// engine's latency (delay + serialization + queueing, DirectionEmulator) equals netem's (the delay, with
/// the rate's serialization after it); jitter on a lone frame is the same draw in both; loss is decided per
/// frame in both. Where the engine differs on purpose (queueing adds to the delay, jitter keeps order, the
/// queue limit counts only frames waiting for the transmitter), EngineFidelityTests measures it, and the
/// queue-limit check below says which limit it checks.
struct DirectionModel {
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

    /// The standard deviation of the added delay that `kind` gives the profile's delay correlation, in
    /// seconds; nil where ``delayDeviation`` is nil. The backends differ here:
    ///
    /// - netem draws each delay from its correlated random number (`get_crandom`: (1 − c) × a fresh number +
    ///   c × the previous one) but then takes it modulo the table size or 2 × jitter (`tabledist`:
    ///   `rnd % dist->size`, `rnd % (2 * sigma)`): the low bits, which the correlation hardly touches, so the
    ///   spread is the uncorrelated one (the VM measures about 30 ms for `lossy`'s round trip, σ 28.3 ms);
    /// - the engine's `ordered` jitter (the default, SmoothJitter) keeps the profile's distribution whatever
    ///   the correlation, which only slows the delay's wandering: the uncorrelated spread;
    /// - the engine's `netem` jitter reads the distribution at the quantile the correlated number gives
    ///   (DelaySampler), so a correlation narrows it: by √((1 − c)/(1 + c)) for uniform jitter, and for a
    ///   table distribution by what its table does to the narrowed quantiles — 0.65 σ for normal at c = 25%,
    ///   computed here from the same process.
    /// How long the engine's ordered jitter takes to forget its delay (the Matérn correlation length ℓ of
    /// ``SmoothJitter``, seconds); nil where every frame draws its delay independently (netem, and the
    /// engine's `"jitterModel": "netem"`) or there is no jitter.
    func correlationLength(for kind: BackendKind) -> Double? {
        guard kind == .userspace, conditions.jitter > 0, conditions.effectiveJitterModel == .ordered else { return nil }
        let model = SmoothJitter(jitter: conditions.jitter, distribution: conditions.distribution ?? .uniform, correlation: conditions.delayCorrelation)
        guard model.rate > 0 else { return nil }
        return 3.0.squareRoot() / model.rate / 1e9
    }

    /// The correlation of two delays drawn `seconds` apart by the engine's ordered jitter: (1 + λτ)e^(−λτ),
    /// λ = √3/ℓ (Matérn-3/2); 0 where draws are independent.
    func delayCorrelation(after seconds: Double, for kind: BackendKind) -> Double {
        guard let length = correlationLength(for: kind) else { return 0 }
        let x = 3.0.squareRoot() * seconds / length
        return (1 + x) * exp(-x)
    }

    func delayDeviation(for kind: BackendKind) -> Double? {
        guard let deviation = delayDeviation else { return nil }
        let correlation = conditions.delayCorrelation
        guard kind == .userspace, conditions.effectiveJitterModel == .netem, deviation > 0, correlation > 0 else { return deviation }
        switch conditions.distribution {
        case nil, .uniform?: return deviation * ((1 - correlation) / (1 + correlation)).squareRoot()
        case .normal?: return deviation * CorrelatedQuantiles.normalDeviation(correlation: correlation)
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

    /// Seconds a lone probe of `wireBytes` waits for the rate on `kind`: on netem, a queue under the netem
    /// puts the rate on a tbf, whose bucket (a frame and 4 ms at the rate, FORMAT.md) lets a
    /// frame that finds it full leave at line rate; everywhere else the probe's serialization.
    func probeSerialization(_ wireBytes: Int, for kind: BackendKind) -> Double {
        kind == .netem && ExpectedNetem(conditions: conditions).stackedBytes != nil ? 0 : serialization(wireBytes)
    }

    /// The queue limit the backend should hold for this direction (both backends use the same derivation).
    func queueLimit(extraDelay: UInt64 = 0) -> UInt32 {
        conditions.effectiveQueueLimit(extraDelay: extraDelay)
    }
}

/// The spread of a standard normal read at netem's correlated quantiles, computed from the process itself:
/// a fixed-seed run of 100 000 correlated uniforms, each mapped through Φ⁻¹ (a 4096-entry table made by
/// bisection on erfc, as iproute2's table is a list of quantiles).
enum CorrelatedQuantiles {
    private static let table: [Double] = (0..<4096).map { index in
        let p = (Double(index) + 0.5) / 4096
        var (low, high) = (-8.0, 8.0)
        for _ in 0..<60 {
            let middle = (low + high) / 2
            if 0.5 * erfc(-middle / 2.0.squareRoot()) < p { low = middle } else { high = middle }
        }
        return (low + high) / 2
    }

    /// The distance between the 10th and the 90th percentile of a round trip's random part: the sum of the
    /// uplink's and the downlink's jitter draws, as `kind` draws them (the engine reads each distribution at
    /// its correlated quantile; netem's draws spread as uncorrelated ones, see
    /// DirectionModel.delayDeviation(for:)). From a fixed-seed run of 100 000 draws per direction, like
    /// ``normalDeviation(correlation:)``; nil where a distribution is not modelled here (pareto tables).
    static func interDecileRange(_ models: [DirectionModel], kind: BackendKind) -> Double? {
        let count = 100_000
        var sums = [Double](repeating: 0, count: count)
        for (index, model) in models.enumerated() where model.conditions.jitter > 0 {
            let jitter = model.jitter
            let normal: Bool
            switch model.conditions.distribution {
            case nil, .uniform?: normal = false
            case .normal?: normal = true
            case .pareto?, .paretonormal?: return nil
            }
            // Only netem's model (netem itself does not) narrows the draws by their correlation: the engine's
            // ordered jitter has the profile's spread whatever its correlation.
            let correlation = kind == .userspace && model.conditions.effectiveJitterModel == .netem ? model.conditions.delayCorrelation : 0
            var uniforms = Uniforms(seed: 0x2545_f491_4f6c_dd1d &+ UInt64(index) &* 0x9E37_79B9_7F4A_7C15)
            var last = uniforms.next()
            for draw in 0..<count {
                last = (1 - correlation) * uniforms.next() + correlation * last
                sums[draw] += normal ? jitter * table[min(Int(last * 4096), 4095)] : jitter * (2 * last - 1)
            }
        }
        let sorted = Samples(sums)
        return sorted.quantile(0.9) - sorted.quantile(0.1)
    }

    static func normalDeviation(correlation: Double) -> Double {
        var uniforms = Uniforms(seed: 0x2545_f491_4f6c_dd1d)
        var last = uniforms.next()
        var sum = 0.0
        var squares = 0.0
        let count = 100_000
        for _ in 0..<count {
            last = (1 - correlation) * uniforms.next() + correlation * last
            let value = table[min(Int(last * 4096), 4095)]
            sum += value
            squares += value * value
        }
        let mean = sum / Double(count)
        return (squares / Double(count) - mean * mean).squareRoot()
    }

    /// Uniforms in [0, 1) from a xorshift64 generator: the same sequence for the same seed on every run.
    private struct Uniforms {
        var state: UInt64
        init(seed: UInt64) { state = seed }
        mutating func next() -> Double {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return Double(state >> 11) * 0x1p-53
        }
    }
}

/// Bytes a qdisc (or the engine) counts for a UDP datagram over IPv4 on a veth: payload, UDP (8), IPv4
/// (20), Ethernet (14).
func wireBytes(payload: Int) -> Int { payload + 8 + 20 + 14 }

// MARK: the measurement table

enum MeasureFormat {
    static func ms(_ seconds: Double) -> String { String(format: "%.1f ms", seconds * 1000) }
    static func rate(_ bitsPerSecond: Double) -> String {
        if bitsPerSecond >= 1e6 { return String(format: "%.2f mbit/s", bitsPerSecond / 1e6) }
        return String(format: "%.1f kbit/s", bitsPerSecond / 1e3)
    }
    static func percent(_ fraction: Double) -> String { String(format: "%.2f%%", fraction * 100) }
}

/// Rows of expected-versus-measured numbers, printed as one block per test so the CI log shows them.
/// Every line starts with `MEASURE ` (scripts/vm-inside collects them); the title names the backend.
final class MeasurementTable: @unchecked Sendable {
    static let prefix = "MEASURE"

    struct Row {
        var check: String
        var direction: String
        var expected: String
        var measured: String
        var verdict: String
    }

    let title: String
    private let rows = Mutex<[Row]>([])

    init(_ kind: BackendKind, _ title: String) { self.title = "[\(kind.rawValue)] \(title)" }

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
        let prefix = Self.prefix + " "
        var lines = [prefix + "== \(title)"]
        lines.append(prefix + pad("check", widths[0]) + " " + pad("direction", widths[1]) + " " + pad("expected", widths[2]) + " "
            + pad("measured", widths[3]) + " verdict")
        for row in rows {
            lines.append(prefix + pad(row.check, widths[0]) + " " + pad(row.direction, widths[1]) + " " + pad(row.expected, widths[2])
                + " " + pad(row.measured, widths[3]) + " " + row.verdict)
        }
        Swift.print(lines.joined(separator: "\n"))
        fflush(nil)
    }
}

// MARK: socket counters

/// The UDP counters of one namespace (`/proc/net/snmp` as seen from inside it).
struct UDPCounters {
    var inDatagrams: Int
    /// Datagrams that reached a socket whose receive buffer was full: delivered by the link, lost by the reader.
    var receiveBufferErrors: Int

    static func read(_ namespace: NamedNamespace) throws -> UDPCounters {
        let table = try SNMPCounters.read(namespace, protocol: "Udp")
        return UDPCounters(inDatagrams: table["InDatagrams"] ?? 0, receiveBufferErrors: table["RcvbufErrors"] ?? 0)
    }
}

/// One protocol's line pair of `/proc/net/snmp`, read from inside a namespace (the file shows the reading
/// thread's namespace through `/proc/thread-self`).
enum SNMPCounters {
    static func read(_ namespace: NamedNamespace, protocol name: String) throws -> [String: Int] {
        let text = try namespace.run { try String(contentsOfFile: "/proc/thread-self/net/snmp", encoding: .utf8) }
        let lines = text.split(separator: "\n").filter { $0.hasPrefix("\(name): ") }
        guard lines.count >= 2 else { throw ConditioningRequirementError("no \(name) lines in /proc/net/snmp of \(namespace.name)") }
        let names = lines[0].split(separator: " ").dropFirst().map(String.init)
        let values = lines[1].split(separator: " ").dropFirst().map { Int($0) ?? 0 }
        return Dictionary(zip(names, values), uniquingKeysWith: { first, _ in first })
    }
}

// MARK: running two measurements at once

/// Runs `first` on a thread of its own and `second` on this one; returns both results (or the first error).
func inParallel<A, B>(_ first: @escaping @Sendable () throws -> A, _ second: () throws -> B) throws -> (A, B) {
    let box = ResultBox<A>()
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
final class ResultBox<T>: @unchecked Sendable {
    var result: Result<T, any Error>?
    init() {}
}

// MARK: the engine's own read-back, decoded independently

/// The engine's answer to `show`, asked on its control socket with a hand-written request and decoded with
/// JSONSerialization (not linkcond's codec): what the engine holds — the profile document it reads back
/// from its models — and counts, as a witness beside `EngineBackend.installed()`, as `tc -s -j` is for netem.
struct EngineWitness {
    /// One direction's counters (DirectionCounters' fields that account for frames).
    struct Counters: Equatable, CustomStringConvertible {
        var offered = 0
        var duplicated = 0
        var passed = 0
        var lost = 0
        var queueDropped = 0
        var backlog = 0
        var corrupted = 0
        var reordered = 0
        var ecnMarked = 0

        init(_ object: [String: Any]) {
            func value(_ key: String) -> Int { (object[key] as? NSNumber)?.intValue ?? -1 }
            offered = value("offeredFrames")
            duplicated = value("duplicatedFrames")
            passed = value("passedFrames")
            lost = value("lostFrames")
            queueDropped = value("queueDroppedFrames")
            backlog = value("backlogFrames")
            corrupted = value("corruptedFrames")
            reordered = value("reorderedFrames")
            ecnMarked = value("ecnMarkedFrames")
        }

        init() {}

        /// DirectionCounters' invariant: every frame offered (and every copy made) was passed on, lost,
        /// tail-dropped, or is held now.
        var isBalanced: Bool { offered >= 0 && offered + duplicated == passed + lost + queueDropped + backlog }

        var description: String {
            "offered \(offered) + duplicated \(duplicated) = \(offered + duplicated); passed \(passed) + lost \(lost) "
                + "+ queue-dropped \(queueDropped) + backlog \(backlog) = \(passed + lost + queueDropped + backlog)"
        }

        static func - (after: Counters, before: Counters) -> Counters {
            var delta = Counters()
            delta.offered = after.offered - before.offered
            delta.duplicated = after.duplicated - before.duplicated
            delta.passed = after.passed - before.passed
            delta.lost = after.lost - before.lost
            delta.queueDropped = after.queueDropped - before.queueDropped
            delta.backlog = after.backlog - before.backlog
            delta.corrupted = after.corrupted - before.corrupted
            delta.reordered = after.reordered - before.reordered
            delta.ecnMarked = after.ecnMarked - before.ecnMarked
            return delta
        }
    }

    /// One direction of the wifi link.
    struct DirectionState {
        /// The conditions held: the direction's member of the held profile document (`{}` when it has none).
        var conditions: [String: Any]
        var counters: Counters
        /// Departure lateness of held frames: median, 99th percentile and maximum, nanoseconds.
        var latenessMedian: Int?
        var latenessP99: Int?
        var latenessMaximum: Int?
        /// Frames the kernel dropped before the engine read them (its receive ring was full).
        var receiveOverruns: Int
    }

    var pid: Int
    /// The held profile's name, nil when the link is clear.
    var profile: String?
    /// The held profile's DNS delay as the document writes it (`"3s"`), nil for none.
    var dnsDelay: String?
    var uplink: DirectionState
    var downlink: DirectionState
    /// The wire ends, as the engine names them.
    var clientSide: String
    var routerSide: String

    func direction(_ direction: LinkMeasurement.Direction) -> DirectionState { direction == .uplink ? uplink : downlink }

    /// Asks the engine listening at `socketPath` what its wifi link holds.
    static func show(_ socketPath: String, link: String = "wifi") throws -> EngineWitness {
        let answer = try request(#"{"operation":"show"}"#, socketPath)
        guard let links = answer["links"] as? [[String: Any]], let wifi = links.first(where: { $0["link"] as? String == link }) else {
            throw ConditioningRequirementError("the engine at \(socketPath) reports no \(link) link: \(answer)")
        }
        let held = wifi["profile"] as? [String: Any]
        func direction(_ key: String) throws -> DirectionState {
            guard let object = wifi[key] as? [String: Any], let counters = object["counters"] as? [String: Any]
            else { throw ConditioningRequirementError("the engine's \(link) link has no readable \(key): \(wifi)") }
            let lateness = object["lateness"] as? [String: Any]
            return DirectionState(
                conditions: held?[key] as? [String: Any] ?? [:], counters: Counters(counters),
                latenessMedian: (lateness?["median"] as? NSNumber)?.intValue, latenessP99: (lateness?["p99"] as? NSNumber)?.intValue,
                latenessMaximum: (lateness?["maximum"] as? NSNumber)?.intValue,
                receiveOverruns: (object["receiveOverruns"] as? NSNumber)?.intValue ?? -1)
        }
        return EngineWitness(
            pid: (answer["pid"] as? NSNumber)?.intValue ?? -1, profile: held?["name"] as? String, dnsDelay: held?["dnsDelay"] as? String,
            uplink: try direction("uplink"), downlink: try direction("downlink"), clientSide: wifi["clientSide"] as? String ?? "?",
            routerSide: wifi["routerSide"] as? String ?? "?")
    }

    /// One request line to the control socket, one JSON object back.
    static func request(_ line: String, _ socketPath: String, timeout: Double = 5) throws -> [String: Any] {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestSocket.Failure(what: "socket(AF_UNIX)", code: errno) }
        defer { close(fd) }
        var time = timeval(tv_sec: Int(timeout), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let path = Array(socketPath.utf8)
        guard path.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw ConditioningRequirementError("the engine's socket path is too long: \(socketPath)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { throw TestSocket.Failure(what: "connect to the engine at \(socketPath)", code: errno) }
        try TestSocket.sendAll(fd, Array((line + "\n").utf8))
        var bytes: [UInt8] = []
        while !bytes.contains(0x0a) {
            var buffer = [UInt8](repeating: 0, count: 65536)
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw TestSocket.Failure(what: "read the engine's answer at \(socketPath)", code: count < 0 ? errno : EPIPE) }
            bytes += buffer[0..<count]
        }
        guard let object = try JSONSerialization.jsonObject(with: Data(bytes.prefix { $0 != 0x0a })) as? [String: Any] else {
            throw ConditioningRequirementError("the engine's answer is not a JSON object: \(String(decoding: bytes, as: UTF8.self))")
        }
        return object
    }

    /// The JSON object a profile writes for `conditions` (what the engine should report holding), for
    /// comparison with ``DirectionState/conditions`` by value. A trace is named by the path it was read from,
    /// as the engine names the file it read.
    static func encoded(_ conditions: LinkConditions) throws -> [String: Any] {
        let text = JSONWriter.text(of: ProfileParser.json(of: Profile(name: "x", uplink: conditions), tracesByPath: true))
        guard let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            throw ConditioningRequirementError("the profile writer did not write a JSON object")
        }
        return object["uplink"] as? [String: Any] ?? [:]
    }

    /// Whether two decoded JSON objects are the same value: compared as their canonical text (sorted keys),
    /// which JSONSerialization writes the same way for equal values.
    static func same(_ a: [String: Any], _ b: [String: Any]) -> Bool { summary(a) == summary(b) && summary(a) != "?" }

    /// A short text of an encoded conditions object, sorted, for the table.
    static func summary(_ object: [String: Any]) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return "?" }
        return String(decoding: data, as: UTF8.self)
    }
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
    /// Every member tc printed for it (a codel's `drop_overlimit`, `ecn_mark`… are at this level).
    var fields: [String: Any] = [:]

    static func show(namespace: String, interface: String) throws -> [NetemTCQdisc] {
        guard Command.isAvailable(Command.tc) else { throw MissingTool(path: Command.tc) }
        let result = try Command.run(Command.tc, ["-s", "-j", "-n", namespace, "qdisc", "show", "dev", interface])
        guard result.status == 0 else {
            throw ConditioningRequirementError("tc -n \(namespace) qdisc show dev \(interface) failed: \(result.errorOutput)")
        }
        guard let list = try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [[String: Any]] else {
            throw ConditioningRequirementError("tc printed no JSON list: \(result.output)")
        }
        return list.map { entry in
            NetemTCQdisc(
                kind: entry["kind"] as? String ?? "?", handle: entry["handle"] as? String ?? "?",
                parent: entry["parent"] as? String, root: NetemTCJSON.bool(entry["root"]) ?? false,
                options: entry["options"] as? [String: Any] ?? [:], packets: NetemTCJSON.int(entry["packets"]) ?? 0,
                drops: NetemTCJSON.int(entry["drops"]) ?? 0, backlogPackets: NetemTCJSON.int(entry["qlen"]) ?? 0, fields: entry)
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

    /// The DropTail by bytes or time the profile puts under the netem, as the bytes of its `bfifo`
    /// (FORMAT.md, Queues: rate × time plus one 1514-byte frame); nil when netem's own `limit` is the queue.
    /// Other disciplines are NetemQueueTests' to check.
    var stackedBytes: UInt64? {
        guard let queue = conditions.queue, queue.discipline == .dropTail, let rate = conditions.rate else { return nil }
        switch queue.limit {
        case .packets: return nil
        case .bytes(let bytes): return bytes
        case .time(let nanoseconds): return UInt64((Double(rate) / 8 * Double(nanoseconds) / 1e9).rounded(.up)) + 1514
        }
    }

    /// netem's `limit`: the derived one, plus a bfifo's bytes counted in 64-byte frames when there is one.
    var limit: UInt32 {
        guard let bytes = stackedBytes else { return conditions.effectiveQueueLimit(extraDelay: extraDelay) }
        return conditions.derivedQueueLimit(extraDelay: extraDelay) + UInt32(bytes / 64 + 1)
    }

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
                // r = (1 − c)·(1 − P), 1-h = 100%, 1-k = 0%. See DirectionModel.expectedLoss.
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

        // rate, in bytes per second (a tbf's under the netem when a bfifo holds the queue)
        if let rate = conditions.rate, stackedBytes == nil {
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
            words.append(jitter > 0 ? "\(MeasureFormat.ms(value))±\(MeasureFormat.ms(jitter))" : MeasureFormat.ms(value))
        }
        if let loss = options["loss-random"] as? [String: Any] {
            let correlation = NetemTCJSON.double(loss["correlation"]) ?? 0
            words.append("loss \(MeasureFormat.percent(NetemTCJSON.double(loss["loss"]) ?? 0))"
                + (correlation > 0 ? " corr \(MeasureFormat.percent(correlation))" : ""))
        }
        if let model = options["loss-gemodel"] as? [String: Any] {
            words.append("gemodel p \(MeasureFormat.percent(NetemTCJSON.double(model["p"]) ?? 0)) r \(MeasureFormat.percent(NetemTCJSON.double(model["r"]) ?? 0))")
        }
        if let rate = options["rate"] as? [String: Any] { words.append(MeasureFormat.rate((NetemTCJSON.double(rate["rate"]) ?? 0) * 8)) }
        words.append("limit \(NetemTCJSON.int(options["limit"]) ?? 0)")
        return words.joined(separator: " ")
    }
}

/// A burst of datagrams sent as fast as one socket can, with forced large socket buffers at both ends (so
/// neither the sender's send buffer nor the receiver's receive buffer limits or loses anything: only the
/// conditions can drop), counted at the receiver and in the backend's drop counter.
struct QueueBurst {
    var count: Int
    var payload: Int

    struct Result {
        var sent: Int
        var received: Int
        /// Frames the backend dropped meanwhile (``MeasuredSandbox/drops(_:)``); -1 without conditions.
        var drops: Int
        var sendSeconds: Double
        /// When each frame's send returned, CLOCK_MONOTONIC nanoseconds: the engine stamps its arrival
        /// microseconds later (KernelArrivalStamps), so a sender the machine paused mid-burst shows here as
        /// the gap it made on the wire.
        var sendTimes: [UInt64] = []
    }

    /// A DropTail queue of `limit` frames fed the frames at `arrivals`, each held `delay` nanoseconds and then
    /// by a transmitter that takes `service` nanoseconds a frame: a frame counts from its arrival until it
    /// leaves, at max(arrival + delay, the frame before's leaving) + service. With no delay that is the
    /// engine's transmit queue (DirectionEmulator; its delay line does not count); with the delay, netem's
    /// (`netem_enqueue` with a rate: every packet it holds counts against its limit). Returns how many it
    /// drops, and how many would be held at once with no limit.
    static func dropTail(arrivals: [UInt64], service: UInt64, limit: Int, delay: UInt64 = 0) -> (drops: Int, unlimitedPeak: Int) {
        func run(_ limit: Int) -> (drops: Int, peak: Int) {
            var leaving: [UInt64] = []  // when each admitted frame leaves the transmitter, in order
            var first = 0
            var drops = 0
            var peak = 0
            for arrival in arrivals {
                while first < leaving.count, leaving[first] <= arrival { first += 1 }
                if leaving.count - first >= limit {
                    drops += 1
                    continue
                }
                leaving.append(max(arrival + delay, leaving.last ?? 0) + service)
                peak = max(peak, leaving.count - first)
            }
            return (drops, peak)
        }
        return (run(limit).drops, run(.max).peak)
    }

    /// Sends the burst `direction`-wise, waits `settle` seconds (or, by default, the 300 ms delay plus the burst's
    /// time at 50 Mbit/s plus slack), then reads until all arrived or 1.5 s pass with nothing.
    func send(_ direction: LinkMeasurement.Direction, _ measured: MeasuredSandbox, settle: Double? = nil) throws -> Result {
        let (client, clientAddress) = (measured.measurement.client, measured.measurement.clientAddress)
        let (server, serverAddress) = (measured.measurement.server, measured.measurement.serverAddress)
        let (from, fromAddress, to, toAddress) = direction == .uplink
            ? (client, clientAddress, server, serverAddress) : (server, serverAddress, client, clientAddress)
        let receiver = try to.run { () throws -> Int32 in
            // 1.5 s with nothing ends the reading: a TCG guest's engine once sent a burst's frames with gaps
            // of up to 481 ms (departures late at p99), and a reader that gave up after 0.3 s got 833 of 2000.
            let fd = try TestSocket.open(for: toAddress, type: Int32(SOCK_DGRAM.rawValue), timeout: 1.5)
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
        let dropsBefore = try measured.drops(direction)
        let bytes = [UInt8](repeating: 0x5a, count: payload)
        var sendTimes: [UInt64] = []
        sendTimes.reserveCapacity(count)
        let start = Date()
        for _ in 0..<count where TestSocket.send(sender, bytes, to: toAddress, port: port) == 0 {
            sendTimes.append(MonotonicClock.nanoseconds())
        }
        let sent = sendTimes.count
        let sendSeconds = Date().timeIntervalSince(start)
        // The delay, the burst's time on the link, and some slack; then read until all arrived or 1.5 s pass with nothing.
        let wait = settle ?? (0.3 + Double(count * wireBytes(payload: payload) * 8) / 50e6 + 0.4)
        usleep(UInt32(wait * 1_000_000))
        var received = 0
        while received < sent, (try? TestSocket.receive(receiver)) != nil { received += 1 }
        let dropsAfter = try measured.drops(direction)
        return Result(
            sent: sent, received: received, drops: dropsBefore < 0 ? -1 : dropsAfter - dropsBefore, sendSeconds: sendSeconds,
            sendTimes: sendTimes)
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

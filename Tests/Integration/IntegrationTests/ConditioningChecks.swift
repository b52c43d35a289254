import Conditioning
import Foundation
import Glibc
import LinkcondBase
import NetNamespace
import Profiles
import Sandboxing
import XCTest

// MARK: - the checks
// The measurements behind ConditioningProfileTests (both backends), with the tolerances README.md states
// ("Tolerances of the conditioning suite"); the same tolerances hold for the userspace engine.

/// The two-sided 99.9% normal quantile: a band that holds 999 times in 1000 for a correct link.
let z999 = 3.29

/// The normal quantile the loss checks use: 99.9% for all of them together, not for each. One run makes
/// about 16 of them (every direction of a profile with a loss between 0 and 100%, on both backends), so each
/// is judged at 0.1%/16 two-sided, z = 4.0, with 1.5 times the packets the 99.9% band of one check needed,
/// so the band is as narrow as before. (At 99.9% each, a correct link failed one run in about 60:
/// EngineProfileTests.testProfileLossy measured 244 lost of 6000, 4.07% against 3.00% ± 0.94 — a draw the
/// engine's loss model itself gives about once in 4000 runs of 6000 frames; its counters matched.)
let lossZ = 4.0

enum RoundTripTolerance {
    /// LinkMeasurement's probe: a 4-byte sequence number and 60 bytes of filler.
    static let payload = 64
    /// Answered probes wanted without jitter (the delay is fixed; five show that) and with jitter.
    static let probes = 5
    static let jitteredProbes = 60
    /// A share of the delay (timer expiry in a TCG guest drifts a little with long timers).
    static let relativeNoise = 0.01
    /// Neither backend sends early (netem's time_to_send, the engine's departure times); 1 ms covers the
    /// clocks' granularity, both ways.
    static let early = 0.001
}

/// What a busy machine adds to a conditioned round trip beyond the profile and the unconditioned baseline,
/// measured with the probes themselves: each of the round trip's two timed hops (the uplink's and the
/// downlink's delay timer) may fire as late as timers fired meanwhile (the 99th percentile of
/// ``TimerLatenessControl``, and for the engine of its own departure-lateness histogram, whichever is
/// larger), and the untimed path may vary as the baseline just measured did (its 90th percentile over its
/// median). On a quiet host this comes to a few milliseconds; with other tests beside it, or in a TCG guest,
/// it grows with what the controls measured, and only with that.
///
/// An engine whose departures are late as a rule would pass here (its lateness is the control); that is
/// EngineFidelityTests' to catch (departures within 2 ms at the median, run with nothing beside them).
struct RoundTripAllowance {
    var seconds: Double
    var text: String

    init(_ measured: MeasuredSandbox, _ baseline: MeasuredBaseline, timers: Samples) throws {
        var hops = 2 * timers.quantile(0.99)
        var parts = ["timers p99 2 × \(MeasureFormat.ms(timers.quantile(0.99)))"]
        if measured.kind == .userspace {
            let witness = try EngineWitness.show(measured.engineSocket)
            let engine = Double((witness.uplink.latenessP99 ?? 0) + (witness.downlink.latenessP99 ?? 0)) / 1e9
            parts.append("engine p99 up + down \(MeasureFormat.ms(engine))")
            hops = max(hops, engine)
        }
        parts.append("baseline spread \(MeasureFormat.ms(baseline.spread))")
        seconds = hops + baseline.spread + RoundTripTolerance.early
        text = parts.joined(separator: ", ")
    }
}

enum LossTolerance {
    /// NumberedDatagrams' sequence number and send time, nothing else (54 bytes on the wire).
    static let payload = 12
    /// Paced at 80% of the link rate, so no queue builds and nothing is tail-dropped.
    static let rateShare = 0.8
    /// At most this share of the queue limit is in flight (waiting out the delay) at any time: netem counts
    /// those packets against its limit (the engine counts only frames waiting for its transmitter, so this is
    /// stricter than it needs).
    static let queueShare = 0.6
    /// The most packets per second sent per direction (a TCG guest's readers keep up with about that much).
    static let maximumPacketsPerSecond = 2000.0
    /// Packets for a loss-free direction: a 1% loss would show in 500 packets with probability 99.3%.
    static let lossFreeCount = 500
    static let totalLossCount = 100
    static let minimumCount = 1000
    static let maximumCount = 9000
}

enum ThroughputTolerance {
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
    /// The rates are taken between the arrivals at these shares of the stream, so a stall at its start or
    /// end (the sender's first wake-up, the last frames' departure) does not decide them.
    static let trim = 0.05
    /// Both directions are measured at once when together they need no more than this (bits per second).
    static let parallelLimit = 10e6
}

/// Datagrams one direction's loss check counted: lost of those the backend read.
struct LossCount: Sendable {
    var lost: Int
    var read: Int
    var fraction: Double { read <= 0 ? 1 : Double(lost) / Double(read) }
}

/// What ``ConditioningTestCase/measureProfile(_:kind:file:line:)`` measured, for comparing backends.
struct ProfileMeasurement: Sendable {
    var kind: BackendKind
    var baseline: MeasuredBaseline
    /// Nil where no probe came back (100% loss) or the spread is not predicted.
    var roundTripMedian: Double?
    var loss: [LinkMeasurement.Direction: LossCount]
}

struct LossPlan: Sendable {
    var direction: LinkMeasurement.Direction
    var expected: Double?
    var count: Int
    var interval: Double
    var drain: Double
    /// Allowed |measured − expected| (fraction).
    var bound: Double
    /// The profile asks for correlated random loss.
    var correlated: Bool

    init(_ model: DirectionModel) {
        direction = model.direction
        expected = model.expectedLoss
        if case let .random(_, correlation)? = model.conditions.loss { correlated = correlation > 0 } else { correlated = false }
        let bits = Double(wireBytes(payload: LossTolerance.payload) * 8)
        // Below the rate, and few enough that the packets in flight (all of them wait the delay inside netem)
        // stay well below its queue limit: a tail drop is not the loss being measured.
        let inFlightTime = model.delay + 4 * model.jitter
        let packetsPerSecond = min(
            LossTolerance.maximumPacketsPerSecond, model.rate.map { LossTolerance.rateShare * $0 / bits } ?? .infinity,
            inFlightTime > 0 ? LossTolerance.queueShare * Double(model.queueLimit()) / inFlightTime : .infinity)
        interval = 1 / packetsPerSecond
        drain = model.delay + 4 * model.jitter + 0.3
        switch expected {
        case nil:
            count = LossTolerance.minimumCount
            bound = 1
        case let p? where p >= 1:
            count = LossTolerance.totalLossCount
            bound = 0
        case let p? where p <= 0:
            count = LossTolerance.lossFreeCount
            bound = 0
        case let p?:
            // Enough packets that the bound is within ±20% of the loss (at least ±0.5 points).
            let variance = p * (1 - p) * model.lossVarianceInflation
            let halfWidth = max(0.2 * p, 0.005)
            let wanted = (lossZ * lossZ * variance / (halfWidth * halfWidth)).rounded(.up)
            count = Int(min(Double(LossTolerance.maximumCount), max(Double(LossTolerance.minimumCount), wanted)))
            bound = lossZ * (variance / Double(count)).squareRoot()
        }
    }
}

struct ThroughputPlan: Sendable {
    var direction: LinkMeasurement.Direction
    var rate: Double
    /// The share the profile loses before the rate applies (the sender makes up for it, up to half).
    var loss: Double
    var count: Int
    var interval: Double
    var drain: Double

    /// Nil when the direction has no rate or drops everything.
    init?(_ model: DirectionModel) {
        guard let rate = model.rate, (model.expectedLoss ?? 0) < 1 else { return nil }
        direction = model.direction
        self.rate = rate
        let bits = Double(wireBytes(payload: ThroughputTolerance.payload) * 8)
        loss = min(model.expectedLoss ?? 0, 0.5)
        // What is lost never reaches the queue: send that much more to keep the link busy.
        interval = bits / (rate * ThroughputTolerance.paceFactor / (1 - loss))
        let inFlight = rate / bits * (model.delay + 3 * model.jitter)
        let limit = Double(model.queueLimit())
        var packets = (rate * ThroughputTolerance.seconds / bits).rounded(.up)
        packets = min(packets, Double(ThroughputTolerance.maximumPackets))
        // The queue grows by 1 − 1/1.1 of what is sent; with what is in flight it stays below 90% of the limit.
        packets = min(packets, (ThroughputTolerance.paceFactor / (ThroughputTolerance.paceFactor - 1) * (0.9 * limit - inFlight)).rounded(.down))
        count = max(20, Int(packets))
        drain = model.delay + 4 * model.jitter + bits / rate + 0.3
    }
}

extension ConditioningTestCase {
    // MARK: read-back

    /// Checks what the backend holds against the profile: for netem with `tc -s -j` (iproute2's own decoder),
    /// for the engine with its own read-back (``checkEngineReadBack(_:_:_:step:file:line:)``).
    func checkReadBack(
        _ profile: Profile, _ measured: MeasuredSandbox, _ table: MeasurementTable, step: String = "",
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        switch measured.kind {
        case .netem: try checkNetemReadBack(profile, measured, table, step: step, file: file, line: line)
        case .userspace: try checkEngineReadBack(profile, measured, table, step: step, file: file, line: line)
        }
    }

    /// Checks a DropTail by bytes or time under `netem` (FORMAT.md, Queues): a tbf at the netem's class
    /// `:1` with the direction's rate, and under the tbf's class `:1` a bfifo of the queue's bytes.
    func checkNetemQueueStack(
        _ expected: ExpectedNetem, under netem: NetemTCQdisc, among qdiscs: [NetemTCQdisc], _ table: MeasurementTable, _ check: String,
        _ label: String, file: StaticString, line: UInt
    ) {
        guard let bytes = expected.stackedBytes, let rate = expected.conditions.rate else { return }
        let major = netem.handle.split(separator: ":").first.map(String.init) ?? "?"
        let tbf = qdiscs.first { $0.kind == "tbf" && $0.parent == major + ":1" }
        let tbfMajor = tbf?.handle.split(separator: ":").first.map(String.init) ?? "?"
        let bfifo = qdiscs.first { $0.kind == "bfifo" && $0.parent == tbfMajor + ":1" }
        let shownRate = NetemTCJSON.double(tbf?.options["rate"])
        let shownLimit = NetemTCJSON.double(bfifo?.options["limit"])
        table.check(
            shownRate.map { abs($0 - Double(rate / 8)) <= 0.5 } == true && shownLimit == Double(bytes), check, label,
            expected: "tbf \(MeasureFormat.rate(Double(rate))) + bfifo \(bytes) B",
            measured: "tbf \(shownRate.map { MeasureFormat.rate($0 * 8) } ?? "none") + bfifo \(shownLimit.map { "\(Int($0)) B" } ?? "none")",
            "the queue under the netem is not the profile's", file: file, line: line)
    }

    /// Checks with `tc -s -j` what each site holds: on the client's wl0 a prio root with the uplink netem at
    /// 1:1 and the uplink-plus-DNS-delay netem at 1:2; on the router's c-wl0 the downlink netem at the root;
    /// a DropTail by bytes or time adds a tbf and a bfifo under each netem (``checkNetemQueueStack``).
    func checkNetemReadBack(
        _ profile: Profile, _ measured: MeasuredSandbox, _ table: MeasurementTable, step: String = "",
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let prefix = step.isEmpty ? "" : step + " "
        // An attachment's wire also has an ingress qdisc on each end (its mirred redirect joins the two ends):
        // the splice's, not the conditions', so the trees compared are the egress ones.
        let client = try NetemTCQdisc.show(namespace: measured.uplinkSite.namespace, interface: measured.uplinkSite.interface)
            .filter { !(measured.spliced && $0.kind == "ingress") }
        let root = client.first { $0.root }
        let structure = client.map { "\($0.kind) \($0.handle) \($0.parent ?? "root")" }.joined(separator: ", ")
        let uplinkStacked = ExpectedNetem(conditions: profile.uplink).stackedBytes != nil
        table.check(
            root?.kind == "prio" && root?.handle == "1:" && client.count == (uplinkStacked ? 7 : 3)
                && client.filter({ $0.kind == "netem" }).map(\.parent) .sorted { ($0 ?? "") < ($1 ?? "") } == ["1:1", "1:2"],
            prefix + "tc tree", "uplink", expected: "prio 1: + netem at 1:1, 1:2" + (uplinkStacked ? ", each with a tbf and a bfifo" : ""),
            measured: structure, "wl0 holds the wrong tree", file: file, line: line)
        for (parent, extraDelay, label) in [("1:1", UInt64(0), "uplink"), ("1:2", profile.dnsDelay, "dns-up")] {
            guard let leaf = client.first(where: { $0.parent == parent && $0.kind == "netem" }) else { continue }
            let expected = ExpectedNetem(conditions: profile.uplink, extraDelay: extraDelay)
            let differences = expected.differences(leaf.options)
            table.check(
                differences.isEmpty, prefix + "tc netem", label, expected: expected.summary, measured: ExpectedNetem.summary(leaf.options),
                differences.joined(separator: "; "), file: file, line: line)
            checkNetemQueueStack(expected, under: leaf, among: client, table, prefix + "tc queue", label, file: file, line: line)
        }
        let router = try NetemTCQdisc.show(namespace: measured.downlinkSite.namespace, interface: measured.downlinkSite.interface)
            .filter { !(measured.spliced && $0.kind == "ingress") }
        let routerRoot = router.first { $0.root }
        let downlinkStacked = ExpectedNetem(conditions: profile.downlink).stackedBytes != nil
        table.check(
            routerRoot?.kind == "netem" && router.count == (downlinkStacked ? 3 : 1), prefix + "tc tree", "downlink",
            expected: "netem at the root" + (downlinkStacked ? " with a tbf and a bfifo" : ""),
            measured: router.map { "\($0.kind) \($0.handle) \($0.parent ?? "root")" }.joined(separator: ", "),
            "c-wl0 holds the wrong tree", file: file, line: line)
        if let routerRoot, routerRoot.kind == "netem" {
            let expected = ExpectedNetem(conditions: profile.downlink)
            let differences = expected.differences(routerRoot.options)
            table.check(
                differences.isEmpty, prefix + "tc netem", "downlink", expected: expected.summary,
                measured: ExpectedNetem.summary(routerRoot.options), differences.joined(separator: "; "), file: file, line: line)
            checkNetemQueueStack(expected, under: routerRoot, among: router, table, prefix + "tc queue", "downlink", file: file, line: line)
        }
    }


    /// Checks what the engine holds, two ways: its `show` answer decoded independently (``EngineWitness``):
    /// each direction's conditions are exactly the profile's (encoded as the engine encodes them, so nothing
    /// left over from an earlier profile passes), the DNS delay sits on the uplink only, the profile's name;
    /// and `EngineBackend.installed()`, what `linkcond show` prints: a site per direction in the wire
    /// namespace (the uplink leaves through the router-side end, the downlink through the client-side end),
    /// the queue limit the profile derives, a `dns` class exactly when the profile has a DNS delay. Every
    /// direction's counters account for every frame offered.
    func checkEngineReadBack(
        _ profile: Profile, _ measured: MeasuredSandbox, _ table: MeasurementTable, step: String = "",
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let prefix = step.isEmpty ? "" : step + " "
        let witness = try EngineWitness.show(measured.engineSocket)
        table.check(witness.profile == profile.name, prefix + "engine", "both", expected: "profile \(profile.name)",
                    measured: "profile \(witness.profile ?? "none")", "the engine names another profile", file: file, line: line)
        for (direction, conditions) in [(LinkMeasurement.Direction.uplink, profile.uplink), (.downlink, profile.downlink)] {
            let held = witness.direction(direction)
            let expected = try EngineWitness.encoded(conditions)
            // The DNS delay is the profile's, in force on the uplink only.
            let dnsDelay = profile.dnsDelay > 0 ? Quantity.formatTime(profile.dnsDelay) : nil
            table.check(
                EngineWitness.same(held.conditions, expected) && witness.dnsDelay == dnsDelay,
                prefix + "engine holds", direction.rawValue,
                expected: EngineWitness.summary(expected) + (direction == .uplink ? dnsDelay.map { " dns +" + $0 } ?? "" : ""),
                measured: EngineWitness.summary(held.conditions) + (direction == .uplink ? witness.dnsDelay.map { " dns +" + $0 } ?? "" : ""),
                "the engine holds other conditions than the profile's", file: file, line: line)
        }
        let sites = try measured.backend.installed()
        let wire = measured.wireNamespace
        for (direction, conditions, interface) in [
            (LinkDirection.uplink, profile.uplink, witness.routerSide), (.downlink, profile.downlink, witness.clientSide),
        ] {
            let site = sites.first { $0.site.direction == direction && $0.site.link == "wifi" }
            let main = site?.stages.first { $0.handle == "main" }
            let dns = site?.stages.first { $0.handle == "dns" }
            let limit = conditions.effectiveQueueLimit()
            let wantsDNS = direction == .uplink && profile.dnsDelay > 0
            let passed = site?.site.namespace == wire && site?.site.interface == interface && main?.kind == "engine"
                && main?.limit == limit && main?.conditions == conditions && main?.agreesWithRecord == true && (dns != nil) == wantsDNS
                && (dns?.limit).map { $0 == conditions.effectiveQueueLimit(extraDelay: profile.dnsDelay) } ?? true
            table.check(
                passed, prefix + "show", direction.rawValue,
                expected: "engine at \(wire)/\(interface), limit \(limit)" + (wantsDNS ? " + dns" : ""),
                measured: site.map { "\($0.stages.map(\.kind).joined(separator: "+")) at \($0.site.namespace)/\($0.site.interface): "
                    + ($0.stages.map { $0.text ?? "-" }.joined(separator: " | ")) } ?? "no site",
                "EngineBackend.installed() does not describe the profile", file: file, line: line)
        }
        try checkEngineCounters(measured, table, step: step, file: file, line: line)
    }

    /// Every direction's counters account for every frame the engine was offered: offered + duplicated =
    /// passed + lost + queue-dropped + backlog (DirectionCounters' invariant), read from the engine itself.
    func checkEngineCounters(
        _ measured: MeasuredSandbox, _ table: MeasurementTable, step: String = "", file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let witness = try EngineWitness.show(measured.engineSocket)
        for direction in [LinkMeasurement.Direction.uplink, .downlink] {
            let held = witness.direction(direction)
            let lateness = held.latenessMedian.map { median in
                " (departures late by \(MeasureFormat.ms(Double(median) / 1e9)) median, \(MeasureFormat.ms(Double(held.latenessP99 ?? 0) / 1e9)) p99)"
            } ?? ""
            table.check(
                held.counters.isBalanced, (step.isEmpty ? "" : step + " ") + "counters", direction.rawValue,
                expected: "offered = passed + lost + queued + held", measured: held.counters.description + lateness,
                "the engine's counters lose frames", file: file, line: line)
        }
    }

    // MARK: round trips

    /// Measures round trips and compares them with the profile: the delays of both directions plus the probe's
    /// serialization at each rate, on top of the unconditioned baseline, with the allowance the controls
    /// measured beside the probes (``RoundTripAllowance``). Returns the median (nil: no answers).
    @discardableResult
    func checkRoundTrips(
        _ profile: Profile, _ measured: MeasuredSandbox, _ baseline: MeasuredBaseline, _ table: MeasurementTable, step: String = "",
        file: StaticString = #filePath, line: UInt = #line
    ) throws -> Double? {
        let name = (step.isEmpty ? "" : step + " ") + "round trip"
        let up = DirectionModel(.uplink, of: profile)
        let down = DirectionModel(.downlink, of: profile)
        let measurement = measured.measurement
        if (up.expectedLoss ?? 0) >= 1 || (down.expectedLoss ?? 0) >= 1 {
            let result = try measurement.roundTrips(count: 3, timeout: 1)
            table.check(
                result.samples.isEmpty, name, "both", expected: "no answer", measured: "\(result.samples.count)/\(result.sent) answered",
                "a profile that loses everything answered a probe", file: file, line: line)
            return nil
        }
        let probe = wireBytes(payload: RoundTripTolerance.payload)
        let floor = up.delay + down.delay + up.probeSerialization(probe, for: measured.kind) + down.probeSerialization(probe, for: measured.kind)
        let expected = floor + baseline.roundTripMedian
        let jittered = up.conditions.jitter > 0 || down.conditions.jitter > 0
        let deviations = [up.delayDeviation, down.delayDeviation]
        let sigma: Double? = deviations.contains { $0 == nil } ? nil : deviations.reduce(0) { $0 + $1! * $1! }.squareRoot()
        // The spread the draws really have with this backend: the engine's delay correlation narrows it,
        // netem's does not (see DirectionModel.delayDeviation(for:)).
        let narrowed = [up.delayDeviation(for: measured.kind), down.delayDeviation(for: measured.kind)]
        let correlatedSigma: Double? = narrowed.contains { $0 == nil } ? nil : narrowed.reduce(0) { $0 + $1! * $1! }.squareRoot()
        let wanted = jittered ? RoundTripTolerance.jitteredProbes : RoundTripTolerance.probes
        let timeout = floor + 6 * (up.jitter + down.jitter) + 0.5
        // The engine's ordered jitter wanders smoothly in time: probes sent one right after another see
        // nearly the same delays (0.8 apart by one round trip for lossy's 172 ms correlation length), and 60
        // of them are worth a handful of independent draws. They are sent a correlation length apart
        // (correlation 0.48), and the bands below count what they are worth.
        let correlationLength = [up.correlationLength(for: measured.kind), down.correlationLength(for: measured.kind)].compactMap { $0 }.max()
        let started = MonotonicClock.seconds()
        let ((samples, sent), timers) = try TimerLatenessControl.during { () throws -> ([Double], Int) in
            var samples: [Double] = []
            var sent = 0
            while samples.count < wanted && sent < 3 * wanted {
                if let correlationLength {
                    let probeStarted = MonotonicClock.seconds()
                    let batch = try measurement.roundTrips(count: 1, timeout: timeout)
                    samples += batch.samples
                    sent += batch.sent
                    let rest = correlationLength - (MonotonicClock.seconds() - probeStarted)
                    if rest > 0 { Thread.sleep(forTimeInterval: rest) }
                } else {
                    let batch = try measurement.roundTrips(count: wanted - samples.count, timeout: timeout)
                    samples += batch.samples
                    sent += batch.sent
                }
            }
            return (samples, sent)
        }
        // What the samples are worth: n (1 − r)/(1 + r) for the correlation r of two successive round trips
        // (each the sum of the two directions' delays, drawn a spacing apart; AR(1)'s formula, which the
        // Matérn process's faster decay beyond one lag makes conservative); n where draws are independent.
        let spacing = (MonotonicClock.seconds() - started) / Double(max(sent, 1))
        let upVariance = pow(up.delayDeviation ?? 0, 2)
        let downVariance = pow(down.delayDeviation ?? 0, 2)
        let successive = upVariance + downVariance > 0
            ? (upVariance * up.delayCorrelation(after: spacing, for: measured.kind)
                + downVariance * down.delayCorrelation(after: spacing, for: measured.kind)) / (upVariance + downVariance)
            : 0
        let worth = Double(samples.count) * (1 - successive) / (1 + successive)
        guard samples.count >= 3 else {
            table.check(false, name, "both", expected: MeasureFormat.ms(expected), measured: "\(samples.count)/\(sent) answered", "too few answers",
                        file: file, line: line)
            return nil
        }
        let allowance = try RoundTripAllowance(measured, baseline, timers: timers)
        let late = allowance.seconds + RoundTripTolerance.relativeNoise * floor
        let sorted = samples.sorted()
        let median = sorted[sorted.count / 2]
        let mean = samples.reduce(0, +) / Double(samples.count)
        let deviation = (samples.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(samples.count - 1)).squareRoot()
        let answered = "\(samples.count)/\(sent)"
        if !jittered {
            // Catches a delay that is not applied, applied twice or in the wrong unit, and serialization
            // at the wrong rate: early is impossible on any machine, and late is bounded by what the
            // machine's timers did meanwhile.
            let upper = expected + late
            table.check(
                sorted[0] >= floor - RoundTripTolerance.early && median <= upper, name, "both",
                expected: "\(MeasureFormat.ms(expected)) (-\(MeasureFormat.ms(expected - floor + RoundTripTolerance.early)) +\(MeasureFormat.ms(late)))",
                measured: "median \(MeasureFormat.ms(median)), min \(MeasureFormat.ms(sorted[0])) (\(answered))",
                "a fixed delay: no probe may come back before \(MeasureFormat.ms(floor)), the median no later than \(MeasureFormat.ms(upper)) "
                    + "(allowance: \(allowance.text))",
                file: file, line: line)
        } else if let sigma, let correlatedSigma {
            // The median of n samples has a standard error of about 1.2533 σ/√n; the machine may add what the
            // controls measured on top. The band takes σ without the correlation: for the engine, wider than
            // its narrowed σ, which more than covers what its correlated successive draws add to the median's
            // error (√((1+r)/(1−r)) for their lag-one correlation r: about 1.33 for the catalog's 25%, where σ
            // without the correlation is 1.5 times the narrowed one); netem's draws are hardly correlated.
            let spread = z999 * 1.2533 * sigma / worth.squareRoot()
            let lower = expected - spread - RoundTripTolerance.early
            let upper = expected + spread + late
            table.check(
                median >= lower && median <= upper, name, "both",
                expected: "\(MeasureFormat.ms(expected)) (-\(MeasureFormat.ms(expected - lower)) +\(MeasureFormat.ms(upper - expected)))",
                measured: "median \(MeasureFormat.ms(median)) (\(answered))",
                "the median is outside the 99.9% band (allowance for the machine: \(allowance.text))", file: file, line: line)
            // The spread, as the distance between the 10th and 90th percentiles (a robust statistic: a stall of
            // the machine that holds up a few probes moves it hardly at all, where it moved σ from 18 to 34 ms
            // once, with the VM tier running beside), against the same distance of the model's draws. Of 60
            // probes the sample distance has a standard error of about 12% of it, 15% with the engine's
            // correlated draws: ×0.5…×1.5 is its 99.9% band, and catches jitter that is not applied or applied
            // in the wrong unit or twice.
            // With fewer independent samples (the engine's ordered jitter) the band is the 99.9% band of
            // what they are worth: the distance's standard error is 0.89/√n of it for normal draws.
            let narrowedByCorrelation = correlatedSigma < sigma
            if let model = CorrelatedQuantiles.interDecileRange([up, down], kind: measured.kind) {
                let spreadMeasured = Samples(samples)
                let range = spreadMeasured.quantile(0.9) - spreadMeasured.quantile(0.1)
                let band = max(0.5, z999 * 0.89 / worth.squareRoot())
                table.check(
                    range >= (1 - band) * model && range <= (1 + band) * model, (step.isEmpty ? "" : step + " ") + "jitter", "both",
                    expected: "p90 − p10 \(MeasureFormat.ms(model)) (×\(String(format: "%.2f", 1 - band))…×\(String(format: "%.2f", 1 + band)), "
                        + "\(String(format: "%.0f", worth)) independent samples)"
                        + (narrowedByCorrelation ? " (narrowed by the correlation)" : ""),
                    measured: "p90 − p10 \(MeasureFormat.ms(range)) (σ \(MeasureFormat.ms(deviation)))",
                    "the spread of the round trips does not match the profile's jitter", file: file, line: line)
            }
        } else {
            table.add(name, "both", expected: "≥ \(MeasureFormat.ms(floor - up.jitter - down.jitter)) (pareto: not predicted)",
                      measured: "median \(MeasureFormat.ms(median)) (\(answered))", verdict: "info")
        }
        return median
    }

    // MARK: loss

    /// What one loss stream sent and what arrived (each datagram counted once, by its number).
    struct StreamCount {
        var sent: Int
        var received: Int
    }

    /// Sends `plan.count` numbered datagrams `plan.direction`-wise at the plan's pace, never faster (a sender
    /// that stalled lets its schedule slip rather than burst: a burst would fill the backend's queue, and
    /// its tail drops are not the loss being measured), and counts what arrives.
    static func lossStream(_ plan: LossPlan, _ measurement: LinkMeasurement) throws -> StreamCount {
        let (from, fromAddress, to, toAddress) = Self.ends(plan.direction, measurement)
        var stream = NumberedDatagrams(count: plan.count, payload: LossTolerance.payload, interval: plan.interval)
        stream.catchUp = false
        let outcome = try stream.run(from: from, fromAddress, to: to, toAddress, drain: plan.drain)
        return StreamCount(sent: outcome.sent, received: Set(outcome.arrivals.map(\.sequence)).count)
    }

    /// Sends a paced stream each way at once and compares the share that does not arrive with the profile.
    /// Datagrams the receiving socket dropped for want of buffer space (the reader falling behind) are
    /// counted apart: they crossed the link.
    @discardableResult
    func checkLoss(
        _ profile: Profile, _ measured: MeasuredSandbox, _ table: MeasurementTable, file: StaticString = #filePath, line: UInt = #line
    ) throws -> [LinkMeasurement.Direction: LossCount] {
        var counts: [LinkMeasurement.Direction: LossCount] = [:]
        let plans = [LossPlan(DirectionModel(.uplink, of: profile)), LossPlan(DirectionModel(.downlink, of: profile))]
        let receivers = [measured.measurement.server, measured.measurement.client]
        let before = try receivers.map(UDPCounters.read)
        let engineBefore = measured.kind == .userspace ? try EngineWitness.show(measured.engineSocket) : nil
        let (upPlan, measurement) = (plans[0], measured.measurement)
        let (up, down) = try inParallel({ try Self.lossStream(upPlan, measurement) }, { try Self.lossStream(plans[1], measurement) })
        let after = try receivers.map(UDPCounters.read)
        let engineAfter = measured.kind == .userspace ? try EngineWitness.show(measured.engineSocket) : nil
        for (index, delivery) in [up, down].enumerated() {
            let plan = plans[index]
            let direction = plan.direction.rawValue
            let socketDrops = after[index].receiveBufferErrors - before[index].receiveBufferErrors
            // Frames the kernel dropped before the engine read them: the engine fell behind (counted, never
            // silent). Its ring holds a second of this stream (2048 frames at 2000 a second at most), so
            // none may be dropped: only an engine that reads far too slowly, or a thread that stalls for a
            // second, overruns it. The model's loss is judged on the frames it read.
            var overruns = 0
            if let engineBefore, let engineAfter {
                overruns = engineAfter.direction(plan.direction).receiveOverruns - engineBefore.direction(plan.direction).receiveOverruns
                table.check(
                    overruns == 0, "overruns", direction, expected: "0",
                    measured: "\(overruns) frames dropped before the engine read them", "the engine fell behind the sender",
                    file: file, line: line)
                overruns = max(0, overruns)
            }
            let read = delivery.sent - overruns
            let lost = delivery.sent - delivery.received - socketDrops - overruns
            counts[plan.direction] = LossCount(lost: lost, read: read)
            let fraction = read <= 0 ? 1 : Double(lost) / Double(read)
            var measuredText = "\(MeasureFormat.percent(fraction)) (\(lost)/\(read) lost"
            measuredText += socketDrops > 0 ? ", \(socketDrops) socket drops" : ""
            measuredText += overruns > 0 ? ", \(overruns) of \(delivery.sent) sent not read: receive overruns)" : ")"
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
                // The bound is the plan's (for N sent); with overruns fewer were read, so it widens by √(N/read).
                let bound = plan.bound * (Double(plan.count) / Double(max(1, read))).squareRoot()
                table.check(
                    abs(fraction - p) <= bound && delivery.sent == plan.count, "loss", direction,
                    expected: "\(MeasureFormat.percent(p)) ± \(String(format: "%.2f", bound * 100)) (N=\(read))",
                    measured: measuredText, "outside the 99.9% binomial bound" + (plan.correlated
                        ? " (netem's 'loss random P CORR' compares P with a correlated random number whose spread shrinks "
                            + "with CORR, so it drops far less than P; the equivalent Gilbert model keeps the mean)" : ""),
                    file: file, line: line)
            }
            if let engineBefore, let engineAfter {
                // The engine saw every datagram sent (nothing vanished on the way into the wire), and what it
                // dropped is what did not arrive: its lost and queue-dropped counters grew by the datagrams
                // lost, give or take the other frames it was offered meanwhile (ARP, neighbour discovery).
                let delta = engineAfter.direction(plan.direction).counters - engineBefore.direction(plan.direction).counters
                let others = delta.offered - read
                let dropped = delta.lost + delta.queueDropped
                let counted = "lost \(delta.lost), queue-dropped \(delta.queueDropped) of \(delta.offered) offered"
                if let p = plan.expected, p >= 1 {
                    // A link that loses everything loses the neighbour's answers too: once the sender's
                    // neighbour entry for the far end has expired (a slow guest takes long enough), the kernel
                    // queues the datagrams behind its own solicitations and drops them, and only the
                    // solicitations reach the wire. So: all the engine was offered, it dropped.
                    table.check(
                        delta.offered > 0 && dropped == delta.offered, "engine lost", direction,
                        expected: "all it was offered (\(read) sent; fewer offered when neighbour resolution fails)",
                        measured: counted,
                        "the engine passed frames on a link that loses everything", file: file, line: line)
                } else {
                    table.check(
                        others >= 0 && dropped >= lost && dropped <= lost + others, "engine lost", direction,
                        expected: "\(lost) (+ up to the \(max(others, 0)) other frames)",
                        measured: counted,
                        "the engine's counters do not account for the datagrams that did not arrive", file: file, line: line)
                }
            }
        }
        return counts
    }

    // MARK: throughput

    /// One paced run of full-size numbered datagrams (``NumberedDatagrams``: the sender's send times in the
    /// datagrams, the kernel's receive stamps at the far end, so no reader's scheduling is in either), with
    /// the receiver's socket drops.
    struct ThroughputRun {
        var sent: Int
        var received: Int
        /// Bits per second the link delivered, and the sender offered, over the same datagrams: those that
        /// arrived between the shares ``ThroughputTolerance/trim`` and 1 − trim of the stream (nil below 20).
        var delivered: Double?
        var offered: Double?
        var span: Double
        var socketDrops: Int

        var text: String {
            guard let delivered, let offered else { return "\(received)/\(sent) arrived" }
            return "\(MeasureFormat.rate(delivered)) of \(MeasureFormat.rate(offered)) offered (\(received)/\(sent), "
                + String(format: "%.2f s", span) + (socketDrops > 0 ? ", \(socketDrops) socket drops)" : ")")
        }
    }

    /// The sender and the receiver of a stream in `direction` over the measured link (a sandbox's client and
    /// server, or an attachment's target and the far end).
    static func ends(
        _ direction: LinkMeasurement.Direction, _ measurement: LinkMeasurement
    ) -> (NamedNamespace, IPAddress, NamedNamespace, IPAddress) {
        let (client, server) = ((measurement.client, measurement.clientAddress), (measurement.server, measurement.serverAddress))
        return direction == .uplink ? (client.0, client.1, server.0, server.1) : (server.0, server.1, client.0, client.1)
    }

    static func throughputRun(_ plan: ThroughputPlan, _ measurement: LinkMeasurement) throws -> ThroughputRun {
        let (from, fromAddress, to, toAddress) = Self.ends(plan.direction, measurement)
        let before = try UDPCounters.read(to)
        var stream = NumberedDatagrams(count: plan.count, payload: ThroughputTolerance.payload, interval: plan.interval)
        stream.receiveBuffer = 64 << 20
        let outcome = try stream.run(from: from, fromAddress, to: to, toAddress, drain: plan.drain)
        let socketDrops = try UDPCounters.read(to).receiveBufferErrors - before.receiveBufferErrors
        let arrivals = outcome.arrivals.sorted { $0.received < $1.received }
        var run = ThroughputRun(sent: outcome.sent, received: arrivals.count, span: 0, socketDrops: socketDrops)
        guard arrivals.count >= 20 else { return run }
        let first = arrivals[Int(ThroughputTolerance.trim * Double(arrivals.count))]
        let last = arrivals[Int((1 - ThroughputTolerance.trim) * Double(arrivals.count))]
        let bits = Double(wireBytes(payload: ThroughputTolerance.payload) * 8)
        let arrived = Double(arrivals.filter { $0.received > first.received && $0.received <= last.received }.count)
        run.span = Double(last.received - first.received) / 1e9
        run.delivered = run.span > 0 ? arrived * bits / run.span : nil
        // What the sender put on the wire meanwhile: the datagrams numbered from the first to the last, lost
        // ones included, over the time between sending those two.
        let sending = Double(last.sent - first.sent) / 1e9
        run.offered = sending > 0 ? Double(last.sequence - first.sequence) * bits / sending : nil
        return run
    }

    /// Sends full-size datagrams slightly faster than the rate for about 2.5 s of link time and compares the
    /// rate that arrived with the profile's: never above 1.05 × rate (a link that is faster than its rate);
    /// at least 0.9 × what the link had to carry (a link that is slower than its rate), which is the rate
    /// itself, or less where the sender offered less after the profile's loss: the sender's pace is the
    /// control, measured in the same run (a busy machine or a TCG guest paces a sender late, and then no
    /// link can deliver the rate). A run that falls short is run once more and the better run judged (a
    /// stall only ever slows a run down); the upper bound holds for every run. Not judged where the
    /// receiver's socket dropped datagrams (the reader, not the link, fell behind).
    func checkThroughput(
        _ profile: Profile, _ measured: MeasuredSandbox, _ table: MeasurementTable, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let models = [DirectionModel(.uplink, of: profile), DirectionModel(.downlink, of: profile)]
        let plans: [ThroughputPlan?] = models.map { ThroughputPlan($0) }
        for (model, plan) in zip(models, plans) where plan == nil {
            let reason = model.rate == nil ? "unlimited: not measured" : "nothing crosses: not measured"
            table.add("throughput", model.direction.rawValue, expected: reason, measured: "-", verdict: "info")
        }
        let active = plans.compactMap { $0 }
        guard !active.isEmpty else { return }
        var runs: [ThroughputRun]
        if active.count == 2 && active.reduce(0, { $0 + $1.rate }) <= ThroughputTolerance.parallelLimit {
            let first = active[0]
            let measurement = measured.measurement
            let (a, b) = try inParallel({ try Self.throughputRun(first, measurement) }, { try Self.throughputRun(active[1], measurement) })
            runs = [a, b]
        } else {
            runs = try active.map { try Self.throughputRun($0, measured.measurement) }
        }
        for (index, plan) in active.enumerated() {
            let direction = plan.direction.rawValue
            let upper = ThroughputTolerance.upperFactor * plan.rate
            /// Checks the upper bound on one run; returns whether it had enough arrivals to judge.
            func checkUpper(_ run: ThroughputRun, _ label: String) -> Bool {
                guard let delivered = run.delivered, run.offered != nil else {
                    table.check(false, label, direction, expected: MeasureFormat.rate(plan.rate), measured: run.text,
                                "too few packets arrived to measure a rate", file: file, line: line)
                    return false
                }
                table.check(
                    delivered <= upper, label, direction, expected: "≤ \(MeasureFormat.rate(upper)) (rate \(MeasureFormat.rate(plan.rate)))",
                    measured: run.text, "faster than the profile's rate", file: file, line: line)
                return true
            }
            /// What the link had to carry in `run`: the rate, or what the sender offered after the loss.
            func carried(_ run: ThroughputRun) -> Double { min(plan.rate, (run.offered ?? 0) * (1 - plan.loss)) }
            var run = runs[index]
            guard checkUpper(run, "throughput") else { continue }
            guard run.socketDrops == 0 else {
                table.add("throughput", direction, expected: "≥ 0.9 × what it carried: not judged",
                          measured: "the reader fell behind (\(run.socketDrops) socket drops)", verdict: "note")
                continue
            }
            var text = run.text
            if run.delivered! < ThroughputTolerance.lowerFactor * carried(run) {
                let retry = try Self.throughputRun(plan, measured.measurement)
                if checkUpper(retry, "throughput 2"), retry.socketDrops == 0 {
                    text += "; then \(retry.text)"
                    if retry.delivered! / carried(retry) > run.delivered! / carried(run) { run = retry }
                }
            }
            let lower = ThroughputTolerance.lowerFactor * carried(run)
            let limitedBySender = carried(run) < plan.rate
            table.check(
                run.delivered! >= lower, "throughput", direction,
                expected: "≥ \(MeasureFormat.rate(lower)) (0.9 × " + (limitedBySender ? "the offered rate after loss)" : "rate)"),
                measured: text,
                "slower than the profile's rate" + (limitedBySender ? ", or than what the sender offered" : ""), file: file, line: line)
        }
    }

    /// Applies a catalog profile to a fresh sandbox and checks everything: tc read-back, round trip, loss and
    /// throughput each way. Prints the measurement table. Measured again when it fails while the machine stalled
    /// (``measuredAgainIfTheMachineStalled(attempts:_:)``).
    func measureProfile(named name: String, file: StaticString = #filePath, line: UInt = #line) throws {
        try measuredAgainIfTheMachineStalled {
            _ = try measureProfile(try catalog().profile(named: name), file: file, line: line)
        }
    }

    /// ``measureProfile(named:file:line:)`` for a profile made in code, on this class's backend or `kind`;
    /// returns the numbers a comparison of backends needs.
    @discardableResult
    func measureProfile(
        _ profile: Profile, kind: BackendKind? = nil, file: StaticString = #filePath, line: UInt = #line
    ) throws -> ProfileMeasurement {
        let measured = try makeMeasuredSandbox(kind: kind)
        let baseline = try baseline(measured)
        let measurement = try measure(profile, on: measured, baseline: baseline, file: file, line: line)
        XCTAssertTrue(try measured.sandbox.down(), file: file, line: line)
        return measurement
    }

    /// Applies `profile` on `measured` (a sandbox, or an attachment's link) and checks everything: the
    /// read-back, the round trip, loss and throughput each way. Prints the measurement table.
    @discardableResult
    func measure(
        _ profile: Profile, on measured: MeasuredSandbox, baseline: MeasuredBaseline, title: String? = nil,
        file: StaticString = #filePath, line: UInt = #line
    ) throws -> ProfileMeasurement {
        let table = MeasurementTable(measured.kind, title ?? "profile \(profile.name)")
        defer { table.print() }
        let unmodelled = DirectionModel(.uplink, of: profile).unmodelled + DirectionModel(.downlink, of: profile).unmodelled
        if !unmodelled.isEmpty {
            table.add("note", "both", expected: "not modelled: \(Set(unmodelled).sorted().joined(separator: ", "))",
                      measured: "loss/throughput approximate", verdict: "note")
        }
        let report = try measured.backend.apply(profile, links: nil)
        table.add("apply", "both", expected: "\(report.sites.count) sites", measured: String(format: "%d requests, %.0f ms", report.requests, report.duration * 1000),
                  verdict: "info")
        try checkReadBack(profile, measured, table, file: file, line: line)
        let roundTrip = try checkRoundTrips(profile, measured, baseline, table, file: file, line: line)
        let loss = try checkLoss(profile, measured, table, file: file, line: line)
        try checkThroughput(profile, measured, table, file: file, line: line)
        if measured.kind == .userspace {
            // After everything has drained: nothing held, and every frame of the whole run accounted for.
            try checkEngineCounters(measured, table, step: "end", file: file, line: line)
        }
        return ProfileMeasurement(kind: measured.kind, baseline: baseline, roundTripMedian: roundTrip, loss: loss)
    }
}

extension ExpectedNetem {
    /// The profile's side, in the form of ``summary(_:)``.
    var summary: String {
        var words: [String] = []
        let delay = Double(conditions.delay + extraDelay) / 1e9
        let jitter = Double(conditions.jitter) / 1e9
        if delay > 0 || jitter > 0 { words.append(jitter > 0 ? "\(MeasureFormat.ms(delay))±\(MeasureFormat.ms(jitter))" : MeasureFormat.ms(delay)) }
        if case let .random(probability, correlation)? = conditions.loss, probability > 0 {
            words.append("loss \(MeasureFormat.percent(probability))" + (correlation > 0 ? " corr \(MeasureFormat.percent(correlation))" : ""))
        }
        if case let .gilbertElliott(p, r, _, _)? = conditions.loss {
            words.append("gemodel p \(MeasureFormat.percent(p)) r \(MeasureFormat.percent(r))")
        }
        if let rate = conditions.rate, stackedBytes == nil { words.append(MeasureFormat.rate(Double(rate))) }
        words.append("limit \(limit)")
        return words.joined(separator: " ")
    }
}

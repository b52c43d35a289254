import Timeline

/// Constructed runs for the report tests. Everything is deterministic (no clocks, no randomness), so the
/// snapshots of these reports are stable.
enum ReportFixtures {
    static func ns(_ seconds: Double) -> UInt64 { UInt64((seconds * 1e9).rounded()) }

    /// A small deterministic generator (64-bit LCG) for "noisy" RTTs.
    struct Noise {
        var state: UInt64
        mutating func next() -> Double {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Double(state >> 11) / Double(1 << 53)
        }
    }

    static func conditions(_ t: Double, _ state: String, profile: String?, action: String) -> TimelineEvent {
        var details: [String: TimelineValue] = ["action": .string(action), "netlinkMs": .number(3.4), "requests": .number(4)]
        details["profile"] = profile.map { .string($0) } ?? .null
        return TimelineEvent(t: ns(t), lane: .conditions, kind: TimelineKind.conditionsChanged, summary: "\(action): \(state) on the wire", state: state, details: details)
    }

    static func path(_ t: Double, _ state: String, baseline: Bool = false, interfaces: String = "wl0", expensive: Bool = false) -> TimelineEvent {
        TimelineEvent(
            t: ns(t), lane: .path, kind: TimelineKind.pathUpdate, summary: "path \(state) (\(interfaces))", state: state,
            details: [
                "reason": .null, "interfaces": .string(interfaces), "expensive": .bool(expensive), "constrained": .bool(false),
                "ipv4": .bool(true), "ipv6": .bool(true), "dns": .bool(true), "baseline": .bool(baseline), "latencyMs": .number(0.4),
            ])
    }

    static func reachability(_ t: Double, _ state: String, previous: String, quality: String, rttMs: Double?, loss: Double) -> TimelineEvent {
        TimelineEvent(
            t: ns(t), lane: .reachability, kind: TimelineKind.reachabilityUpdate, summary: "reachability \(previous) → \(state)", state: state,
            details: [
                "previous": .string(previous), "quality": .string(quality), "rttMs": rttMs.map { .number($0) } ?? .null, "loss": .number(loss),
            ])
    }

    static func sample(_ t: Double, rttMs: Double?, probe: String = "http") -> TimelineEvent {
        let summary = rttMs.map { "\(probe) probe: \(Int($0)) ms" } ?? "\(probe) probe timed out"
        return TimelineEvent(
            t: ns(t), lane: .reachability, kind: TimelineKind.sample, summary: summary,
            details: ["rttMs": rttMs.map { .number($0) } ?? .null, "success": .bool(rttMs != nil), "probe": .string(probe)])
    }

    static func app(_ t: Double, _ summary: String, state: String? = nil) -> TimelineEvent {
        var details: [String: TimelineValue] = ["message": .string(summary)]
        if let state { details["state"] = .string(state) }
        return TimelineEvent(t: ns(t), lane: .app, kind: TimelineKind.appLine, summary: summary, state: state, details: details)
    }

    static func scenario(_ t: Double, _ kind: String, _ summary: String, state: String? = nil, details: [String: TimelineValue] = [:]) -> TimelineEvent {
        TimelineEvent(t: ns(t), lane: .scenario, kind: kind, summary: summary, state: state, details: details)
    }

    /// The "tunnel" run: LTE → 100 % loss → 3G → LTE. The path stays satisfied throughout; reachability goes
    /// offline ~6 s into the loss and comes back ~3 s after 3G; RTTs around 60–130 ms; an app prints a few lines.
    static func tunnel() -> RunReport {
        let steps = [
            StepRecord(name: "lte", action: "apply lte", start: ns(0.010), end: ns(8.0)),
            StepRecord(name: "tunnel", action: "apply 100-loss", start: ns(8.0), end: ns(20.0)),
            StepRecord(name: "exit-3g", action: "apply 3g", start: ns(20.0), end: ns(30.0)),
            StepRecord(name: "back-to-lte", action: "apply lte", start: ns(30.0), end: ns(40.0)),
        ]
        var events: [TimelineEvent] = [
            scenario(0.0, TimelineKind.runStarted, "run 'tunnel' started in sandbox lc"),
            scenario(0.010, TimelineKind.stepStarted, "step 'lte': apply lte", state: "lte", details: ["action": .string("apply lte")]),
            conditions(0.052, "lte", profile: "lte", action: "apply lte"),
            path(0.061, "satisfied", baseline: true),
            reachability(0.930, "online", previous: "unknown", quality: "good", rttMs: 64, loss: 0),
            app(1.200, "connected to api", state: "online"),
            scenario(8.0, TimelineKind.stepFinished, "step 'lte' finished"),
            scenario(8.0, TimelineKind.stepStarted, "step 'tunnel': apply 100-loss", state: "tunnel", details: ["action": .string("apply 100-loss")]),
            conditions(8.041, "100-loss", profile: "100-loss", action: "apply 100-loss"),
            app(10.400, "request timed out after 2 s"),
            app(12.600, "request timed out after 2 s"),
            reachability(14.102, "offline", previous: "online", quality: "minimal", rttMs: nil, loss: 1),
            scenario(14.102, TimelineKind.expectation, "offline-in-tunnel passed", details: ["name": .string("offline-in-tunnel"), "passed": .bool(true), "evidence": .string("offline at 14.102 s, 6.102 s after 'tunnel' started")]),
            app(15.000, "giving up, showing offline banner", state: "offline"),
            scenario(20.0, TimelineKind.stepFinished, "step 'tunnel' finished"),
            scenario(20.0, TimelineKind.expectation, "path-stays-satisfied passed", details: ["name": .string("path-stays-satisfied"), "passed": .bool(true), "evidence": .string("path satisfied throughout 'tunnel' (8.000 s – 20.000 s)")]),
            scenario(20.0, TimelineKind.stepStarted, "step 'exit-3g': apply 3g", state: "exit-3g", details: ["action": .string("apply 3g")]),
            conditions(20.036, "3g", profile: "3g", action: "apply 3g"),
            reachability(23.108, "online", previous: "offline", quality: "moderate", rttMs: 121, loss: 0.2),
            scenario(22.5, TimelineKind.expectation, "online-after-3g failed", details: ["name": .string("online-after-3g"), "passed": .bool(false), "evidence": .string("still offline at 22.500 s")]),
            app(24.450, "retry succeeded", state: "online"),
            app(25.100, "synced 12 items"),
            scenario(30.0, TimelineKind.stepFinished, "step 'exit-3g' finished"),
            scenario(30.0, TimelineKind.stepStarted, "step 'back-to-lte': apply lte", state: "back-to-lte", details: ["action": .string("apply lte")]),
            conditions(30.044, "lte", profile: "lte", action: "apply lte"),
            scenario(40.0, TimelineKind.stepFinished, "step 'back-to-lte' finished"),
            scenario(40.0, TimelineKind.runFinished, "run finished: 1 of 3 expectations failed"),
        ]
        // Probes: HTTP every second, DNS every two seconds; during the loss they time out and back off.
        var noise = Noise(state: 42)
        var t = 0.5
        while t < 40 {
            let rtt: Double?
            switch t {
            case ..<8.041: rtt = 58 + noise.next() * 22
            case ..<20.036: rtt = nil
            case ..<30.044: rtt = 108 + noise.next() * 24
            default: rtt = 58 + noise.next() * 22
            }
            // Probes answered by the 3G link in its first three seconds still time out (queues draining).
            let answered = t >= 20.036 && t < 22.9 ? nil : rtt
            events.append(sample(t, rttMs: answered.map { ($0 * 10).rounded() / 10 }, probe: "http"))
            if Int(t) % 2 == 0, t > 1 {
                events.append(sample(t + 0.13, rttMs: answered.map { (($0 - 9) * 10).rounded() / 10 }, probe: "dns"))
            }
            // Back off while nothing answers.
            t += (t >= 14.1 && t < 20.036) ? 2.0 : 1.0
        }
        events.sort { $0.t < $1.t }
        let expectations = [
            ExpectationResult(
                name: "offline-in-tunnel", rule: "reachability reaches offline within 8 s of step 'tunnel'", lane: .reachability,
                passed: true, evidence: "offline at 14.102 s, 6.102 s after 'tunnel' started", measured: 6.102, limit: 8,
                at: 14.102, step: "tunnel", holds: false),
            ExpectationResult(
                name: "path-stays-satisfied", rule: "path stays satisfied during step 'tunnel'", lane: .path, passed: true,
                evidence: "path satisfied throughout 'tunnel' (8.000 s – 20.000 s)", at: 20, step: "tunnel", holds: true),
            ExpectationResult(
                name: "online-after-3g", rule: "reachability reaches online within 2.5 s of step 'exit-3g'", lane: .reachability,
                passed: false, evidence: "online at 23.108 s, 3.108 s after 'exit-3g' started (limit 2.500 s)", measured: 3.108, limit: 2.5,
                at: 22.5, step: "exit-3g", holds: false),
        ]
        let metadata = RunMetadata(
            name: "tunnel", description: "Drive into a tunnel: LTE, then 100 % loss for 12 s, out on 3G, back to LTE.",
            sandbox: "lc", startedAt: "2025-03-14T09:26:53Z", duration: ns(40.0), steps: steps, observeCommand: "./demo-app --json")
        return RunReport(metadata: metadata, events: events, expectations: expectations)
    }

    /// Strings that break naive writers.
    static let hostile = "<script>alert(\"x&y\")</script> 'q' | a]]>b"

    /// A run in which every string a writer shows is hostile.
    static func hostileReport() -> RunReport {
        let h = hostile
        let steps = [StepRecord(name: "step " + h, action: "apply " + h, start: 0, end: ns(10))]
        let events: [TimelineEvent] = [
            TimelineEvent(
                t: ns(0.1), lane: .conditions, kind: TimelineKind.conditionsChanged, summary: "applied " + h, state: "prof " + h,
                details: ["profile": .string("prof " + h), "action": .string("apply " + h)]),
            TimelineEvent(t: ns(0.2), lane: .path, kind: TimelineKind.pathUpdate, summary: h, state: "satisfied", details: ["baseline": .bool(true)]),
            TimelineEvent(t: ns(1), lane: .app, kind: TimelineKind.appLine, summary: "app " + h, state: "app " + h),
            TimelineEvent(t: ns(2), lane: .reachability, kind: TimelineKind.sample, summary: h, details: ["rttMs": .number(50), "success": .bool(true), "probe": .string("probe " + h)]),
            TimelineEvent(t: ns(3), lane: .path, kind: TimelineKind.pathUpdate, summary: h, state: "state " + h),
        ]
        let expectations = [
            ExpectationResult(name: "exp " + h, rule: "rule " + h, lane: .path, passed: false, evidence: "evidence " + h + "\nsecond line", measured: 1.5, limit: 1),
            ExpectationResult(name: "ok " + h, rule: "rule " + h, lane: .app, passed: true, evidence: "fine " + h),
        ]
        let metadata = RunMetadata(
            name: "name " + h, description: "description " + h, sandbox: "sb " + h, startedAt: "2025-01-01T00:00:00Z " + h,
            duration: ns(10), steps: steps, observeCommand: "cmd " + h)
        return RunReport(metadata: metadata, events: events, expectations: expectations)
    }

    /// A ten-minute run with `count` events: states flapping on every lane, probes several times a second.
    static func large(count: Int = 10_000) -> RunReport {
        let duration = 600.0
        var noise = Noise(state: 7)
        var events: [TimelineEvent] = []
        events.reserveCapacity(count)
        let profiles = ["lte", "3g", "edge", "100-loss", "lossy", "clear"]
        let stepCount = 20
        var steps: [StepRecord] = []
        for index in 0..<stepCount {
            let start = duration * Double(index) / Double(stepCount)
            steps.append(StepRecord(name: "step-\(index + 1)", action: "apply \(profiles[index % profiles.count])", start: ns(start), end: ns(start + duration / Double(stepCount))))
        }
        var index = 0
        while events.count < count {
            let t = duration * Double(index) / Double(count)
            switch index % 10 {
            case 0 where index % 500 == 0:
                events.append(conditions(t, profiles[(index / 500) % profiles.count], profile: profiles[(index / 500) % profiles.count], action: "apply"))
            case 1:
                events.append(path(t, noise.next() < 0.5 ? "satisfied" : (noise.next() < 0.5 ? "unsatisfied" : "requiresConnection")))
            case 2:
                let states = ["online", "offline", "limited", "portal"]
                events.append(reachability(t, states[Int(noise.next() * 4) % 4], previous: "online", quality: "good", rttMs: 60, loss: 0.1))
            case 3:
                events.append(app(t, "line \(index)", state: noise.next() < 0.5 ? "online" : "offline"))
            default:
                events.append(sample(t, rttMs: noise.next() < 0.1 ? nil : 40 + noise.next() * 400, probe: ["http", "dns", "tcp"][index % 3]))
            }
            index += 1
        }
        let expectations = (1...5).map {
            ExpectationResult(name: "expectation-\($0)", rule: "rule \($0)", lane: .reachability, passed: $0 != 3, evidence: "evidence \($0)")
        }
        let metadata = RunMetadata(name: "long", description: "ten minutes of flapping", sandbox: "lc", startedAt: "2025-03-14T10:00:00Z", duration: ns(duration), steps: steps)
        return RunReport(metadata: metadata, events: events, expectations: expectations)
    }

    // MARK: - Beyond the presets: scoped conditions, traces, address families, failed steps

    /// A conditions change with the optional details of scoped and trace-driven conditions.
    static func scopedConditions(
        _ t: Double, _ state: String, profile: String?, action: String, links: String? = nil, targets: String? = nil, backend: String? = nil,
        trace: (upMean: Double, downMean: Double, up: String, down: String)? = nil
    ) -> TimelineEvent {
        var event = conditions(t, state, profile: profile, action: action)
        if let links { event.details["links"] = .string(links) }
        if let targets { event.details["targets"] = .string(targets) }
        if let backend { event.details["backend"] = .string(backend) }
        if let trace {
            event.details["traceUplinkMeanBps"] = .number(trace.upMean)
            event.details["traceDownlinkMeanBps"] = .number(trace.downMean)
            event.details["traceUplinkRates"] = .string(trace.up)
            event.details["traceDownlinkRates"] = .string(trace.down)
        }
        return event
    }

    /// A reachability update with per-family states.
    static func familyUpdate(_ t: Double, _ state: String, previous: String, ipv4: String, ipv6: String, singleFamily: Bool) -> TimelineEvent {
        var event = reachability(t, state, previous: previous, quality: "good", rttMs: 60, loss: 0)
        event.details["ipv4"] = .string(ipv4)
        event.details["ipv6"] = .string(ipv6)
        event.details["singleFamily"] = .bool(singleFamily)
        event.summary = "reachability \(state) (IPv4 \(ipv4), IPv6 \(ipv6))"
        return event
    }

    /// LTE on wifi (netem), then a trace-driven walk on cellular for HTTPS and ICMPv6 only (userspace), then clear.
    /// The trace has four seconds per direction — uplink 1, 2, 3, 2 Mbit/s (mean 2), downlink 12, 8, 4, 10 Mbit/s
    /// (mean 8.5) — and loops from 10.020 s until the clear at 25 s.
    static func scopedTrace() -> RunReport {
        let steps = [
            StepRecord(name: "wifi-lte", action: "apply lte to wifi", start: 0, end: ns(10)),
            StepRecord(name: "cell-trace", action: "apply trace-walk to cellular", start: ns(10), end: ns(25)),
            StepRecord(name: "clear", action: "clear", start: ns(25), end: ns(30)),
        ]
        var events: [TimelineEvent] = [
            scenario(0, TimelineKind.stepStarted, "step 'wifi-lte': apply lte to wifi"),
            scopedConditions(0.05, "lte", profile: "lte", action: "apply lte", links: "wifi", backend: "netem"),
            path(0.06, "satisfied", baseline: true, interfaces: "wl0, ww0"),
            reachability(0.9, "online", previous: "unknown", quality: "good", rttMs: 61, loss: 0),
            scenario(10, TimelineKind.stepStarted, "step 'cell-trace': apply trace-walk to cellular"),
            scopedConditions(
                10.02, "trace-walk", profile: "trace-walk", action: "apply trace-walk", links: "cellular",
                targets: "tcp 198.19.0.0/24 port 443; icmp 2001:2::/48", backend: "userspace",
                trace: (2_000_000, 8_500_000, "1000000,2000000,3000000,2000000", "12000000,8000000,4000000,10000000")),
            scenario(25, TimelineKind.stepStarted, "step 'clear': clear"),
            scopedConditions(25, "clear", profile: nil, action: "clear", backend: "userspace"),
        ]
        for second in stride(from: 1.0, to: 30, by: 2) {
            events.append(sample(second, rttMs: second < 10 ? 60 + second : 95 + second))
        }
        events.sort { $0.t < $1.t }
        let metadata = RunMetadata(
            name: "cellular-trace", description: "A trace-driven walk on cellular for HTTPS while wifi stays on LTE.", sandbox: "lc",
            startedAt: "2025-03-14T11:00:00Z", duration: ns(30), steps: steps)
        return RunReport(metadata: metadata, events: events, expectations: [])
    }

    /// Dual stack: both families online; IPv6 goes offline at 5 s (online over IPv4 only until 12 s); both
    /// offline at 15 s; at 18 s online over IPv6 only, IPv4 behind a portal, until the end at 22 s.
    static func dualStack() -> RunReport {
        let steps = [
            StepRecord(name: "both", action: "wait", start: 0, end: ns(5)),
            StepRecord(name: "no-v6-route", action: "remove the IPv6 default route", start: ns(5), end: ns(12)),
            StepRecord(name: "restore", action: "restore the IPv6 default route", start: ns(12), end: ns(15)),
            StepRecord(name: "v4-portal", action: "captive portal on (IPv4)", start: ns(15), end: ns(22)),
        ]
        var events: [TimelineEvent] = [
            conditions(0.05, "clear", profile: nil, action: "clear"),
            path(0.06, "satisfied", baseline: true),
            familyUpdate(0.9, "online", previous: "unknown", ipv4: "online", ipv6: "online", singleFamily: false),
            conditions(5.0, "no IPv6 route", profile: nil, action: "remove the IPv6 default route"),
            familyUpdate(5.4, "online", previous: "online", ipv4: "online", ipv6: "offline", singleFamily: true),
            conditions(12.0, "clear", profile: nil, action: "restore the IPv6 default route"),
            familyUpdate(12.6, "online", previous: "online", ipv4: "online", ipv6: "online", singleFamily: false),
            conditions(15.0, "portal (IPv4)", profile: nil, action: "captive portal on (IPv4)"),
            familyUpdate(15.5, "offline", previous: "online", ipv4: "offline", ipv6: "offline", singleFamily: false),
            familyUpdate(18.0, "online", previous: "offline", ipv4: "portal", ipv6: "online", singleFamily: true),
        ]
        for second in stride(from: 1.0, to: 22, by: 1) {
            events.append(sample(second, rttMs: (15.5..<18).contains(second) ? nil : 50))
        }
        events.sort { $0.t < $1.t }
        let metadata = RunMetadata(
            name: "dual-stack", description: "IPv6 and IPv4 taken away one at a time.", sandbox: "lc", startedAt: "2025-03-14T12:00:00Z",
            duration: ns(22), steps: steps)
        return RunReport(metadata: metadata, events: events, expectations: [])
    }

    /// The tunnel run stopped at its second step: the kernel has no netem.
    static func failedStep() -> RunReport {
        var report = tunnel()
        report.metadata.duration = ns(8.1)
        report.metadata.steps = [report.metadata.steps[0], StepRecord(name: "tunnel", action: "apply 100-loss", start: ns(8), end: ns(8.1))]
        report.events = report.events.filter { $0.t <= ns(8.0) }
        report.events.append(
            scenario(8.041, TimelineKind.error, "step 'tunnel' failed", details: ["message": .string("Specified qdisc kind is unknown")]))
        report.expectations = []
        report.errors = [
            RunError(
                step: "tunnel", message: "cannot apply 100-loss on c-wl0: RTNETLINK answers: Specified qdisc kind is unknown <netem>",
                hint: "this kernel has no sch_netem: run `linkcond doctor`, or use --backend userspace", t: ns(8.041))
        ]
        return report
    }
}

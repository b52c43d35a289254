import CMnl
import Glibc
import Netlink
import RouteNetlink
import XCTest

/// The traffic-control requests — netem qdiscs, the prio qdisc that carries them, the u32 filters that
/// steer traffic into its bands — compared byte for byte with what `tc` (iproute2 6.1) sends for the same
/// command, as ``GoldenBytesTests`` does for links, addresses and routes.
///
/// Netem parameters are written here from the numbers in each fixture's `# command:` line: percentages
/// through ``NetemProbability/scaled(_:)`` (tc's `rint(fraction * UINT32_MAX)`), times in nanoseconds,
/// rates in bytes per second (tc's `kbit`/`mbit`/`gbit` are 1000-based bits), and tc's own defaults where
/// the command leaves a value out. Times go on the wire as packet-scheduler ticks, converted with the clock
/// recorded in the fixture's `# psched:` line, so a capture made on a kernel with another clock still
/// compares exactly.
final class TrafficControlGoldenTests: XCTestCase {
    typealias Case = GoldenCase

    static func percent(_ value: Double) -> UInt32 { NetemProbability.scaled(value / 100) }
    static let millisecond: UInt64 = 1_000_000
    static let second: UInt64 = 1_000_000_000
    static let root = TrafficControlHandle.root
    static let handle1 = TrafficControlHandle(major: 1, minor: 0)
    static let class1_2 = TrafficControlHandle(major: 1, minor: 2)

    /// One `tc qdisc replace … netem …` capture: where the qdisc goes and what the command asks for.
    struct NetemCase: Sendable {
        let command: String
        var parent: TrafficControlHandle = TrafficControlGoldenTests.root
        var handle: TrafficControlHandle = TrafficControlGoldenTests.handle1
        /// What linkcond sends for the command, in wire terms.
        let parameters: @Sendable () throws -> NetemParameters
    }

    static func netem(_ fill: (inout NetemParameters) -> Void) -> NetemParameters {
        var parameters = NetemParameters()
        fill(&parameters)
        return parameters
    }

    static let netemCases: [String: NetemCase] = [
        "netem-delay": NetemCase(command: "tc -n NS qdisc replace dev x0 root handle 1: netem delay 100ms") {
            netem { $0.delay = 100 * millisecond }
        },
        "netem-delay-jitter-normal-loss-rate": NetemCase(
            command: "tc -n NS qdisc replace dev x0 root handle 1: netem delay 400ms 50ms 25% distribution normal "
                + "loss 1% 25% rate 240kbit limit 500"
        ) {
            let table = try NetemDistribution.load("normal")
            return netem {
                $0.delay = 400 * millisecond
                $0.jitter = 50 * millisecond
                $0.delayCorrelation = percent(25)
                $0.distribution = table
                $0.loss = percent(1)
                $0.lossCorrelation = percent(25)
                $0.rate = 240_000 / 8
                $0.limit = 500
            }
        },
        "netem-reorder-gap": NetemCase(
            command: "tc -n NS qdisc replace dev x0 root handle 1: netem delay 10ms reorder 25% 50% gap 5"
        ) {
            // tc also sends an all-zero TCA_NETEM_CORR here: a reorder correlation counts as "a correlation
            // was given" (`++present[TCA_NETEM_CORR]`), though it travels in TCA_NETEM_REORDER.
            netem {
                $0.delay = 10 * millisecond
                $0.reorder = percent(25)
                $0.reorderCorrelation = percent(50)
                $0.gap = 5
            }
        },
        "netem-reorder-ecn-loss-corrupt": NetemCase(
            command: "tc -n NS qdisc replace dev x0 root handle 1: netem delay 10ms reorder 25% ecn loss 1% corrupt 1%"
        ) {
            // No gap given: tc sends gap 1 with a reorder probability, and so does the encoder.
            netem {
                $0.delay = 10 * millisecond
                $0.reorder = percent(25)
                $0.ecn = true
                $0.loss = percent(1)
                $0.corrupt = percent(1)
            }
        },
        "netem-loss-gemodel": NetemCase(
            command: "tc -n NS qdisc replace dev x0 root handle 1: netem loss gemodel 1% 10% 70% 5%"
        ) {
            // `gemodel p r 1-h 1-k`: tc sends p and r as given, h = UINT32_MAX - scaled(1-h) (not scaled(h):
            // the two differ by one in the last place), and the fourth number as k1.
            netem {
                $0.lossModel = .gilbertElliott(p: percent(1), r: percent(10), h: UInt32.max - percent(70), k1: percent(5))
            }
        },
        "netem-loss-state": NetemCase(command: "tc -n NS qdisc replace dev x0 root handle 1: netem loss state 1% 10%") {
            // `state p13 [p31 [p32 [p23 [p14]]]]`: tc's defaults for what is left out are p32 = 0%, p23 = 100%,
            // p14 = 0%.
            netem {
                $0.lossModel = .fourState(p13: percent(1), p31: percent(10), p32: 0, p14: 0, p23: percent(100))
            }
        },
        "netem-slot-pareto-rate": NetemCase(
            command: "tc -n NS qdisc replace dev x0 root handle 1: netem delay 10ms 1ms distribution pareto "
                + "slot 10ms 20ms packets 10 bytes 1500 rate 1mbit"
        ) {
            let table = try NetemDistribution.load("pareto")
            return netem {
                $0.delay = 10 * millisecond
                $0.jitter = 1 * millisecond
                $0.distribution = table
                $0.slot = NetemSlot(minDelay: 10_000_000, maxDelay: 20_000_000, maxPackets: 10, maxBytes: 1500)
                $0.rate = 1_000_000 / 8
            }
        },
        "netem-duplicate": NetemCase(command: "tc -n NS qdisc replace dev x0 root handle 1: netem duplicate 1% 10%") {
            // tc 6.1 parses the 10% into cor.dup_corr but never marks TCA_NETEM_CORR present for it (the
            // duplicate branch of netem_parse_opt lacks `++present[TCA_NETEM_CORR]`), so the correlation
            // never reaches the kernel. These are the parameters tc really sends; linkcond does send the
            // correlation: see testDuplicateCorrelationIsSentWhereTcDropsIt.
            netem { $0.duplicate = percent(1) }
        },
        "netem-rate64": NetemCase(command: "tc -n NS qdisc replace dev x0 root handle 1: netem rate 40gbit") {
            netem { $0.rate = 40_000_000_000 / 8 }
        },
        "netem-loss-all": NetemCase(command: "tc -n NS qdisc replace dev x0 root handle 1: netem loss 100%") {
            netem { $0.loss = percent(100) }
        },
        "netem-corrupt-correlation": NetemCase(
            command: "tc -n NS qdisc replace dev x0 root handle 1: netem corrupt 1% 10%"
        ) {
            // Like a reorder correlation, a corrupt correlation makes tc send an all-zero TCA_NETEM_CORR
            // before TCA_NETEM_CORRUPT.
            netem {
                $0.corrupt = percent(1)
                $0.corruptCorrelation = percent(10)
            }
        },
        "netem-leaf-under-class": NetemCase(
            command: "tc -n NS qdisc replace dev x0 parent 1:2 handle 20: netem delay 3s",
            parent: class1_2, handle: TrafficControlHandle(major: 0x20, minor: 0)
        ) {
            netem { $0.delay = 3 * second }
        },
    ]

    /// Every u32 filter case: `protocol P prio N u32 match … protocol T 0xff match … dport 53 0xffff flowid 1:2`.
    static func dnsFilter(ipv6: Bool, transport: UInt8, priority: UInt16) -> U32Filter {
        U32Filter(
            protocolNumber: ipv6 ? .ipv6 : .ipv4, priority: priority,
            keys: ipv6
                ? [.ip6Protocol(transport), .ip6DestinationPort(53)]
                : [.ipProtocol(transport), .ipDestinationPort(53)],
            classID: class1_2)
    }

    static let filterCases: [String: (command: String, filter: U32Filter)] = [
        "filter-u32-ipv4-udp-dport": (
            "tc -n NS filter add dev x0 parent 1: protocol ip prio 1 u32 match ip protocol 17 0xff match ip dport 53 0xffff flowid 1:2",
            dnsFilter(ipv6: false, transport: 17, priority: 1)
        ),
        "filter-u32-ipv4-tcp-dport": (
            "tc -n NS filter add dev x0 parent 1: protocol ip prio 2 u32 match ip protocol 6 0xff match ip dport 53 0xffff flowid 1:2",
            dnsFilter(ipv6: false, transport: 6, priority: 2)
        ),
        "filter-u32-ipv6-udp-dport": (
            "tc -n NS filter add dev x0 parent 1: protocol ipv6 prio 3 u32 match ip6 protocol 17 0xff match ip6 dport 53 0xffff flowid 1:2",
            dnsFilter(ipv6: true, transport: 17, priority: 3)
        ),
        "filter-u32-ipv6-tcp-dport": (
            "tc -n NS filter add dev x0 parent 1: protocol ipv6 prio 4 u32 match ip6 protocol 6 0xff match ip6 dport 53 0xffff flowid 1:2",
            dnsFilter(ipv6: true, transport: 6, priority: 4)
        ),
    ]

    /// Sends netem case `netem` through `client`, as the fixture's command does (or with `parameters`).
    static func sendNetem(_ netem: NetemCase, _ fixture: Fixture, _ client: RouteNetlinkClient, parameters: NetemParameters? = nil) throws {
        let clock = try fixture.packetSchedulerClock
        try client.replaceQdisc(on: "x0", handle: netem.handle, parent: netem.parent, options: .netem(try parameters ?? netem.parameters(), clock: clock))
    }

    /// Fixture name → the call that sends the same request. GoldenBytesTests.testEveryFixtureIsCovered
    /// counts these too.
    static let cases: [String: Case] = {
        var cases = netemCases.mapValues { netem in
            Case(command: netem.command) { fixture, client in try sendNetem(netem, fixture, client) }
        }
        cases["prio-bands-2"] = Case(
            command: "tc -n NS qdisc replace dev x0 root handle 1: prio bands 2 priomap 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0"
        ) { _, client in
            try client.replaceQdisc(on: "x0", handle: handle1, options: .prio(PrioOptions(bands: 2)))
        }
        for (name, filter) in filterCases {
            cases[name] = Case(command: filter.command) { _, client in try client.addFilter(filter.filter, on: "x0", parent: handle1) }
        }
        for (name, red) in redCases {
            cases[name] = Case(command: red.command) { fixture, client in
                let options = try XCTUnwrap(
                    REDOptions.evaluate(
                        limit: red.limit, minimum: red.minimum, maximum: red.maximum, weightLog: red.weightLog, probability: red.probability,
                        averagePacket: 1000, bytesPerSecond: red.bytesPerSecond, adaptive: red.adaptive, clock: try fixture.packetSchedulerClock))
                try client.replaceQdisc(on: "x0", handle: handle1, options: .red(options))
            }
        }
        return cases
    }()

    /// RED cases: tc's command and the values linkcond works from; `weightLog` is what tc's
    /// `tc_red_eval_ewma` finds for the burst (REDSettings.weightLog works it out the same way, see
    /// ProfileFidelityTests).
    static let redCases: [String: (command: String, limit: UInt32, minimum: UInt32, maximum: UInt32, weightLog: Int, probability: Double,
        bytesPerSecond: UInt64, adaptive: Bool)] = [
        "red-bandwidth-2mbit": (
            "tc -n NS qdisc replace dev x0 root handle 1: red limit 360000 min 30000 max 90000 avpkt 1000 burst 50 probability 0.02 bandwidth 2mbit",
            360_000, 30_000, 90_000, 5, 0.02, 250_000, false
        ),
        "red-adaptive-250kbit": (
            "tc -n NS qdisc replace dev x0 root handle 1: red limit 360000 min 30000 max 90000 avpkt 1000 probability 0.02 bandwidth 250kbit adaptive",
            360_000, 30_000, 90_000, 5, 0.02, 31_250, true
        ),
        "red-steep-probability": (
            "tc -n NS qdisc replace dev x0 root handle 1: red limit 50000 min 3000 max 9000 avpkt 1000 burst 40 probability 0.1 bandwidth 10mbit",
            50_000, 3000, 9000, 9, 0.1, 1_250_000, false
        ),
    ]

    /// Test groups: every case name starts with one of these and a test below runs each group.
    static let groups = ["netem", "prio", "filter", "red"]

    // MARK: Golden bytes

    func assertGroupMatches(_ group: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let names = Self.cases.keys.filter { $0.hasPrefix(group + "-") }.sorted()
        XCTAssertFalse(names.isEmpty, "no \(group) cases", file: file, line: line)
        for name in names {
            try assertSendsFixture(name, Self.cases[name], file: file, line: line)
        }
    }

    func testNetemRequestsMatchIproute2() throws { try assertGroupMatches("netem") }
    func testPrioRequestsMatchIproute2() throws { try assertGroupMatches("prio") }
    func testFilterRequestsMatchIproute2() throws { try assertGroupMatches("filter") }
    func testRedRequestsMatchIproute2() throws { try assertGroupMatches("red") }

    /// A red read back as the kernel dumps it (the thresholds as sent, the adaptive flag in the historic
    /// byte and the bitfield, no table) decodes to what was sent, less the table.
    func testRedOptionsDecodeAsTheKernelDumpsThem() throws {
        let sent = try XCTUnwrap(
            REDOptions.evaluate(
                limit: 360_000, minimum: 30_000, maximum: 90_000, weightLog: 5, probability: 0.02, averagePacket: 1000, bytesPerSecond: 31_250,
                adaptive: true, clock: .standard))
        XCTAssertEqual(sent.idleTable.count, 256)
        XCTAssertEqual(sent.probability, 0.02, accuracy: 1e-9)
        var parameters = tc_red_qopt()
        parameters.limit = 360_000
        parameters.qth_min = 30_000
        parameters.qth_max = 90_000
        parameters.Wlog = sent.weightLog
        parameters.Plog = sent.probabilityLog
        parameters.Scell_log = sent.cellLog
        parameters.flags = UInt8(TC_RED_ADAPTATIVE)
        let builder = NetlinkMessageBuilder(type: UInt16(RTM_NEWQDISC), flags: 0)
        let nest = builder.beginNest(UInt16(TCA_OPTIONS))
        builder.put(UInt16(TCA_RED_PARMS), structure: parameters)
        builder.put(UInt16(TCA_RED_MAX_P), uint32: sent.maxProbability)
        builder.endNest(nest)
        let message = try XCTUnwrap(try NetlinkMessage.parse(datagram: try builder.finish()).first)
        var options = AttributeDecoder(message.payload[...], operation: "test")
        XCTAssertTrue(options.next())
        var expected = sent
        expected.idleTable = []
        XCTAssertEqual(try REDOptions.decode(options: Array(options.payload)), expected)
        XCTAssertThrowsError(try REDOptions.decode(options: [])) { error in XCTAssertTrue("\(error)".contains("no TCA_RED_PARMS"), "\(error)") }
    }

    func testEveryCaseIsInATestGroup() {
        for name in Self.cases.keys {
            XCTAssertTrue(Self.groups.contains { name.hasPrefix($0 + "-") }, "\(name) is in no test group, so no test runs it")
        }
        XCTAssertTrue(Set(Self.cases.keys).isDisjoint(with: GoldenBytesTests.cases.keys))
    }

    /// tc drops a duplicate correlation given alone (see the `netem-duplicate` case); linkcond sends it.
    /// Its request is tc's plus one `TCA_NETEM_CORR` (delay 0, loss 0, duplicate 10%) right after the
    /// `tc_netem_qopt`, with `TCA_OPTIONS` and the message 16 bytes longer.
    func testDuplicateCorrelationIsSentWhereTcDropsIt() throws {
        let name = "netem-duplicate"
        let fixture = try Fixture.load(name)
        let netem = try XCTUnwrap(Self.netemCases[name])
        var parameters = try netem.parameters()
        parameters.duplicateCorrelation = Self.percent(10)
        let harness = try GoldenHarness(fixture)
        try Self.sendNetem(netem, fixture, harness.client, parameters: parameters)
        let actual = try XCTUnwrap(harness.transport.sent.first)

        var expected = try fixture.bytes
        let optionsOffset = NetlinkMessage.headerLength + MemoryLayout<tcmsg>.size + netlinkAlign(4 + "netem".utf8.count + 1)
        XCTAssertEqual(expected.u16(at: optionsOffset + 2), UInt16(TCA_OPTIONS), "\(name).txt: TCA_OPTIONS is not where expected")
        let correlation = tc_netem_corr(delay_corr: 0, loss_corr: 0, dup_corr: Self.percent(10))
        var attribute = [UInt8](repeating: 0, count: 4)
        attribute.setU16(UInt16(4 + MemoryLayout<tc_netem_corr>.size), at: 0)
        attribute.setU16(UInt16(TCA_NETEM_CORR), at: 2)
        attribute += rawBytes(of: correlation)
        expected.insert(contentsOf: attribute, at: optionsOffset + 4 + MemoryLayout<tc_netem_qopt>.size)
        expected.setU16(expected.u16(at: optionsOffset) + UInt16(attribute.count), at: optionsOffset)
        expected.setU32(expected.u32(at: 0) + UInt32(attribute.count), at: 0)

        if let difference = firstDifference(actual, expected) {
            XCTFail(
                """
                \(name) with its duplicate correlation differs at byte \(difference):
                linkcond:
                \(hexDump(actual, marking: difference))
                expected (tc's bytes plus TCA_NETEM_CORR):
                \(hexDump(expected, marking: difference))
                """)
        }
    }

    // MARK: Round trips

    /// What the kernel would report for the parameters the encoder was given: the options it sent, read
    /// back. Delay and jitter travel as ticks (within one tick of the request); the distribution table is
    /// not dumped; a reorder probability without a gap goes out with gap 1, as tc sends it.
    func assertRoundTrip(_ name: String, _ parameters: NetemParameters, clock: PacketSchedulerClock, file: StaticString = #filePath, line: UInt = #line) throws {
        let builder = QdiscRequest.replace(interfaceIndex: 3, handle: Self.handle1, parent: Self.root, options: .netem(parameters, clock: clock))
        let messages = try NetlinkMessage.parse(datagram: try builder.finish())
        XCTAssertEqual(messages.count, 1, name, file: file, line: line)
        let qdisc = try Qdisc.decode(try XCTUnwrap(messages.first, name, file: file, line: line))
        XCTAssertEqual(qdisc.kind, "netem", name, file: file, line: line)
        var decoded = try NetemParameters.decode(options: qdisc.options, clock: clock)

        let tick = UInt64((1000 / clock.ticksPerMicrosecond).rounded(.up)) // 64 ns on the standard clock
        for (what, sent, read) in [("delay", parameters.delay, decoded.delay), ("jitter", parameters.jitter, decoded.jitter)] {
            let gap = sent > read ? sent - read : read - sent
            XCTAssertLessThanOrEqual(gap, tick, "\(name): \(what) \(sent) ns came back as \(read) ns", file: file, line: line)
        }
        var expected = parameters
        expected.distribution = nil
        if expected.reorder != 0 && expected.gap == 0 { expected.gap = 1 }
        decoded.delay = expected.delay
        decoded.jitter = expected.jitter
        XCTAssertEqual(decoded, expected, "\(name): decoding the encoded options", file: file, line: line)
    }

    func testNetemOptionsDecodeToTheParametersEncoded() throws {
        for name in Self.netemCases.keys.sorted() {
            let netem = try XCTUnwrap(Self.netemCases[name])
            let clock = try Fixture.load(name).packetSchedulerClock
            try assertRoundTrip(name, try netem.parameters(), clock: clock)
        }
    }

    /// Beyond 32-bit ticks (about 274 s), delay and jitter go as nanoseconds in `LATENCY64`/`JITTER64`,
    /// which tc cannot produce; they must still decode exactly.
    func testLongDelaysRoundTripThroughThe64BitAttributes() throws {
        var parameters = NetemParameters()
        parameters.delay = 300 * Self.second
        parameters.jitter = 290 * Self.second + 123
        parameters.loss = Self.percent(1)
        try assertRoundTrip("300 s delay", parameters, clock: .standard)
        let builder = QdiscRequest.replace(interfaceIndex: 3, handle: Self.handle1, parent: Self.root, options: .netem(parameters, clock: .standard))
        let qdisc = try Qdisc.decode(try XCTUnwrap(try NetlinkMessage.parse(datagram: try builder.finish()).first))
        let decoded = try NetemParameters.decode(options: qdisc.options, clock: .standard)
        XCTAssertEqual(decoded.delay, parameters.delay)
        XCTAssertEqual(decoded.jitter, parameters.jitter)
    }

    func testPrioOptionsDecodeToTheOptionsEncoded() throws {
        let options = PrioOptions(bands: 2)
        let builder = QdiscRequest.replace(interfaceIndex: 3, handle: Self.handle1, parent: Self.root, options: .prio(options))
        let qdisc = try Qdisc.decode(try XCTUnwrap(try NetlinkMessage.parse(datagram: try builder.finish()).first))
        XCTAssertEqual(try PrioOptions.decode(options: qdisc.options), options)
    }

    // MARK: The clock

    /// Every netem fixture records the clock tc used, and the recorded factor is what tc derives from the
    /// recorded /proc/net/psched.
    func testNetemFixturesRecordThePacketSchedulerClock() throws {
        for name in Self.netemCases.keys.sorted() {
            let fixture = try Fixture.load(name)
            let fields = try fixture.value("psched").split(separator: " ")
            XCTAssertGreaterThanOrEqual(fields.count, 4, "\(name).txt: '# psched:' holds /proc/net/psched and the factor")
            let numbers = fields.prefix(3).compactMap { UInt32($0, radix: 16) }.map(Double.init)
            XCTAssertEqual(numbers.count, 3, "\(name).txt: '# psched:' does not start with three hex numbers")
            guard numbers.count == 3 else { continue }
            let t2us = numbers[2] == 1_000_000_000 ? numbers[1] : numbers[0]
            XCTAssertEqual(try fixture.packetSchedulerClock.ticksPerMicrosecond, t2us / numbers[1] * (numbers[2] / 1_000_000), name)
        }
    }
}

extension Fixture {
    /// The packet-scheduler clock tc converted times with: `ticks-per-us=` of the `# psched:` line.
    var packetSchedulerClock: PacketSchedulerClock {
        get throws {
            let line = try value("psched")
            guard let field = line.split(separator: " ").first(where: { $0.hasPrefix("ticks-per-us=") }),
                let factor = Double(field.dropFirst("ticks-per-us=".count)), factor > 0
            else {
                throw Problem(description: "\(name).txt: '# psched: \(line)' has no ticks-per-us=FACTOR")
            }
            return PacketSchedulerClock(ticksPerMicrosecond: factor)
        }
    }
}

extension Array where Element == UInt8 {
    mutating func setU32(_ value: UInt32, at offset: Int) {
        withUnsafeMutableBytes { $0.storeBytes(of: value, toByteOffset: offset, as: UInt32.self) }
    }
}

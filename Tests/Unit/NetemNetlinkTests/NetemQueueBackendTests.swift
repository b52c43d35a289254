import CMnl
import Conditioning
import Netlink
import NetlinkTesting
import Profiles
import RouteNetlink
import Sandboxing
import XCTest

/// Queues beyond netem's `limit` on the netem backend: the netem keeps delay and loss, a tbf under its class
/// `:1` carries the rate, and the queue's qdisc (bfifo, pfifo_head_drop, codel, pie) sits under the tbf's
/// class `:1` — the exact requests, switches to and from such a profile, read-back, and the refusals.
extension NetemBackendTests {
    private func profile(_ downlink: String, uplink: String? = nil, name: String = "queue") throws -> Profile {
        let up = uplink.map { #", "uplink": {"# + $0 + "}" } ?? ""
        return try ProfileParser.parse(text: #"{"name": ""# + name + #"", "downlink": {"# + downlink + "}" + up + "}", source: "\(name).json")
    }

    private static let codelOnTwoMegabits = #""rate": "2mbit", "delay": "50ms", "queue": {"discipline": "codel"}"#

    /// The attributes after the tcmsg of a sent qdisc request.
    private func attributes(_ message: SentMessage) -> [UInt8] { Array(message.payload.dropFirst(MemoryLayout<tcmsg>.size)) }

    private func header(_ message: SentMessage) -> (handle: TrafficControlHandle, parent: TrafficControlHandle) {
        let header = message.payload.load(tcmsg.self, at: 0)!
        return (TrafficControlHandle(rawValue: header.tcm_handle), TrafficControlHandle(rawValue: header.tcm_parent))
    }

    private func u32(_ type: Int, _ value: UInt32) -> [UInt8] { attribute(UInt16(type), hostBytes(value)) }

    private static func handle(_ major: UInt16, _ minor: UInt16 = 0) -> TrafficControlHandle { TrafficControlHandle(major: major, minor: minor) }

    /// The qdiscs of interface `index` as (handle, parent, kind), in the order the fake kernel keeps them.
    private func tree(_ kernel: FakeTrafficControlKernel, _ index: Int32) -> [String] {
        kernel.qdiscs.filter { $0.index == index }.map { "\($0.handle) \($0.parent) \($0.kind)" }
    }

    func testCoDelOnARateIsANetemWithoutRateAboveATbfAboveACodel() throws {
        let lab = try makeLab()
        try lab.backend.apply(try profile(Self.codelOnTwoMegabits))

        // Router: a dump, the MTU of c-wl0, then one datagram: netem, tbf, codel (all grafts), a dump.
        let router = lab.routerTransport.sent.map(SentMessage.split)
        XCTAssertEqual(router.map { $0.map(\.type) }, [[UInt16(RTM_GETQDISC)], [UInt16(RTM_GETLINK)], [UInt16(RTM_NEWQDISC)] * 3 + [UInt16(RTM_GETQDISC)]])
        let batch = try XCTUnwrap(router.last)
        let graft = UInt16(NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE | NLM_F_EXCL)
        XCTAssertEqual(batch[0..<3].map(\.flags), [graft, graft, graft])
        XCTAssertEqual(batch[0..<3].map { header($0).handle }, [Self.h1, Self.handle(0x101), Self.handle(0x201)])
        XCTAssertEqual(batch[0..<3].map { header($0).parent }, [.root, Self.handle(1, 1), Self.handle(0x101, 1)])

        // The netem: no rate (the tbf has it); its limit is the derived one (50 ms at 2 Mbit/s: 1000) plus codel's 1000.
        let netem = try NetemParameters.decode(options: try XCTUnwrap(lab.router.qdiscs.first { $0.kind == "netem" }).options, clock: .standard)
        XCTAssertNil(netem.rate)
        XCTAssertEqual(netem.delay, 50_000_000)
        XCTAssertEqual(netem.limit, 2000)

        // tc qdisc replace dev c-wl0 parent 1:1 handle 101: tbf rate 2mbit burst 2514 limit 1514000 (a frame and
        // 4 ms at the rate): tc_tbf_qopt
        // with the rate in bytes per second and link layer Ethernet (no rate table), then the burst in bytes.
        var parameters = tc_tbf_qopt()
        parameters.rate.rate = 250_000
        parameters.rate.linklayer = UInt8(TC_LINKLAYER_ETHERNET.rawValue)
        parameters.limit = 1_514_000
        XCTAssertEqual(
            attributes(batch[1]),
            stringAttribute(UInt16(TCA_KIND), "tbf")
                + attribute(UInt16(TCA_OPTIONS), attribute(UInt16(TCA_TBF_PARMS), rawBytes(of: parameters)) + u32(TCA_TBF_BURST, 2514)))

        // tc qdisc replace dev c-wl0 parent 101:1 handle 201: codel limit 1000 target 5ms interval 100ms, as
        // q_codel.c lays it out (limit, interval, target, ecn; times in microseconds), byte for byte.
        XCTAssertEqual(
            attributes(batch[2]),
            [
                0x0a, 0x00, 0x01, 0x00, 0x63, 0x6f, 0x64, 0x65, 0x6c, 0x00, 0x00, 0x00,  // TCA_KIND "codel"
                0x24, 0x00, 0x02, 0x00,  // TCA_OPTIONS, 36 bytes
                0x08, 0x00, 0x02, 0x00, 0xe8, 0x03, 0x00, 0x00,  // TCA_CODEL_LIMIT 1000
                0x08, 0x00, 0x03, 0x00, 0xa0, 0x86, 0x01, 0x00,  // TCA_CODEL_INTERVAL 100000 us
                0x08, 0x00, 0x01, 0x00, 0x88, 0x13, 0x00, 0x00,  // TCA_CODEL_TARGET 5000 us
                0x08, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00,  // TCA_CODEL_ECN 0
            ])
        XCTAssertEqual(tree(lab.router, 21), ["1: root netem", "101: 1:1 tbf", "201: 101:1 codel"])
    }

    func testEachQueueMapsToItsQdiscWithItsParameters() throws {
        for (queue, kind, options) in [
            (#""64KiB""#, "bfifo", rawBytes(of: tc_fifo_qopt(limit: 65_536))),
            // 250 ms at 2 Mbit/s is 62 500 bytes, plus one full frame.
            (#""250ms""#, "bfifo", rawBytes(of: tc_fifo_qopt(limit: 64_014))),
            (#"{"discipline": "drophead", "limit": "10 packets"}"#, "pfifo_head_drop", rawBytes(of: tc_fifo_qopt(limit: 10))),
            (
                #"{"discipline": "pie", "target": "20ms", "alpha": 0.25, "limit": "500 packets"}"#, "pie",
                u32(TCA_PIE_LIMIT, 500) + u32(TCA_PIE_TUPDATE, 15_000) + u32(TCA_PIE_TARGET, 20_000) + u32(TCA_PIE_ALPHA, 4)
                    + u32(TCA_PIE_BETA, 20) + u32(TCA_PIE_ECN, 0)
            ),
        ] {
            let lab = try makeLab()
            try lab.backend.apply(try profile(#""rate": "2mbit", "delay": "50ms", "queue": "# + queue))
            let batch = try XCTUnwrap(lab.routerTransport.sent.map(SentMessage.split).last)
            XCTAssertEqual(attributes(batch[2]), stringAttribute(UInt16(TCA_KIND), kind) + attribute(UInt16(TCA_OPTIONS), options), queue)
            XCTAssertEqual(tree(lab.router, 21), ["1: root netem", "101: 1:1 tbf", "201: 101:1 \(kind)"], queue)
        }
    }

    /// RED and ARED become a red under the tbf, with what tc works out for the same arguments (the direction's
    /// rate as its bandwidth: RedGoldenTests compares those with tc's own bytes), and read back as sent.
    func testREDAndAREDMapToARedWithTcsParameters() throws {
        for (queue, adaptive) in [(#"{"discipline": "red", "min": "30KB", "max": "90KB"}"#, false), (#"{"discipline": "red", "min": "30KB", "max": "90KB", "adaptive": true}"#, true)] {
            let lab = try makeLab()
            let sent = try profile(#""rate": "2mbit", "delay": "50ms", "queue": "# + queue)
            try lab.backend.apply(sent)
            XCTAssertEqual(tree(lab.router, 21), ["1: root netem", "101: 1:1 tbf", "201: 101:1 red"], queue)
            let red = try REDOptions.decode(options: try XCTUnwrap(lab.router.qdiscs.first { $0.kind == "red" }).options)
            guard case .red(let settings) = try XCTUnwrap(sent.downlink.queue).discipline else { return XCTFail(queue) }
            let expected = try XCTUnwrap(
                REDOptions.evaluate(
                    limit: 360_000, minimum: 30_000, maximum: 90_000, weightLog: try XCTUnwrap(settings.weightLog), probability: 0.02, averagePacket: 1000,
                    bytesPerSecond: 250_000, adaptive: adaptive, clock: lab.backend.clock))
            XCTAssertEqual(red.limit, 360_000, "RED's limit: 4 × max")
            XCTAssertEqual([red.minimum, red.maximum, UInt32(red.weightLog), UInt32(red.probabilityLog), UInt32(red.cellLog)], [30_000, 90_000, 5, 22, 17])
            XCTAssertEqual(red.adaptive, adaptive)
            var held = expected
            held.idleTable = red.idleTable
            XCTAssertEqual(red, held)
            XCTAssertEqual(expected.idleTable.count, 256)
            let shown = try XCTUnwrap(try lab.backend.installed(in: lab.backend.sandbox.look()).first { $0.site.direction == .downlink })
            let text = try XCTUnwrap(shown.stages[0].text)
            XCTAssertTrue(text.contains("queue red min 30KB max 90KB probability 2%"), text)
        }
    }

    /// A red the record does not agree with is shown as the kernel holds it, its burst found from the
    /// weight the kernel kept (not printed as tc's default).
    func testARedTheRecordDisagreesWithShowsTheBurstOfItsWeight() throws {
        let lab = try makeLab()
        try lab.backend.apply(try profile(#""rate": "2mbit", "delay": "50ms", "queue": {"discipline": "red", "min": "30KB", "max": "90KB", "burst": 400}"#))
        let agreeing = try XCTUnwrap(try lab.backend.installed(in: lab.backend.sandbox.look()).first { $0.site.direction == .downlink })
        XCTAssertEqual(agreeing.stages[0].agreesWithRecord, true)
        XCTAssertTrue(try XCTUnwrap(agreeing.stages[0].text).contains("probability 2% burst 400 limit"), agreeing.stages[0].text ?? "")
        lab.router.qdiscs = lab.router.qdiscs.map { entry in
            guard entry.kind == "red", var options = try? REDOptions.decode(options: entry.options) else { return entry }
            options.maxProbability /= 2  // 1% at max, not 2%
            var changed = entry
            changed.options = QdiscOptionsBytes.red(options)
            return changed
        }
        let tampered = try XCTUnwrap(try lab.backend.installed(in: lab.backend.sandbox.look()).first { $0.site.direction == .downlink })
        XCTAssertEqual(tampered.stages[0].agreesWithRecord, false)
        var sent = REDSettings(minimum: 30_000, maximum: 90_000, burst: 400)
        let log = try XCTUnwrap(sent.weightLog)
        sent.burst = nil
        XCTAssertNotEqual(sent.weightLog, log, "burst 400 gives another weight than the default's")
        let burst = try XCTUnwrap(sent.burst(givingWeightLog: log))
        let text = try XCTUnwrap(tampered.stages[0].text)
        XCTAssertTrue(text.contains("queue red min 30KB max 90KB probability 1% burst \(burst) limit"), text)
    }

    func testTheUplinksMainAndDNSLeavesEachGetTheirStack() throws {
        let lab = try makeLab()
        try lab.backend.apply(try profile(#""delay": "10ms""#, uplink: #""rate": "1mbit", "queue": {"discipline": "codel", "limit": "100 packets"}"#))
        XCTAssertEqual(
            tree(lab.client, 20),
            ["1: root prio", "10: 1:1 netem", "110: 10:1 tbf", "210: 110:1 codel", "20: 1:2 netem", "120: 20:1 tbf", "220: 120:1 codel"])
        XCTAssertEqual(tree(lab.router, 21), ["1: root netem"], "the downlink has no queue: its netem alone")
    }

    func testSwitchingToAndFromAQueueGraftsTheWholeStackAtTheOtherHandle() throws {
        let lab = try makeLab()
        try lab.backend.apply(try profile(Self.codelOnTwoMegabits))
        try lab.backend.apply(try edge)
        XCTAssertEqual(tree(lab.router, 21), ["2: root netem"], "the old tbf and codel went with their netem")
        XCTAssertEqual(try netem(lab.router, parent: .root).1.rate, 240_000 / 8, "the rate is netem's again")

        let before = lab.routerTransport.sent.count
        try lab.backend.apply(try profile(#""rate": "2mbit", "delay": "50ms", "queue": {"discipline": "pie"}"#))
        XCTAssertEqual(tree(lab.router, 21), ["1: root netem", "101: 1:1 tbf", "201: 101:1 pie"])
        // From memory: the MTU, then one datagram (three grafts and the dump).
        XCTAssertEqual(
            lab.routerTransport.sent.dropFirst(before).map { SentMessage.split($0).map(\.type) },
            [[UInt16(RTM_GETLINK)], [UInt16(RTM_NEWQDISC)] * 3 + [UInt16(RTM_GETQDISC)]])

        try lab.backend.apply(try profile(Self.codelOnTwoMegabits))
        XCTAssertEqual(tree(lab.router, 21), ["2: root netem", "102: 2:1 tbf", "202: 102:1 codel"])
    }

    func testShowReadsTheRateFromTheTbfAndTheQueueFromItsQdisc() throws {
        let lab = try makeLab()
        try lab.backend.apply(try profile(Self.codelOnTwoMegabits))
        let downlink = try XCTUnwrap(try lab.backend.installed(in: lab.backend.sandbox.look()).first { $0.site.direction == .downlink })
        XCTAssertEqual(downlink.stages.map(\.kind), ["netem", "tbf", "codel"])
        let stage = downlink.stages[0]
        XCTAssertEqual(stage.agreesWithRecord, true)
        XCTAssertEqual(stage.conditions?.rate, 2_000_000)
        XCTAssertEqual(stage.text, "rate 2mbit delay 50ms queue codel target 5ms interval 100ms limit 1000 packets")

        // A kernel that holds another target: not the record, and shown as the kernel has it.
        lab.router.qdiscs = lab.router.qdiscs.map { entry in
            guard entry.kind == "codel" else { return entry }
            var changed = entry
            changed.options = QdiscOptionsBytes.codel(CoDelOptions(target: 20_000, interval: 100_000, limit: 1000))
            return changed
        }
        let tampered = try XCTUnwrap(try lab.backend.installed(in: lab.backend.sandbox.look()).first { $0.site.direction == .downlink })
        XCTAssertEqual(tampered.stages[0].agreesWithRecord, false)
        XCTAssertEqual(tampered.stages[0].text, "rate 2mbit delay 50ms queue codel target 20ms interval 100ms limit 1000 packets")
    }

    func testAQueueTheKernelDoesNotHoldAsSentIsAMismatch() throws {
        let lab = try makeLab()
        lab.router.tamper = { entry in
            if entry.kind == "codel" { entry.options = QdiscOptionsBytes.codel(CoDelOptions(target: 20_000, interval: 100_000, limit: 1000)) }
        }
        XCTAssertThrowsError(try lab.backend.apply(try profile(Self.codelOnTwoMegabits))) { error in
            guard case SandboxError.conditionsMismatch(_, let differences) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(differences, ["codel target: sent 5ms, kernel has 20ms"])
        }
    }

    func testQueuesTheKernelCannotHoldAreRefusedBeforeAnyNetlinkWrite() throws {
        for (members, words) in [
            (#""rate": "1mbit", "queue": {"discipline": "red", "min": "30KB", "max": "90KB", "limit": "5GB"}"#, "a RED queue of min 30000 B, max 90000 B, limited to 5GB"),
            (#""rate": "1mbit", "queue": {"discipline": "red", "min": "30KB", "max": "90KB", "adaptive": true, "limit": "5GB"}"#, "an ARED queue of min 30000 B, max 90000 B, limited to 5GB"),
            (#""rate": "1mbit", "queue": {"discipline": "drophead", "limit": "64KB"}"#, "a drophead queue limited to 64KB"),
            (#""rate": "1mbit", "queue": {"discipline": "codel", "limit": "64KB"}"#, "a codel queue limited to 64KB"),
            (#""rate": "1mbit", "queue": {"discipline": "pie", "alpha": 0.1}"#, "a pie alpha of 0.1"),
            (#""rate": "1mbit", "queue": {"discipline": "codel", "target": "1500ns"}"#, "a codel target of 1500ns"),
            (#""slot": {"min": "10ms"}, "queue": "64KB""#, "a droptail queue of 64KB without a rate"),
        ] {
            let lab = try makeLab()
            XCTAssertThrowsError(try lab.backend.apply(try profile(members))) { error in
                guard case SandboxError.unsupported(let detail) = error else { return XCTFail("\(error)") }
                XCTAssertTrue(detail.contains("the downlink asks for \(words), which the netem backend cannot install: "), detail)
                XCTAssertTrue(detail.contains("--backend userspace"), detail)
            }
            XCTAssertEqual(lab.sentMessages, 0, "\(members): nothing sent")
        }
        let lab = try makeLab()
        XCTAssertThrowsError(try lab.backend.apply(try profile(#""rate": "1mbit", "queue": {"discipline": "codel", "limit": "64KB"}"#))) { error in
            XCTAssertEqual(
                "\(error)",
                "profile 'queue': the downlink asks for a codel queue limited to 64KB, which the netem backend cannot install: the kernel's codel "
                    + "counts its limit in packets; write the limit in packets (\"1000 packets\"); or use the userspace engine ('--backend "
                    + "userspace', after 'linkcond down' of a netem sandbox)")
        }
    }
}

/// A qdisc's options as the kernel dumps them (the payload of `TCA_OPTIONS`), for fakes that hold what a
/// kernel would.
enum QdiscOptionsBytes {
    static func codel(_ options: CoDelOptions) -> [UInt8] {
        let message = NetlinkMessageBuilder(type: 0, flags: 0)
        options.encode(into: message)
        return Array(message.bytes.dropFirst(MemoryLayout<nlmsghdr>.size + 4))
    }

    static func red(_ options: REDOptions) -> [UInt8] {
        let message = NetlinkMessageBuilder(type: 0, flags: 0)
        options.encode(into: message)
        return Array(message.bytes.dropFirst(MemoryLayout<nlmsghdr>.size + 4))
    }
}

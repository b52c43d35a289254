import Foundation
import JSONDocument
import XCTest

@testable import Profiles

/// The fidelity fields of a direction: the jitter model, the queue, and the delay and loss traces.
final class ProfileFidelityTests: XCTestCase {
    private let file = "profiles/bad.json"

    private func withDownlink(_ members: String) -> String {
        "{\n  \"name\": \"bad\",\n  \"downlink\": {\n    \(members)\n  }\n}\n"
    }

    private func downlink(_ members: String) throws -> LinkConditions {
        try ProfileParser.parse(text: withDownlink(members), source: file).downlink
    }

    private func downlinkError(_ members: String, file: StaticString = #filePath, line: UInt = #line) -> ProfileError? {
        do {
            let profile = try ProfileParser.parse(text: withDownlink(members), source: self.file)
            XCTFail("accepted: \(profile)", file: file, line: line)
            return nil
        } catch {
            return error
        }
    }

    private func roundTrip(_ conditions: LinkConditions, file: StaticString = #filePath, line: UInt = #line) throws {
        let profile = Profile(name: "trip", downlink: conditions, source: self.file)
        XCTAssertEqual(try ProfileParser.parse(text: ProfileParser.jsonText(of: profile), source: self.file), profile, file: file, line: line)
    }

    // MARK: Jitter model

    func testJitterModelDefaultsToOrderedAndReadsBothModels() throws {
        let plain = try downlink(#""delay": "40ms", "jitter": "10ms""#)
        XCTAssertNil(plain.jitterModel)
        XCTAssertEqual(plain.effectiveJitterModel, .ordered)
        XCTAssertEqual(try downlink(#""delay": "40ms", "jitter": "10ms", "jitterModel": "netem""#).jitterModel, .netem)
        XCTAssertEqual(try downlink(#""delay": "40ms", "jitter": "10ms", "jitterModel": "ordered""#).jitterModel, .ordered)
        try roundTrip(LinkConditions(delay: 40_000_000, jitter: 10_000_000, jitterModel: .netem))
        let text = ProfileParser.jsonText(of: Profile(name: "m", downlink: LinkConditions(delay: 1, jitter: 1, jitterModel: .netem)))
        XCTAssertTrue(text.contains(#""jitterModel": "netem""#), text)
    }

    func testABadJitterModelIsNamedWithItsPath() throws {
        let typo = try XCTUnwrap(downlinkError(#""delay": "40ms", "jitter": "10ms", "jitterModel": "nettem""#))
        XCTAssertEqual(typo.kind, .invalidValue)
        XCTAssertEqual(typo.path?.description, "$.downlink.jitterModel")
        XCTAssertEqual(typo.problem, #""nettem" is not a jitter model (did you mean "netem"?)"#)
        XCTAssertEqual(typo.expected, #""ordered" or "netem""#)
        XCTAssertEqual(try XCTUnwrap(downlinkError(#""delay": "40ms", "jitter": "10ms", "jitterModel": 1"#)).kind, .wrongType)
        let alone = try XCTUnwrap(downlinkError(#""delay": "40ms", "jitterModel": "netem""#))
        XCTAssertEqual(alone.kind, .conflict)
        XCTAssertEqual(alone.path?.description, "$.downlink.jitterModel")
        XCTAssertEqual(alone.problem, "a jitter model without jitter")
    }

    // MARK: Queue

    func testQueueShortFormsAreDropTail() throws {
        XCTAssertEqual(try downlink(#""rate": "1mbit", "queue": "1000 packets""#).queue, .dropTail(.packets(1000)))
        XCTAssertEqual(try downlink(#""rate": "1mbit", "queue": "1 packet""#).queue, .dropTail(.packets(1)))
        XCTAssertEqual(try downlink(#""rate": "1mbit", "queue": "64KB""#).queue, .dropTail(.bytes(64_000)))
        XCTAssertEqual(try downlink(#""rate": "1mbit", "queue": "64KiB""#).queue, .dropTail(.bytes(65_536)))
        XCTAssertEqual(try downlink(#""rate": "1mbit", "queue": "250ms""#).queue, .dropTail(.time(250_000_000)))
        // Without a queue, the DropTail of queueLimit (or the derived limit) is in force.
        XCTAssertEqual(try downlink(#""rate": "1mbit", "queueLimit": 50"#).effectiveQueue(), .dropTail(.packets(50)))
    }

    func testQueueDisciplinesWithTheirParametersAndDefaults() throws {
        let codel = try downlink(#""rate": "1mbit", "queue": {"discipline": "codel"}"#).queue
        XCTAssertEqual(codel, LinkQueue(.codel(CoDelSettings(target: 5_000_000, interval: 100_000_000)), limit: .packets(1000)))
        let tuned = try downlink(#""rate": "1mbit", "queue": {"discipline": "codel", "target": "10ms", "interval": "200ms", "limit": "500 packets"}"#)
        XCTAssertEqual(tuned.queue, LinkQueue(.codel(CoDelSettings(target: 10_000_000, interval: 200_000_000)), limit: .packets(500)))
        let pie = try downlink(#""rate": "1mbit", "queue": {"discipline": "pie", "alpha": 0.25, "beta": 2, "tupdate": "30ms"}"#).queue
        XCTAssertEqual(pie, LinkQueue(.pie(PIESettings(target: 15_000_000, updateInterval: 30_000_000, alpha: 0.25, beta: 2))))
        let red = try downlink(#""rate": "1mbit", "queue": {"discipline": "red", "min": "30KB", "max": "90KB", "adaptive": true}"#).queue
        XCTAssertEqual(red, LinkQueue(.red(REDSettings(minimum: 30_000, maximum: 90_000, adaptive: true)), limit: .bytes(360_000)))
        let head = try downlink(#""rate": "1mbit", "queue": {"discipline": "drophead", "limit": "100 packets"}"#).queue
        XCTAssertEqual(head, LinkQueue(.dropHead, limit: .packets(100)))
        for queue in [codel, tuned.queue, pie, red, head, LinkQueue(.red(REDSettings(minimum: 3000, maximum: 9000, probability: 0.1, burst: 40)), limit: .bytes(50_000))] {
            try roundTrip(LinkConditions(rate: 1_000_000, queue: queue))
        }
        try roundTrip(LinkConditions(rate: 1_000_000, queue: .dropTail(.time(250_000_000))))
    }

    /// A kernel's red keeps the weight (Wlog), not the burst: the burst read back is tc's default when that
    /// gives the weight, else the smallest burst that does, whose weight is the same.
    func testREDsBurstIsFoundFromTheWeightItGave() throws {
        let base = REDSettings(minimum: 30_000, maximum: 90_000)
        XCTAssertEqual(base.effectiveBurst, 50)
        XCTAssertNil(base.burst(givingWeightLog: try XCTUnwrap(base.weightLog)), "the default burst's weight reads back as the default")
        var weights: Set<Int> = []
        for burst: UInt32 in [31, 40, 60, 100, 400, 3000, 100_000] {
            var sent = base
            sent.burst = burst
            let log = try XCTUnwrap(sent.weightLog, "\(burst)")
            weights.insert(log)
            guard log != base.weightLog else { continue }  // the default's weight: read back as the default
            let found = try XCTUnwrap(base.burst(givingWeightLog: log), "\(burst)")
            var read = base
            read.burst = found
            XCTAssertEqual(read.weightLog, log, "burst \(burst) read back as \(found)")
            XCTAssertLessThanOrEqual(found, burst)
            read.burst = found - 1
            XCTAssertNotEqual(read.weightLog, log, "\(found) is the smallest burst of that weight")
        }
        XCTAssertGreaterThanOrEqual(weights.count, 5, "the bursts tried span several weights")
        XCTAssertNil(base.burst(givingWeightLog: 1), "no burst above min/avpkt gives a weight of 1/2")
    }

    func testBadQueuesAreRefusedWithTheirPath() throws {
        func refused(_ members: String, _ path: String, _ problem: String, file: StaticString = #filePath, line: UInt = #line) throws {
            let error = try XCTUnwrap(downlinkError(members, file: file, line: line), file: file, line: line)
            XCTAssertEqual(error.path?.description, path, file: file, line: line)
            XCTAssertEqual(error.problem, problem, file: file, line: line)
        }
        try refused(#""rate": "1mbit", "queue": "64kb""#, "$.downlink.queue", #""64kb" has an unknown unit "kb" (did you mean "64KB"?)"#)
        try refused(#""rate": "1mbit", "queue": "1000packets""#, "$.downlink.queue", #""1000packets" has no space before the unit"#)
        try refused(#""rate": "1mbit", "queue": "100""#, "$.downlink.queue", #""100" has no unit"#)
        try refused(#""queue": "100 packets""#, "$.downlink.queue", "a queue without a rate or a trace")
        try refused(#""rate": "1mbit", "queue": "10 packets", "queueLimit": 10"#, "$.downlink.queueLimit", #"a "queueLimit" beside a "queue""#)
        try refused(#""rate": "1mbit", "queue": "0 packets""#, "$.downlink.queue", "a limit of 0 packets")
        try refused(#""rate": "1mbit", "queue": {"discipline": "codle"}"#, "$.downlink.queue.discipline", #""codle" is not a queue discipline (did you mean "codel"?)"#)
        try refused(#""rate": "1mbit", "queue": {"discipline": "codel", "alpha": 1}"#, "$.downlink.queue.alpha", #""alpha" is not a parameter of codel"#)
        try refused(#""rate": "1mbit", "queue": {"discipline": "drophead"}"#, "$.downlink.queue", #"missing key "limit""#)
        try refused(#""rate": "1mbit", "queue": {"discipline": "codel", "limit": "100ms"}"#, "$.downlink.queue.limit", "a time limit for codel")
        try refused(#""rate": "1mbit", "queue": {"discipline": "pie", "beta": 3}"#, "$.downlink.queue.beta", "3.0 is out of range")
        try refused(#""rate": "1mbit", "queue": {"discipline": "red", "min": "90KB", "max": "30KB"}"#, "$.downlink.queue.max", "thresholds 90KB to 30KB")
        try refused(#""rate": "1mbit", "queue": {"discipline": "red", "min": "30KB", "max": "90KB", "limit": "100 packets"}"#, "$.downlink.queue.limit", "a RED limit in 100 packets")
        try refused(#""rate": "1mbit", "queue": {"discipline": "red", "min": "30KB", "max": "90KB", "burst": 5}"#, "$.downlink.queue.burst", "a burst of 5 packets is below min / avpkt (30)")
    }

    // MARK: Delay and loss traces

    private func folderWithTraces(_ files: [String: String]) throws -> String {
        let folder = NSTemporaryDirectory() + "linkcond-steptrace-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for (name, text) in files { try text.write(toFile: folder + "/" + name, atomically: true, encoding: .utf8) }
        addTeardownBlock { try? FileManager.default.removeItem(atPath: folder) }
        return folder
    }

    func testDelayAndLossTracesAreReadBesideTheProfile() throws {
        let folder = try folderWithTraces(["d.trace": "0 50ms\n1000 200ms\n2000\n", "l.trace": "0 1%\n500 20%\n"])
        let text = #"{"name": "t", "downlink": {"delayTrace": "d.trace", "lossTrace": "l.trace", "jitter": "5ms"}}"#
        let profile = try ProfileParser.parse(text: text, source: folder + "/t.json")
        XCTAssertEqual(profile.downlink.delayTrace?.steps.map(\.value), [50e6, 200e6])
        XCTAssertEqual(profile.downlink.delayTrace?.period, 2000)
        XCTAssertEqual(profile.downlink.delayTrace?.path, folder + "/d.trace")
        XCTAssertEqual(profile.downlink.lossTrace?.steps.map(\.value), [0.01, 0.2])
        XCTAssertFalse(profile.downlink.isNeutral)
        // Written back by name (and by path for the engine), read back the same.
        let written = ProfileParser.jsonText(of: profile)
        XCTAssertTrue(written.contains(#""delayTrace": "d.trace""#), written)
        XCTAssertEqual(try ProfileParser.parse(text: written, source: folder + "/t.json"), profile)
    }

    func testBadTracesAndConflictsAreRefused() throws {
        let folder = try folderWithTraces(["bad.trace": "0 50ms\n100 fast\n", "d.trace": "0 50ms\n"])
        func error(_ downlink: String) -> ProfileError? {
            do {
                _ = try ProfileParser.parse(text: #"{"name": "t", "downlink": {"# + downlink + "}}", source: folder + "/t.json")
                return nil
            } catch { return error }
        }
        let bad = try XCTUnwrap(error(#""delayTrace": "bad.trace""#))
        XCTAssertEqual(bad.path?.description, "$.downlink.delayTrace")
        XCTAssertTrue(bad.problem.contains("bad.trace: line 2: \"fast\" is not a delay"), bad.problem)
        let both = try XCTUnwrap(error(#""delay": "10ms", "delayTrace": "d.trace""#))
        XCTAssertEqual(both.path?.description, "$.downlink.delay")
        XCTAssertEqual(both.problem, #"a "delay" beside a "delayTrace""#)
        XCTAssertEqual(try XCTUnwrap(error(#""lossTrace": "missing.trace""#)).file, folder + "/missing.trace")
    }
}

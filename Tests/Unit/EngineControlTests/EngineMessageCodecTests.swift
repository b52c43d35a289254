import EngineControl
import Foundation
import JSONDocument
import LinkEmulation
import Profiles
import XCTest

/// The control protocol's one codec (both ends use it): every request and answer reads back as the value
/// written, the conditions inside are a profile document read and checked as a profile file is, and
/// whatever does not fit is refused with where and why.
final class EngineMessageCodecTests: XCTestCase {
    private static let catalog = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("profiles").path

    private var folder = ""

    override func setUpWithError() throws {
        try super.setUpWithError()
        folder = NSTemporaryDirectory() + "engine-codec-\(getpid())-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: folder)
        try super.tearDownWithError()
    }

    /// Profiles with every key of the format at least once and awkward values, read from files (as users'
    /// profiles are), the catalog's among them; one carries a delivery trace in its own folder.
    private func profiles() throws -> [Profile] {
        try "0\n0\n1\n5\n9\n12\n".write(toFile: "\(folder)/drive.trace", atomically: false, encoding: .utf8)
        let documents = [
            #"{"name": "every", "description": "all keys", "dnsDelay": "1.5s", "targets": [{"to": "198.19.0.0/24", "protocol": "tcp", "port": 443}, {"to": "2001:2::/48"}],"#
                + #""downlink": {"rate": "240kbit", "delay": "400ms", "jitter": {"amount": "12.345us", "correlation": "25%", "distribution": "paretonormal"},"#
                + #""loss": {"percent": "10%", "correlation": "0.00001%"}, "duplicate": {"percent": "0.3%", "correlation": "50%"}, "corrupt": "33.333333%","#
                + #""reorder": {"percent": "25%", "correlation": "50%", "gap": 5}, "slot": {"min": "1ms", "max": "2ms", "packets": 3, "bytes": 4500},"#
                + #""queueLimit": 1000, "ecn": true},"#
                + #""uplink": {"delay": "1ns", "loss": {"gilbertElliott": {"p": "1%", "r": "30%"}}, "slot": {"min": "7ns"}}}"#,
            #"{"name": "four-state", "uplink": {"trace": "drive.trace", "delay": "10ms", "loss": {"fourState": {"p13": "0.1%", "p31": "79.9999999999%", "p32": "20%", "p23": "0.00001%", "p14": "50%"}}}}"#,
        ]
        var profiles = try ProfileCatalog(directory: Self.catalog).all()
        for (index, document) in documents.enumerated() {
            let path = "\(folder)/p\(index).json"
            try document.write(toFile: path, atomically: false, encoding: .utf8)
            profiles.append(try ProfileParser.load(path: path))
        }
        return profiles
    }

    /// What the engine's side reads: the sent profile without its source file (the file a profile was read
    /// from is not part of it on the wire).
    private func sent(_ profile: Profile) -> Profile {
        var profile = profile
        profile.source = nil
        return profile
    }

    func testEveryRequestReadsBackAsWritten() throws {
        let all = try profiles()
        XCTAssertGreaterThan(all.count, 15)
        var requests = [EngineRequest(operation: .show), EngineRequest(operation: .clear, links: [.wifi, .cellular])]
        requests += all.map { EngineRequest(operation: .apply, profile: $0, links: $0.name.count % 2 == 0 ? nil : [.wifi]) }
        for request in requests {
            let text = EngineMessageCodec.text(of: request)
            XCTAssertFalse(text.contains("\n"), "one line")
            var read = try EngineMessageCodec.request(Array(text.utf8))
            read.profile?.source = nil
            XCTAssertEqual(read, EngineRequest(operation: request.operation, profile: request.profile.map(sent), links: request.links), text)
        }
    }

    func testATraceTravelsByItsPathAndIsReadByTheEngine() throws {
        let profile = try XCTUnwrap(try profiles().first { $0.name == "four-state" })
        let trace = try XCTUnwrap(profile.uplink.trace)
        XCTAssertEqual(trace.path, "\(folder)/drive.trace")
        let text = EngineMessageCodec.text(of: EngineRequest(operation: .apply, profile: profile))
        XCTAssertTrue(text.contains(#""trace":"\#(folder)/drive.trace""#), text)
        XCTAssertFalse(text.contains("[0,0,1"), "the trace's content does not travel: \(text)")
        let read = try EngineMessageCodec.request(Array(text.utf8))
        XCTAssertEqual(read.profile?.uplink.trace?.milliseconds, [0, 0, 1, 5, 9, 12])
        // The file is what counts: the engine reads what is there now.
        try "1\n".write(toFile: "\(folder)/drive.trace", atomically: false, encoding: .utf8)
        XCTAssertEqual(try EngineMessageCodec.request(Array(text.utf8)).profile?.uplink.trace?.milliseconds, [1])
    }

    func testEveryAnswerReadsBackAsWritten() throws {
        var counters = DirectionCounters()
        counters.offeredFrames = 1
        counters.transmitQueueBytes = UInt64.max
        counters.dnsFrames = 12_345_678_901
        let busy = EngineDirectionState(
            counters: counters, sendFailures: 3, receiveOverruns: 1_818, truncated: 41, oversized: UInt64.max - 1,
            lateness: EngineLateness(count: 10, median: 5, p99: 99, maximum: UInt64.max))
        let idle = EngineDirectionState(counters: DirectionCounters())
        var responses = [EngineResponse(error: "no such link", links: [], pid: 77)]
        var traces: [String: DeliveryTrace] = [:]
        for profile in try profiles() {
            if let trace = profile.uplink.trace, let path = trace.path { traces[path] = trace }
            responses.append(EngineResponse(
                links: [
                    EngineLinkState(link: .wifi, clientSide: "cl-wl0", routerSide: "rt-wl0", profile: sent(profile), uplink: busy, downlink: idle),
                    EngineLinkState(link: .cellular, clientSide: "cl-ww0", routerSide: "rt-ww0", profile: nil, uplink: idle, downlink: busy),
                ], pid: 4242))
        }
        // The client passes the traces it sent; the trace file is gone, so reading it again would fail.
        try FileManager.default.removeItem(atPath: "\(folder)/drive.trace")
        for response in responses {
            let text = EngineMessageCodec.text(of: response)
            XCTAssertFalse(text.contains("\n"), "one line")
            var read = try EngineMessageCodec.response(Array(text.utf8), knownTraces: traces)
            for index in read.links.indices { read.links[index].profile?.source = nil }
            XCTAssertEqual(read, response, text)
            // Read as a change reads it: everything but the directions' states, which are empty and said to be.
            var brief = try EngineMessageCodec.response(Array(text.utf8), knownTraces: traces, directions: false)
            for index in brief.links.indices {
                brief.links[index].profile?.source = nil
                XCTAssertFalse(brief.links[index].directionsRead)
                XCTAssertEqual(brief.links[index].uplink, idle)
                XCTAssertEqual(brief.links[index].downlink, idle)
            }
            var expected = response
            for index in expected.links.indices {
                expected.links[index].uplink = idle
                expected.links[index].downlink = idle
                expected.links[index].directionsRead = false
            }
            XCTAssertEqual(brief, expected, text)
        }
    }

    private func refusal(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> String {
        do {
            let request = try EngineMessageCodec.request(Array(text.utf8))
            XCTFail("read \(request) from \(text)", file: file, line: line)
            return ""
        } catch {
            return error.description
        }
    }

    func testARequestThatDoesNotFitIsRefusedWithWhereAndWhy() {
        // The profile is checked by the profile format's own rules, at its place in the request.
        XCTAssertEqual(
            refusal(#"{"operation": "apply", "profile": {"name": "x", "downlink": {"loss": "150%"}}}"#),
            #"the request: $.profile.downlink.loss (line 1, column 70): "150%" is out of range: expected a percentage from 0% to 100%"#)
        XCTAssertTrue(
            refusal(#"{"operation": "apply", "profile": {"name": "x", "downlink": {"dealy": "1ms"}}}"#).contains(#"did you mean "delay"?"#))
        XCTAssertTrue(refusal(#"{"operation": "apply", "profile": {"name": "x", "uplink": {"delay": "1ms", "reorder": "5%"}, "downlink": {"reorder": "5%"}}}"#)
            .contains("$.profile.downlink.reorder"))
        XCTAssertTrue(refusal(#"{"operation": "apply"}"#).contains(#"missing key "profile""#), refusal(#"{"operation": "apply"}"#))
        XCTAssertTrue(refusal(#"{"operation": "show", "profile": {"name": "x"}}"#).contains(#"a profile beside "show""#))
        XCTAssertTrue(refusal(#"{"operation": "aply"}"#).contains(#"did you mean "apply"?"#))
        XCTAssertTrue(refusal(#"{"operation": "show", "links": ["wifii"]}"#).contains(#"did you mean "wifi"?"#))
        XCTAssertTrue(refusal(#"{"operation": "show", "verbose": true}"#).contains("verbose"))
        XCTAssertTrue(refusal(#"{"operation": "#).contains("the request"))
        let huge = #"{"operation": "show", "links": [""# + String(repeating: " ", count: EngineMessageCodec.maximumMessage) + #""]}"#
        XCTAssertTrue(refusal(huge).contains("at most \(EngineMessageCodec.maximumMessage) bytes"), refusal(huge))
    }

    func testAnAnswerThatDoesNotFitSaysWhere() throws {
        let response = EngineResponse(
            links: [EngineLinkState(
                link: .wifi, clientSide: "cl-wl0", routerSide: "rt-wl0", profile: Profile(name: "edge", downlink: LinkConditions(delay: 1_000_000)),
                uplink: EngineDirectionState(counters: DirectionCounters()), downlink: EngineDirectionState(counters: DirectionCounters()))],
            pid: 1)
        let text = EngineMessageCodec.text(of: response)
        let cases = [
            (text.replacingOccurrences(of: #""pid":1"#, with: #""pid":"1""#), "$.pid"),
            (text.replacingOccurrences(of: #""sendFailures":0,"#, with: ""), #"missing key "sendFailures""#),
            (text.replacingOccurrences(of: #""truncated":0"#, with: #""truncated":-1"#), "$.links[0].uplink.truncated"),
            (text.replacingOccurrences(of: #""oversized":0"#, with: #""oversized":"many""#), "$.links[0].uplink.oversized"),
            (text.replacingOccurrences(of: #""wifi""#, with: #""wired""#), "$.links[0].link"),
            (text.replacingOccurrences(of: #""1ms""#, with: #""-1ms""#), "$.links[0].profile.downlink.delay"),
            (#"{"pid":"#, "the engine's answer"),
        ]
        for (broken, expected) in cases {
            XCTAssertThrowsError(try EngineMessageCodec.response(Array(broken.utf8)), broken) { error in
                XCTAssertTrue("\(error)".contains(expected), "\(error) does not name \(expected)")
            }
        }
    }

    /// The I/O's drops for length travel both ways under their names; an engine started by an older
    /// linkcond, which does not send them, reads as having dropped none.
    func testTheDropsForLengthTravelByNameAndMayBeAbsent() throws {
        let state = EngineDirectionState(counters: DirectionCounters(), sendFailures: 1, receiveOverruns: 2, truncated: 3, oversized: 4)
        let response = EngineResponse(
            links: [EngineLinkState(link: .wifi, clientSide: "cl-wl0", routerSide: "rt-wl0", profile: nil, uplink: state, downlink: state)], pid: 9)
        let text = EngineMessageCodec.text(of: response)
        XCTAssertTrue(text.contains(#""sendFailures":1,"receiveOverruns":2,"truncated":3,"oversized":4"#), text)
        let older = text.replacingOccurrences(of: #","truncated":3,"oversized":4"#, with: "")
        XCTAssertNotEqual(older, text)
        let read = try EngineMessageCodec.response(Array(older.utf8))
        XCTAssertEqual(read.links.first?.uplink.truncated, 0)
        XCTAssertEqual(read.links.first?.uplink.oversized, 0)
        XCTAssertEqual(read.links.first?.uplink.receiveOverruns, 2)
    }
}

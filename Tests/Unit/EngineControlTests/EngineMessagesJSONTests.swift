import EngineControl
import Foundation
import LinkEmulation
import Profiles
import XCTest

/// The client's hand-written side of the control protocol against the Codable side the engine uses: every
/// request the client writes reads back through JSONDecoder as the same value, and every response
/// JSONEncoder writes reads back through the client's reader as the same value.
final class EngineMessagesJSONTests: XCTestCase {
    private static let catalog = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("profiles").path

    /// Every field and every case at least once, with awkward doubles.
    private func everything() throws -> [LinkConditions] {
        [
            LinkConditions(),
            LinkConditions(
                rate: 240_000, delay: 400_000_000, jitter: 12_345, delayCorrelation: 0.25, distribution: .paretonormal,
                loss: .random(probability: 0.1, correlation: 1e-7), duplicate: Chance(0.003, correlation: 0.5), corrupt: Chance(1.0 / 3.0),
                reorder: Reorder(0.25, correlation: 0.5, gap: 5), slot: Slot(minDelay: 1_000_000, maxDelay: 2_000_000, packets: 3, bytes: 4500),
                queueLimit: 1000, ecn: true, trace: try DeliveryTrace(milliseconds: [0, 0, 1, 5, 9, 12])),
            LinkConditions(rate: UInt64.max, delay: 1, loss: .gilbertElliott(p: 0.01, r: 0.3, oneMinusH: 1, oneMinusK: 0), slot: Slot(minDelay: 7)),
            LinkConditions(distribution: .normal, loss: .fourState(p13: 0.001, p31: 0.999_999_999_999, p32: 0.2, p23: 0.000_000_1, p14: 0.5)),
        ]
    }

    private func requests() throws -> [EngineRequest] {
        var profiles = try ProfileCatalog(directory: Self.catalog).all()
        let targets = [
            try TrafficTarget(to: "198.19.0.0/24", protocol: "tcp", port: 443), try TrafficTarget(to: "2001:2::/48"),
            try TrafficTarget(to: "198.19.0.2/32", protocol: "udp"),
        ]
        for (index, conditions) in try everything().enumerated() {
            profiles.append(Profile(
                name: "every-\(index)", downlink: conditions, uplink: try everything().reversed()[index], dnsDelay: UInt64(index) * 1_000_000,
                targets: Array(targets.prefix(index))))
        }
        var requests = [EngineRequest(operation: .show), EngineRequest(operation: .apply, conditions: .clear, links: [.wifi, .cellular])]
        requests += profiles.map { EngineRequest(operation: .apply, conditions: EngineConditions($0), links: $0.name.count % 2 == 0 ? nil : [.wifi]) }
        return requests
    }

    func testRequestsReadBackThroughCodable() throws {
        let all = try requests()
        XCTAssertGreaterThan(all.count, 15)
        for request in all {
            let text = request.jsonText
            XCTAssertFalse(text.contains("\n"), "one line")
            let decoded = try JSONDecoder().decode(EngineRequest.self, from: Data(text.utf8))
            XCTAssertEqual(decoded, request, text)
        }
    }

    func testResponsesWrittenByCodableReadBack() throws {
        var counters = DirectionCounters()
        counters.offeredFrames = 1
        counters.transmitQueueBytes = UInt64.max
        counters.dnsFrames = 12_345_678_901
        var responses = [EngineResponse(error: "no such link", links: [], pid: 77)]
        for request in try requests() {
            guard let conditions = request.conditions else { continue }
            let up = EngineDirectionState(
                conditions: conditions.uplink, dnsDelay: conditions.dnsDelay, targets: conditions.targets, counters: counters, sendFailures: 3, receiveOverruns: 1_818,
                lateness: EngineLateness(count: 10, median: 5, p99: 99, maximum: UInt64.max))
            let down = EngineDirectionState(
                conditions: conditions.downlink, dnsDelay: 0, targets: conditions.targets, counters: DirectionCounters(), sendFailures: 0, lateness: nil)
            responses.append(EngineResponse(
                links: [
                    EngineLinkState(link: .wifi, clientSide: "cl-wl0", routerSide: "rt-wl0", profile: conditions.profile, uplink: up, downlink: down),
                    EngineLinkState(link: .cellular, clientSide: "cl-ww0", routerSide: "rt-ww0", profile: nil, uplink: down, downlink: up),
                ], pid: 4242))
        }
        for response in responses {
            let data = try JSONEncoder().encode(response)
            XCTAssertEqual(try EngineResponse(jsonBytes: Array(data)), response, String(decoding: data, as: UTF8.self))
        }
    }

    func testAResponseThatDoesNotFitSaysWhere() throws {
        let response = EngineResponse(
            links: [EngineLinkState(
                link: .wifi, clientSide: "cl-wl0", routerSide: "rt-wl0", profile: nil,
                uplink: EngineDirectionState(conditions: .unconditioned, dnsDelay: 0, targets: [], counters: DirectionCounters(), sendFailures: 0, lateness: nil),
                downlink: EngineDirectionState(conditions: .unconditioned, dnsDelay: 0, targets: [], counters: DirectionCounters(), sendFailures: 0, lateness: nil))],
            pid: 1)
        // Keys sorted: JSONEncoder's order otherwise follows a dictionary's, which differs from run to run,
        // and "dnsDelay" must not be the last key for the edit below to find it.
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let text = String(decoding: try encoder.encode(response), as: UTF8.self)
        XCTAssertTrue(text.contains("\"dnsDelay\":0,") && text.contains("\"pid\":1"), text)
        let cases = [
            (text.replacingOccurrences(of: "\"pid\":1", with: "\"pid\":\"1\""), "bad 'pid'"),
            (text.replacingOccurrences(of: "\"dnsDelay\":0,", with: ""), "no 'links.0.uplink.dnsDelay'"),
            (text.replacingOccurrences(of: "\"wifi\"", with: "\"wired\""), "bad 'links.0.link'"),
            ("{\"pid\":", "is not JSON"),
        ]
        for (broken, expected) in cases {
            XCTAssertThrowsError(try EngineResponse(jsonBytes: Array(broken.utf8))) { error in
                if expected != "is not JSON" { XCTAssertEqual("\(error)", expected, broken) }
            }
        }
    }
}

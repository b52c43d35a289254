import XCTest

/// What DNSFrameWatch makes of the frames it saw, on frames built here: the high-latency-dns check must
/// fail on a retransmission, a second round trip or an unanswered query, and pass one round trip.
final class DNSFrameWatchTests: XCTestCase {
    /// An IPv4 (or IPv6) UDP packet from `source` to `destination` port carrying a DNS header with `id`.
    private func packet(v6: Bool = false, source: UInt16, destination: UInt16, id: UInt16, response: Bool) -> [UInt8] {
        var ip = [UInt8](repeating: 0, count: v6 ? 40 : 20)
        if v6 {
            ip[0] = 0x60
            ip[6] = 17
        } else {
            ip[0] = 0x45
            ip[9] = 17
        }
        let udp: [UInt8] = [UInt8(source >> 8), UInt8(source & 0xFF), UInt8(destination >> 8), UInt8(destination & 0xFF), 0, 20, 0, 0]
        let dns: [UInt8] = [UInt8(id >> 8), UInt8(id & 0xFF), response ? 0x81 : 0x01, 0x00]
        return ip + udp + dns
    }

    func testFramesAreReadFromIPv4AndIPv6AndOthersAreLeftOut() {
        let query = DNSFrameWatch.parse(packet(source: 40_000, destination: 53, id: 7, response: false), outgoing: true, port: 53)
        XCTAssertEqual(query?.clientPort, 40_000)
        XCTAssertEqual(query?.id, 7)
        XCTAssertEqual(query?.isResponse, false)
        let answer = DNSFrameWatch.parse(packet(v6: true, source: 53, destination: 40_001, id: 9, response: true), outgoing: false, port: 53)
        XCTAssertEqual(answer?.clientPort, 40_001)
        XCTAssertEqual(answer?.isResponse, true)
        XCTAssertNil(DNSFrameWatch.parse(packet(source: 40_000, destination: 80, id: 7, response: false), outgoing: true, port: 53))
        XCTAssertNil(DNSFrameWatch.parse(Array(packet(source: 40_000, destination: 53, id: 7, response: false).prefix(30)), outgoing: true, port: 53))
    }

    func testOneRoundTripPassesAndARetransmissionOrASecondRoundDoesNot() {
        func frame(_ outgoing: Bool, _ id: UInt16) -> DNSFrameWatch.Frame {
            DNSFrameWatch.Frame(outgoing: outgoing, clientPort: 40_000, id: id, isResponse: !outgoing)
        }
        // A and AAAA at once, both answered: one round trip.
        let parallel = DNSFrameWatch.Exchange(clientPort: 40_000, frames: [frame(true, 1), frame(true, 2), frame(false, 2), frame(false, 1)])
        XCTAssertEqual(parallel.queries.count, 2)
        XCTAssertEqual(parallel.repeatedQueries, 0)
        XCTAssertEqual(parallel.queriesAfterAnAnswer, 0)
        XCTAssertTrue(parallel.everyQueryAnswered)
        // Sent again after the resolver's timeout.
        let again = DNSFrameWatch.Exchange(clientPort: 40_000, frames: [frame(true, 1), frame(true, 1), frame(false, 1)])
        XCTAssertEqual(again.repeatedQueries, 1)
        // A, its answer, then AAAA: two round trips.
        let sequential = DNSFrameWatch.Exchange(clientPort: 40_000, frames: [frame(true, 1), frame(false, 1), frame(true, 2), frame(false, 2)])
        XCTAssertEqual(sequential.queriesAfterAnAnswer, 1)
        let unanswered = DNSFrameWatch.Exchange(clientPort: 40_000, frames: [frame(true, 1), frame(true, 2), frame(false, 1)])
        XCTAssertFalse(unanswered.everyQueryAnswered)
    }
}

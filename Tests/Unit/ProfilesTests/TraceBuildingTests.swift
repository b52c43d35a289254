import TestRandomness
import XCTest

@testable import Profiles

/// Traces made from rates over time: opportunities where the bits add up, the period at the end.
final class TraceBuildingTests: XCTestCase {
    func testAConstant12MbitRateIsOneOpportunityEveryMillisecond() throws {
        // 12 Mbit/s is 12 000 bits a millisecond: exactly one 1500-byte opportunity each.
        let trace = try DeliveryTrace(rateCSV: "time,rate\n0,12mbit\n")
        XCTAssertEqual(trace.milliseconds, Array(1...1000).map(UInt32.init))
        XCTAssertEqual(trace.summary.meanRate, 12_000_000, accuracy: 0.5)
    }

    func testRatesChangeAtTheirRowsAndTheLastRowLastsAsLongAsThePreviousOne() throws {
        // 6 Mbit/s for 1 s (an opportunity every 2 ms: 500), then 3 Mbit/s for 1 s (every 4 ms: 250).
        let trace = try DeliveryTrace(rateCSV: "# a comment\n0,6000000\n1,3mbit\n")
        XCTAssertEqual(trace.periodMilliseconds, 2000)
        XCTAssertEqual(trace.milliseconds.count, 750)
        XCTAssertEqual(trace.milliseconds.prefix(3), [2, 4, 6])
        XCTAssertEqual(trace.milliseconds.filter { $0 <= 1000 }.count, 500)
        // Per second within one opportunity (12 000 bit/s): the summary counts the opportunity that ends the
        // first second (at 1000 ms) in the second one.
        let rates = trace.summary.perSecondRates
        XCTAssertEqual(rates.count, 2)
        XCTAssertEqual(rates[0], 6_000_000, accuracy: 12_000)
        XCTAssertEqual(rates[1], 3_000_000, accuracy: 12_000)
        XCTAssertEqual(trace.summary.percentile(0.5), rates[1])
        XCTAssertEqual(trace.summary.percentile(1), rates[0])
        XCTAssertEqual(trace.summary.meanRate, 4_500_000, accuracy: 0.5)
    }

    /// The rule as the trace builder states it, one millisecond at a time: millisecond m runs at the rate of
    /// the last row started by (m − 1) ms and adds rate/1000 bits; each 12 000 bits is an opportunity at m.
    private func referenceOpportunities(rows: [(start: UInt64, rate: UInt64)], endMillisecond: UInt64) -> [UInt32] {
        var result: [UInt32] = []
        var credit: UInt64 = 0
        var row = 0
        for millisecond in 1...endMillisecond {
            while row + 1 < rows.count && rows[row + 1].start <= (millisecond - 1) * 1_000_000 { row += 1 }
            credit += rows[row].rate
            while credit >= 12_000_000 {
                credit -= 12_000_000
                result.append(UInt32(millisecond))
            }
        }
        return result
    }

    func testOpportunitiesWorkedOutRowByRowAreTheOnesMillisecondByMillisecond() {
        // Rows at whole and fractional milliseconds (several within one), zero rates, slow and fast rates.
        var generator = SplitMix64(seed: 0x7ace)
        for _ in 0..<300 {
            var rows: [(start: UInt64, rate: UInt64)] = [(0, 0)]
            var start: UInt64 = 0
            for _ in 0..<Int(generator.next() % 6) {
                start += generator.next() % 3 == 0 ? generator.next() % 1_000_000 + 1 : (generator.next() % 400 + 1) * 1_000_000 + generator.next() % 2 * 250_000
                rows.append((start, 0))
            }
            for index in rows.indices {
                switch generator.next() % 4 {
                case 0: rows[index].rate = 0
                case 1: rows[index].rate = generator.next() % 50_000 + 1
                case 2: rows[index].rate = generator.next() % 30_000_000 + 1
                default: rows[index].rate = (generator.next() % 5 + 1) * 12_000_000
                }
            }
            let end = start / 1_000_000 + generator.next() % 500 + 1
            XCTAssertEqual(DeliveryTrace.opportunities(rows: rows, endMillisecond: end), referenceOpportunities(rows: rows, endMillisecond: end), "\(rows), end \(end)")
        }
    }

    func testASlowRateOverDaysIsBuiltWithoutVisitingEveryMillisecond() throws {
        // The fuzzer's input (Fuzz/regressions/delivery-trace): 12 bit/s for 300,030 s, then 0 for as long —
        // 600 million milliseconds, which the builder used to visit one by one.
        let trace = try DeliveryTrace(rateCSV: "tq2time,rate\n0,12\n300030,0\n")
        // 12 bit/s × 300,030 s = 3,600,360 bits: 300 opportunities, one every 1000 s.
        XCTAssertEqual(trace.milliseconds.count, 300)
        XCTAssertEqual(trace.milliseconds.first, 1_000_000)
        XCTAssertEqual(trace.periodMilliseconds, 600_060_000)
    }

    func testTheTraceReadsBackFromItsText() throws {
        let trace = try DeliveryTrace(rateCSV: "0,5mbit\n0.5,1500kbit\n1,20mbit\n")
        XCTAssertEqual(try DeliveryTrace(parsing: trace.text), trace)
        // 5 Mbit/s × 0.5 s + 1.5 Mbit/s × 0.5 s + 20 Mbit/s × 0.5 s = 13.25 Mbit over 1.5 s.
        XCTAssertEqual(trace.summary.meanRate, 13_250_000 / 1.5, accuracy: 12_000 / 1.5)
    }

    func testBadRowsNameTheirLine() {
        func problem(_ text: String) -> String? {
            do {
                _ = try DeliveryTrace(rateCSV: text, source: "rates.csv")
                return nil
            } catch {
                return error.description
            }
        }
        XCTAssertEqual(problem("0,1mbit\n1,fast\n")?.contains("line 2"), true)
        XCTAssertEqual(problem("0,1mbit\n1,fast\n")?.contains("\"fast\" is not a rate"), true)
        XCTAssertEqual(problem("0,1mbit\n2,1mbit\n1,1mbit\n")?.contains("line 3"), true)
        XCTAssertEqual(problem("1,1mbit\n")?.contains("a first row at time 0"), true)
        XCTAssertEqual(problem("0;1mbit\n")?.contains("is not a TIME,RATE row"), true)
        XCTAssertNotNil(problem(""))
        XCTAssertEqual(problem("0,8bit\n")?.contains("never add up to one"), true)
    }

    /// What a rate CSV may not make: a trace past what a trace line holds, a trace with more opportunities
    /// than a profile reads (refused before anything is built), a time no 64-bit nanosecond count holds
    /// (found by the delivery-trace fuzzer: it trapped), and input with escape sequences (shown escaped).
    func testWhatACSVMayNotMakeIsRefusedWithASentence() {
        func problem(_ text: String) -> String? {
            do {
                _ = try DeliveryTrace(rateCSV: text, source: "rates.csv")
                return nil
            } catch {
                return error.description
            }
        }
        XCTAssertEqual(problem("0,1mbit\n4294967,1mbit\n")?.contains("ends by 4294967295 ms"), true, problem("0,1mbit\n4294967,1mbit\n") ?? "")
        XCTAssertEqual(problem("0,999999gbit\n")?.contains("at most \(DeliveryTrace.maximumOpportunities)"), true)
        XCTAssertEqual(problem("0,1mbit\n88888888888,1mbit\n")?.contains("\"88888888888\" is not a time"), true, problem("0,1mbit\n88888888888,1mbit\n") ?? "")
        let escape = problem("0,1mbit\n\u{1b}[31mred,2\n") ?? ""
        XCTAssertTrue(escape.contains("\\u001B[31mred") && !escape.contains("\u{1b}"), escape)
        let long = problem("0,1mbit\n" + String(repeating: "x", count: 10_000) + ",1\n") ?? ""
        XCTAssertLessThan(long.count, 400, "a long line is cut in the message")
    }

    /// A caller's own bound on the opportunities (what the fuzz target sets): 12 Mbit/s for one second is
    /// 1000 opportunities of 1500 bytes, allowed by a bound of 1000 and refused by 999; a bound above the
    /// profile's own is the profile's.
    func testACallersBoundOnTheOpportunitiesIsKeptExactly() throws {
        XCTAssertEqual(try DeliveryTrace(rateCSV: "0,12mbit\n", maximumOpportunities: 1000).milliseconds.count, 1000)
        XCTAssertThrowsError(try DeliveryTrace(rateCSV: "0,12mbit\n", source: "rates.csv", maximumOpportunities: 999)) { error in
            XCTAssertTrue("\(error)".contains("1000 delivery opportunities") && "\(error)".contains("at most 999 (the bound asked for)"), "\(error)")
        }
        XCTAssertThrowsError(try DeliveryTrace(rateCSV: "0,999999gbit\n", maximumOpportunities: .max)) { error in
            XCTAssertTrue("\(error)".contains("at most \(DeliveryTrace.maximumOpportunities) (a trace file"), "\(error)")
        }
    }
}


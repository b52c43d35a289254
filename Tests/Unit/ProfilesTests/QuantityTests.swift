import XCTest

@testable import Profiles

final class QuantityTests: XCTestCase {
    private let kilo: UInt64 = 1000
    private var mega: UInt64 { kilo * kilo }
    private var giga: UInt64 { mega * kilo }
    private let bitsPerByte: UInt64 = 8
    private let nanosecondsPerMicrosecond: UInt64 = 1000
    private var nanosecondsPerMillisecond: UInt64 { nanosecondsPerMicrosecond * 1000 }
    private var nanosecondsPerSecond: UInt64 { nanosecondsPerMillisecond * 1000 }

    private func quantityError(_ body: () throws -> Any, file: StaticString = #filePath, line: UInt = #line)
        -> QuantityError?
    {
        do {
            let value = try body()
            XCTFail("accepted as \(value)", file: file, line: line)
            return nil
        } catch let error as QuantityError {
            return error
        } catch {
            XCTFail("unexpected \(error)", file: file, line: line)
            return nil
        }
    }

    // MARK: Rates

    func testRatesInBitsPerSecond() throws {
        let cases: [(String, UInt64)] = [
            ("8bit", 8), ("100bit", 100), ("240kbit", 240 * kilo), ("50Mbit", 50 * mega), ("50mbit", 50 * mega),
            ("50MBIT", 50 * mega), ("1gbit", giga), ("2Gbit", 2 * giga), ("1.5mbit", 3 * mega / 2),
            ("0.25kbit", kilo / 4), ("100bit/s", 100), ("240kbit/s", 240 * kilo), ("1.5Mbit/s", 3 * mega / 2),
            ("2gbit/s", 2 * giga), ("007kbit", 7 * kilo),
        ]
        for (text, bits) in cases {
            XCTAssertEqual(try Quantity.rate(text), bits, text)
        }
    }

    func testRatesInBytesPerSecondSpelledOut() throws {
        let cases: [(String, UInt64)] = [
            ("100byte/s", 100 * bitsPerByte), ("30kbyte/s", 30 * kilo * bitsPerByte),
            ("2.5KByte/s", 5 * kilo / 2 * bitsPerByte), ("1mbyte/s", mega * bitsPerByte),
            ("1gbyte/s", giga * bitsPerByte),
        ]
        for (text, bits) in cases {
            XCTAssertEqual(try Quantity.rate(text), bits, text)
        }
    }

    func testTcByteUnitsAreRefusedWithTheirMeaningAndBothSpellings() throws {
        let error = try XCTUnwrap(quantityError { try Quantity.rate("240kbps") })
        XCTAssertEqual(error.kind, .ambiguousUnit)
        XCTAssertEqual(
            error.description,
            #""240kbps" is ambiguous: tc reads kbps as kilobytes per second (1920 kbit/s): expected "240kbit" for kilobits per second, or "240kbyte/s" for kilobytes per second"#
        )
        let cases: [(String, String, String)] = [
            (
                "240bps", #""240bps" is ambiguous: tc reads bps as bytes per second (1920 bit/s)"#,
                #""240bit" for bits per second, or "240byte/s" for bytes per second"#
            ),
            (
                "2Mbps", #""2Mbps" is ambiguous: tc reads Mbps as megabytes per second (16 mbit/s)"#,
                #""2mbit" for megabits per second, or "2mbyte/s" for megabytes per second"#
            ),
            (
                "1gbps", #""1gbps" is ambiguous: tc reads gbps as gigabytes per second (8 gbit/s)"#,
                #""1gbit" for gigabits per second, or "1gbyte/s" for gigabytes per second"#
            ),
            (
                "1.5Kbps", #""1.5Kbps" is ambiguous: tc reads Kbps as kilobytes per second (12 kbit/s)"#,
                #""1.5kbit" for kilobits per second, or "1.5kbyte/s" for kilobytes per second"#
            ),
            (
                "0.01kbps", #""0.01kbps" is ambiguous: tc reads kbps as kilobytes per second (0.08 kbit/s)"#,
                #""0.01kbit" for kilobits per second, or "0.01kbyte/s" for kilobytes per second"#
            ),
        ]
        for (text, problem, expected) in cases {
            let error = try XCTUnwrap(quantityError { try Quantity.rate(text) }, text)
            XCTAssertEqual(error.kind, .ambiguousUnit, text)
            XCTAssertEqual(error.problem, problem)
            XCTAssertEqual(error.expected, expected)
        }
    }

    func testBitOrByteSpellingsAreRefused() throws {
        let cases: [(String, String, String)] = [
            ("240KB/s", "KB/s", "k"), ("240kb", "kb", "k"), ("240k", "k", "k"), ("5Mb", "Mb", "m"), ("5m", "m", "m"),
            ("5MB/s", "MB/s", "m"), ("1G", "G", "g"), ("100b", "b", ""),
        ]
        let names = ["": "", "k": "kilo", "m": "mega", "g": "giga"]
        for (text, unit, prefix) in cases {
            let error = try XCTUnwrap(quantityError { try Quantity.rate(text) }, text)
            let number = String(text.dropLast(unit.count))
            let name = names[prefix]!
            XCTAssertEqual(error.kind, .ambiguousUnit, text)
            XCTAssertEqual(
                error.problem, "\"\(text)\" is ambiguous: \(unit) could mean \(name)bits or \(name)bytes per second")
            XCTAssertEqual(
                error.expected,
                "\"\(number)\(prefix)bit\" for \(name)bits per second, or \"\(number)\(prefix)byte/s\" for \(name)bytes per second"
            )
        }
    }

    func testBareNumberIsRefused() throws {
        let error = try XCTUnwrap(quantityError { try Quantity.rate("240") })
        XCTAssertEqual(error.kind, .ambiguousUnit)
        XCTAssertEqual(error.problem, #""240" has no unit (tc would read a bare number as bits per second)"#)
        XCTAssertTrue(
            error.expected.hasPrefix(#""240kbit" for kilobits per second, "240mbit" for megabits per second"#))
    }

    func testOtherBadRates() throws {
        let cases: [(String, QuantityError.Kind, String)] = [
            ("fast", .invalid, #""fast" is not a rate"#),
            ("", .invalid, "the string is empty"),
            ("240 kbit", .invalid, #""240 kbit" contains a space"#),
            ("-5mbit", .outOfRange, #""-5mbit" is negative"#),
            ("1.0001bit", .invalid, #""1.0001bit" is not a whole number of bits per second"#),
            ("240kbits", .invalid, #""240kbits" has an unknown unit "kbits" (did you mean "240kbit"?)"#),
            ("240kibit", .invalid, #""240kibit" has an unknown unit "kibit" (did you mean "240kbit"?)"#),
            ("1e3kbit", .invalid, #""1e3kbit" is not a plain decimal number"#),
            (".5mbit", .invalid, #"".5mbit" is not a rate"#),
            ("5.mbit", .invalid, #""5.mbit" is not a plain decimal number"#),
            ("+5mbit", .invalid, #""+5mbit" is not a rate"#),
            ("99999999999gbit", .outOfRange, #""99999999999gbit" is out of range"#),
        ]
        for (text, kind, problem) in cases {
            let error = try XCTUnwrap(quantityError { try Quantity.rate(text) }, text)
            XCTAssertEqual(error.kind, kind, text)
            XCTAssertEqual(error.problem, problem, text)
        }
        XCTAssertEqual(
            try XCTUnwrap(quantityError { try Quantity.rate("240 kbit") }).expected, #"no spaces: "240kbit""#)
        XCTAssertEqual(
            try XCTUnwrap(quantityError { try Quantity.rate("99999999999gbit") }).expected,
            "a rate of at most 18446744073709551615bit")
        XCTAssertEqual(try XCTUnwrap(quantityError { try Quantity.rate("fast") }).expected, Quantity.rateExpectation)
    }

    // MARK: Times

    func testTimesInNanoseconds() throws {
        let cases: [(String, UInt64)] = [
            ("0", 0), ("0ms", 0), ("10ns", 10), ("250us", 250 * nanosecondsPerMicrosecond),
            ("400ms", 400 * nanosecondsPerMillisecond), ("1.5ms", 3 * nanosecondsPerMillisecond / 2),
            ("0.001ms", nanosecondsPerMicrosecond), ("1s", nanosecondsPerSecond),
            ("2.25s", 9 * nanosecondsPerSecond / 4),
            ("4294s", 4294 * nanosecondsPerSecond), ("3000ms", 3 * nanosecondsPerSecond),
        ]
        for (text, nanoseconds) in cases {
            XCTAssertEqual(try Quantity.time(text), nanoseconds, text)
        }
        XCTAssertEqual(Quantity.maximumTime, 4294 * nanosecondsPerSecond)
    }

    func testBadTimes() throws {
        let cases: [(String, QuantityError.Kind, String, String)] = [
            ("400", .invalid, #""400" has no unit"#, Quantity.timeExpectation + #" (only "0" may stand alone)"#),
            (
                "400msec", .invalid, #""400msec" has an unknown unit "msec" (did you mean "400ms"?)"#,
                Quantity.timeExpectation
            ),
            ("1sec", .invalid, #""1sec" has an unknown unit "sec" (did you mean "1s"?)"#, Quantity.timeExpectation),
            ("5µs", .invalid, #""5µs" has an unknown unit "µs" (did you mean "5us"?)"#, Quantity.timeExpectation),
            ("400MS", .invalid, #""400MS" has an unknown unit "MS" (did you mean "400ms"?)"#, Quantity.timeExpectation),
            ("400mz", .invalid, #""400mz" has an unknown unit "mz" (did you mean "400ms"?)"#, Quantity.timeExpectation),
            ("400 ms", .invalid, #""400 ms" contains a space"#, #"no spaces: "400ms""#),
            ("-40ms", .outOfRange, #""-40ms" is negative"#, "a time from 0 to 4294s"),
            ("18446744073709551616ns", .outOfRange, #""18446744073709551616ns" is out of range"#, "a time from 0 to 4294s"),
            ("18446744074s", .outOfRange, #""18446744074s" is out of range"#, "a time from 0 to 4294s"),
            ("0.5ns", .invalid, #""0.5ns" is not a whole number of nanoseconds"#, "a time in whole nanoseconds"),
            ("fast", .invalid, #""fast" is not a time"#, Quantity.timeExpectation),
            ("1h", .invalid, #""1h" has an unknown unit "h""#, Quantity.timeExpectation),
        ]
        for (text, kind, problem, expected) in cases {
            let error = try XCTUnwrap(quantityError { try Quantity.time(text) }, text)
            XCTAssertEqual(error.kind, kind, text)
            XCTAssertEqual(error.problem, problem, text)
            XCTAssertEqual(error.expected, expected, text)
        }
    }

    // MARK: Percentages

    func testPercentagesAsFractions() throws {
        let cases: [(String, Double)] = [
            ("0", 0), ("0%", 0), ("1%", 1.0 / 100), ("25%", 25.0 / 100), ("0.5%", 0.5 / 100), ("12.5%", 12.5 / 100),
            ("100%", 1), ("100.0%", 1), ("7%", 7.0 / 100), ("0.001%", 0.001 / 100),
        ]
        for (text, fraction) in cases {
            XCTAssertEqual(try Quantity.percentage(text), fraction, text)
        }
    }

    func testBadPercentages() throws {
        let cases: [(String, QuantityError.Kind, String, String)] = [
            ("-1%", .outOfRange, #""-1%" is negative"#, "a percentage from 0% to 100%"),
            ("1", .invalid, #""1" has no unit"#, #"a percentage with %, such as "1%""#),
            ("0.01", .invalid, #""0.01" has no unit"#, #"a percentage with %, such as "0.01%""#),
            ("1 %", .invalid, #""1 %" contains a space"#, #"no spaces: "1%""#),
            ("5pc", .invalid, #""5pc" has an unknown unit "pc" (did you mean "5%"?)"#, Quantity.percentageExpectation),
            ("lots", .invalid, #""lots" is not a percentage"#, Quantity.percentageExpectation),
        ]
        for (text, kind, problem, expected) in cases {
            let error = try XCTUnwrap(quantityError { try Quantity.percentage(text) }, text)
            XCTAssertEqual(error.kind, kind, text)
            XCTAssertEqual(error.problem, problem, text)
            XCTAssertEqual(error.expected, expected, text)
        }
    }

    // MARK: Ranges

    /// Reading a quantity only refuses what the model cannot hold; ranges are the validator's
    /// (`ProfileParserTests.testRangesAreCheckedOnce` shows the messages).
    func testOutOfRangeValuesAreReadAsTheyAre() throws {
        XCTAssertEqual(try Quantity.rate("4bit"), 4)
        XCTAssertEqual(try Quantity.rate("0kbit"), 0)
        XCTAssertEqual(try Quantity.time("4295s"), 4295 * nanosecondsPerSecond)
        XCTAssertEqual(try Quantity.time("4294.000000001s"), Quantity.maximumTime + 1)
        XCTAssertEqual(try Quantity.time("18446744073709551615ns"), UInt64.max)
        XCTAssertEqual(try Quantity.percentage("150%"), 1.5)
        XCTAssertEqual(try Quantity.percentage("100.01%"), 1.0001)
    }

    // MARK: Formatting

    func testFormatting() {
        XCTAssertEqual(Quantity.formatRate(240 * kilo), "240kbit")
        XCTAssertEqual(Quantity.formatRate(3 * mega / 2), "1500kbit")
        XCTAssertEqual(Quantity.formatRate(50 * mega), "50mbit")
        XCTAssertEqual(Quantity.formatRate(3 * giga), "3gbit")
        XCTAssertEqual(Quantity.formatRate(1001), "1001bit")
        XCTAssertEqual(Quantity.formatTime(0), "0")
        XCTAssertEqual(Quantity.formatTime(400 * nanosecondsPerMillisecond), "400ms")
        XCTAssertEqual(Quantity.formatTime(3 * nanosecondsPerMillisecond / 2), "1500us")
        XCTAssertEqual(Quantity.formatTime(2 * nanosecondsPerSecond), "2s")
        XCTAssertEqual(Quantity.formatTime(7), "7ns")
        XCTAssertEqual(Quantity.formatPercentage(0.25), "25%")
        XCTAssertEqual(Quantity.formatPercentage(0.005), "0.5%")
        XCTAssertEqual(Quantity.formatPercentage(0.07), "7%")
        XCTAssertEqual(Quantity.formatPercentage(1), "100%")
        XCTAssertEqual(Quantity.formatPercentage(0), "0%")
    }

    func testFormattingReadsBack() throws {
        for bits: UInt64 in [8, 999, 240_000, 1_500_000, 33_000_000, 250_000_000, 10_000_000_000, UInt64.max] {
            XCTAssertEqual(try Quantity.rate(Quantity.formatRate(bits)), bits)
        }
        for nanoseconds: UInt64 in [0, 1, 999, 1500, 65_000_000, 1_000_000_001, Quantity.maximumTime] {
            XCTAssertEqual(try Quantity.time(Quantity.formatTime(nanoseconds)), nanoseconds)
        }
        var generator = SystemRandomNumberGenerator()
        let random = (0..<1000).map { _ in Double.random(in: 1e-9...1, using: &generator) }
        for fraction in [0, 0.01, 0.03, 0.07, 0.1, 0.33, 1.0 / 3, 2.0 / 3, 0.999, 0.123456789, 1e-9, 1] + random {
            XCTAssertEqual(try Quantity.percentage(Quantity.formatPercentage(fraction)), fraction, "\(fraction)")
        }
        XCTAssertEqual(Quantity.formatPercentage(1e-9), "0.0000001%")
        XCTAssertEqual(Quantity.formatPercentage(1.0 / 3), "33.33333333333333%")
    }
}

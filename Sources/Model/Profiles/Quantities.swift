import JSONDocument

/// The units of profile values, and their conversion to the numbers the model keeps.
///
/// Every quantity is a string: a decimal number (digits, optionally a point and more digits; no sign,
/// no exponent) followed directly by its unit, with no space. Units are chosen so that no spelling can
/// be read two ways:
///
/// - Rates, in bits per second (case-insensitive): `bit`, `kbit`, `mbit`, `gbit`, each optionally with
///   `/s` (`"240kbit"`, `"50Mbit"`, `"1.5mbit/s"`); bytes per second only spelled out: `byte/s`,
///   `kbyte/s`, `mbyte/s`, `gbyte/s`. Prefixes are decimal (k = 1000). Refused, with the right spelling
///   suggested: `bps`, `kbps`, `mbps`, `gbps` (tc reads these as *bytes* per second), `KB/s`, `kb`,
///   `k` and bare numbers. A rate is at least 8 bit/s.
/// - Times (lowercase): `ns`, `us`, `ms`, `s`, plus a bare `"0"`. At most 4294 s, tc's 32-bit range.
/// - Percentages: a number from 0 to 100 followed by `%` (a bare `"0"` is accepted too).
///
/// Values must come out whole in the model's unit: `"1.5ms"` is 1 500 000 ns, but `"0.5ns"` is refused.
///
/// Reading a quantity refuses only what is not a quantity or what the model cannot hold (a negative value,
/// more than `UInt64.max`). The ranges a value must lie in (at most 4294 s, at most 100%, at least 8 bit/s)
/// are checked by the validators (``ProfileParser/validate(_:)``), from the limits here.
public enum Quantity {
    /// The largest time: 4294 s, in nanoseconds (tc keeps times as 32-bit microsecond counts).
    public static let maximumTime: UInt64 = 4294 * 1_000_000_000
    /// The lowest rate: 8 bit/s, one byte per second (netem counts whole bytes per second).
    public static let minimumRate: UInt64 = 8

    /// The range of times, for messages.
    public static let timeRange = "a time from 0 to 4294s"
    /// The range of percentages, for messages.
    public static let percentageRange = "a percentage from 0% to 100%"
    /// The range of rates, for messages.
    public static let rateRange =
        "a rate of at least 8bit (one byte per second); leave \"rate\" out for an unlimited link"

    /// What a rate looks like, for messages.
    public static let rateExpectation =
        "a rate such as \"240kbit\": a number followed by bit, kbit, mbit or gbit (bits per second, "
        + "optionally with /s), or by byte/s, kbyte/s, mbyte/s or gbyte/s"
    /// What a time looks like, for messages.
    public static let timeExpectation = "a time such as \"400ms\": a number followed by ns, us, ms or s"
    /// What a percentage looks like, for messages.
    public static let percentageExpectation = "a percentage such as \"1%\" or \"0.5%\""

    /// A rate in bits per second: `"240kbit"` is 240 000 (`"4bit"` is 4: the validator refuses it).
    public static func rate(_ text: String) throws(QuantityError) -> UInt64 {
        let parts = try split(text, expectation: rateExpectation, noun: "rate")
        let unit = parts.unit.lowercased()
        guard let multiplier = rateUnits[unit] else {
            throw rateUnitError(text, parts: parts)
        }
        guard parts.number.isAtMost(UInt128(UInt64.max)) else {
            throw QuantityError(
                .outOfRange, problem: "\(quoted(text)) is out of range", expected: "a rate of at most \(UInt64.max)bit")
        }
        guard let bits = parts.number.whole(times: multiplier) else {
            throw QuantityError(
                .invalid, problem: "\(quoted(text)) is not a whole number of bits per second",
                expected: "a rate in whole bits per second")
        }
        guard bits <= UInt128(UInt64.max) else {
            throw QuantityError(
                .outOfRange, problem: "\(quoted(text)) is out of range", expected: "a rate of at most \(UInt64.max)bit")
        }
        return UInt64(bits)
    }

    /// A time in nanoseconds: `"400ms"` is 400 000 000 (`"5000s"` is 5 000 000 000 000: the validator
    /// refuses it).
    public static func time(_ text: String) throws(QuantityError) -> UInt64 {
        if text == "0" { return 0 }
        let parts = try split(text, expectation: timeExpectation, noun: "time")
        guard let multiplier = timeUnits[parts.unit] else {
            if parts.unit.isEmpty {
                throw QuantityError(
                    .invalid, problem: "\(quoted(text)) has no unit",
                    expected: timeExpectation + " (only \"0\" may stand alone)")
            }
            let lowered = parts.unit.lowercased()
            let suggestion =
                timeUnits[lowered] != nil
                ? lowered
                : timeAliases[lowered]
                    ?? (lowered.count > 1 ? Suggestions.closest(to: lowered, in: ["ns", "us", "ms", "s"]) : nil)
            throw unknownUnit(text, parts: parts, suggestion: suggestion, expected: timeExpectation)
        }
        guard parts.number.isAtMost(UInt128(UInt64.max)) else {
            throw QuantityError(.outOfRange, problem: "\(quoted(text)) is out of range", expected: timeRange)
        }
        guard let nanoseconds = parts.number.whole(times: multiplier) else {
            throw QuantityError(
                .invalid, problem: "\(quoted(text)) is not a whole number of nanoseconds",
                expected: "a time in whole nanoseconds")
        }
        guard nanoseconds <= UInt128(UInt64.max) else {
            throw QuantityError(.outOfRange, problem: "\(quoted(text)) is out of range", expected: timeRange)
        }
        return UInt64(nanoseconds)
    }

    /// A percentage as a fraction: `"25%"` is 0.25 (the decimal moved two places, then rounded once to the
    /// nearest `Double`, so `"7%"` is exactly `0.07`); `"150%"` is 1.5, which the validator refuses.
    public static func percentage(_ text: String) throws(QuantityError) -> Double {
        if text == "0" { return 0 }
        let parts = try split(text, expectation: percentageExpectation, noun: "percentage")
        guard parts.unit == "%" else {
            if parts.unit.isEmpty {
                throw QuantityError(
                    .invalid, problem: "\(quoted(text)) has no unit",
                    expected: "a percentage with %, such as \(quoted(parts.numberText + "%"))")
            }
            throw unknownUnit(text, parts: parts, suggestion: "%", expected: percentageExpectation)
        }
        return Double(parts.number.shifted(by: -2))!
    }

    /// A size in bytes: `"64KB"` is 64 000, `"64KiB"` 65 536. Units (case as written): `B`, `KB`, `MB`, `GB`
    /// (decimal), `KiB`, `MiB`, `GiB` (binary). `kb`, `k` and bare numbers are refused (bits or bytes?).
    public static func size(_ text: String) throws(QuantityError) -> UInt64 {
        let parts = try split(text, expectation: sizeExpectation, noun: "size")
        guard let multiplier = sizeUnits[parts.unit] else {
            let suggestion = sizeUnits.keys.first { $0.lowercased() == parts.unit.lowercased() }
            if parts.unit.isEmpty {
                throw QuantityError(
                    .invalid, problem: "\(quoted(text)) has no unit",
                    expected: "\(quoted(parts.numberText + "B")) for bytes, or \(quoted(parts.numberText + " packets")) for packets")
            }
            throw unknownUnit(text, parts: parts, suggestion: suggestion, expected: sizeExpectation)
        }
        guard let bytes = parts.number.whole(times: multiplier), bytes <= UInt128(UInt64.max) else {
            throw QuantityError(.invalid, problem: "\(quoted(text)) is not a whole number of bytes", expected: sizeExpectation)
        }
        return UInt64(bytes)
    }

    /// What a size looks like, for messages.
    public static let sizeExpectation = "a size such as \"64KB\": a number followed by B, KB, MB, GB, KiB, MiB or GiB"

    private static let sizeUnits: [String: UInt128] = [
        "B": 1, "KB": 1000, "MB": 1_000_000, "GB": 1_000_000_000, "KiB": 1024, "MiB": 1 << 20, "GiB": 1 << 30,
    ]

    /// The shortest spelling of a size in the largest unit that keeps it whole: 64 000 → `"64KB"`,
    /// 65 536 → `"64KiB"`.
    public static func formatSize(_ bytes: UInt64) -> String {
        for (unit, size) in [("GB", 1_000_000_000), ("GiB", 1 << 30), ("MB", 1_000_000), ("MiB", 1 << 20), ("KB", 1000), ("KiB", 1024)]
            as [(String, UInt64)] where bytes != 0 && bytes % size == 0
        {
            return "\(bytes / size)\(unit)"
        }
        return "\(bytes)B"
    }

    /// The shortest spelling of a rate in the largest unit that keeps it whole: 240 000 → `"240kbit"`.
    public static func formatRate(_ bitsPerSecond: UInt64) -> String {
        for (unit, size) in [("gbit", 1_000_000_000), ("mbit", 1_000_000), ("kbit", 1000)] as [(String, UInt64)]
        where bitsPerSecond != 0 && bitsPerSecond % size == 0 {
            return "\(bitsPerSecond / size)\(unit)"
        }
        return "\(bitsPerSecond)bit"
    }

    /// The shortest spelling of a time in the largest unit that keeps it whole: 400 000 000 → `"400ms"`;
    /// 0 → `"0"`.
    public static func formatTime(_ nanoseconds: UInt64) -> String {
        if nanoseconds == 0 { return "0" }
        for (unit, size) in [("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1000)] as [(String, UInt64)]
        where nanoseconds % size == 0 {
            return "\(nanoseconds / size)\(unit)"
        }
        return "\(nanoseconds)ns"
    }

    /// The shortest percentage that reads back as `fraction`: 0.25 → `"25%"`, 0.005 → `"0.5%"`.
    /// `fraction` must be finite and not negative.
    public static func formatPercentage(_ fraction: Double) -> String {
        // The shortest decimal that reads back as `fraction`, with its point moved two places right.
        let text = "\(fraction)"
        let parts = text.split(separator: "e", maxSplits: 1)
        let mantissa = parts[0]
        let exponent = parts.count > 1 ? Int(parts[1])! : 0
        let point = mantissa.firstIndex(of: ".")
        let digits = mantissa.filter { $0 != "." }
        let fractionDigits = point.map { mantissa.distance(from: $0, to: mantissa.endIndex) - 1 } ?? 0
        return ExactDecimal.text(digits: String(digits), scale: fractionDigits - exponent - 2) + "%"
    }

    // MARK: Units

    private static let rateUnits: [String: UInt128] = [
        "bit": 1, "kbit": 1000, "mbit": 1_000_000, "gbit": 1_000_000_000,
        "bit/s": 1, "kbit/s": 1000, "mbit/s": 1_000_000, "gbit/s": 1_000_000_000,
        "byte/s": 8, "kbyte/s": 8000, "mbyte/s": 8_000_000, "gbyte/s": 8_000_000_000,
    ]

    private static let timeUnits: [String: UInt128] = ["ns": 1, "us": 1000, "ms": 1_000_000, "s": 1_000_000_000]

    private static let timeAliases: [String: String] = [
        "sec": "s", "secs": "s", "second": "s", "seconds": "s",
        "msec": "ms", "msecs": "ms", "millisecond": "ms", "milliseconds": "ms",
        "usec": "us", "usecs": "us", "µs": "us", "μs": "us", "microsecond": "us", "microseconds": "us",
        "nsec": "ns", "nsecs": "ns", "nanosecond": "ns", "nanoseconds": "ns",
    ]

    /// tc's byte-per-second units and the bit prefix each corresponds to.
    private static let tcByteUnits: [String: (prefix: String, bytes: String)] = [
        "bps": ("", "bytes"), "kbps": ("k", "kilobytes"), "mbps": ("m", "megabytes"), "gbps": ("g", "gigabytes"),
    ]

    /// Units that could mean bits or bytes, and the prefix they carry.
    private static let ambiguousRateUnits: [String: String] = [
        "b": "", "b/s": "", "k": "k", "kb": "k", "kb/s": "k", "m": "m", "mb": "m", "mb/s": "m",
        "g": "g", "gb": "g", "gb/s": "g",
    ]

    private static let prefixNames = ["": "", "k": "kilo", "m": "mega", "g": "giga"]

    private static func rateUnitError(_ text: String, parts: Parts) -> QuantityError {
        let unit = parts.unit.lowercased()
        let number = parts.numberText
        func choice(_ prefix: String) -> String {
            let name = prefixNames[prefix] ?? ""
            return "\(quoted(number + prefix + "bit")) for \(name)bits per second, or "
                + "\(quoted(number + prefix + "byte/s")) for \(name)bytes per second"
        }
        if let tc = tcByteUnits[unit] {
            let bits = parts.number.timesEight
            return QuantityError(
                .ambiguousUnit,
                problem: "\(quoted(text)) is ambiguous: tc reads \(parts.unit) as \(tc.bytes) per second "
                    + "(\(bits) \(tc.prefix)bit/s)",
                expected: choice(tc.prefix))
        }
        if parts.unit.isEmpty {
            return QuantityError(
                .ambiguousUnit,
                problem: "\(quoted(text)) has no unit (tc would read a bare number as bits per second)",
                expected: "\(quoted(number + "kbit")) for kilobits per second, \(quoted(number + "mbit")) for "
                    + "megabits per second, or another unit: bit, kbit, mbit, gbit, kbyte/s, mbyte/s")
        }
        if let prefix = ambiguousRateUnits[unit] {
            return QuantityError(
                .ambiguousUnit,
                problem: "\(quoted(text)) is ambiguous: \(parts.unit) could mean \(prefixNames[prefix] ?? "")bits "
                    + "or \(prefixNames[prefix] ?? "")bytes per second",
                expected: choice(prefix))
        }
        let suggestion =
            unit.count > 1
            ? Suggestions.closest(to: unit, in: ["bit", "kbit", "mbit", "gbit", "kbyte/s", "mbyte/s", "gbyte/s"]) : nil
        return unknownUnit(text, parts: parts, suggestion: suggestion, expected: rateExpectation)
    }

    private static func unknownUnit(_ text: String, parts: Parts, suggestion: String?, expected: String)
        -> QuantityError
    {
        var problem = "\(quoted(text)) has an unknown unit \(quoted(parts.unit))"
        if let suggestion { problem += " (did you mean \(quoted(parts.numberText + suggestion))?)" }
        return QuantityError(.invalid, problem: problem, expected: expected)
    }

    // MARK: Lexing

    /// A quantity split into its number and its unit.
    private struct Parts {
        var number: ExactDecimal
        var numberText: String
        var unit: String
    }

    private static func split(_ text: String, expectation: String, noun: String) throws(QuantityError) -> Parts {
        if text.isEmpty {
            throw QuantityError(.invalid, problem: "the string is empty", expected: expectation)
        }
        if text.unicodeScalars.contains(where: { $0.properties.isWhitespace }) {
            let squeezed = String(text.unicodeScalars.filter { !$0.properties.isWhitespace })
            throw QuantityError(
                .invalid, problem: "\(quoted(text)) contains a space",
                expected: squeezed.isEmpty ? expectation : "no spaces: \(quoted(squeezed))")
        }
        if text.hasPrefix("-") {
            let positive = String(text.dropFirst())
            let range =
                switch noun {
                case "rate": "a rate of at least 8bit"
                case "time": timeRange
                case "size": "a size of at least 1B"
                default: percentageRange
                }
            if (try? split(positive, expectation: expectation, noun: noun)) != nil {
                throw QuantityError(.outOfRange, problem: "\(quoted(text)) is negative", expected: range)
            }
        }
        let scalars = Array(text.unicodeScalars)
        var end = 0
        while end < scalars.count, ("0"..."9").contains(scalars[end]) { end += 1 }
        let integerDigits = end
        if end < scalars.count, scalars[end] == ".", integerDigits > 0 {
            var fractionEnd = end + 1
            while fractionEnd < scalars.count, ("0"..."9").contains(scalars[fractionEnd]) { fractionEnd += 1 }
            if fractionEnd > end + 1 { end = fractionEnd }
        }
        guard integerDigits > 0 else {
            throw QuantityError(.invalid, problem: "\(quoted(text)) is not a \(noun)", expected: expectation)
        }
        let numberText = String(String.UnicodeScalarView(scalars[0..<end]))
        let unit = String(String.UnicodeScalarView(scalars[end...]))
        let exponent =
            unit.unicodeScalars.count > 1 && (unit.hasPrefix("e") || unit.hasPrefix("E"))
            && "0123456789+-".unicodeScalars.contains(unit.unicodeScalars.dropFirst().first!)
        if unit.hasPrefix(".") || exponent {
            throw QuantityError(
                .invalid, problem: "\(quoted(text)) is not a plain decimal number",
                expected: expectation + " (digits with an optional decimal point and digits after it; no exponent)")
        }
        guard let number = ExactDecimal(numberText) else {
            throw QuantityError(.outOfRange, problem: "\(quoted(text)) has too many digits", expected: expectation)
        }
        return Parts(number: number, numberText: numberText, unit: unit)
    }

    static func quoted(_ text: String) -> String { JSONWriter.quoted(text) }
}

/// Why a quantity string was refused: what was wrong and what was expected instead.
public struct QuantityError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The class of the problem.
    public enum Kind: Sendable, Equatable {
        /// Not a quantity of this kind: no number, an unknown unit, a fraction finer than the unit.
        case invalid
        /// A unit that can be read two ways (`kbps`, `KB/s`, a bare number).
        case ambiguousUnit
        /// A well-formed value the model cannot hold (`"-5ms"`, `"99999999999gbit"`).
        case outOfRange
    }

    /// The class of the problem.
    public var kind: Kind
    /// What was wrong, quoting the value: `"150%" is out of range`.
    public var problem: String
    /// What was expected: `a percentage from 0% to 100%`.
    public var expected: String

    /// An error of `kind`.
    public init(_ kind: Kind, problem: String, expected: String) {
        self.kind = kind
        self.problem = problem
        self.expected = expected
    }

    public var description: String { "\(problem): expected \(expected)" }
}

extension QuantityError: DocumentValueError {
    /// The kind of the error in a document: `.invalidValue`, `.ambiguousUnit` or `.outOfRange`.
    public var documentKind: DocumentError.Kind {
        switch kind {
        case .invalid: .invalidValue
        case .ambiguousUnit: .ambiguousUnit
        case .outOfRange: .outOfRange
        }
    }
}

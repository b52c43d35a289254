import JSONDocument

/// A delivery trace in Mahimahi's `mm-link` format: when the link can deliver, one 1500-byte opportunity
/// at a time. netem has no counterpart; the userspace engine replaces its rate serializer with it.
///
/// The text has one non-negative integer per line: the millisecond at which one delivery opportunity
/// occurs. A value repeated n times gives n opportunities in that millisecond; values never decrease.
/// The trace repeats forever with a period equal to its last value (Mahimahi's rule), so `"1"` alone is
/// one opportunity per millisecond, 12 Mbit/s. Blank lines and a final newline are allowed.
public struct DeliveryTrace: Sendable, Equatable {
    /// The bytes each opportunity carries (Mahimahi's packet-sized delivery slot).
    public static let bytesPerOpportunity = 1500
    /// The largest millisecond a line may hold (about 49.7 days).
    public static let maximumMillisecond = UInt64(UInt32.max)

    /// The opportunities of one period, in milliseconds from the start of the period, non-decreasing.
    public let milliseconds: [UInt32]
    /// The file the trace was read from, as the profile names it (relative to the profile's folder); not
    /// part of the trace's identity: two traces with the same opportunities are equal.
    public var file: String?
    /// Where that file is: ``file`` resolved against the profile's folder (what the engine is told to read).
    /// Not part of the trace's identity either.
    public var path: String?

    /// Two traces are equal when their opportunities are.
    public static func == (lhs: DeliveryTrace, rhs: DeliveryTrace) -> Bool { lhs.milliseconds == rhs.milliseconds }

    /// A trace from its opportunities; they must be non-decreasing, at least one, and the last above 0.
    public init(milliseconds: [UInt32]) throws(EmulationInputError) {
        for index in milliseconds.indices.dropFirst() where milliseconds[index] < milliseconds[index - 1] {
            throw EmulationInputError(
                .outOfOrder, line: index + 1,
                problem: "\(milliseconds[index]) is earlier than \(milliseconds[index - 1]) before it",
                expected: "non-decreasing milliseconds (sort the trace)")
        }
        try Self.checkPeriod(milliseconds, line: milliseconds.count, source: nil)
        self.milliseconds = milliseconds
    }

    /// Reads the `mm-link` text format. `source` (a file name) only goes into error messages.
    public init(parsing text: String, source: String? = nil) throws(EmulationInputError) {
        var values: [UInt32] = []
        var lastLine = 0
        var lineNumber = 0
        // Bytes, not Characters: "\r\n" is one Character, and a trace may come from any system.
        for rawLine in text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            lineNumber += 1
            let line = rawLine.trimmingASCIIWhitespace()
            if line.isEmpty { continue }
            guard line.allSatisfy({ (48...57).contains($0) }) else {
                throw EmulationInputError(
                    .invalidValue, source: source, line: lineNumber,
                    problem: "\(JSONWriter.excerpt(String(decoding: line, as: UTF8.self))) is not a whole number of milliseconds",
                    expected: "one non-negative integer per line: the millisecond of a 1500-byte delivery opportunity")
            }
            var value: UInt64 = 0
            for digit in line where value <= Self.maximumMillisecond {
                value = value * 10 + UInt64(digit - 48)
            }
            guard value <= Self.maximumMillisecond else {
                throw EmulationInputError(
                    .outOfRange, source: source, line: lineNumber,
                    problem: "\(JSONWriter.excerpt(String(decoding: line, as: UTF8.self))) ms is too large",
                    expected: "at most \(Self.maximumMillisecond) ms")
            }
            if let previous = values.last, UInt32(value) < previous {
                throw EmulationInputError(
                    .outOfOrder, source: source, line: lineNumber,
                    problem: "\(value) is earlier than \(previous) on line \(lastLine)",
                    expected: "non-decreasing milliseconds (sort the trace)")
            }
            values.append(UInt32(value))
            lastLine = lineNumber
        }
        try Self.checkPeriod(values, line: lastLine, source: source)
        milliseconds = values
    }

    private static func checkPeriod(_ values: [UInt32], line: Int, source: String?) throws(EmulationInputError) {
        guard let last = values.last else {
            throw EmulationInputError(
                .empty, source: source, problem: "the trace has no delivery opportunities",
                expected: "at least one line holding a millisecond, the last one above 0")
        }
        if last == 0 {
            throw EmulationInputError(
                .outOfRange, source: source, line: line, problem: "the trace ends at 0 ms, so it would last no time",
                expected: "a last line above 0: the trace repeats with the last line's millisecond as its period")
        }
    }

    /// The period with which the trace repeats, in milliseconds (its last value).
    public var periodMilliseconds: UInt64 { UInt64(milliseconds[milliseconds.count - 1]) }

    /// What the trace amounts to.
    public var summary: Summary {
        let period = periodMilliseconds
        let bitsPerOpportunity = Double(Self.bytesPerOpportunity * 8)
        let binCount = Int((period + 999) / 1000)
        var counts = [Int](repeating: 0, count: binCount)
        for millisecond in milliseconds { counts[min(Int(millisecond / 1000), binCount - 1)] += 1 }
        let rates = counts.enumerated().map { index, count in
            let binMilliseconds = index == binCount - 1 ? period - UInt64(index) * 1000 : 1000
            return Double(count) * bitsPerOpportunity / (Double(binMilliseconds) / 1000)
        }
        return Summary(
            duration: period * 1_000_000, opportunities: milliseconds.count,
            meanRate: Double(milliseconds.count) * bitsPerOpportunity / (Double(period) / 1000),
            perSecondRates: rates)
    }

    /// A trace's length and rates.
    public struct Summary: Sendable, Equatable {
        /// The period, in nanoseconds.
        public var duration: UInt64
        /// The opportunities in one period.
        public var opportunities: Int
        /// The mean rate over a period, in bits per second (opportunities × 1500 × 8 / period).
        public var meanRate: Double
        /// The rate in each second of the period, in bits per second; a last partial second is scaled to
        /// its own length. An opportunity at the period's end counts in the last second.
        public var perSecondRates: [Double]
    }
}

/// Why a delivery trace or a traffic target was refused: what was wrong, where (the trace's file and
/// line) and what to write instead.
///
/// `description` reads like `uplink.trace: line 3: "12a" is not a whole number of milliseconds: expected
/// one non-negative integer per line: the millisecond of a 1500-byte delivery opportunity`.
public struct EmulationInputError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The class of the problem.
    public enum Kind: Sendable, Equatable {
        /// Not a value of the expected kind (not a number, not an address, a port with ICMP).
        case invalidValue
        /// A well-formed value outside its range (a millisecond too large, a prefix length of 33).
        case outOfRange
        /// A trace line earlier than the one before it.
        case outOfOrder
        /// A trace with no opportunities at all.
        case empty
    }

    /// The class of the problem.
    public var kind: Kind
    /// The file the input came from, when known.
    public var source: String?
    /// The 1-based line of a trace at fault; `nil` when the problem is not on one line.
    public var line: Int?
    /// What was wrong, quoting the value.
    public var problem: String
    /// What was expected instead.
    public var expected: String

    /// An error of `kind`.
    public init(_ kind: Kind, source: String? = nil, line: Int? = nil, problem: String, expected: String) {
        self.kind = kind
        self.source = source
        self.line = line
        self.problem = problem
        self.expected = expected
    }

    /// `[source: ][line N: ]problem: expected what`.
    public var description: String {
        var text = ""
        if let source { text += source + ": " }
        if let line { text += "line \(line): " }
        return text + problem + ": expected " + expected
    }
}

extension Substring.UTF8View {
    /// The bytes without leading and trailing spaces, tabs and carriage returns.
    fileprivate func trimmingASCIIWhitespace() -> Substring.UTF8View {
        let isSpace: (UInt8) -> Bool = { $0 == 32 || $0 == 9 || $0 == 13 }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
            return self[endIndex...]
        }
        return self[first...last]
    }
}

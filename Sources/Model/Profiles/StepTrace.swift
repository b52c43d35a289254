import JSONDocument

/// A delay trace or a loss trace: a value that changes in steps over time, read from a text file beside
/// the profile (`"delayTrace"`, `"lossTrace"`). Time 0 is the first frame the direction sees, as in Rattan.
///
/// The format, one step per line:
///
/// ```
/// # milliseconds since the first frame, then the value from then on
/// 0 50ms
/// 1000 200ms
/// 1500 50ms
/// 3000
/// ```
///
/// - a line is `MILLISECONDS VALUE`: from that millisecond on, the value holds (a delay such as `50ms`, a
///   loss such as `1%`); the first line is at 0 and the milliseconds increase;
/// - a last line with a millisecond alone ends the trace there and repeats it from 0 (the period);
///   without one, the last value holds for ever;
/// - blank lines and lines starting with `#` are skipped. A bad line is named by file and line.
public struct StepTrace: Sendable, Equatable {
    /// What the values are.
    public enum Kind: String, Sendable, Equatable {
        /// Delays in nanoseconds.
        case delay
        /// Loss probabilities, 0 to 1.
        case loss
    }

    /// What the values are.
    public let kind: Kind
    /// The steps: from `millisecond` on, `value` (nanoseconds for a delay, a fraction for a loss).
    public let steps: [(millisecond: UInt32, value: Double)]
    /// The period in milliseconds when the trace repeats; nil when its last value holds for ever.
    public let period: UInt32?
    /// The file as the profile names it, and its resolved path (as for ``DeliveryTrace``); not part of the
    /// trace's identity.
    public var file: String?
    public var path: String?

    public static func == (lhs: StepTrace, rhs: StepTrace) -> Bool {
        lhs.kind == rhs.kind && lhs.period == rhs.period && lhs.steps.count == rhs.steps.count
            && zip(lhs.steps, rhs.steps).allSatisfy { $0.millisecond == $1.millisecond && $0.value == $1.value }
    }

    /// What a line looks like, for messages.
    static func lineExpectation(_ kind: Kind) -> String {
        "a line \"MILLISECONDS \(kind == .delay ? "DELAY" : "LOSS")\" such as \"1000 \(kind == .delay ? "50ms" : "1%")\" "
            + "(or a final \"MILLISECONDS\" alone to repeat the trace)"
    }

    /// A trace from its steps: the first at 0, increasing milliseconds, a period after the last step.
    public init(kind: Kind, steps: [(millisecond: UInt32, value: Double)], period: UInt32? = nil) throws(EmulationInputError) {
        guard let first = steps.first else {
            throw EmulationInputError(.empty, problem: "the trace has no steps", expected: "at least one line such as \"0 50ms\"")
        }
        if first.millisecond != 0 {
            throw EmulationInputError(.invalidValue, line: 1, problem: "the trace starts at \(first.millisecond) ms", expected: "a first step at 0")
        }
        for index in steps.indices.dropFirst() where steps[index].millisecond <= steps[index - 1].millisecond {
            throw EmulationInputError(
                .outOfOrder, line: index + 1, problem: "\(steps[index].millisecond) ms is not after \(steps[index - 1].millisecond) ms",
                expected: "increasing milliseconds")
        }
        if let period, period <= steps[steps.count - 1].millisecond {
            throw EmulationInputError(
                .outOfOrder, line: steps.count + 1, problem: "the trace ends at \(period) ms, not after its last step",
                expected: "an end after the last step")
        }
        self.kind = kind
        self.steps = steps
        self.period = period
    }

    /// Reads the text format; `source` (a file name) goes into error messages.
    public init(parsing text: String, kind: Kind, source: String? = nil) throws(EmulationInputError) {
        var steps: [(millisecond: UInt32, value: Double)] = []
        var period: UInt32?
        var lines: [Int] = []
        var lineNumber = 0
        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            lineNumber += 1
            let line = rawLine.trimmingCharacters(in: " \t\r")
            if line.isEmpty || line.hasPrefix("#") { continue }
            let expected = Self.lineExpectation(kind)
            func bad(_ problem: String, _ errorKind: EmulationInputError.Kind = .invalidValue) -> EmulationInputError {
                EmulationInputError(errorKind, source: source, line: lineNumber, problem: problem, expected: expected)
            }
            if period != nil { throw bad("a line after the end of the trace (a millisecond alone ends it)") }
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            guard fields.count <= 2, let millisecond = UInt32(fields[0]) else {
                throw bad("\(JSONWriter.excerpt(line)) is not a step")
            }
            if let previous = steps.last, millisecond <= previous.millisecond {
                throw bad("\(millisecond) ms is not after \(previous.millisecond) ms on line \(lines.last ?? 0)", .outOfOrder)
            }
            if steps.isEmpty && millisecond != 0 { throw bad("the trace starts at \(millisecond) ms, not 0") }
            guard fields.count == 2 else {
                guard !steps.isEmpty else { throw bad("the trace ends before its first step") }
                period = millisecond
                continue
            }
            let value: Double
            do {
                switch kind {
                case .delay:
                    let nanoseconds = try Quantity.time(fields[1])
                    guard nanoseconds <= Quantity.maximumTime else { throw bad("\(JSONWriter.excerpt(fields[1])) is out of range", .outOfRange) }
                    value = Double(nanoseconds)
                case .loss:
                    value = try Quantity.percentage(fields[1])
                    guard value <= 1 else { throw bad("\(JSONWriter.excerpt(fields[1])) is out of range", .outOfRange) }
                }
            } catch let error as EmulationInputError {
                throw error
            } catch {
                throw bad("\(JSONWriter.excerpt(fields[1])) is not a \(kind == .delay ? "delay" : "loss"): \((error as? QuantityError)?.problem ?? "\(error)")")
            }
            steps.append((millisecond, value))
            lines.append(lineNumber)
        }
        guard !steps.isEmpty else {
            throw EmulationInputError(.empty, source: source, problem: "the trace has no steps", expected: Self.lineExpectation(kind))
        }
        self.kind = kind
        self.steps = steps
        self.period = period
    }

    /// The value `elapsed` nanoseconds after the trace's start.
    public func value(at elapsed: UInt64) -> Double {
        var millisecond = elapsed / 1_000_000
        if let period { millisecond %= UInt64(period) }
        // The last step at or before `millisecond` (the first is at 0).
        var low = 0
        var high = steps.count
        while high - low > 1 {
            let middle = (low + high) / 2
            if UInt64(steps[middle].millisecond) <= millisecond { low = middle } else { high = middle }
        }
        return steps[low].value
    }

    /// The largest value, for checks and for the queue limit's bandwidth-delay product.
    public var maximum: Double { steps.map(\.value).max() ?? 0 }

    /// The trace as text in its own format.
    public var text: String {
        var lines = steps.map { step in
            "\(step.millisecond) " + (kind == .delay ? Quantity.formatTime(UInt64(step.value)) : Quantity.formatPercentage(step.value))
        }
        if let period { lines.append("\(period)") }
        return lines.joined(separator: "\n") + "\n"
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in characters: String) -> String {
        var text = self
        while let first = text.first, characters.contains(first) { text = text.dropFirst() }
        while let last = text.last, characters.contains(last) { text = text.dropLast() }
        return String(text)
    }
}

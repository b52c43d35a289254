import JSONDocument

/// Making delivery traces from rates over time, and reading a trace's summary.
extension DeliveryTrace {
    /// A trace that delivers the rates of `text`, a CSV of `TIME,RATE` rows (what `linkcond trace from-csv`
    /// reads):
    ///
    /// - `TIME` is when the row's rate starts, in seconds since the start (`0`, `1.5`) or as a time with its
    ///   unit (`1500ms`); the first row starts at 0 and times increase;
    /// - `RATE` is bits per second (`12000000`) or a rate with its unit (`12mbit`);
    /// - each row's rate lasts until the next row's time; the last row's lasts as long as the row before it
    ///   (one second when it is the only row); the trace ends there and repeats;
    /// - a header line, blank lines and lines starting with `#` are skipped.
    ///
    /// The opportunities are spread as the bits accumulate, one each time another 1500 bytes' worth has
    /// arrived, so the mean rate over the trace is the rows' own (to within one opportunity), and the last
    /// one falls at the trace's end, which makes that the period.
    ///
    /// Rates that add up to more than `maximumOpportunities` (at most ``maximumOpportunities``, what a
    /// profile reads) are refused before anything is built.
    public init(rateCSV text: String, source: String? = nil, maximumOpportunities: Int = Self.maximumOpportunities) throws(EmulationInputError) {
        let maximumOpportunities = min(maximumOpportunities, Self.maximumOpportunities)
        var rows: [(start: UInt64, rate: UInt64, line: Int)] = []
        var lineNumber = 0
        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            lineNumber += 1
            let line = rawLine.trimmingCharacters(in: " \t\r")
            if line.isEmpty || line.hasPrefix("#") { continue }
            let fields = line.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: " \t") }
            if rows.isEmpty, fields.count == 2, Self.time(fields[0]) == nil, fields[0].first?.isLetter == true { continue }  // header
            guard fields.count == 2 else {
                throw EmulationInputError(
                    .invalidValue, source: source, line: lineNumber, problem: "\(JSONWriter.excerpt(line)) is not a TIME,RATE row",
                    expected: "two fields: the time the rate starts (seconds, or with a unit) and the rate (bits per second, or with a unit)")
            }
            guard let start = Self.time(fields[0]) else {
                throw EmulationInputError(
                    .invalidValue, source: source, line: lineNumber, problem: "\(JSONWriter.excerpt(fields[0])) is not a time",
                    expected: "seconds since the start (\"1.5\") or a time with its unit (\"1500ms\")")
            }
            guard let rate = Self.rate(fields[1]) else {
                throw EmulationInputError(
                    .invalidValue, source: source, line: lineNumber, problem: "\(JSONWriter.excerpt(fields[1])) is not a rate",
                    expected: "bits per second (\"12000000\") or a rate with its unit (\"12mbit\")")
            }
            if let previous = rows.last, start <= previous.start {
                throw EmulationInputError(
                    .outOfOrder, source: source, line: lineNumber,
                    problem: "the row starts at \(JSONWriter.excerpt(fields[0])), not after the row on line \(previous.line)",
                    expected: "increasing times")
            }
            if rows.isEmpty && start != 0 {
                throw EmulationInputError(
                    .invalidValue, source: source, line: lineNumber, problem: "the first row starts at \(JSONWriter.excerpt(fields[0]))",
                    expected: "a first row at time 0")
            }
            rows.append((start, rate, lineNumber))
        }
        guard !rows.isEmpty else {
            throw EmulationInputError(.empty, source: source, problem: "no TIME,RATE rows", expected: "at least one row, the first at time 0")
        }
        let lastLength = rows.count > 1 ? rows[rows.count - 1].start - rows[rows.count - 2].start : 1_000_000_000
        let (end, overflow) = rows[rows.count - 1].start.addingReportingOverflow(lastLength)
        let endMillisecond = (end / 1_000_000) + (end % 1_000_000 == 0 ? 0 : 1)
        guard !overflow, endMillisecond <= Self.maximumMillisecond else {
            throw EmulationInputError(
                .outOfRange, source: source, line: rows[rows.count - 1].line,
                problem: "the trace would last \(overflow ? "beyond" : "until") \(Quantity.formatTime(overflow ? UInt64.max : end)) (its last row lasts as long as the one before)",
                expected: "a trace that ends by \(Self.maximumMillisecond) ms (about 49.7 days), the most a trace line holds")
        }
        // Counted before anything is built: the trace must stay a file a profile can name.
        var bits = 0.0
        for (index, row) in rows.enumerated() {
            let length = index + 1 < rows.count ? rows[index + 1].start - row.start : lastLength
            bits += Double(row.rate) * Double(length) / 1e9
        }
        let opportunities = bits / Double(Self.bytesPerOpportunity * 8)
        guard opportunities <= Double(maximumOpportunities) else {
            let bound = maximumOpportunities == Self.maximumOpportunities ? "a trace file of up to 64 MiB, what a profile reads" : "the bound asked for"
            throw EmulationInputError(
                .outOfRange, source: source,
                problem: "the rates add up to \(Int(opportunities.rounded())) delivery opportunities of 1500 bytes",
                expected: "at most \(maximumOpportunities) (\(bound)): a shorter trace, or lower rates (it repeats)")
        }
        var milliseconds = Self.opportunities(rows: rows.map { ($0.start, $0.rate) }, endMillisecond: max(1, endMillisecond))
        guard !milliseconds.isEmpty else {
            throw EmulationInputError(
                .outOfRange, source: source, problem: "the rates never add up to one 1500-byte opportunity",
                expected: "rates high enough to carry at least 12 000 bits over the trace")
        }
        milliseconds[milliseconds.count - 1] = UInt32(endMillisecond)
        try self.init(milliseconds: milliseconds)
    }

    /// The millisecond of each delivery opportunity for `rows` (start in nanoseconds, rate in bits per second;
    /// the first at 0, in increasing order) over milliseconds 1…`endMillisecond`: millisecond m runs at the rate
    /// of the last row started by its beginning, (m − 1) ms, and adds rate / 1000 bits of credit; each 1500
    /// bytes of credit is an opportunity at m. Worked out row by row, one step per opportunity rather than per
    /// millisecond: a slow rate over days is a few steps, not billions (a fuzzer found a 7-day trace at
    /// 12 bit/s taking minutes).
    static func opportunities(rows: [(start: UInt64, rate: UInt64)], endMillisecond: UInt64) -> [UInt32] {
        let threshold = UInt64(bytesPerOpportunity * 8) * 1000  // credit is in bits × 1000, to keep rates exact
        var milliseconds: [UInt32] = []
        var credit: UInt64 = 0
        // The first millisecond at each row's rate: the first m with (m − 1) ms ≥ its start.
        func firstMillisecond(_ start: UInt64) -> UInt64 { start / 1_000_000 + (start % 1_000_000 == 0 ? 0 : 1) + 1 }
        for (index, row) in rows.enumerated() where row.rate > 0 {
            var millisecond = firstMillisecond(row.start)
            let last = min(endMillisecond, index + 1 < rows.count ? firstMillisecond(rows[index + 1].start) - 1 : endMillisecond)
            while millisecond <= last {
                // The millisecond whose credit reaches the next opportunity (credit < threshold here).
                let needed = (threshold - credit + row.rate - 1) / row.rate
                let reached = millisecond + needed - 1
                if reached > last {
                    credit += row.rate * (last - millisecond + 1)
                    break
                }
                credit += row.rate * needed
                while credit >= threshold {
                    credit -= threshold
                    milliseconds.append(UInt32(reached))
                }
                millisecond = reached + 1
            }
        }
        return milliseconds
    }

    /// The most opportunities ``init(rateCSV:source:)`` writes: with up to 7 digits a line, the trace stays
    /// within the 64 MiB a profile reads.
    public static let maximumOpportunities = 8_000_000

    private static func time(_ text: String) -> UInt64? {
        // A time beyond what nanoseconds in 64 bits hold is not one (the trace's own bound is checked later).
        if let seconds = Double(text), seconds >= 0, seconds.isFinite {
            let nanoseconds = (seconds * 1e9).rounded()
            return nanoseconds < 18_446_744_073_709_549_568 ? UInt64(nanoseconds) : nil
        }
        return try? Quantity.time(text)
    }

    private static func rate(_ text: String) -> UInt64? {
        if let bits = UInt64(text) { return bits }
        return try? Quantity.rate(text)
    }

    /// The trace in Mahimahi's text format: one millisecond per line.
    public var text: String {
        milliseconds.map(String.init).joined(separator: "\n") + "\n"
    }
}

extension DeliveryTrace.Summary {
    /// The per-second rate below which `fraction` (0…1) of the seconds fall (nearest rank), in bits per
    /// second.
    public func percentile(_ fraction: Double) -> Double {
        let sorted = perSecondRates.sorted()
        guard !sorted.isEmpty else { return 0 }
        let rank = Int((fraction * Double(sorted.count)).rounded(.up)) - 1
        return sorted[min(max(rank, 0), sorted.count - 1)]
    }
}

extension String {
    fileprivate func trimmingCharacters(in characters: String) -> String {
        let set = Set(characters)
        var text = Substring(self)
        while let first = text.first, set.contains(first) { text = text.dropFirst() }
        while let last = text.last, set.contains(last) { text = text.dropLast() }
        return String(text)
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in characters: String) -> String { String(self).trimmingCharacters(in: characters) }
}

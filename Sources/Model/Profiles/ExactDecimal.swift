/// A non-negative decimal number kept exactly: `digits` × 10^-`scale`.
struct ExactDecimal {
    var digits: UInt128
    var scale: Int

    private static let limit: UInt128 = 1_000_000_000_000_000_000_000_000_000_000

    /// Reads `[0-9]+(\.[0-9]+)?`; `nil` beyond 30 significant digits or 30 decimal places (trailing
    /// zeros aside).
    init?(_ text: String) {
        var digits: UInt128 = 0
        var scale = 0
        var seenPoint = false
        for scalar in text.unicodeScalars {
            if scalar == "." {
                seenPoint = true
                continue
            }
            digits = digits * 10 + UInt128(scalar.value - 48)
            if seenPoint { scale += 1 }
            if digits >= Self.limit { return nil }
        }
        while scale > 0, digits % 10 == 0 {
            digits /= 10
            scale -= 1
        }
        guard scale <= 30 else { return nil }
        self.digits = digits
        self.scale = scale
    }

    /// The number times `multiplier`, if that is a whole number that fits.
    func whole(times multiplier: UInt128) -> UInt128? {
        let (product, overflow) = digits.multipliedReportingOverflow(by: multiplier)
        if overflow { return nil }
        var divisor: UInt128 = 1
        for _ in 0..<scale { divisor *= 10 }
        guard product % divisor == 0 else { return nil }
        return product / divisor
    }

    /// Whether the number is at most `limit`.
    func isAtMost(_ limit: UInt128) -> Bool {
        var divisor: UInt128 = 1
        for _ in 0..<scale { divisor *= 10 }
        let whole = digits / divisor
        return whole < limit || (whole == limit && digits % divisor == 0)
    }

    /// The number times 10^`places`, as plain decimal text: 12.5 shifted by -2 is "0.125".
    func shifted(by places: Int) -> String {
        Self.text(digits: "\(digits)", scale: scale - places)
    }

    /// `digits` × 10^-`scale` as plain decimal text without superfluous zeros: ("125", 3) → "0.125",
    /// ("25", -1) → "250", ("2500", 2) → "25".
    static func text(digits: String, scale: Int) -> String {
        var digits = Array(digits.drop { $0 == "0" })
        if digits.isEmpty { return "0" }
        var scale = scale
        if scale < 0 {
            digits += Array(repeating: "0", count: -scale)
            scale = 0
        }
        if digits.count <= scale {
            digits = Array(repeating: "0", count: scale - digits.count + 1) + digits
        }
        var whole = String(digits[..<(digits.count - scale)])
        var fraction = String(digits[(digits.count - scale)...])
        while fraction.hasSuffix("0") { fraction.removeLast() }
        if whole.isEmpty { whole = "0" }
        return fraction.isEmpty ? whole : whole + "." + fraction
    }

    /// The number times 8, written as a decimal: 240 → "1920", 1.5 → "12".
    var timesEight: String {
        Self.text(digits: "\(digits * 8)", scale: scale)
    }
}

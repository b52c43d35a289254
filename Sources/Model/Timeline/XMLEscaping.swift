/// Escaping for the markup the report writers produce (XML, HTML, Markdown) and the number formatting they
/// share. Every string that reaches a report from an event, a scenario or an expectation goes through one of
/// these functions.
enum Markup {
    /// Text content of an XML or HTML element: `&`, `<`, `>` escaped, and characters XML 1.0 forbids
    /// (control characters other than tab, newline and carriage return; U+FFFE, U+FFFF) replaced with U+FFFD.
    static func text(_ string: String) -> String {
        escape(string, quotes: false, newlines: false)
    }

    /// HTML text and attribute values: like `attribute` but with line breaks kept as they are. Both quote
    /// characters are escaped even in text, so a string is safe wherever it lands.
    static func html(_ string: String) -> String {
        escape(string, quotes: true, newlines: false)
    }

    /// A quoted attribute value (XML or HTML): like `text`, plus both quote characters, and tab, newline and
    /// carriage return as character references so XML parsers keep them instead of normalising them to spaces.
    static func attribute(_ string: String) -> String {
        escape(string, quotes: true, newlines: true)
    }

    private static func escape(_ string: String, quotes: Bool, newlines: Bool) -> String {
        // Fast path: most strings need nothing.
        var needsWork = false
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "&"), UInt8(ascii: "<"), UInt8(ascii: ">"): needsWork = true
            case UInt8(ascii: "\""), UInt8(ascii: "'"): if quotes { needsWork = true }
            case 0x09, 0x0a, 0x0d: if newlines { needsWork = true }
            case 0..<0x20, 0x7f, 0xef: needsWork = true  // 0xef: first byte of U+FFFE/U+FFFF (checked below)
            default: break
            }
            if needsWork { break }
        }
        guard needsWork else { return string }
        var out = ""
        out.reserveCapacity(string.utf8.count + 16)
        for scalar in string.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"" where quotes: out += "&quot;"
            case "'" where quotes: out += "&#39;"
            case "\t" where newlines: out += "&#9;"
            case "\n" where newlines: out += "&#10;"
            case "\r" where newlines: out += "&#13;"
            case "\t", "\n", "\r": out.unicodeScalars.append(scalar)
            default:
                let value = scalar.value
                if value < 0x20 || value == 0x7f || value == 0xFFFE || value == 0xFFFF {
                    out += "\u{FFFD}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }

    /// A Markdown table cell: HTML-significant characters as entities (so a `<script>` in an event stays
    /// text on every renderer), `|` escaped so it cannot split the cell, line breaks folded into spaces.
    static func markdownCell(_ string: String) -> String {
        var out = ""
        out.reserveCapacity(string.utf8.count + 8)
        for scalar in string.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "|": out += "\\|"
            case "\\": out += "\\\\"
            case "`": out += "\\`"
            case "\n", "\r", "\t": out += " "
            default:
                if scalar.value < 0x20 || scalar.value == 0x7f {
                    out += "\u{FFFD}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }

    /// Markdown running text (headings, paragraphs): as a cell, and `#`, `*`, `_`, `[`, `]` escaped so
    /// names cannot turn into headings, emphasis or links.
    static func markdownText(_ string: String) -> String {
        var out = ""
        for scalar in markdownCell(string).unicodeScalars {
            switch scalar {
            case "#", "*", "_", "[", "]": out += "\\"; out.unicodeScalars.append(scalar)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}

/// Locale-independent fixed-point formatting (Foundation's `String(format:)` is slow and locale-aware).
enum Fmt {
    /// `value` with exactly `decimals` decimals, rounded half away from zero: `fixed(6.0124, 3) == "6.012"`.
    static func fixed(_ value: Double, _ decimals: Int) -> String {
        guard value.isFinite else { return value.isNaN ? "NaN" : (value < 0 ? "-inf" : "inf") }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let scaled = (abs(value) * scale).rounded()
        guard scaled < 9.0e18 else { return String(value) }
        let integer = UInt64(scaled)
        let factor = UInt64(scale)
        let whole = integer / factor
        let negative = value < 0 && integer != 0
        var result = (negative ? "-" : "") + String(whole)
        if decimals > 0 {
            let fraction = String(integer % factor)
            result += "." + String(repeating: "0", count: decimals - fraction.count) + fraction
        }
        return result
    }

    /// SVG coordinates: one decimal, trailing `.0` dropped.
    static func coord(_ value: Double) -> String {
        let text = fixed(value, 1)
        return text.hasSuffix(".0") ? String(text.dropLast(2)) : text
    }

    /// Seconds for people: `6.012 s`.
    static func seconds(_ value: Double) -> String { fixed(value, 3) + " s" }

    /// Run time (ns) as seconds with three decimals, no unit.
    static func runTime(_ t: UInt64) -> String { fixed(Double(t) / 1e9, 3) }

    /// A duration for headers: `42.0 s`, `9 min 58.3 s`.
    static func duration(_ ns: UInt64) -> String {
        let seconds = Double(ns) / 1e9
        if seconds < 60 { return fixed(seconds, 1) + " s" }
        let minutes = Int(seconds / 60)
        return "\(minutes) min " + fixed(seconds - Double(minutes * 60), 1) + " s"
    }

    /// Milliseconds, at most one decimal, for RTTs.
    static func ms(_ value: Double) -> String {
        value >= 100 ? fixed(value, 0) : fixed(value, 1)
    }

    /// A ratio 0…1 as a percentage: `12.5 %`.
    static func percent(_ ratio: Double) -> String { fixed(ratio * 100, 1) + " %" }

    /// A rate in bits per second for people: `850 bit/s`, `512 kbit/s`, `2.4 Mbit/s`, `12 Mbit/s`, `1.2 Gbit/s`.
    static func bitRate(_ bps: Double) -> String {
        let (value, prefix) = scaled(bps)
        return trimmed(value) + " \(prefix)bit/s"
    }

    /// A rate for an axis label: `0`, `500k`, `2.5M`, `12M`, `1G`.
    static func bitRateTick(_ bps: Double) -> String {
        let (value, prefix) = scaled(bps)
        return trimmed(value) + prefix
    }

    /// `bps` in the largest of bit, kbit, Mbit, Gbit that keeps it at least 1.
    private static func scaled(_ bps: Double) -> (Double, String) {
        let magnitude = abs(bps)
        if magnitude >= 1e9 { return (bps / 1e9, "G") }
        if magnitude >= 1e6 { return (bps / 1e6, "M") }
        if magnitude >= 1e3 { return (bps / 1e3, "k") }
        return (bps, "")
    }

    /// One decimal below 100 (a trailing `.0` dropped), none from 100 on.
    private static func trimmed(_ value: Double) -> String {
        if abs(value) >= 100 { return fixed(value, 0) }
        let text = fixed(value, 1)
        return text.hasSuffix(".0") ? String(text.dropLast(2)) : text
    }
}

import Foundation

// The pieces the chart of `timeline.html` is built from: SVG elements with ordered, escaped attributes,
// path data, the shared time axis, value scales for plots, and the frame every plot draws.

/// A value that can stand in an SVG attribute: numbers are written as coordinates (one decimal at most),
/// text is escaped.
protocol SVGAttributeValue {
    /// The value as it appears between the attribute's quotes.
    var svgAttributeText: String { get }
}

extension Double: SVGAttributeValue {
    var svgAttributeText: String { Fmt.coord(self) }
}

extension Int: SVGAttributeValue {
    var svgAttributeText: String { String(self) }
}

extension String: SVGAttributeValue {
    var svgAttributeText: String { Markup.attribute(self) }
}

/// An element's attributes, written in the order they are listed: `["class": "plotback", "x": 132.0]`.
struct SVGAttributes: ExpressibleByDictionaryLiteral {
    var pairs: [(name: String, value: any SVGAttributeValue)]

    init(dictionaryLiteral elements: (String, any SVGAttributeValue)...) {
        pairs = elements.map { (name: $0.0, value: $0.1) }
    }

    /// ` name="value"` for each attribute, in order.
    var written: String {
        var out = ""
        for (name, value) in pairs { out += " \(name)=\"\(value.svgAttributeText)\"" }
        return out
    }
}

/// SVG markup as text. Every string from a run passes through `text`, `title` or an attribute value, which
/// escape it; `children` are markup that was built with these functions.
enum SVG {
    /// Average width of a character of the chart's 11 px labels, for fitting text into a width.
    static let charWidth = 6.3

    /// `<name a="…"/>`.
    static func element(_ name: String, _ attributes: SVGAttributes = [:]) -> String {
        "<\(name)\(attributes.written)/>"
    }

    /// `<name a="…">children</name>`.
    static func element(_ name: String, _ attributes: SVGAttributes = [:], children: String) -> String {
        "<\(name)\(attributes.written)>\(children)</\(name)>"
    }

    /// An opening tag, `<name a="…">`, for content appended piece by piece; end it with `close`.
    static func open(_ name: String, _ attributes: SVGAttributes = [:]) -> String {
        "<\(name)\(attributes.written)>"
    }

    /// `</name>`.
    static func close(_ name: String) -> String { "</\(name)>" }

    /// `<text a="…">escaped content</text>`.
    static func text(_ attributes: SVGAttributes, _ content: String) -> String {
        element("text", attributes, children: Markup.html(content))
    }

    /// A tooltip: `<title>escaped</title>`, the first child of the element it describes.
    static func title(_ content: String) -> String {
        "<title>\(Markup.html(content))</title>"
    }

    /// `text`, or its first whole words and `…`, that fits `width`; nil when not even the first word and `…`
    /// fit (the tooltip still has all of it). A word is never cut: `3g · 100-loss` becomes `3g…`, not `3g · 10…`.
    static func fit(_ text: String, width: Double) -> String? {
        let fits = Int(width / charWidth)
        if text.count <= fits { return text }
        var shown = ""
        for word in text.split(separator: " ") {
            let longer = shown.isEmpty ? String(word) : shown + " " + word
            guard longer.count + 1 <= fits else { break }
            shown = longer
        }
        // A separator is no place to stop: `satisfied ·…` reads as `satisfied…`.
        while let last = shown.last, "·,;:(-–".contains(last) || last == " " { shown.removeLast() }
        return shown.isEmpty ? nil : shown + "…"
    }
}

/// The `d` attribute of a `<path>`, built command by command: `M10 20H30V5`.
struct PathData {
    private(set) var text = ""

    var isEmpty: Bool { text.isEmpty }

    /// `M x y`.
    mutating func move(_ x: Double, _ y: Double) { text += "M\(Fmt.coord(x)) \(Fmt.coord(y))" }
    /// `L x y`.
    mutating func line(_ x: Double, _ y: Double) { text += "L\(Fmt.coord(x)) \(Fmt.coord(y))" }
    /// `M x y` on the first point, `L x y` after it.
    mutating func moveOrLine(_ x: Double, _ y: Double) { isEmpty ? move(x, y) : line(x, y) }
    /// `H x`.
    mutating func horizontal(_ x: Double) { text += "H\(Fmt.coord(x))" }
    /// `V y`.
    mutating func vertical(_ y: Double) { text += "V\(Fmt.coord(y))" }
    /// Relative commands written as they are, e.g. `l9 9l-9 9z` for a fixed-size mark.
    mutating func relative(_ commands: String) { text += commands }
    /// `Z`.
    mutating func close() { text += "Z" }
}

/// The time axis every lane and plot of the chart shares: run time (ns) from 0 to `duration` onto the
/// x range from `left` to `right`.
struct TimeAxis {
    /// Left edge of lanes and plots (the margin holds their names).
    static let left = 132.0
    static let right = 1304.0
    static var width: Double { right - left }

    /// Run time (ns) at the right edge; at least 1.
    let duration: UInt64

    init(duration: UInt64) {
        self.duration = Swift.max(duration, 1)
    }

    /// The x coordinate of run time `t` (ns); later times stay on the right edge.
    func x(_ t: UInt64) -> Double {
        Self.left + Double(Swift.min(t, duration)) / Double(duration) * Self.width
    }

    /// Tick positions in seconds for this axis.
    var ticks: [Double] { Self.ticks(duration: Double(duration) / 1e9) }

    /// About 14 ticks at a round step (1, 2, 5, 10, 15, 30 s, minutes, hours) from 0 to `duration` seconds.
    static func ticks(duration: Double) -> [Double] {
        let candidates: [Double] = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200]
        let target = duration / 14
        let step = candidates.first { $0 >= target } ?? Swift.max(1, (target / 3600).rounded(.up) * 3600)
        var ticks: [Double] = []
        var value = 0.0
        var index = 0.0
        while value <= duration + step * 1e-9 {
            ticks.append(value)
            index += 1
            value = step * index
        }
        return ticks
    }

    /// A tick's label: whole numbers without decimals, others with up to three.
    static func tickLabel(_ value: Double) -> String {
        if value == value.rounded() { return String(Int(value)) }
        var text = Fmt.fixed(value, 3)
        while text.hasSuffix("0") { text.removeLast() }
        return text
    }

    /// Vertical grid lines at every tick, through each of `bands` (top, bottom).
    func grid(ticks: [Double], bands: [(top: Double, bottom: Double)]) -> String {
        var out = SVG.open("g", ["class": "grid"])
        for tick in ticks {
            let gx = x(UInt64(tick * 1e9))
            for band in bands {
                out += SVG.element("line", ["x1": gx, "y1": band.top, "x2": gx, "y2": band.bottom])
            }
        }
        return out + SVG.close("g") + "\n"
    }

    /// The axis line at `top` with tick marks and labels; `note` adds "seconds since the run started".
    func render(top: Double, ticks: [Double], note: Bool) -> String {
        var out = SVG.open("g", ["class": "axis"])
        out += SVG.element("line", ["x1": Self.left, "y1": top, "x2": Self.right, "y2": top])
        for tick in ticks {
            let tx = x(UInt64(tick * 1e9))
            out += SVG.element("line", ["x1": tx, "y1": top, "x2": tx, "y2": top + 5])
            out += SVG.text(["x": tx, "y": top + 17], Self.tickLabel(tick))
        }
        out += SVG.text(["class": "axistitle", "x": 8, "y": top + 17], "time (s)")
        if note {
            out += SVG.text(["class": "axisnote", "x": Self.right, "y": top + 31], "seconds since the run started")
        }
        return out + SVG.close("g") + "\n"
    }
}

/// A plot's value axis: linear from 0 with round steps, or logarithmic (ticks 1, 2, 5 per decade) when
/// the values span more than a factor of 8.
struct ValueScale {
    var log: Bool
    var low: Double
    var high: Double
    var ticks: [Double]

    /// A scale that holds every value of `values` (1…100 when there are none); `logAllowed: false` keeps it
    /// linear whatever the spread.
    init(values: [Double], logAllowed: Bool = true) {
        let minValue = values.min() ?? 1
        let maxValue = values.max() ?? 100
        if logAllowed, minValue > 0, maxValue / minValue > 8 {
            log = true
            let minDecade = Self.pow10(minValue.log10Floor)
            low = [5.0, 2, 1].map { $0 * minDecade }.first { $0 <= minValue } ?? minDecade
            high = Self.niceUp(maxValue)
            var ticks: [Double] = []
            var decade = Self.pow10(low.log10Floor)
            while decade <= high * 1.0001 {
                for factor in [1.0, 2, 5] where decade * factor >= low * 0.9999 && decade * factor <= high * 1.0001 {
                    ticks.append(decade * factor)
                }
                decade *= 10
            }
            self.ticks = ticks
        } else {
            log = false
            low = 0
            let rough = Swift.max(maxValue * 1.1, 1)
            let step = Self.niceStep(rough / 5)
            high = (rough / step).rounded(.up) * step
            ticks = stride(from: 0.0, through: high + step * 1e-9, by: step).map { $0 }
        }
    }

    /// Where `value` sits: 0 at the bottom, 1 at the top (not clamped).
    func fraction(_ value: Double) -> Double {
        if log {
            let v = Swift.max(value, low)
            return (log10(v) - log10(low)) / (log10(high) - log10(low))
        }
        return (value - low) / (high - low)
    }

    static func pow10(_ exponent: Int) -> Double {
        var value = 1.0
        if exponent >= 0 { for _ in 0..<exponent { value *= 10 } } else { for _ in 0..<(-exponent) { value /= 10 } }
        return value
    }

    /// The smallest of 1, 2, 2.5, 5, 10 times a power of ten that is at least `rough`.
    static func niceStep(_ rough: Double) -> Double {
        let decade = pow10(rough.log10Floor)
        for factor in [1.0, 2, 2.5, 5, 10] where decade * factor >= rough { return decade * factor }
        return decade * 10
    }

    /// The smallest of 1, 2, 5, 10 times a power of ten that is at least `value`.
    static func niceUp(_ value: Double) -> Double {
        let decade = pow10(value.log10Floor)
        for factor in [1.0, 2, 5, 10] where decade * factor >= value { return decade * factor }
        return decade * 10
    }
}

extension Double {
    /// floor(log10(self)) for positive values.
    fileprivate var log10Floor: Int {
        Int(log10(self).rounded(.down))
    }
}

/// What every plot under the lanes draws: its name and notes in the left margin, its background,
/// horizontal grid lines with value labels, and a line saying there is nothing to plot.
enum PlotFrame {
    /// The plot's name at `top + 12` and a short note under it, in the left margin.
    static func labels(title: String, subtitle: String, top: Double) -> String {
        SVG.text(["class": "lanetitle", "x": 8, "y": top + 12], title) + note(subtitle, y: top + 25)
    }

    /// A further note in the left margin (`log scale`, `min–max, median`).
    static func note(_ text: String, y: Double) -> String {
        SVG.text(["class": "lanesub", "x": 8, "y": y], text)
    }

    /// The plot's background rectangle, the full width of the time axis.
    static func background(top: Double, height: Double, class name: String = "plotback") -> String {
        SVG.element("rect", ["class": name, "x": TimeAxis.left, "y": top, "width": TimeAxis.width, "height": height])
    }

    /// A horizontal grid line at `y` with `label` in the margin left of the plot.
    static func gridLine(y: Double, label: String) -> String {
        SVG.element("line", ["class": "hgrid", "x1": TimeAxis.left, "y1": y, "x2": TimeAxis.right, "y2": y])
            + SVG.text(["class": "ytick", "x": TimeAxis.left - 4, "y": y + 3.5], label)
    }

    /// "no … recorded", in italics at the plot's left edge.
    static func noData(_ text: String, y: Double) -> String {
        SVG.text(["class": "nodata", "x": TimeAxis.left + 8, "y": y], text)
    }
}

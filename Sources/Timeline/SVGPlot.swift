import Foundation

/// The timeline chart of `timeline.html`: one inline SVG with a row of step names, swimlanes for conditions,
/// path, reachability and app, a row of expectation markers, a time axis, and under them an RTT plot and a
/// loss plot sharing the same time axis. Step starts are dashed lines through all of it.
///
/// It stays readable and small for long runs with many events: lane segments narrower than two pixels are
/// merged (drawn in the colour of the state that held longest, hatched, with the number of changes in the
/// tooltip), and plots switch to one min/median/max mark per two pixels when there are more samples than
/// pixels. Tooltips are SVG `<title>`s — no script.
struct TimelineChart {
    // Geometry (SVG user units; the SVG scales to its container's width).
    static let width = 1320.0
    static let plotLeft = 132.0
    static let plotRight = 1304.0
    static var plotWidth: Double { plotRight - plotLeft }
    static let laneHeight = 34.0
    static let laneGap = 6.0
    static let minSegmentWidth = 2.0
    static let charWidth = 6.3
    /// Rolling window of the loss plot, in probes.
    static let lossWindow = 10

    let report: RunReport
    let events: [TimelineEvent]
    let duration: UInt64
    let palette: StatePalette
    let metrics: TimelineMetrics

    init(report: RunReport, metrics: TimelineMetrics, palette: StatePalette) {
        self.report = report
        self.metrics = metrics
        events = TimelineMetrics.ordered(report.events)
        duration = Swift.max(report.metadata.duration, events.last?.t ?? 0, 1)
        self.palette = palette
    }

    func x(_ t: UInt64) -> Double {
        Self.plotLeft + Double(Swift.min(t, duration)) / Double(duration) * Self.plotWidth
    }

    // MARK: - Rendering

    func render() -> String {
        var svg = ""
        svg.reserveCapacity(64 * 1024)
        var y = 0.0
        let stepRowTop = y
        y += 22
        let laneTop = y
        let lanes: [(TimelineLane, String, String)] = [
            (.conditions, "Conditions", "on the wire"),
            (.path, "Path", "path monitor"),
            (.reachability, "Reachability", "active prober"),
            (.app, "App", "observed app"),
        ]
        var laneBodies = ""
        var laneOverlay = ""
        for (lane, title, subtitle) in lanes {
            laneBodies += renderLane(lane, title: title, subtitle: subtitle, top: y, overlay: &laneOverlay)
            y += Self.laneHeight + Self.laneGap
        }
        let markersTop = y
        y += 24
        let axisTop = y
        y += 26
        let lanesBottom = axisTop
        y += 14
        let rttTop = y
        let rttHeight = 170.0
        y += rttHeight
        y += 16
        let lossTop = y
        let lossHeight = 80.0
        y += lossHeight
        let bottomAxisTop = y
        y += 34
        let height = y

        svg += "<svg class=\"chart\" viewBox=\"0 0 \(Fmt.coord(Self.width)) \(Fmt.coord(height))\" width=\"100%\" role=\"img\" aria-label=\"Timeline of the run\">\n"
        svg += "<defs><pattern id=\"flap\" width=\"4\" height=\"4\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
        svg += "<rect width=\"2\" height=\"4\" fill=\"#000\" fill-opacity=\"0.28\"/></pattern></defs>\n"

        let ticks = Self.ticks(duration: Double(duration) / 1e9)
        // Grid lines behind everything.
        svg += "<g class=\"grid\">"
        for tick in ticks {
            let gx = Fmt.coord(x(UInt64(tick * 1e9)))
            svg += "<line x1=\"\(gx)\" y1=\"\(Fmt.coord(laneTop))\" x2=\"\(gx)\" y2=\"\(Fmt.coord(lanesBottom))\"/>"
            svg += "<line x1=\"\(gx)\" y1=\"\(Fmt.coord(rttTop))\" x2=\"\(gx)\" y2=\"\(Fmt.coord(bottomAxisTop))\"/>"
        }
        svg += "</g>\n"
        svg += renderSteps(top: stepRowTop, bottom: bottomAxisTop)
        svg += laneBodies
        svg += renderExpectationMarkers(top: markersTop)
        svg += renderAxis(top: axisTop, ticks: ticks, title: false)
        let samples = TimelineMetrics.samples(events)
        svg += renderRTT(samples, top: rttTop, height: rttHeight)
        svg += renderLoss(samples, top: lossTop, height: lossHeight)
        svg += renderAxis(top: bottomAxisTop, ticks: ticks, title: true)
        svg += renderStepLines(top: stepRowTop, bottom: bottomAxisTop)
        // State names and reaction brackets go over the step lines, so a line never crosses out a word.
        svg += "<g class=\"overlay\">" + laneOverlay + "</g>\n"
        svg += "</svg>\n"
        return svg
    }

    // MARK: Steps

    func renderSteps(top: Double, bottom: Double) -> String {
        var out = "<g class=\"steps\">"
        let steps = report.metadata.steps
        for (index, step) in steps.enumerated() {
            let x0 = x(step.start)
            let x1 = index + 1 < steps.count ? x(steps[index + 1].start) : x(Swift.max(step.end, step.start))
            if index % 2 == 1 {
                out += "<rect class=\"stepband\" x=\"\(Fmt.coord(x0))\" y=\"\(Fmt.coord(top))\" width=\"\(Fmt.coord(Swift.max(0, x1 - x0)))\" height=\"18\"/>"
            }
            let label = Self.fit("\(index + 1). \(step.name)", width: x1 - x0 - 6) ?? Self.fit("\(index + 1)", width: x1 - x0 - 2)
            out += "<g><title>\(Markup.html("Step \(index + 1) “\(step.name)”: \(step.action) — \(Fmt.runTime(step.start)) s to \(Fmt.runTime(step.end)) s"))</title>"
            out += "<rect x=\"\(Fmt.coord(x0))\" y=\"\(Fmt.coord(top))\" width=\"\(Fmt.coord(Swift.max(1, x1 - x0)))\" height=\"18\" fill=\"transparent\"/>"
            if let label {
                out += "<text class=\"steplabel\" x=\"\(Fmt.coord(x0 + 4))\" y=\"\(Fmt.coord(top + 13))\">\(Markup.html(label))</text>"
            }
            out += "</g>"
        }
        out += "</g>\n"
        return out
    }

    /// Dashed lines at every step start, drawn over lanes and plots.
    func renderStepLines(top: Double, bottom: Double) -> String {
        var out = "<g class=\"steplines\">"
        for step in report.metadata.steps {
            let sx = Fmt.coord(x(step.start))
            out += "<line class=\"stepline\" x1=\"\(sx)\" y1=\"\(Fmt.coord(top))\" x2=\"\(sx)\" y2=\"\(Fmt.coord(bottom))\"/>"
        }
        out += "</g>\n"
        return out
    }

    // MARK: Lanes

    struct Segment {
        var start: UInt64
        var end: UInt64
        var state: String
        var changes = 1
        var label: String
    }

    /// The lane's states as segments, consecutive equal states merged.
    func segments(_ lane: TimelineLane) -> [Segment] {
        var result: [Segment] = []
        for event in events where event.lane == lane && TimelineMetrics.isStateEvent(event) {
            guard let state = event.state else { continue }
            var label = state
            if lane == .conditions, let profile = event.details["profile"]?.string, profile != state {
                label = "\(state) · \(profile)"
            }
            if var last = result.last, last.state == state {
                last.label = label
                result[result.count - 1] = last
                continue
            }
            if !result.isEmpty { result[result.count - 1].end = event.t }
            result.append(Segment(start: event.t, end: duration, state: state, label: label))
        }
        return result
    }

    func renderLane(_ lane: TimelineLane, title: String, subtitle: String, top: Double, overlay: inout String) -> String {
        let h = Self.laneHeight
        var out = "<g class=\"lane lane-\(lane.rawValue)\">"
        out += "<text class=\"lanetitle\" x=\"8\" y=\"\(Fmt.coord(top + 13))\">\(title)</text>"
        out += "<text class=\"lanesub\" x=\"8\" y=\"\(Fmt.coord(top + 25))\">\(subtitle)</text>"
        out += "<rect class=\"laneback\" x=\"\(Fmt.coord(Self.plotLeft))\" y=\"\(Fmt.coord(top))\" width=\"\(Fmt.coord(Self.plotWidth))\" height=\"\(Fmt.coord(h))\"/>"

        let segments = self.segments(lane)
        // Merge sub-pixel segments into groups that are at least minSegmentWidth wide.
        var drawn: [(x0: Double, x1: Double, segment: Segment, merged: [Segment])] = []
        var pending: [Segment] = []
        func flushPending() {
            guard let first = pending.first, let last = pending.last else { return }
            if pending.count == 1 {
                drawn.append((x(first.start), x(first.end), first, []))
            } else {
                var longest: [String: UInt64] = [:]
                for segment in pending { longest[segment.state, default: 0] += segment.end - segment.start }
                let dominant = longest.max { $0.value < $1.value || ($0.value == $1.value && $0.key > $1.key) }!.key
                let label = pending.first { $0.state == dominant }?.label ?? dominant
                drawn.append(
                    (x(first.start), x(last.end), Segment(start: first.start, end: last.end, state: dominant, changes: pending.count, label: label), pending))
            }
            pending.removeAll()
        }
        for segment in segments {
            let width = x(segment.end) - x(segment.start)
            if width >= Self.minSegmentWidth {
                flushPending()
                drawn.append((x(segment.start), x(segment.end), segment, []))
            } else {
                pending.append(segment)
                if let first = pending.first, x(segment.end) - x(first.start) >= Self.minSegmentWidth { flushPending() }
            }
        }
        flushPending()

        var labelBoxes: [(Double, Double)] = []
        for (x0, x1, segment, merged) in drawn {
            let width = Swift.max(1, x1 - x0)
            let color = palette.color(lane: lane, state: segment.state)
            out += "<g><title>"
            if merged.isEmpty {
                let length = segment.end - segment.start
                out += Markup.html("\(title): \(segment.label) from \(Fmt.runTime(segment.start)) s to \(Fmt.runTime(segment.end)) s (\(Fmt.seconds(Double(length) / 1e9)))")
            } else {
                out += Markup.html("\(title): \(merged.count) states between \(Fmt.runTime(segment.start)) s and \(Fmt.runTime(segment.end)) s, mostly \(segment.label)")
            }
            out += "</title><rect x=\"\(Fmt.coord(x0))\" y=\"\(Fmt.coord(top))\" width=\"\(Fmt.coord(width))\" height=\"\(Fmt.coord(h))\" fill=\"\(color.fill)\"/>"
            if !merged.isEmpty {
                out += "<rect x=\"\(Fmt.coord(x0))\" y=\"\(Fmt.coord(top))\" width=\"\(Fmt.coord(width))\" height=\"\(Fmt.coord(h))\" fill=\"url(#flap)\"/>"
            } else if let label = Self.fit(segment.label, width: width - 8) {
                let center = x0 + width / 2
                let half = Double(label.count) * Self.charWidth / 2
                labelBoxes.append((center - half - 3, center + half + 3))
                overlay += "<text class=\"seglabel\" x=\"\(Fmt.coord(center))\" y=\"\(Fmt.coord(top + h / 2 + 4))\" style=\"fill:\(color.text)\">\(Markup.html(label))</text>"
            }
            out += "</g>"
        }

        overlay += renderReactions(lane, top: top, avoiding: labelBoxes)
        if lane == .app {
            out += renderAppTicks(top: top)
            if segments.isEmpty && !events.contains(where: { $0.lane == .app }) {
                out += "<text class=\"nodata\" x=\"\(Fmt.coord(Self.plotLeft + 8))\" y=\"\(Fmt.coord(top + h / 2 + 4))\">no app observed (run with --observe to see your app here)</text>"
            }
        } else if segments.isEmpty {
            out += "<text class=\"nodata\" x=\"\(Fmt.coord(Self.plotLeft + 8))\" y=\"\(Fmt.coord(top + h / 2 + 4))\">no \(Markup.html(title.lowercased())) events recorded</text>"
        }
        out += "</g>\n"
        return out
    }

    /// For every change of conditions this lane reacted to: a bracket along the bottom of the lane from the
    /// change to the reaction, with the delay written on it — where it does not cover a state's name.
    func renderReactions(_ lane: TimelineLane, top: Double, avoiding labels: [(Double, Double)]) -> String {
        guard TimelineMetrics.reactionLanes.contains(lane) else { return "" }
        var out = ""
        var taken = labels
        let lineY = top + Self.laneHeight - 4
        for change in metrics.changes {
            guard let reaction = change.reaction(lane), let t = reaction.t, let delay = reaction.delay, let state = reaction.state else { continue }
            let x0 = x(change.t)
            let x1 = x(t)
            guard x1 - x0 >= 6 else { continue }
            let text = Fmt.fixed(delay, delay < 10 ? 2 : 1) + " s"
            let textWidth = Double(text.count) * 5.8
            let center = (x0 + x1) / 2
            let box = (center - textWidth / 2 - 2, center + textWidth / 2 + 2)
            let fits = x1 - x0 >= textWidth + 6 && !taken.contains { $0.0 < box.1 && box.0 < $0.1 }
            out += "<g class=\"reaction\"><title>\(Markup.html("change #\(change.index) (\(change.to)) at \(Fmt.runTime(change.t)) s → \(lane.rawValue) \(state) at \(Fmt.runTime(t)) s: \(Fmt.seconds(delay)) later"))</title>"
            out += "<path d=\"M\(Fmt.coord(x0)) \(Fmt.coord(lineY - 3))v3H\(Fmt.coord(x1))v-5\"/>"
            if fits {
                taken.append(box)
                out += "<rect x=\"\(Fmt.coord(box.0))\" y=\"\(Fmt.coord(lineY - 13))\" width=\"\(Fmt.coord(box.1 - box.0))\" height=\"12\" rx=\"2\"/>"
                out += "<text x=\"\(Fmt.coord(center))\" y=\"\(Fmt.coord(lineY - 3.5))\">\(text)</text>"
            }
            out += "</g>"
        }
        return out
    }

    /// A small tick at the top of the app lane for every line the app printed (one per two pixels).
    func renderAppTicks(top: Double) -> String {
        var lastColumn = -1
        var out = ""
        var pendingTitle: [String] = []
        var pendingX = 0.0
        var count = 0
        func flush() {
            guard !pendingTitle.isEmpty else { return }
            var title = pendingTitle.prefix(5).joined(separator: "\n")
            if count > 5 { title += "\n… and \(count - 5) more" }
            out += "<g><title>\(Markup.html(title))</title><rect class=\"apptick\" x=\"\(Fmt.coord(pendingX - 1))\" y=\"\(Fmt.coord(top))\" width=\"2\" height=\"6\"/></g>"
            pendingTitle.removeAll()
            count = 0
        }
        for event in events where event.lane == .app {
            let px = x(event.t)
            let column = Int(px / 2)
            if column != lastColumn {
                flush()
                lastColumn = column
                pendingX = px
            }
            count += 1
            if pendingTitle.count < 5 {
                pendingTitle.append("\(Fmt.runTime(event.t)) s app: \(event.summary)")
            }
        }
        flush()
        return out
    }

    // MARK: Expectations

    /// Where each expectation of the report is marked (run time), when the timeline says.
    static func expectationTimes(_ report: RunReport, events: [TimelineEvent]) -> [UInt64?] {
        let judged = events.filter { $0.lane == .scenario && $0.kind == TimelineKind.expectation }
        var used = Set<Int>()
        func time(of event: TimelineEvent) -> UInt64 {
            if let at = event.details["at"]?.number, at >= 0, at.isFinite { return UInt64(at * 1e9) }
            return event.t
        }
        return report.expectations.enumerated().map { offset, expectation in
            if let index = judged.indices.first(where: { !used.contains($0) && judged[$0].details["name"]?.string == expectation.name })
                ?? judged.indices.first(where: { !used.contains($0) && judged[$0].summary.contains(expectation.name) })
            {
                used.insert(index)
                return time(of: judged[index])
            }
            if judged.count == report.expectations.count, !used.contains(offset) {
                used.insert(offset)
                return time(of: judged[offset])
            }
            return nil
        }
    }

    func renderExpectationMarkers(top: Double) -> String {
        let times = Self.expectationTimes(report, events: events)
        var out = "<g class=\"expectations\"><text class=\"lanesub\" x=\"8\" y=\"\(Fmt.coord(top + 15))\">expectations</text>"
        var lastX = -100.0
        for (index, expectation) in report.expectations.enumerated() {
            guard let t = times[index] else { continue }
            var cx = x(t)
            if cx - lastX < 16 { cx = lastX + 16 }
            lastX = cx
            let cy = top + 11
            let color = expectation.passed ? StatePalette.green : StatePalette.red
            out += "<g><title>\(Markup.html("#\(index + 1) \(expectation.name): \(expectation.passed ? "PASS" : "FAIL") — \(expectation.evidence)"))</title>"
            out += "<line class=\"expline\" x1=\"\(Fmt.coord(x(t)))\" y1=\"\(Fmt.coord(top - 4 * (Self.laneHeight + Self.laneGap)))\" x2=\"\(Fmt.coord(x(t)))\" y2=\"\(Fmt.coord(top + 2))\" stroke=\"\(color.fill)\"/>"
            out += "<path d=\"M\(Fmt.coord(cx)) \(Fmt.coord(cy - 9))l9 9l-9 9l-9 -9z\" fill=\"\(color.fill)\" stroke=\"#fff\"/>"
            out += "<text class=\"explabel\" x=\"\(Fmt.coord(cx))\" y=\"\(Fmt.coord(cy + 4))\">\(index + 1)</text></g>"
        }
        out += "</g>\n"
        return out
    }

    // MARK: Axis

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

    static func tickLabel(_ value: Double) -> String {
        if value == value.rounded() { return String(Int(value)) }
        var text = Fmt.fixed(value, 3)
        while text.hasSuffix("0") { text.removeLast() }
        return text
    }

    func renderAxis(top: Double, ticks: [Double], title: Bool) -> String {
        var out = "<g class=\"axis\">"
        out += "<line x1=\"\(Fmt.coord(Self.plotLeft))\" y1=\"\(Fmt.coord(top))\" x2=\"\(Fmt.coord(Self.plotRight))\" y2=\"\(Fmt.coord(top))\"/>"
        for tick in ticks {
            let tx = Fmt.coord(x(UInt64(tick * 1e9)))
            out += "<line x1=\"\(tx)\" y1=\"\(Fmt.coord(top))\" x2=\"\(tx)\" y2=\"\(Fmt.coord(top + 5))\"/>"
            out += "<text x=\"\(tx)\" y=\"\(Fmt.coord(top + 17))\">\(Self.tickLabel(tick))</text>"
        }
        out += "<text class=\"axistitle\" x=\"8\" y=\"\(Fmt.coord(top + 17))\">time (s)</text>"
        if title {
            out += "<text class=\"axisnote\" x=\"\(Fmt.coord(Self.plotRight))\" y=\"\(Fmt.coord(top + 31))\">seconds since the run started</text>"
        }
        out += "</g>\n"
        return out
    }

    // MARK: RTT

    struct RTTScale {
        var log: Bool
        var low: Double
        var high: Double
        var ticks: [Double]

        init(values: [Double]) {
            let minValue = values.min() ?? 1
            let maxValue = values.max() ?? 100
            if minValue > 0, maxValue / minValue > 8 {
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

        /// 0 at the bottom, 1 at the top.
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

        static func niceStep(_ rough: Double) -> Double {
            let decade = pow10(rough.log10Floor)
            for factor in [1.0, 2, 2.5, 5, 10] where decade * factor >= rough { return decade * factor }
            return decade * 10
        }

        static func niceUp(_ value: Double) -> Double {
            let decade = pow10(value.log10Floor)
            for factor in [1.0, 2, 5, 10] where decade * factor >= value { return decade * factor }
            return decade * 10
        }
    }

    func renderRTT(_ samples: [TimelineMetrics.Sample], top: Double, height: Double) -> String {
        let failBand = 14.0
        let plotTop = top + failBand + 4
        let plotHeight = height - failBand - 4
        let bottom = plotTop + plotHeight
        var out = "<g class=\"plot rtt\">"
        out += "<text class=\"lanetitle\" x=\"8\" y=\"\(Fmt.coord(plotTop + 12))\">RTT (ms)</text>"
        out += "<text class=\"lanesub\" x=\"8\" y=\"\(Fmt.coord(plotTop + 25))\">probe round trip</text>"
        out += "<text class=\"lanesub\" x=\"8\" y=\"\(Fmt.coord(top + 11))\">failed probes</text>"
        out += "<rect class=\"failband\" x=\"\(Fmt.coord(Self.plotLeft))\" y=\"\(Fmt.coord(top))\" width=\"\(Fmt.coord(Self.plotWidth))\" height=\"\(Fmt.coord(failBand))\"/>"
        out += "<rect class=\"plotback\" x=\"\(Fmt.coord(Self.plotLeft))\" y=\"\(Fmt.coord(plotTop))\" width=\"\(Fmt.coord(Self.plotWidth))\" height=\"\(Fmt.coord(plotHeight))\"/>"
        let rtts = samples.compactMap(\.rttMs)
        guard !samples.isEmpty else {
            out += "<text class=\"nodata\" x=\"\(Fmt.coord(Self.plotLeft + 8))\" y=\"\(Fmt.coord(plotTop + 20))\">no probe samples recorded</text></g>\n"
            return out
        }
        let scale = RTTScale(values: rtts.isEmpty ? [1, 100] : rtts)
        func y(_ value: Double) -> Double { bottom - Swift.min(1, Swift.max(0, scale.fraction(value))) * plotHeight }
        for tick in scale.ticks {
            let ty = Fmt.coord(y(tick))
            out += "<line class=\"hgrid\" x1=\"\(Fmt.coord(Self.plotLeft))\" y1=\"\(ty)\" x2=\"\(Fmt.coord(Self.plotRight))\" y2=\"\(ty)\"/>"
            out += "<text class=\"ytick\" x=\"\(Fmt.coord(Self.plotLeft - 4))\" y=\"\(Fmt.coord(y(tick) + 3.5))\">\(Self.tickLabel(tick))</text>"
        }
        if scale.log {
            out += "<text class=\"lanesub\" x=\"8\" y=\"\(Fmt.coord(plotTop + 38))\">log scale</text>"
        }

        let failed = samples.filter(\.failed)
        let ok = samples.filter { !$0.failed && $0.rttMs != nil }
        if ok.count <= Int(Self.plotWidth / 1.5) {
            // Every sample a dot, coloured by probe type; consecutive successes of a type joined by a faint line.
            var lines: [String: String] = [:]
            var lastOK: [String: Bool] = [:]
            for sample in samples {
                let probe = sample.probe ?? "probe"
                if sample.failed {
                    lastOK[probe] = false
                    continue
                }
                guard let rtt = sample.rttMs else { continue }
                let command = lastOK[probe] == true ? "L" : "M"
                lines[probe, default: ""] += "\(command)\(Fmt.coord(x(sample.t))) \(Fmt.coord(y(rtt)))"
                lastOK[probe] = true
            }
            for probe in lines.keys.sorted() {
                out += "<path class=\"rttline\" d=\"\(lines[probe]!)\" stroke=\"\(palette.probeColor(probe))\"/>"
            }
            for sample in ok {
                let rtt = sample.rttMs!
                let probe = sample.probe ?? "probe"
                out += "<circle cx=\"\(Fmt.coord(x(sample.t)))\" cy=\"\(Fmt.coord(y(rtt)))\" r=\"2.6\" fill=\"\(palette.probeColor(probe))\">"
                out += "<title>\(Markup.html("\(Fmt.runTime(sample.t)) s \(probe): \(Fmt.ms(rtt)) ms"))</title></circle>"
            }
        } else {
            // Downsampled: per two-pixel column, a min–max bar and the median as a line.
            var columns: [Int: [Double]] = [:]
            for sample in ok { columns[Int((x(sample.t) - Self.plotLeft) / 2), default: []].append(sample.rttMs!) }
            var bars = ""
            var median = ""
            for column in columns.keys.sorted() {
                let values = columns[column]!.sorted()
                let cx = Fmt.coord(Self.plotLeft + Double(column) * 2 + 1)
                bars += "M\(cx) \(Fmt.coord(y(values.last!)))V\(Fmt.coord(y(values.first!)))"
                median += (median.isEmpty ? "M" : "L") + "\(cx) \(Fmt.coord(y(TimelineMetrics.RTTStats.quantile(values, 0.5))))"
            }
            out += "<path class=\"rttband\" d=\"\(bars)\"/><path class=\"rttmedian\" d=\"\(median)\"/>"
            out += "<text class=\"lanesub\" x=\"8\" y=\"\(Fmt.coord(plotTop + 51))\">min–max, median</text>"
        }

        // Failed probes: crosses in the band above the plot, one per two-pixel column.
        var columns: [Int: (t: UInt64, count: Int, probes: Set<String>)] = [:]
        for sample in failed {
            let column = Int((x(sample.t) - Self.plotLeft) / 2)
            var entry = columns[column] ?? (sample.t, 0, [])
            entry.count += 1
            entry.probes.insert(sample.probe ?? "probe")
            columns[column] = entry
        }
        let cy = top + failBand / 2
        for column in columns.keys.sorted() {
            let entry = columns[column]!
            let cx = Self.plotLeft + Double(column) * 2 + 1
            let what = entry.count == 1 ? "\(entry.probes.first!) probe failed" : "\(entry.count) probes failed (\(entry.probes.sorted().joined(separator: ", ")))"
            out += "<path class=\"failmark\" d=\"M\(Fmt.coord(cx - 3.5)) \(Fmt.coord(cy - 3.5))l7 7m0 -7l-7 7\">"
            out += "<title>\(Markup.html("\(Fmt.runTime(entry.t)) s: \(what)"))</title></path>"
        }
        out += "</g>\n"
        return out
    }

    // MARK: Loss

    /// Rolling loss (0…1) over the last `lossWindow` probes, at each probe.
    static func rollingLoss(_ samples: [TimelineMetrics.Sample]) -> [(t: UInt64, loss: Double)] {
        var result: [(UInt64, Double)] = []
        result.reserveCapacity(samples.count)
        var failures = 0
        for (index, sample) in samples.enumerated() {
            if sample.failed { failures += 1 }
            if index >= lossWindow, samples[index - lossWindow].failed { failures -= 1 }
            let count = Swift.min(index + 1, lossWindow)
            result.append((sample.t, Double(failures) / Double(count)))
        }
        return result
    }

    func renderLoss(_ samples: [TimelineMetrics.Sample], top: Double, height: Double) -> String {
        let bottom = top + height
        var out = "<g class=\"plot loss\">"
        out += "<text class=\"lanetitle\" x=\"8\" y=\"\(Fmt.coord(top + 12))\">Loss (%)</text>"
        out += "<text class=\"lanesub\" x=\"8\" y=\"\(Fmt.coord(top + 25))\">last \(Self.lossWindow) probes</text>"
        out += "<rect class=\"plotback\" x=\"\(Fmt.coord(Self.plotLeft))\" y=\"\(Fmt.coord(top))\" width=\"\(Fmt.coord(Self.plotWidth))\" height=\"\(Fmt.coord(height))\"/>"
        func y(_ loss: Double) -> Double { bottom - loss * height }
        for tick in [0.0, 0.5, 1.0] {
            let ty = Fmt.coord(y(tick))
            out += "<line class=\"hgrid\" x1=\"\(Fmt.coord(Self.plotLeft))\" y1=\"\(ty)\" x2=\"\(Fmt.coord(Self.plotRight))\" y2=\"\(ty)\"/>"
            out += "<text class=\"ytick\" x=\"\(Fmt.coord(Self.plotLeft - 4))\" y=\"\(Fmt.coord(y(tick) + 3.5))\">\(Int(tick * 100))</text>"
        }
        let rolling = Self.rollingLoss(samples)
        guard let first = rolling.first else {
            out += "<text class=\"nodata\" x=\"\(Fmt.coord(Self.plotLeft + 8))\" y=\"\(Fmt.coord(top + 20))\">no probe samples recorded</text></g>\n"
            return out
        }
        // A step line; with more points than pixels, one point per pixel column (the column's highest loss).
        var points: [(x: Double, loss: Double)] = []
        if rolling.count <= Int(Self.plotWidth) {
            points = rolling.map { (x($0.t), $0.loss) }
        } else {
            var column = -1
            for (t, loss) in rolling {
                let px = x(t)
                let c = Int(px - Self.plotLeft)
                if c == column, let last = points.last {
                    points[points.count - 1].loss = Swift.max(last.loss, loss)
                } else {
                    points.append((px, loss))
                    column = c
                }
            }
        }
        var line = "M\(Fmt.coord(x(first.t))) \(Fmt.coord(y(points[0].loss)))"
        for point in points.dropFirst() {
            line += "H\(Fmt.coord(point.x))V\(Fmt.coord(y(point.loss)))"
        }
        let lastX = x(samples.last!.t)
        line += "H\(Fmt.coord(lastX))"
        let area = line + "V\(Fmt.coord(bottom))H\(Fmt.coord(x(first.t)))Z"
        out += "<path class=\"lossarea\" d=\"\(area)\"/><path class=\"lossline\" d=\"\(line)\"/>"
        out += "</g>\n"
        return out
    }

    // MARK: Text fitting

    /// `text`, or a shortened `text…`, that fits `width`; nil when not even three characters fit.
    static func fit(_ text: String, width: Double) -> String? {
        let fits = Int(width / charWidth)
        if text.count <= fits { return text }
        guard fits >= 4 else { return nil }
        return String(text.prefix(fits - 1)) + "…"
    }
}

extension Double {
    /// floor(log10(self)) for positive values.
    fileprivate var log10Floor: Int {
        Int(log10(self).rounded(.down))
    }
}

/// The colours of states, profiles and probes, shared by the chart, the legend and the tables.
struct StatePalette {
    struct Color: Equatable {
        var fill: String
        var text: String
    }

    static let green = Color(fill: "#2f9e44", text: "#ffffff")
    static let red = Color(fill: "#e03131", text: "#ffffff")
    static let amber = Color(fill: "#f59f00", text: "#1f1f1f")
    static let grey = Color(fill: "#adb5bd", text: "#1f1f1f")
    static let clear = Color(fill: "#e9ecef", text: "#343a40")
    /// Profiles on the wire, and app states that are not health words, in order of appearance.
    static let categorical: [Color] = [
        Color(fill: "#4c6ef5", text: "#ffffff"), Color(fill: "#7048e8", text: "#ffffff"), Color(fill: "#1098ad", text: "#ffffff"),
        Color(fill: "#ae3ec9", text: "#ffffff"), Color(fill: "#5c7cfa", text: "#ffffff"), Color(fill: "#0b7285", text: "#ffffff"),
        Color(fill: "#845ef7", text: "#ffffff"), Color(fill: "#495057", text: "#ffffff"),
    ]
    /// The wire states that mean "nothing gets through".
    static let blackout = Color(fill: "#343a40", text: "#ffffff")

    /// Conditions states in order of first appearance.
    let conditions: [String]
    /// App states that are not health words, in order of first appearance.
    let appStates: [String]
    let probes: [String]

    init(events: [TimelineEvent]) {
        var conditions: [String] = []
        var app: [String] = []
        var probes: [String] = []
        var seen = Set<String>()
        for event in events {
            switch event.lane {
            case .conditions where event.kind == TimelineKind.conditionsChanged:
                if let state = event.state, seen.insert("c:" + state).inserted { conditions.append(state) }
            case .app:
                if let state = event.state, seen.insert("a:" + state).inserted, Self.health(state) == nil { app.append(state) }
            case .reachability where event.kind == TimelineKind.sample:
                let probe = event.details["probe"]?.string ?? "probe"
                if seen.insert("p:" + probe).inserted { probes.append(probe) }
            default: break
            }
        }
        self.conditions = conditions
        self.appStates = app
        self.probes = probes
    }

    /// Health colour of a state word, nil when the word is not one.
    static func health(_ state: String) -> Color? {
        let key = String(state.lowercased().unicodeScalars.filter { $0 != " " && $0 != "-" && $0 != "_" })
        switch key {
        case "satisfied", "online", "available", "connected", "reachable", "ok", "up", "ready", "good": return green
        case "unsatisfied", "offline", "unavailable", "disconnected", "unreachable", "down", "failed", "error", "noconnection":
            return red
        case "requiresconnection", "needsconnection", "portal", "captiveportal", "limited", "degraded", "constrained", "waiting",
            "connecting", "retrying", "moderate", "minimal":
            return amber
        case "unknown", "none", "": return grey
        default: return nil
        }
    }

    func color(lane: TimelineLane, state: String) -> Color {
        switch lane {
        case .conditions:
            let key = state.lowercased()
            if key == "clear" || key == "none" || key == "no conditions" { return Self.clear }
            if key.contains("100-loss") || key.contains("100% loss") || key.contains("down") || key == "blackhole" { return Self.blackout }
            let colored = conditions.filter { Self.conditionColorKey($0) }
            let index = colored.firstIndex(of: state) ?? 0
            return Self.categorical[index % Self.categorical.count]
        case .app:
            if let color = Self.health(state) { return color }
            let index = appStates.firstIndex(of: state) ?? 0
            return Self.categorical[(index + 3) % Self.categorical.count]
        default:
            return Self.health(state) ?? Self.grey
        }
    }

    /// Conditions states that take a categorical colour (not clear, not a blackout).
    static func conditionColorKey(_ state: String) -> Bool {
        let key = state.lowercased()
        return !(key == "clear" || key == "none" || key == "no conditions" || key.contains("100-loss") || key.contains("100% loss")
            || key.contains("down") || key == "blackhole")
    }

    func probeColor(_ probe: String) -> String {
        switch probe {
        case "http": "#1c7ed6"
        case "dns": "#f76707"
        case "tcp": "#7950f2"
        default: ["#0ca678", "#d6336c", "#495057"][(probes.firstIndex(of: probe) ?? 0) % 3]
        }
    }
}

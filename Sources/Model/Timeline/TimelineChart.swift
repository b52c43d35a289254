/// The timeline chart of `timeline.html`: one inline SVG with a row of step names, swimlanes for conditions,
/// path, reachability and app, a row of expectation markers, a time axis, and under them the time-series
/// plots (`TimeSeriesPlots`) sharing the same time axis. Step starts are dashed lines through all of it.
///
/// It stays readable and small for long runs with many events: lane segments narrower than two pixels are
/// merged (drawn in the colour of the state that held longest, hatched, with the number of changes in the
/// tooltip), and plots downsample when there are more samples than pixels. Tooltips are SVG `<title>`s —
/// no script.
struct TimelineChart {
    /// Width of the chart (SVG user units; the SVG scales to its container's width).
    static let width = 1320.0
    static let laneHeight = 34.0
    static let laneGap = 6.0
    /// The thin per-address-family reachability lanes.
    static let familyLaneHeight = 16.0
    static let familyLaneGap = 4.0
    /// Height of the trace-rate plot, when a run has one.
    static let traceHeight = 90.0
    static let minSegmentWidth = 2.0

    let report: RunReport
    /// The report's events in time order.
    let events: [TimelineEvent]
    let axis: TimeAxis
    let palette: StatePalette
    let metrics: TimelineMetrics
    /// The trace rates to plot, one per direction that has any; empty when no change applied a trace.
    let traces: [TraceRateSeries]
    /// True when the prober reported per-family states: the chart then has a thin lane per family.
    let hasFamilyLanes: Bool

    init(report: RunReport, metrics: TimelineMetrics, palette: StatePalette) {
        self.report = report
        self.metrics = metrics
        events = TimelineMetrics.ordered(report.events)
        axis = TimeAxis(duration: Swift.max(report.metadata.duration, events.last?.t ?? 0, 1))
        self.palette = palette
        traces = TraceDirection.allCases.map { [events, axis] in TraceRateSeries($0, events: events, end: axis.duration) }.filter { !$0.isEmpty }
        hasFamilyLanes = FamilyReachability.isRecorded(in: events)
    }

    /// Run time (ns) at the right edge.
    var duration: UInt64 { axis.duration }

    func x(_ t: UInt64) -> Double { axis.x(t) }

    // MARK: - Rendering

    /// The whole chart, `<svg>` to `</svg>`.
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
            if lane == .reachability && hasFamilyLanes {
                for family in AddressFamily.allCases {
                    laneBodies += renderFamilyLane(family, top: y, overlay: &laneOverlay)
                    y += Self.familyLaneHeight + Self.familyLaneGap
                }
            }
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
        let traceTop = y + 16
        if !traces.isEmpty { y = traceTop + Self.traceHeight }
        let bottomAxisTop = y
        y += 34
        let height = y

        let viewBox = "0 0 \(Fmt.coord(Self.width)) \(Fmt.coord(height))"
        svg += SVG.open("svg", ["class": "chart", "viewBox": viewBox, "width": "100%", "role": "img", "aria-label": "Timeline of the run"]) + "\n"
        let hatch = SVG.element("rect", ["width": 2, "height": 4, "fill": "#000", "fill-opacity": "0.28"])
        let pattern = SVG.element(
            "pattern", ["id": "flap", "width": 4, "height": 4, "patternUnits": "userSpaceOnUse", "patternTransform": "rotate(45)"], children: hatch)
        svg += SVG.element("defs", children: pattern) + "\n"

        let ticks = axis.ticks
        // Grid lines behind everything.
        svg += axis.grid(ticks: ticks, bands: [(laneTop, lanesBottom), (rttTop, bottomAxisTop)])
        svg += renderSteps(top: stepRowTop, bottom: bottomAxisTop)
        svg += laneBodies
        svg += renderExpectationMarkers(top: markersTop, lanesTop: laneTop)
        svg += axis.render(top: axisTop, ticks: ticks, note: false)
        let samples = TimelineMetrics.samples(events)
        let plots = TimeSeriesPlots(axis: axis, palette: palette)
        svg += plots.rtt(samples, top: rttTop, height: rttHeight)
        svg += plots.loss(samples, top: lossTop, height: lossHeight)
        if !traces.isEmpty { svg += plots.traceRate(traces, top: traceTop, height: Self.traceHeight) }
        svg += axis.render(top: bottomAxisTop, ticks: ticks, note: true)
        svg += renderStepLines(top: stepRowTop, bottom: bottomAxisTop)
        // State names and reaction brackets go over the step lines, so a line never crosses out a word.
        svg += SVG.element("g", ["class": "overlay"], children: laneOverlay) + "\n"
        svg += SVG.close("svg") + "\n"
        return svg
    }

    // MARK: Steps

    /// The row of step names, every other step on a shaded band.
    func renderSteps(top: Double, bottom: Double) -> String {
        var out = SVG.open("g", ["class": "steps"])
        let steps = report.metadata.steps
        for (index, step) in steps.enumerated() {
            let x0 = x(step.start)
            let x1 = index + 1 < steps.count ? x(steps[index + 1].start) : x(Swift.max(step.end, step.start))
            if index % 2 == 1 {
                out += SVG.element("rect", ["class": "stepband", "x": x0, "y": top, "width": Swift.max(0, x1 - x0), "height": 18])
            }
            let label = SVG.fit("\(index + 1). \(step.name)", width: x1 - x0 - 6) ?? SVG.fit("\(index + 1)", width: x1 - x0 - 2)
            out += SVG.open("g") + SVG.title("Step \(index + 1) “\(step.name)”: \(step.action) — \(Fmt.runTime(step.start)) s to \(Fmt.runTime(step.end)) s")
            out += SVG.element("rect", ["x": x0, "y": top, "width": Swift.max(1, x1 - x0), "height": 18, "fill": "transparent"])
            if let label {
                out += SVG.text(["class": "steplabel", "x": x0 + 4, "y": top + 13], label)
            }
            out += SVG.close("g")
        }
        return out + SVG.close("g") + "\n"
    }

    /// Dashed lines at every step start, drawn over lanes and plots.
    func renderStepLines(top: Double, bottom: Double) -> String {
        var out = SVG.open("g", ["class": "steplines"])
        for step in report.metadata.steps {
            let sx = x(step.start)
            out += SVG.element("line", ["class": "stepline", "x1": sx, "y1": top, "x2": sx, "y2": bottom])
        }
        return out + SVG.close("g") + "\n"
    }

    // MARK: Expectations

    /// Where each expectation of the report is marked (run time): when its verdict was settled (the result's
    /// ``ExpectationResult/at``), else when the timeline recorded it.
    static func expectationTimes(_ report: RunReport, events: [TimelineEvent]) -> [UInt64?] {
        let judged = events.filter { $0.lane == .scenario && $0.kind == TimelineKind.expectation }
        var used = Set<Int>()
        func time(of event: TimelineEvent) -> UInt64 {
            if let at = event.details["at"]?.number, at >= 0, at.isFinite { return UInt64(at * 1e9) }
            return event.t
        }
        return report.expectations.enumerated().map { offset, expectation in
            if let at = expectation.at, at >= 0, at.isFinite { return UInt64(at * 1e9) }
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

    /// A numbered diamond per expectation (green passed, red failed) with a dotted line up through the lanes.
    func renderExpectationMarkers(top: Double, lanesTop: Double) -> String {
        let times = Self.expectationTimes(report, events: events)
        var out = SVG.open("g", ["class": "expectations"]) + SVG.text(["class": "lanesub", "x": 8, "y": top + 15], "expectations")
        var lastX = -100.0
        for (index, expectation) in report.expectations.enumerated() {
            guard let t = times[index] else { continue }
            var cx = x(t)
            if cx - lastX < 16 { cx = lastX + 16 }
            lastX = cx
            let cy = top + 11
            let color = expectation.passed ? StatePalette.green : StatePalette.red
            out += SVG.open("g") + SVG.title("#\(index + 1) \(expectation.name): \(expectation.passed ? "PASS" : "FAIL") — \(expectation.evidence)")
            out += SVG.element("line", ["class": "expline", "x1": x(t), "y1": lanesTop, "x2": x(t), "y2": top + 2, "stroke": color.fill])
            var diamond = PathData()
            diamond.move(cx, cy - 9)
            diamond.relative("l9 9l-9 9l-9 -9z")
            out += SVG.element("path", ["d": diamond.text, "fill": color.fill, "stroke": "#fff"])
            out += SVG.text(["class": "explabel", "x": cx, "y": cy + 4], String(index + 1)) + SVG.close("g")
        }
        return out + SVG.close("g") + "\n"
    }
}

/// The plots under the swimlanes of `timeline.html`, on the chart's time axis: the prober's RTT (with
/// failed probes marked above it), its rolling loss, and the rate a trace-driven profile allowed.
///
/// With more samples than pixels they switch to one min/median/max mark per two pixels (RTT) or the
/// highest loss per pixel column, so their size stays bounded on long runs.
struct TimeSeriesPlots {
    /// Rolling window of the loss plot, in probes.
    static let lossWindow = 10

    let axis: TimeAxis
    let palette: StatePalette

    func x(_ t: UInt64) -> Double { axis.x(t) }

    // MARK: RTT

    /// The RTT plot between `top` and `top + height`: a band of failed probes, then every successful
    /// probe as a dot coloured by probe type (or min–max bars and a median line when downsampled).
    func rtt(_ samples: [TimelineMetrics.Sample], top: Double, height: Double) -> String {
        let failBand = 14.0
        let plotTop = top + failBand + 4
        let plotHeight = height - failBand - 4
        let bottom = plotTop + plotHeight
        var out = SVG.open("g", ["class": "plot rtt"])
        out += PlotFrame.labels(title: "RTT (ms)", subtitle: "probe round trip", top: plotTop)
        out += PlotFrame.note("failed probes", y: top + 11)
        out += PlotFrame.background(top: top, height: failBand, class: "failband")
        out += PlotFrame.background(top: plotTop, height: plotHeight)
        let rtts = samples.compactMap(\.rttMs)
        guard !samples.isEmpty else {
            return out + PlotFrame.noData("no probe samples recorded", y: plotTop + 20) + SVG.close("g") + "\n"
        }
        let scale = ValueScale(values: rtts.isEmpty ? [1, 100] : rtts)
        func y(_ value: Double) -> Double { bottom - Swift.min(1, Swift.max(0, scale.fraction(value))) * plotHeight }
        for tick in scale.ticks {
            out += PlotFrame.gridLine(y: y(tick), label: TimeAxis.tickLabel(tick))
        }
        if scale.log {
            out += PlotFrame.note("log scale", y: plotTop + 38)
        }

        let ok = samples.filter { !$0.failed && $0.rttMs != nil }
        if ok.count <= Int(TimeAxis.width / 1.5) {
            // Every sample a dot, coloured by probe type; consecutive successes of a type joined by a faint line.
            var lines: [String: PathData] = [:]
            var lastOK: [String: Bool] = [:]
            for sample in samples {
                let probe = sample.probe ?? "probe"
                if sample.failed {
                    lastOK[probe] = false
                    continue
                }
                guard let rtt = sample.rttMs else { continue }
                if lastOK[probe] == true {
                    lines[probe, default: PathData()].line(x(sample.t), y(rtt))
                } else {
                    lines[probe, default: PathData()].move(x(sample.t), y(rtt))
                }
                lastOK[probe] = true
            }
            for probe in lines.keys.sorted() {
                out += SVG.element("path", ["class": "rttline", "d": lines[probe]!.text, "stroke": palette.probeColor(probe)])
            }
            for sample in ok {
                let rtt = sample.rttMs!
                let probe = sample.probe ?? "probe"
                out += SVG.element(
                    "circle", ["cx": x(sample.t), "cy": y(rtt), "r": 2.6, "fill": palette.probeColor(probe)],
                    children: SVG.title("\(Fmt.runTime(sample.t)) s \(probe): \(Fmt.ms(rtt)) ms"))
            }
        } else {
            // Downsampled: per two-pixel column, a min–max bar and the median as a line.
            var columns: [Int: [Double]] = [:]
            for sample in ok { columns[Int((x(sample.t) - TimeAxis.left) / 2), default: []].append(sample.rttMs!) }
            var bars = PathData()
            var median = PathData()
            for column in columns.keys.sorted() {
                let values = columns[column]!.sorted()
                let cx = TimeAxis.left + Double(column) * 2 + 1
                bars.move(cx, y(values.last!))
                bars.vertical(y(values.first!))
                median.moveOrLine(cx, y(TimelineMetrics.RTTStats.quantile(values, 0.5)))
            }
            out += SVG.element("path", ["class": "rttband", "d": bars.text]) + SVG.element("path", ["class": "rttmedian", "d": median.text])
            out += PlotFrame.note("min–max, median", y: plotTop + 51)
        }
        out += failureMarks(samples.filter(\.failed), centerY: top + failBand / 2)
        return out + SVG.close("g") + "\n"
    }

    /// Failed probes: crosses in the band above the RTT plot, one per two-pixel column.
    func failureMarks(_ failed: [TimelineMetrics.Sample], centerY cy: Double) -> String {
        var columns: [Int: (t: UInt64, count: Int, probes: Set<String>)] = [:]
        for sample in failed {
            let column = Int((x(sample.t) - TimeAxis.left) / 2)
            var entry = columns[column] ?? (sample.t, 0, [])
            entry.count += 1
            entry.probes.insert(sample.probe ?? "probe")
            columns[column] = entry
        }
        var out = ""
        for column in columns.keys.sorted() {
            let entry = columns[column]!
            let cx = TimeAxis.left + Double(column) * 2 + 1
            let what = entry.count == 1 ? "\(entry.probes.first!) probe failed" : "\(entry.count) probes failed (\(entry.probes.sorted().joined(separator: ", ")))"
            var cross = PathData()
            cross.move(cx - 3.5, cy - 3.5)
            cross.relative("l7 7m0 -7l-7 7")
            out += SVG.element("path", ["class": "failmark", "d": cross.text], children: SVG.title("\(Fmt.runTime(entry.t)) s: \(what)"))
        }
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

    /// The loss plot between `top` and `top + height`: the rolling loss as a filled step line, 0 to 100 %.
    func loss(_ samples: [TimelineMetrics.Sample], top: Double, height: Double) -> String {
        let bottom = top + height
        var out = SVG.open("g", ["class": "plot loss"])
        out += PlotFrame.labels(title: "Loss (%)", subtitle: "last \(Self.lossWindow) probes", top: top)
        out += PlotFrame.background(top: top, height: height)
        func y(_ loss: Double) -> Double { bottom - loss * height }
        for tick in [0.0, 0.5, 1.0] {
            out += PlotFrame.gridLine(y: y(tick), label: String(Int(tick * 100)))
        }
        let rolling = Self.rollingLoss(samples)
        guard let first = rolling.first else {
            return out + PlotFrame.noData("no probe samples recorded", y: top + 20) + SVG.close("g") + "\n"
        }
        // A step line; with more points than pixels, one point per pixel column (the column's highest loss).
        var points: [(x: Double, loss: Double)] = []
        if rolling.count <= Int(TimeAxis.width) {
            points = rolling.map { (x($0.t), $0.loss) }
        } else {
            var column = -1
            for (t, loss) in rolling {
                let px = x(t)
                let c = Int(px - TimeAxis.left)
                if c == column, let last = points.last {
                    points[points.count - 1].loss = Swift.max(last.loss, loss)
                } else {
                    points.append((px, loss))
                    column = c
                }
            }
        }
        var line = PathData()
        line.move(x(first.t), y(points[0].loss))
        for point in points.dropFirst() {
            line.horizontal(point.x)
            line.vertical(y(point.loss))
        }
        line.horizontal(x(samples.last!.t))
        var area = line
        area.vertical(bottom)
        area.horizontal(x(first.t))
        area.close()
        out += SVG.element("path", ["class": "lossarea", "d": area.text]) + SVG.element("path", ["class": "lossline", "d": line.text])
        return out + SVG.close("g") + "\n"
    }

    // MARK: Trace rate

    /// The trace-rate plot between `top` and `top + height`: per direction, a step line of the trace's
    /// per-second rate for every change of conditions that applied one, on a linear bits-per-second scale.
    func traceRate(_ series: [TraceRateSeries], top: Double, height: Double) -> String {
        let bottom = top + height
        var out = SVG.open("g", ["class": "plot trace"])
        out += PlotFrame.labels(title: "Trace rate", subtitle: "bit/s, per second", top: top)
        for (index, direction) in TraceDirection.allCases.enumerated() where series.contains(where: { $0.direction == direction }) {
            let arrow = direction == .uplink ? "↑" : "↓"
            out += SVG.text(
                ["class": "lanesub", "x": 8, "y": top + 38 + 13 * Double(index), "style": "fill:\(StatePalette.traceColor(direction))"],
                "\(arrow) \(direction.rawValue)")
        }
        out += PlotFrame.background(top: top, height: height)
        let values = series.flatMap { $0.runs.flatMap { $0.points.map(\.bps) } }
        let scale = ValueScale(values: values.isEmpty ? [1] : values, logAllowed: false)
        func y(_ bps: Double) -> Double { bottom - Swift.min(1, Swift.max(0, scale.fraction(bps))) * height }
        for tick in scale.ticks {
            out += PlotFrame.gridLine(y: y(tick), label: Fmt.bitRateTick(tick))
        }
        for line in series {
            for run in line.runs {
                let rates = run.points.map(\.bps)
                let tooltip = "\(line.direction.rawValue) trace from \(Fmt.runTime(run.start)) s to \(Fmt.runTime(run.end)) s: "
                    + "\(Fmt.bitRate(rates.min() ?? 0)) to \(Fmt.bitRate(rates.max() ?? 0)) per second"
                out += SVG.element(
                    "path", ["class": "traceline", "d": stepLine(run, y: y).text, "stroke": StatePalette.traceColor(line.direction)],
                    children: SVG.title(tooltip))
            }
        }
        return out + SVG.close("g") + "\n"
    }

    /// A run's rates as a step line from its start to its end. Points that fall into one pixel column are
    /// drawn as the column's highest and lowest value, so the path stays bounded on long runs.
    func stepLine(_ run: TraceRateSeries.Run, y: (Double) -> Double) -> PathData {
        var path = PathData()
        guard let first = run.points.first else { return path }
        path.move(x(first.t), y(first.bps))
        var column = Int(x(first.t) - TimeAxis.left)
        var low = first.bps
        var high = first.bps
        var last = first.bps
        var collapsed = false
        func flushColumn() {
            guard collapsed else { return }
            path.vertical(y(high))
            path.vertical(y(low))
            path.vertical(y(last))
        }
        for point in run.points.dropFirst() {
            let px = x(point.t)
            let c = Int(px - TimeAxis.left)
            if c == column {
                low = Swift.min(low, point.bps)
                high = Swift.max(high, point.bps)
                last = point.bps
                collapsed = true
                continue
            }
            flushColumn()
            path.horizontal(px)
            path.vertical(y(point.bps))
            column = c
            (low, high, last, collapsed) = (point.bps, point.bps, point.bps, false)
        }
        flushColumn()
        path.horizontal(x(run.end))
        return path
    }
}

/// The swimlanes of the timeline chart: one row per lane with a coloured segment per state, reaction
/// brackets, and the app's line ticks.
extension TimelineChart {
    /// One state of a lane, from the event that set it until the next state (or the end of the run).
    struct Segment {
        var start: UInt64
        var end: UInt64
        var state: String
        var changes = 1
        /// What the segment says: the state, and for conditions the profile behind it and the links it applies to.
        var label: String
        /// For conditions: where the change applies and how it was put on the wire (nil when the event did not say).
        var scope: ConditionScope? = nil
    }

    /// The lane's states as segments, consecutive equal states merged (for conditions: equal states with the
    /// same links, targets, backend and trace).
    func segments(_ lane: TimelineLane) -> [Segment] {
        var result: [Segment] = []
        for event in events where event.lane == lane && TimelineMetrics.isStateEvent(event) {
            guard let state = event.state else { continue }
            var label = state
            var scope: ConditionScope?
            if lane == .conditions {
                if let profile = event.details["profile"]?.string, profile != state { label = "\(state) · \(profile)" }
                let found = ConditionScope(event)
                if !found.isEmpty { scope = found }
                if let links = found.linksText { label += " (\(links))" }
            }
            if lane == .path { label = Self.pathLabel(state, event) }
            // A path that stays satisfied but moves to another interface, or becomes expensive, is a new segment.
            if var last = result.last, last.state == state, last.scope == scope, lane != .path || last.label == label {
                last.label = label
                result[result.count - 1] = last
                continue
            }
            if !result.isEmpty { result[result.count - 1].end = event.t }
            result.append(Segment(start: event.t, end: duration, state: state, label: label, scope: scope))
        }
        return result
    }

    /// What a path segment says: the status, the interfaces in use, and `expensive` when it is
    /// (`satisfied · ww0 · expensive`), so a handover shows as a move to the other link.
    static func pathLabel(_ state: String, _ event: TimelineEvent) -> String {
        var label = state
        let interfaces = (event.details["interfaces"]?.string ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
        if !interfaces.isEmpty { label += " · " + interfaces.joined(separator: ", ") }
        if event.details["expensive"]?.bool == true { label += " · expensive" }
        return label
    }

    /// The states of one address family from the prober's per-family details, as segments.
    func familySegments(_ family: AddressFamily) -> [Segment] {
        FamilyReachability.spans(family, events: events, end: duration).map {
            Segment(start: $0.start, end: $0.end, state: $0.state, label: $0.state)
        }
    }

    /// A drawn segment: a segment as it is, or sub-pixel segments merged into one (`merged` non-empty).
    typealias DrawnSegment = (x0: Double, x1: Double, segment: Segment, merged: [Segment])

    /// Merges runs of segments narrower than `minSegmentWidth` into groups at least that wide, each shown
    /// in the colour of the state that held longest.
    func drawnSegments(_ segments: [Segment]) -> [DrawnSegment] {
        var drawn: [DrawnSegment] = []
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
        return drawn
    }

    /// One lane at `top`: its name in the margin, its segments with tooltips; state names and reaction
    /// brackets go to `overlay`, drawn last.
    func renderLane(_ lane: TimelineLane, title: String, subtitle: String, top: Double, overlay: inout String) -> String {
        let h = Self.laneHeight
        var out = SVG.open("g", ["class": "lane lane-\(lane.rawValue)"])
        out += SVG.text(["class": "lanetitle", "x": 8, "y": top + 13], title)
        out += SVG.text(["class": "lanesub", "x": 8, "y": top + 25], subtitle)
        out += SVG.element("rect", ["class": "laneback", "x": TimeAxis.left, "y": top, "width": TimeAxis.width, "height": h])

        let segments = self.segments(lane)
        let labelBoxes = renderSegments(segments, lane: lane, title: title, top: top, height: h, into: &out, overlay: &overlay)

        overlay += renderReactions(lane, top: top, avoiding: labelBoxes)
        if lane == .app {
            out += renderAppTicks(top: top)
            if segments.isEmpty && !events.contains(where: { $0.lane == .app }) {
                out += PlotFrame.noData("no app observed (run with --observe to see your app here)", y: top + h / 2 + 4)
            }
        } else if segments.isEmpty {
            out += PlotFrame.noData("no \(title.lowercased()) events recorded", y: top + h / 2 + 4)
        }
        return out + SVG.close("g") + "\n"
    }

    /// A thin lane under the reachability lane with the prober's state over one address family.
    func renderFamilyLane(_ family: AddressFamily, top: Double, overlay: inout String) -> String {
        let h = Self.familyLaneHeight
        let title = "reachability \(family.title)"
        var out = SVG.open("g", ["class": "lane lane-reachability-\(family.rawValue)"])
        out += SVG.text(["class": "lanesub", "x": 8, "y": top + 11.5], title)
        out += SVG.element("rect", ["class": "laneback", "x": TimeAxis.left, "y": top, "width": TimeAxis.width, "height": h])
        let segments = familySegments(family)
        _ = renderSegments(segments, lane: .reachability, title: "Reachability \(family.title)", top: top, height: h, into: &out, overlay: &overlay)
        if segments.isEmpty {
            out += PlotFrame.noData("no \(family.title) state reported", y: top + h / 2 + 4)
        }
        return out + SVG.close("g") + "\n"
    }

    /// Draws `segments` (coloured as states of `lane`) into `out` with tooltips, their names into `overlay`,
    /// and returns where the names are, so reaction labels can avoid them.
    func renderSegments(
        _ segments: [Segment], lane: TimelineLane, title: String, top: Double, height h: Double, into out: inout String, overlay: inout String
    ) -> [(Double, Double)] {
        var labelBoxes: [(Double, Double)] = []
        var previousState: String?
        for (x0, x1, segment, merged) in drawnSegments(segments) {
            let width = Swift.max(1, x1 - x0)
            let color = palette.color(lane: lane, state: segment.state)
            defer { previousState = segment.state }
            out += SVG.open("g")
            if merged.isEmpty {
                let length = segment.end - segment.start
                let scope = segment.scope?.summary.map { " — \($0)" } ?? ""
                out += SVG.title(
                    "\(title): \(segment.label) from \(Fmt.runTime(segment.start)) s to \(Fmt.runTime(segment.end)) s (\(Fmt.seconds(Double(length) / 1e9)))\(scope)")
            } else {
                out += SVG.title(
                    "\(title): \(merged.count) states between \(Fmt.runTime(segment.start)) s and \(Fmt.runTime(segment.end)) s, mostly \(segment.label)")
            }
            out += SVG.element("rect", ["x": x0, "y": top, "width": width, "height": h, "fill": color.fill])
            if previousState == segment.state {
                // Two segments of one colour (the path moved to another interface): a seam between them.
                out += SVG.element("rect", ["class": "seam", "x": x0, "y": top, "width": 1.5, "height": h])
            }
            if !merged.isEmpty {
                out += SVG.element("rect", ["x": x0, "y": top, "width": width, "height": h, "fill": "url(#flap)"])
            } else if let label = SVG.fit(segment.label, width: width - 8) {
                let center = x0 + width / 2
                let half = Double(label.count) * SVG.charWidth / 2
                labelBoxes.append((center - half - 3, center + half + 3))
                overlay += SVG.text(["class": "seglabel", "x": center, "y": top + h / 2 + 4, "style": "fill:\(color.text)"], label)
            }
            out += SVG.close("g")
        }
        return labelBoxes
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
            out += SVG.open("g", ["class": "reaction"])
            out += SVG.title("change #\(change.index) (\(change.to)) at \(Fmt.runTime(change.t)) s → \(lane.rawValue) \(state) at \(Fmt.runTime(t)) s: \(Fmt.seconds(delay)) later")
            var bracket = PathData()
            bracket.move(x0, lineY - 3)
            bracket.relative("v3")
            bracket.horizontal(x1)
            bracket.relative("v-5")
            out += SVG.element("path", ["d": bracket.text])
            if fits {
                taken.append(box)
                out += SVG.element("rect", ["x": box.0, "y": lineY - 13, "width": box.1 - box.0, "height": 12, "rx": 2])
                out += SVG.text(["x": center, "y": lineY - 3.5], text)
            }
            out += SVG.close("g")
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
            let tick = SVG.element("rect", ["class": "apptick", "x": pendingX - 1, "y": top, "width": 2, "height": 6])
            out += SVG.element("g", children: SVG.title(title) + tick)
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
}

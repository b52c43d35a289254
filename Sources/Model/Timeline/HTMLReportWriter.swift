/// `timeline.html`: the run as one self-contained page — inline CSS and inline SVG, no script, no external
/// reference of any kind — laid out for a QA engineer who has nothing else: a header with the verdict (and a
/// red box for each step that failed), a line on how to read the chart, a legend, the swimlane chart (with
/// per-family reachability lanes when the prober reported them) and the RTT, loss and trace-rate plots under
/// it, the reaction times per change of conditions (with the links and traffic each applied to), the
/// expectations, per-step numbers, and the event log.
///
/// Every string from the run is HTML-escaped.
public enum HTMLReportWriter {
    /// Rows of the event log at most (the whole log is in `timeline.json` and `events.jsonl`).
    public static let eventLogLimit = 1000

    /// The page of `report`, its metrics computed here.
    public static func render(_ report: RunReport) -> String {
        render(report, metrics: TimelineMetrics(report))
    }

    /// The page of `report` with metrics already computed (as `ReportWriter` shares them).
    public static func render(_ report: RunReport, metrics: TimelineMetrics) -> String {
        let metadata = report.metadata
        let palette = StatePalette(events: report.events)
        let chart = TimelineChart(report: report, metrics: metrics, palette: palette)
        let h = Markup.html
        let passedCount = report.expectations.filter(\.passed).count
        let verdict = report.errors.isEmpty ? (report.passed ? "PASS" : "FAIL") : "ERROR"

        var out = ""
        out.reserveCapacity(256 * 1024)
        out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        out += "<title>\(h("\(verdict) — \(metadata.name) — linkcond timeline"))</title>\n"
        out += "<style>\n\(css)</style>\n</head>\n<body>\n"

        // Header.
        out += "<header>\n<div class=\"headline\"><h1><span class=\"product\">linkcond run</span> \(h(metadata.name))</h1>"
        out += "<span class=\"badge \(report.passed ? "pass" : "fail")\">\(verdict)</span>"
        if report.expectations.isEmpty {
            out += "<span class=\"tally\">no expectations</span>"
        } else {
            out += "<span class=\"tally\">\(passedCount) of \(report.expectations.count) expectations passed</span>"
        }
        out += "</div>\n"
        for error in report.errors { out += errorBox(error) }
        if !metadata.description.isEmpty { out += "<p class=\"description\">\(h(metadata.description))</p>\n" }
        out += "<dl class=\"facts\">"
        var facts: [(String, String)] = [
            ("Sandbox", metadata.sandbox), ("Started", metadata.startedAt), ("Duration", Fmt.duration(metadata.duration)),
            ("Steps", String(metadata.steps.count)), ("Events", String(report.events.count)),
            ("Probes", "\(metrics.run.samples)" + (metrics.run.loss.map { ", \(Fmt.percent($0)) lost" } ?? "")),
        ]
        if let command = metadata.observeCommand { facts.append(("Observed app", command)) }
        for (name, value) in facts { out += "<div><dt>\(name)</dt><dd>\(h(value))</dd></div>" }
        out += "</dl>\n</header>\n"

        // Chart.
        out += "<section>\n<h2>Timeline</h2>\n"
        out += "<p class=\"explain\">Time runs left to right, in seconds since the run started. "
        out += "<b>Conditions</b>: what linkcond put on the wire (a network profile such as LTE or 3G, 100&nbsp;% loss, a link taken down). "
        out += "<b>Path</b>: what the path monitor reported — like Apple’s NWPathMonitor it only watches links, addresses and routes, so loss alone does not change it. "
        out += "<b>Reachability</b>: what the active prober concluded from real HTTP/DNS/TCP probes. "
        out += "<b>App</b>: the states the observed app printed (each tick is one line it printed). "
        out += "A bracket along the bottom of a lane runs from a change of conditions to the lane’s reaction, with the delay written on it. "
        out += "Dashed lines mark the start of each step; numbered diamonds mark expectations (green passed, red failed; numbers refer to the table below). "
        if chart.hasFamilyLanes {
            out += "<b>Reachability IPv4 / IPv6</b>: the prober’s conclusion over each address family. "
        }
        if !chart.traces.isEmpty {
            out += "<b>Trace rate</b>: the rate a trace-driven profile allowed, second by second, looping until the next change of conditions. "
        }
        out += "Hover over anything for exact times.</p>\n"
        out += legend(report: report, palette: palette, traces: chart.traces.map(\.direction))
        out += "<div class=\"chartbox\">\n" + chart.render() + "</div>\n</section>\n"

        // Reaction times.
        out += "<section>\n<h2>Reaction to each change of conditions</h2>\n"
        if metrics.changes.isEmpty {
            out += "<p class=\"muted\">No change of conditions was recorded.</p>\n"
        } else {
            out += "<p class=\"explain\">For each change of conditions: the first state change of each lane after it (and before the next change), "
            out += "or <em>did not react</em> (in green where an expectation says the lane holds its state through that step); then how long until the path was <em>satisfied</em> and reachability <em>online</em> again.</p>\n"
            out += "<table class=\"metrics\">\n<thead><tr><th class=\"num\">#</th><th class=\"num\">At</th><th>Step</th><th>Conditions</th>"
            out += "<th>Path reacted</th><th>Reachability reacted</th><th>App reacted</th><th>Path recovery</th><th>Reachability recovery</th></tr></thead>\n<tbody>\n"
            for change in metrics.changes {
                out += "<tr><td class=\"num\">\(change.index)</td><td class=\"num\">\(Fmt.runTime(change.t))&nbsp;s</td>"
                out += "<td>\(h(change.step ?? "—"))</td><td>"
                if let from = change.from { out += "<span class=\"muted\">\(h(from)) →</span> " }
                out += chip(h(change.to), palette.color(lane: .conditions, state: change.to))
                if let action = change.action, action != change.to { out += "<div class=\"small muted\">\(h(action))</div>" }
                if let scope = ConditionScope(change).summary { out += "<div class=\"small scope\">\(h(scope))</div>" }
                out += "</td>"
                for lane in TimelineMetrics.reactionLanes {
                    guard let reaction = change.reaction(lane) else {
                        out += "<td>—</td>"
                        continue
                    }
                    if let state = reaction.state, let delay = reaction.delay {
                        out += "<td>" + chip(h(state), palette.color(lane: lane, state: state)) + " after <b>\(Fmt.seconds(delay))</b></td>"
                    } else if lane == .app && !report.events.contains(where: { $0.lane == .app }) {
                        out += "<td class=\"muted\">no app observed</td>"
                    } else if let intended = report.intendedStillness(of: lane, during: change.step) {
                        out += "<td class=\"intended\">did not react <span class=\"small\">(as expected: \(h(intended.name)))</span></td>"
                    } else {
                        let before = reaction.before.map { " <span class=\"small\">(stayed \(h($0)))</span>" } ?? ""
                        out += "<td class=\"noreact\">did not react\(before)</td>"
                    }
                }
                for lane in [TimelineLane.path, .reachability] {
                    guard let recovery = change.recovery(lane) else {
                        out += "<td>—</td>"
                        continue
                    }
                    switch recovery.outcome {
                    case .recovered: out += "<td>\(h(recovery.goodState)) after <b>\(Fmt.seconds(recovery.delay ?? 0))</b></td>"
                    case .notRecovered: out += "<td class=\"bad\">\(h(recovery.text))</td>"
                    case .stayedGood, .noData: out += "<td class=\"muted\">\(h(recovery.text))</td>"
                    }
                }
                out += "</tr>\n"
            }
            out += "</tbody>\n</table>\n"
        }
        out += "<p class=\"flaps\"><b>State changes (flaps) over the run:</b> "
        out += TimelineMetrics.flapLanes.map { "\($0.rawValue) <b>\(metrics.flaps($0))</b>" }.joined(separator: " · ")
        out += "</p>\n</section>\n"

        // Expectations.
        out += "<section>\n<h2>Expectations</h2>\n"
        if report.expectations.isEmpty {
            out += "<p class=\"muted\">This run had no expectations.</p>\n"
        } else {
            out += "<table class=\"expectations\">\n<thead><tr><th class=\"num\">#</th><th>Expectation</th><th>Rule</th><th>Result</th><th>Evidence</th><th class=\"num\">Measured / limit</th></tr></thead>\n<tbody>\n"
            for (index, expectation) in report.expectations.enumerated() {
                out += "<tr class=\"\(expectation.passed ? "passrow" : "failrow")\"><td class=\"num\">\(index + 1)</td>"
                out += "<td><b>\(h(expectation.name))</b><div class=\"small muted\">\(h(expectation.lane.rawValue))</div></td>"
                out += "<td>\(h(expectation.rule))</td>"
                out += "<td><span class=\"badge small \(expectation.passed ? "pass" : "fail")\">\(expectation.passed ? "PASS" : "FAIL")</span></td>"
                out += "<td>\(h(expectation.evidence))</td><td class=\"num\">"
                out += expectation.measured.map { Fmt.seconds($0) } ?? (expectation.limit == nil ? "—" : "never")
                if let limit = expectation.limit { out += " / \(Fmt.seconds(limit))" }
                out += "</td></tr>\n"
            }
            out += "</tbody>\n</table>\n"
        }
        out += "</section>\n"

        // Per step.
        out += "<section>\n<h2>Steps</h2>\n"
        out += "<table class=\"steps\">\n<thead><tr><th rowspan=\"2\">#</th><th rowspan=\"2\">Step</th><th rowspan=\"2\">Action</th>"
        out += "<th rowspan=\"2\" class=\"num\">Start</th><th rowspan=\"2\" class=\"num\">Length</th><th rowspan=\"2\" class=\"num\">Probes</th>"
        out += "<th rowspan=\"2\" class=\"num\">Loss</th><th rowspan=\"2\" class=\"num\">RTT min / median / p95</th>"
        out += "<th colspan=\"4\" class=\"group\">State changes (flaps)</th></tr>\n<tr>"
        out += TimelineMetrics.flapLanes.map { "<th class=\"num\">\($0.rawValue)</th>" }.joined() + "</tr></thead>\n<tbody>\n"
        let rows = metrics.steps.enumerated().map { (String($0.offset + 1), metadata.steps[$0.offset].action, $0.element) }
            + [("", "", metrics.run)]
        for (number, action, interval) in rows {
            let whole = number.isEmpty
            out += "<tr\(whole ? " class=\"total\"" : "")><td class=\"num\">\(number)</td><td>\(whole ? "<b>whole run</b>" : h(interval.name))</td><td>\(h(action))</td>"
            let length = interval.end >= interval.start ? interval.end - interval.start : 0
            out += "<td class=\"num\">\(Fmt.runTime(interval.start))&nbsp;s</td><td class=\"num\">\(Fmt.runTime(length))&nbsp;s</td>"
            out += "<td class=\"num\">\(interval.samples)</td><td class=\"num\">\(interval.loss.map(Fmt.percent) ?? "—")</td>"
            if let rtt = interval.rtt {
                out += "<td class=\"num\">\(Fmt.ms(rtt.min)) / \(Fmt.ms(rtt.median)) / \(Fmt.ms(rtt.p95))&nbsp;ms</td>"
            } else {
                out += "<td class=\"num\">—</td>"
            }
            out += TimelineMetrics.flapLanes.map { "<td class=\"num\">\(interval.flaps($0))</td>" }.joined() + "</tr>\n"
        }
        out += "</tbody>\n</table>\n</section>\n"

        // Event log.
        let logged = chart.events.filter { $0.kind != TimelineKind.sample }
        out += "<section>\n<details>\n<summary>Event log: \(logged.count) events"
        if logged.count > eventLogLimit { out += " (first \(eventLogLimit) shown)" }
        out += ", probe samples left out — everything is in timeline.json and events.jsonl</summary>\n"
        out += "<table class=\"log\">\n<thead><tr><th>Time</th><th>Lane</th><th>Kind</th><th>State</th><th>What happened</th></tr></thead>\n<tbody>\n"
        for event in logged.prefix(eventLogLimit) {
            out += "<tr><td class=\"num\">\(Fmt.runTime(event.t))</td><td>\(event.lane.rawValue)</td><td>\(h(event.kind))</td>"
            out += "<td>\(h(event.state ?? ""))</td><td>\(h(event.summary))"
            if event.lane == .conditions, event.kind == TimelineKind.conditionsChanged, let scope = ConditionScope(event).summary {
                out += "<div class=\"small scope\">\(h(scope))</div>"
            }
            out += "</td></tr>\n"
        }
        out += "</tbody>\n</table>\n</details>\n</section>\n"
        out += "<footer>Written by linkcond from \(report.events.count) events. "
        out += "Next to this file: timeline.json (all data), junit.xml (for CI), summary.md, events.jsonl (raw events).</footer>\n"
        out += "</body>\n</html>\n"
        return out
    }

    static func chip(_ escapedText: String, _ color: StatePalette.Color) -> String {
        "<span class=\"chip\" style=\"background:\(color.fill);color:\(color.text)\">\(escapedText)</span>"
    }

    static func swatch(_ color: StatePalette.Color, hatched: Bool = false) -> String {
        "<i class=\"swatch\(hatched ? " hatched" : "")\" style=\"background-color:\(color.fill)\"></i>"
    }

    /// A red box for something that stopped the run: what failed, when, the error in the failing layer's words,
    /// and what to do about it.
    static func errorBox(_ error: RunError) -> String {
        let h = Markup.html
        let what = error.step.map { "Step \u{2018}\(h($0))\u{2019} failed" } ?? "The run failed"
        var out = "<div class=\"errorbox\" role=\"alert\">\n<p class=\"errorhead\">\(what) at \(Fmt.runTime(error.t)) s</p>\n<dl>"
        if let step = error.step { out += "<dt>Step</dt><dd>\(h(step))</dd>" }
        out += "<dt>At</dt><dd>\(Fmt.runTime(error.t)) s into the run</dd>"
        out += "<dt>Error</dt><dd class=\"message\">\(h(error.message))</dd>"
        if let hint = error.hint { out += "<dt>What to do</dt><dd>\(h(hint))</dd>" }
        out += "</dl>\n</div>\n"
        return out
    }

    /// The key to the chart's colours and marks; `traces` are the directions with a trace-rate line.
    static func legend(report: RunReport, palette: StatePalette, traces: [TraceDirection] = []) -> String {
        var out = "<div class=\"legend\">\n"
        out += "<div><span class=\"lg\">Path / reachability / app</span>"
        out += "\(swatch(StatePalette.green)) satisfied, online "
        out += "\(swatch(StatePalette.red)) unsatisfied, offline "
        out += "\(swatch(StatePalette.amber)) requiresConnection, portal, limited "
        out += "\(swatch(StatePalette.grey)) unknown "
        out += "\(swatch(StatePalette.grey, hatched: true)) many changes too close to draw (hover)</div>\n"
        if !palette.conditions.isEmpty {
            out += "<div><span class=\"lg\">Conditions</span>"
            for state in palette.conditions {
                out += "\(swatch(palette.color(lane: .conditions, state: state))) \(Markup.html(state)) "
            }
            out += "</div>\n"
        }
        if !palette.appStates.isEmpty {
            out += "<div><span class=\"lg\">App states</span>"
            for state in palette.appStates.prefix(12) {
                out += "\(swatch(palette.color(lane: .app, state: state))) \(Markup.html(state)) "
            }
            out += "</div>\n"
        }
        out += "<div><span class=\"lg\">Plots</span>"
        let probes = palette.probes.isEmpty ? ["http"] : palette.probes
        for probe in probes {
            out += "<i class=\"dot\" style=\"background:\(palette.probeColor(probe))\"></i> \(Markup.html(probe)) probe RTT "
        }
        out += "<span class=\"cross\">✕</span> failed probe "
        out += "<i class=\"swatch\" style=\"background:#ffa8a8\"></i> loss over the last \(TimeSeriesPlots.lossWindow) probes "
        for direction in traces {
            out += "<i class=\"line\" style=\"background:\(StatePalette.traceColor(direction))\"></i> \(direction.rawValue) trace rate "
        }
        out += "<i class=\"dash\"></i> step start <i class=\"bracket\"></i> reaction time</div>\n"
        out += "</div>\n"
        return out
    }
}

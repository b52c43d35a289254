/// `summary.md`: the run in a page of Markdown — verdict (and a caution box for each step that failed), steps,
/// the measured reaction times, where each change of conditions applied, periods online over one address
/// family only, expectations, probe statistics and flap counts. Meant for a CI job summary or a pull-request
/// comment. Sections about scoped conditions and address families appear only when the run recorded them.
///
/// Every string from the run is escaped: HTML-significant characters become entities and `|` cannot split
/// a table cell.
public enum MarkdownWriter {
    /// The summary of `report`, its metrics computed here.
    public static func render(_ report: RunReport) -> String {
        render(report, metrics: TimelineMetrics(report))
    }

    /// The summary of `report` with metrics already computed.
    public static func render(_ report: RunReport, metrics: TimelineMetrics) -> String {
        let metadata = report.metadata
        let cell = Markup.markdownCell
        var out = "# linkcond run: \(Markup.markdownText(metadata.name))\n\n"

        let passed = report.expectations.filter(\.passed).count
        let total = report.expectations.count
        if !report.errors.isEmpty {
            let first = report.errors[0]
            out += "**Verdict: ERROR** — the run stopped: \(first.step.map { "step '\(Markup.markdownText($0))' failed" } ?? "it failed outside a step")"
            out += report.errors.count > 1 ? " (\(report.errors.count) errors).\n\n" : ".\n\n"
            for error in report.errors { out += errorBox(error) }
        } else if total == 0 {
            out += "**Verdict: PASS** (no expectations)\n\n"
        } else {
            out += "**Verdict: \(report.passed ? "PASS" : "FAIL")** — \(passed) of \(total) expectations passed.\n\n"
        }
        if !metadata.description.isEmpty {
            out += Markup.markdownText(metadata.description) + "\n\n"
        }
        out += "| | |\n|---|---|\n"
        out += "| Sandbox | \(cell(metadata.sandbox)) |\n"
        out += "| Started | \(cell(metadata.startedAt)) |\n"
        out += "| Duration | \(Fmt.duration(metadata.duration)) |\n"
        if let command = metadata.observeCommand { out += "| Observed app | \(cell(command)) |\n" }
        out += "| Events | \(report.events.count) |\n\n"

        out += "## Steps\n\n"
        if metadata.steps.isEmpty {
            out += "No steps.\n\n"
        } else {
            out += "| # | Step | Action | Start (s) | End (s) | Length (s) |\n|--:|---|---|--:|--:|--:|\n"
            for (index, step) in metadata.steps.enumerated() {
                let length = step.end >= step.start ? step.end - step.start : 0
                out += "| \(index + 1) | \(cell(step.name)) | \(cell(step.action)) | \(Fmt.runTime(step.start)) | \(Fmt.runTime(step.end)) | \(Fmt.runTime(length)) |\n"
            }
            out += "\n"
        }

        out += "## Reaction times\n\n"
        if metrics.changes.isEmpty {
            out += "No change of conditions was recorded.\n\n"
        } else {
            out += "For each change of conditions: the first state change of each lane before the next change of conditions "
            out += "(or \"did not react\"), and how long until path and reachability were back to satisfied / online.\n\n"
            out += "| # | At (s) | Step | Conditions | Path monitor | Reachability | App | Path recovery | Reachability recovery |\n"
            out += "|--:|--:|---|---|---|---|---|---|---|\n"
            for change in metrics.changes {
                let conditions = (change.from.map { cell($0) + " → " } ?? "") + cell(change.to)
                let reactions = TimelineMetrics.reactionLanes.map { lane in
                    guard let reaction = change.reaction(lane) else { return "—" }
                    if !reaction.reacted, let intended = report.intendedStillness(of: lane, during: change.step) {
                        return cell("did not react (as expected: \(intended.name))")
                    }
                    return cell(reaction.text)
                }
                let recoveries = [TimelineLane.path, .reachability].map { lane in cell(change.recovery(lane)?.text ?? "—") }
                out += "| \(change.index) | \(Fmt.runTime(change.t)) | \(cell(change.step ?? "—")) | \(conditions) | "
                out += (reactions + recoveries).joined(separator: " | ") + " |\n"
            }
            out += "\n"
        }

        out += conditionsSection(metrics)
        out += familySection(metrics)
        out += "## Expectations\n\n"
        if report.expectations.isEmpty {
            out += "No expectations.\n\n"
        } else {
            out += "| Expectation | Rule | Result | Evidence |\n|---|---|---|---|\n"
            for expectation in report.expectations {
                out += "| \(cell(expectation.name)) | \(cell(expectation.rule)) | \(expectation.passed ? "PASS" : "**FAIL**") | \(cell(expectation.evidence)) |\n"
            }
            out += "\n"
        }

        out += "## Probes per step\n\n"
        if metrics.run.samples == 0 {
            out += "No probe samples.\n\n"
        } else {
            out += "| Step | Probes | Failed | Loss | RTT min (ms) | RTT median (ms) | RTT p95 (ms) |\n|---|--:|--:|--:|--:|--:|--:|\n"
            let rows = metrics.steps.map { (cell($0.name), $0) } + [("**whole run**", metrics.run)]
            for (name, interval) in rows {
                let loss = interval.loss.map(Fmt.percent) ?? "—"
                let rtt = interval.rtt
                out += "| \(name) | \(interval.samples) | \(interval.failures) | \(loss) | "
                out += "\(rtt.map { Fmt.ms($0.min) } ?? "—") | \(rtt.map { Fmt.ms($0.median) } ?? "—") | \(rtt.map { Fmt.ms($0.p95) } ?? "—") |\n"
            }
            out += "\n"
        }

        out += "## Flaps\n\n"
        out += "State changes over the run: "
        out += TimelineMetrics.flapLanes.map { "\($0.rawValue) \(metrics.flaps($0))" }.joined(separator: " · ") + ".\n"
        return out
    }

    /// A GitHub "caution" alert (a red box where it is rendered, a quote elsewhere) for something that stopped
    /// the run: what failed, when, the error and the hint. Line breaks in the texts are folded, so nothing
    /// can leave the quote.
    static func errorBox(_ error: RunError) -> String {
        let text = Markup.markdownText
        let what = error.step.map { "Step '\(text($0))' failed" } ?? "The run failed"
        var out = "> [!CAUTION]\n> **\(what) at \(Fmt.runTime(error.t)) s**\n>\n> **Error:** \(text(error.message))\n"
        if let hint = error.hint { out += ">\n> **What to do:** \(text(hint))\n" }
        return out + "\n"
    }

    /// Where each change of conditions applied (links, targeted traffic), its backend and trace means; empty
    /// when no change said any of it.
    static func conditionsSection(_ metrics: TimelineMetrics) -> String {
        let scopes = metrics.changes.map { ConditionScope($0) }
        guard scopes.contains(where: { !$0.isEmpty }) else { return "" }
        let cell = Markup.markdownCell
        var out = "## Conditions applied\n\n"
        out += "Where each change of conditions applied: the client links (every link when none is named) and the traffic it targeted "
        out += "(all traffic when none is named).\n\n"
        out += "| # | At (s) | Conditions | Links | Traffic | Backend | Trace mean up | Trace mean down |\n|--:|--:|---|---|---|---|--:|--:|\n"
        for (change, scope) in zip(metrics.changes, scopes) {
            out += "| \(change.index) | \(Fmt.runTime(change.t)) | \(cell(change.to)) | \(cell(scope.linksText ?? "all")) | \(cell(scope.targets ?? "all")) | "
            out += "\(cell(scope.backend ?? "—")) | \(scope.uplinkMeanBps.map(Fmt.bitRate) ?? "—") | \(scope.downlinkMeanBps.map(Fmt.bitRate) ?? "—") |\n"
        }
        return out + "\n"
    }

    /// The periods the prober was online over one address family only; empty when it reported no families.
    static func familySection(_ metrics: TimelineMetrics) -> String {
        guard let periods = metrics.singleFamily else { return "" }
        var out = "## Reachability per address family\n\n"
        if periods.isEmpty {
            return out + "Never online over one address family only.\n\n"
        }
        out += "Online over one address family only:\n\n"
        for period in periods {
            let length = Double(period.end - period.start) / 1e9
            out += "- \(Markup.markdownText(period.text)) from \(Fmt.runTime(period.start)) s to \(Fmt.runTime(period.end)) s (\(Fmt.seconds(length)))\n"
        }
        return out + "\n"
    }
}

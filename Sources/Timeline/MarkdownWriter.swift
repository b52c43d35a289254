/// `summary.md`: the run in a page of Markdown — verdict, steps, the measured reaction times, expectations,
/// probe statistics and flap counts. Meant for a CI job summary or a pull-request comment.
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
            out += "**Verdict: ERROR** — the run stopped: \(Markup.markdownText(report.errors[0].message))\n\n"
            for error in report.errors {
                out += "- \(error.step.map { "Step '\(Markup.markdownText($0))'" } ?? "Run") at \(Fmt.runTime(error.t)) s: \(Markup.markdownText(error.message))"
                if let hint = error.hint { out += " — \(Markup.markdownText(hint))" }
                out += "\n"
            }
            out += "\n"
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
                let reactions = TimelineMetrics.reactionLanes.map { lane in cell(change.reaction(lane)?.text ?? "—") }
                let recoveries = [TimelineLane.path, .reachability].map { lane in cell(change.recovery(lane)?.text ?? "—") }
                out += "| \(change.index) | \(Fmt.runTime(change.t)) | \(cell(change.step ?? "—")) | \(conditions) | "
                out += (reactions + recoveries).joined(separator: " | ") + " |\n"
            }
            out += "\n"
        }

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
}

/// `junit.xml`: one `<testsuite>` named after the scenario with one `<testcase>` per expectation; a failed
/// expectation carries a `<failure>` whose message is the evidence. A run without expectations still gets
/// a suite (with zero tests), so a CI sees that the run happened.
///
/// Something that stopped the run (a failed step) is a test case of its own with an `<error>`.
///
/// `time` of a test case is the measured time of a "within" rule (seconds), 0 otherwise; `time` of the
/// suite is the run's duration.
public enum JUnitWriter {
    /// The JUnit XML of `report`.
    public static func render(_ report: RunReport) -> String {
        let metadata = report.metadata
        let tests = report.expectations.count + report.errors.count
        let failures = report.expectations.filter { !$0.passed }.count
        let errors = report.errors.count
        let duration = Fmt.runTime(metadata.duration)
        let suite = metadata.name.isEmpty ? "linkcond" : metadata.name
        let classname = "linkcond." + suite

        var out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        out += "<testsuites name=\"linkcond\" tests=\"\(tests)\" failures=\"\(failures)\" errors=\"\(errors)\" time=\"\(duration)\">\n"
        out += "  <testsuite name=\"\(Markup.attribute(suite))\" tests=\"\(tests)\" failures=\"\(failures)\" errors=\"\(errors)\" skipped=\"0\""
        out += " time=\"\(duration)\" timestamp=\"\(Markup.attribute(metadata.startedAt))\" hostname=\"\(Markup.attribute(metadata.sandbox))\">\n"
        out += "    <properties>\n"
        var properties: [(String, String)] = [
            ("description", metadata.description), ("sandbox", metadata.sandbox), ("startedAt", metadata.startedAt),
        ]
        if let command = metadata.observeCommand { properties.append(("observe", command)) }
        for (name, value) in properties {
            out += "      <property name=\"\(Markup.attribute(name))\" value=\"\(Markup.attribute(value))\"/>\n"
        }
        out += "    </properties>\n"
        for expectation in report.expectations {
            let time = Fmt.fixed(Swift.max(0, expectation.measured ?? 0), 3)
            out += "    <testcase name=\"\(Markup.attribute(expectation.name))\" classname=\"\(Markup.attribute(classname))\" time=\"\(time)\">\n"
            var detail = "rule: \(expectation.rule)\nlane: \(expectation.lane.rawValue)\nevidence: \(expectation.evidence)"
            if let measured = expectation.measured { detail += "\nmeasured: \(Fmt.seconds(measured))" }
            if let limit = expectation.limit { detail += "\nlimit: \(Fmt.seconds(limit))" }
            if expectation.passed {
                out += "      <system-out>\(Markup.text(detail))</system-out>\n"
            } else {
                out += "      <failure message=\"\(Markup.attribute(expectation.evidence))\" type=\"expectation\">\(Markup.text(detail))</failure>\n"
            }
            out += "    </testcase>\n"
        }
        for error in report.errors {
            let name = error.step.map { "step '\($0)'" } ?? "run"
            var detail = "at: \(Fmt.runTime(error.t)) s\nerror: \(error.message)"
            if let hint = error.hint { detail += "\nhint: \(hint)" }
            out += "    <testcase name=\"\(Markup.attribute(name))\" classname=\"\(Markup.attribute(classname))\" time=\"0.000\">\n"
            out += "      <error message=\"\(Markup.attribute(error.message))\" type=\"run\">\(Markup.text(detail))</error>\n"
            out += "    </testcase>\n"
        }
        let steps = metadata.steps.map { "\(Fmt.runTime($0.start)) s  \($0.name): \($0.action)" }.joined(separator: "\n")
        if !steps.isEmpty {
            out += "    <system-out>\(Markup.text("steps:\n" + steps))</system-out>\n"
        }
        out += "  </testsuite>\n"
        out += "</testsuites>\n"
        return out
    }
}

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

    /// The line colour of a trace's rate in `direction`.
    static func traceColor(_ direction: TraceDirection) -> String {
        direction == .uplink ? "#e8590c" : "#1971c2"
    }

    /// The colour of a probe type's RTT dots and lines.
    func probeColor(_ probe: String) -> String {
        switch probe {
        case "http": "#1c7ed6"
        case "dns": "#f76707"
        case "tcp": "#7950f2"
        default: ["#0ca678", "#d6336c", "#495057"][(probes.firstIndex(of: probe) ?? 0) % 3]
        }
    }
}

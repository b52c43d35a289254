import JSONDocument
import Profiles

/// Reads scenario files (JSON) into ``Scenario`` values, as strictly as ``ProfileParser`` reads profiles:
/// every problem is refused before the run starts, with the file, the JSON path, the line and column, and
/// what was expected. The format is described in `scenarios/FORMAT.md`:
///
/// ```json
/// {
///   "name": "tunnel",
///   "description": "...",
///   "links": ["wifi"],
///   "probe": {"interval": "1s", "timeout": "4s", "failureThreshold": 2, "backoffMax": "1s"},
///   "steps": [
///     {"name": "lte", "apply": "lte", "hold": "10s"},
///     {"name": "tunnel", "apply": "100-loss", "hold": "25s"}
///   ],
///   "expectations": [
///     {"name": "prober notices", "lane": "reachability", "reaches": "offline", "within": "12s", "after": "tunnel"},
///     {"name": "path unaffected", "lane": "path", "holds": "satisfied", "during": "tunnel"}
///   ]
/// }
/// ```
///
/// A step has a `name`, a `hold` and exactly one action: `"apply": "PROFILE"`, `"clear": true`,
/// `"link": "down"|"up"` with `"side": "client"|"router"` and an optional `"interface": "wifi"|"cellular"`,
/// `"address": "remove"|"restore"` and `"defaultRoute": "remove"|"restore"` (each with an optional
/// `"interface"`), `"portal": "on"|"off"`, `"handover": "cellular"|"wifi"`, `"wait": true`.
///
/// Refused: invalid JSON, duplicate keys, unknown keys (with a suggestion), wrong types, bad times, an
/// empty step list, a step without an action or with two, `side`/`interface` beside an action they do not
/// belong to, `"clear": false`, a `wait` of 0, duplicate step or expectation names, expectations naming a
/// step that does not exist or a state their lane never has, a `within` of 0 or longer than the rest of the
/// run, a `grace` not shorter than its step, steps needing the cellular link when `"links"` (or the older `"cellular": true`) does not give it, a `links` list
/// without wifi or with a link twice,
/// and profiles the catalog does not have (or that are themselves refused).
///
/// Reading (``ScenarioReader``: keys, types, words and times) comes first, then every name, range,
/// reference and combination rule (``ScenarioValidator``). ``jsonText(of:)`` writes a scenario back.
public enum ScenarioParser {
    /// The most a scenario file may hold.
    public static let maximumSize = 1 << 20

    /// Parses the UTF-8 JSON in `data`; `source` names it in errors, becomes ``Scenario/source``, and is the
    /// folder profile paths are resolved against. `profileExists` says whether a profile reference (a catalog
    /// name, or a resolved path) can be applied.
    public static func parse(
        data: [UInt8], source: String, profileExists: (String) -> Bool
    ) throws(ScenarioError) -> Scenario {
        try parse(data: data, source: source, lookup: { reference in
            profileExists(reference) ? .found : .missing(candidates: [])
        })
    }

    /// Parses `text`; see ``parse(data:source:profileExists:)``.
    public static func parse(
        text: String, source: String, profileExists: (String) -> Bool
    ) throws(ScenarioError) -> Scenario {
        try parse(data: Array(text.utf8), source: source, profileExists: profileExists)
    }

    /// Parses the UTF-8 JSON in `data`, checking every applied profile against `catalog`: a name must be in
    /// it, a path must lead to a profile file, and the profile must itself be valid.
    public static func parse(data: [UInt8], source: String, catalog: ProfileCatalog) throws(ScenarioError) -> Scenario {
        var names: [String]?
        return try parse(data: data, source: source, lookup: { reference in
            lookUp(reference, in: catalog, names: &names)
        })
    }

    /// Whether the catalog (or the file system, for a path) has the profile `reference`, and whether it is
    /// valid; `names` caches the catalog's names (listed on first need).
    static func lookUp(_ reference: String, in catalog: ProfileCatalog, names: inout [String]?) -> ProfileLookup {
        if ProfileCatalog.isPath(reference) {
            do {
                _ = try ProfileParser.load(path: reference)
                return .found
            } catch {
                return error.kind == .unreadable ? .unreadable(error.problem) : .invalid(error)
            }
        }
        if names == nil {
            do { names = try catalog.names() } catch { return .unreadable(error.description) }
        }
        guard let names, names.contains(reference) else { return .missing(candidates: names ?? []) }
        do {
            _ = try catalog.profile(named: reference)
            return .found
        } catch {
            return .invalid(error)
        }
    }

    /// Parses `text`; see ``parse(data:source:catalog:)``.
    public static func parse(text: String, source: String, catalog: ProfileCatalog) throws(ScenarioError) -> Scenario {
        try parse(data: Array(text.utf8), source: source, catalog: catalog)
    }

    /// Reads and parses the file at `path`, checking profiles against `catalog`.
    public static func load(path: String, catalog: ProfileCatalog) throws(ScenarioError) -> Scenario {
        try parse(data: try read(path), source: path, catalog: catalog)
    }

    /// Reads and parses the file at `path`; see ``parse(data:source:profileExists:)``.
    public static func load(path: String, profileExists: (String) -> Bool) throws(ScenarioError) -> Scenario {
        try parse(data: try read(path), source: path, profileExists: profileExists)
    }

    /// `reference` as a step stores it: a catalog name as is; a relative path (see ``ProfileCatalog/isPath(_:)``)
    /// joined to the folder of `source` (`scenarios/x.json` + `mine.json` → `scenarios/mine.json`).
    public static func resolve(profile reference: String, source: String) -> String {
        guard ProfileCatalog.isPath(reference), !reference.hasPrefix("/"),
            let slash = source.lastIndex(of: "/")
        else { return reference }
        var relative = Substring(reference)
        while relative.hasPrefix("./") { relative = relative.dropFirst(2) }
        let folder = source[..<slash]
        return (folder.isEmpty ? "" : String(folder)) + "/" + relative
    }

    /// Checks a scenario made in code by the same rules as a file (errors name the JSON path the offending
    /// field would have, without a position); `profileExists` says whether a step's profile can be applied.
    public static func validate(_ scenario: Scenario, profileExists: (String) -> Bool) throws(ScenarioError) {
        let file = scenario.source ?? "scenario \(JSONWriter.quoted(scenario.name))"
        try withoutActuallyEscaping(profileExists) { profileExists throws(ScenarioError) in
            let validator = ScenarioValidator(
                locator: DocumentLocator(file: file, document: nil),
                lookup: { profileExists($0) ? .found : .missing(candidates: []) })
            try validator.check(scenario)
        }
    }

    /// The scenario as JSON text, each time in its shortest form; reading the text as the file
    /// ``Scenario/source`` gives the scenario back (profile paths are written relative to that file's folder).
    public static func jsonText(of scenario: Scenario) -> String {
        JSONWriter.text(of: ScenarioWriter.json(scenario)) + "\n"
    }

    // MARK: Internals

    /// What a profile check found.
    enum ProfileLookup {
        case found
        /// No such profile; `candidates` are the catalog's names, for suggestions.
        case missing(candidates: [String])
        /// A profile file (or the catalog) that cannot be read.
        case unreadable(String)
        /// A profile that exists but is refused.
        case invalid(ProfileError)
    }

    static func parse(
        data: [UInt8], source: String, lookup: (String) -> ProfileLookup
    ) throws(ScenarioError) -> Scenario {
        let document = try JSONParser.document(data, file: source, maximumDepth: 16)
        var scenario = try ScenarioReader(root: document.root, file: source).scenario()
        scenario.source = source
        try withoutActuallyEscaping(lookup) { lookup throws(ScenarioError) in
            try ScenarioValidator(locator: DocumentLocator(file: source, document: document), lookup: lookup)
                .check(scenario)
        }
        return scenario
    }

    static func read(_ path: String) throws(ScenarioError) -> [UInt8] {
        try DocumentFile.read(path, maximumSize: maximumSize, expected: "a scenario file")
    }
}

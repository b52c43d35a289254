import Glibc
import JSONDocument
import Profiles

/// The shipped scenarios: the `scenarios/` folder beside a profile catalog's folder (the source tree, an
/// installed share folder), or the same files compiled into the library (``builtIn``) when there is none.
///
/// ```swift
/// let profiles = try ProfileCatalog.locate()
/// let tunnel = try ScenarioCatalog.beside(profiles).scenario("tunnel", profiles: profiles)
/// ```
public struct ScenarioCatalog: Sendable {
    /// The folder of scenario files; nil for the scenarios built into the library.
    public let directory: String?

    /// The scenarios in `directory`.
    public init(directory: String) {
        self.directory = directory
    }

    private init(builtIn: Void) {
        directory = nil
    }

    /// The shipped scenarios as compiled into the library (`scripts/generate-catalogs` writes them).
    public static let builtIn = ScenarioCatalog(builtIn: ())

    /// Where the catalog is, for people: its folder, or `built into linkcond`.
    public var origin: String { directory ?? "built into linkcond" }

    /// The scenarios that go with `profiles`: the `scenarios/` folder beside its folder when that holds
    /// scenario files, else the built-in ones.
    public static func beside(_ profiles: ProfileCatalog) -> ScenarioCatalog {
        guard let folder = profiles.directory, let slash = folder.lastIndex(of: "/") else { return .builtIn }
        let candidate = String(folder[..<slash]) + "/scenarios"
        let catalog = ScenarioCatalog(directory: candidate)
        return catalog.names().isEmpty ? .builtIn : catalog
    }

    /// The scenarios' names (their files without `.json`), sorted.
    public func names() -> [String] {
        guard let directory else { return Self.builtInTexts.map(\.name).sorted() }
        guard let handle = opendir(directory) else { return [] }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: entry.pointee.d_name)) { String(cString: $0) }
            }
            if name.hasSuffix(".json") && !name.hasPrefix(".") { names.append(String(name.dropLast(5))) }
        }
        return names.sorted()
    }

    /// Whether `reference` names a scenario file rather than one of the catalog: it contains `/`, or a file of
    /// that name exists.
    public static func isPath(_ reference: String) -> Bool {
        reference.contains("/") || access(reference, F_OK) == 0
    }

    /// The scenario `reference` names — a file (see ``isPath(_:)``), or a scenario of the catalog (`tunnel`,
    /// `tunnel.json`) — read and checked against `profiles`. A name the catalog lacks is a `.notFound` error
    /// with the nearest name suggested.
    public func scenario(_ reference: String, profiles: ProfileCatalog) throws(ScenarioError) -> Scenario {
        if Self.isPath(reference) { return try ScenarioParser.load(path: reference, catalog: profiles) }
        let name = reference.hasSuffix(".json") ? String(reference.dropLast(5)) : reference
        let names = names()
        guard names.contains(name) else {
            throw ScenarioError(
                .notFound, file: reference,
                problem: "no scenario file of that name, and no shipped scenario named \(JSONWriter.quoted(name))"
                    + Suggestions.didYouMean(name, in: names),
                expected: "a path to a scenario file, or one of " + names.joined(separator: ", ") + " (see 'linkcond scenarios')")
        }
        guard let directory else {
            let text = Self.builtInTexts.first { $0.name == name }!.text + "\n"
            return try ScenarioParser.parse(text: text, source: "scenarios/\(name).json (built into linkcond)", catalog: profiles)
        }
        return try ScenarioParser.load(path: "\(directory)/\(name).json", catalog: profiles)
    }

    /// Every scenario of the catalog, read and checked against `profiles`, sorted by name.
    public func all(profiles: ProfileCatalog) throws(ScenarioError) -> [Scenario] {
        var scenarios: [Scenario] = []
        for name in names() { scenarios.append(try scenario(name, profiles: profiles)) }
        return scenarios
    }
}

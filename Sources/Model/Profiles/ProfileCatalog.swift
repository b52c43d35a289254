import Glibc
import JSONDocument

/// The catalog of named profiles: a directory of `NAME.json` files (`profiles/` in the source tree), or the
/// same files compiled into the library (``builtIn``), which a program linking it always has.
///
/// ```swift
/// let catalog = try ProfileCatalog.locate()
/// let edge = try catalog.profile(named: "edge")             // profiles/edge.json
/// let mine = try catalog.profile(named: "./slow-dns.json")  // a path works too
/// ```
public struct ProfileCatalog: Sendable {
    /// The directory holding the profiles; nil for the catalog built into the library.
    public let directory: String?

    /// The catalog in `directory`.
    public init(directory: String) {
        self.directory = directory
    }

    private init(builtIn: Void) {
        directory = nil
    }

    /// The shipped catalog as compiled into the library (`scripts/generate-catalogs` writes it from
    /// `profiles/`): what ``locate(directory:)`` falls back on, so no folder is needed.
    public static let builtIn = ProfileCatalog(builtIn: ())

    /// Whether this is the catalog built into the library.
    public var isBuiltIn: Bool { directory == nil }

    /// Where the catalog is, for people: its directory, or `built into linkcond`.
    public var origin: String { directory ?? "built into linkcond" }

    /// The environment variable that names the catalog directory.
    public static let environmentVariable = "LINKCOND_PROFILES"
    /// Where packages install the catalog.
    public static let systemDirectory = "/usr/share/linkcond/profiles"
    /// The file whose presence marks a `profiles/` folder as linkcond's catalog.
    public static let markerFile = "edge.json"

    /// Finds the catalog, first match wins: `directory` if given; `$LINKCOND_PROFILES`; a `profiles/` folder
    /// holding `edge.json` next to the running executable or in any folder above it (so
    /// `.build/debug/linkcond` finds the source tree's catalog); ``systemDirectory``; else the catalog
    /// built into the library (``builtIn``).
    public static func locate(directory: String? = nil) throws(ProfileError) -> ProfileCatalog {
        var environment: [String: String] = [:]
        if let value = getenv(environmentVariable) { environment[environmentVariable] = String(cString: value) }
        return try locate(
            directory: directory, environment: environment, executablePath: ProfileFiles.executablePath(),
            systemDirectory: systemDirectory)
    }

    /// ``locate(directory:)`` with its inputs spelled out, for tests.
    public static func locate(
        directory: String?, environment: [String: String], executablePath: String?, systemDirectory: String
    ) throws(ProfileError) -> ProfileCatalog {
        for (given, origin) in [
            (directory, "the given catalog directory"), (environment[environmentVariable], environmentVariable),
        ] {
            guard let given, !given.isEmpty else { continue }
            guard ProfileFiles.isDirectory(given) else {
                throw ProfileError(
                    .notFound, file: given, problem: "\(origin) is not a directory",
                    expected: "a directory of profile files such as edge.json")
            }
            return ProfileCatalog(directory: given)
        }
        var looked: [String] = []
        if let executablePath {
            var folder = ProfileFiles.parent(of: executablePath)
            while true {
                let candidate = (folder == "/" ? "" : folder) + "/profiles"
                looked.append(candidate)
                if ProfileFiles.exists(candidate + "/" + markerFile) { return ProfileCatalog(directory: candidate) }
                if folder == "/" || folder.isEmpty { break }
                folder = ProfileFiles.parent(of: folder)
            }
        }
        if ProfileFiles.isDirectory(systemDirectory) { return ProfileCatalog(directory: systemDirectory) }
        return .builtIn
    }

    /// Whether `reference` names a file rather than a catalog profile: it contains `/` or ends in `.json`.
    public static func isPath(_ reference: String) -> Bool {
        reference.contains("/") || reference.hasSuffix(".json")
    }

    /// The profile `reference` names: a file when it is a path (see ``isPath(_:)``), otherwise a catalog
    /// profile, located with ``locate(directory:)`` only then.
    public static func find(_ reference: String, directory: String? = nil) throws(ProfileError) -> Profile {
        if isPath(reference) { return try ProfileParser.load(path: reference) }
        return try locate(directory: directory).profile(named: reference)
    }

    /// The file of the catalog profile `name`; nil in the built-in catalog.
    public func path(of name: String) -> String? {
        directory.map { $0 + "/" + name + ".json" }
    }

    /// The names of the catalog's profiles (its `*.json` files without `.json`), sorted.
    public func names() throws(ProfileError) -> [String] {
        guard let directory else { return Self.builtInTexts.map(\.name).sorted() }
        return try ProfileFiles.list(directory)
            .filter { $0.hasSuffix(".json") && !$0.hasPrefix(".") }
            .map { String($0.dropLast(5)) }
            .sorted()
    }

    /// Every catalog profile, sorted by name; the first one that does not parse is an error.
    public func all() throws(ProfileError) -> [Profile] {
        var profiles: [Profile] = []
        for name in try names() {
            profiles.append(try load(name))
        }
        return profiles
    }

    /// The catalog profile `name`, or the file `name` when it is a path (see ``isPath(_:)``). An unknown
    /// name is a `.notFound` error listing the catalog's names.
    public func profile(named name: String) throws(ProfileError) -> Profile {
        if Self.isPath(name) { return try ProfileParser.load(path: name) }
        let names = try names()
        guard names.contains(name) else {
            var problem = "no profile named \(JSONWriter.quoted(name))"
            if let suggestion = Suggestions.closest(to: name, in: names) {
                problem += " (did you mean \(JSONWriter.quoted(suggestion))?)"
            }
            throw ProfileError(
                .notFound, file: origin, problem: problem,
                expected: (names.isEmpty ? "a profile file in the catalog" : "one of " + names.joined(separator: ", "))
                    + ", or a path to a profile file (with a '/' or ending in .json)")
        }
        return try load(name)
    }

    /// The text of the catalog profile `name` as its file holds it (nil for a name the catalog lacks).
    public func text(of name: String) -> String? {
        guard let file = path(of: name) else { return Self.builtInTexts.first { $0.name == name }.map { $0.text + "\n" } }
        return (try? ProfileFiles.read(file)).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Loads `name`, whose profile must carry the same name.
    private func load(_ name: String) throws(ProfileError) -> Profile {
        let profile: Profile
        let file = path(of: name) ?? "\(name) (\(origin))"
        if path(of: name) != nil {
            profile = try ProfileParser.load(path: file)
        } else {
            guard let text = text(of: name) else { throw ProfileError(.notFound, file: file, problem: "no such built-in profile") }
            // Made from no file a reader could open: the profile has no source.
            var parsed = try ProfileParser.parse(text: text, source: file)
            parsed.source = nil
            profile = parsed
        }
        guard profile.name == name else {
            throw ProfileError(
                .conflict, file: file, path: JSONPath.root.appending("name"), position: nil,
                problem: "the name \(JSONWriter.quoted(profile.name)) differs from the file name",
                expected: "\(JSONWriter.quoted(name)), the file name without .json")
        }
        return profile
    }
}

/// The few file-system calls profiles need.
enum ProfileFiles {
    /// The most a profile file may hold.
    static let maximumSize = 1 << 20

    /// The contents of `path`.
    static func read(_ path: String) throws(ProfileError) -> [UInt8] {
        try DocumentFile.read(path, maximumSize: maximumSize, expected: "a profile file")
    }

    /// The names in `directory`, without `.` and `..`.
    static func list(_ directory: String) throws(ProfileError) -> [String] {
        guard let handle = opendir(directory) else {
            throw ProfileError(
                .notFound, file: directory, problem: "cannot list the catalog: " + String(cString: strerror(errno)))
        }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: entry.pointee.d_name)) {
                    String(cString: $0)
                }
            }
            if name != ".", name != ".." { names.append(name) }
        }
        return names
    }

    static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }

    /// The folder containing `path` ("/" for a top-level entry).
    static func parent(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "." }
        let parent = trimmed[..<slash]
        return parent.isEmpty ? "/" : String(parent)
    }

    /// The running executable, from `/proc/self/exe`.
    static func executablePath() -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        return String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

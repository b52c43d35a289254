import JSONDocument

/// Why a profile was refused: the file, the JSON path and line:column, what was wrong and what was
/// expected — a ``DocumentError``, like every refused document.
///
/// `description` reads like `profiles/bad.json: $.downlink.loss (line 4, column 13): "150%" is out of
/// range: expected a percentage from 0% to 100%`.
public typealias ProfileError = DocumentError

extension DocumentError.Kind {
    /// A unit that can be read two ways (`kbps`, `KB/s`, a bare number).
    public static let ambiguousUnit = Self("ambiguousUnit")
    /// No catalog profile of that name, or no catalog.
    public static let notFound = Self("notFound")
}

/// Places a problem found on a model (by a validator, after reading) where the user wrote it: at the JSON
/// path the offending field has in the document, with the position of the nearest value the document has
/// on the way there. Without a document (a model made in code) errors carry the path alone.
///
/// A path into a value written short stops at that value: the percentage of `"loss": "150%"` is reported
/// at `$.downlink.loss`, the one of `"loss": {"percent": "150%"}` at `$.downlink.loss.percent`.
public struct DocumentLocator: Sendable {
    /// The file errors name.
    public let file: String
    /// The document the model was read from; `nil` for a model made in code.
    public let document: ParsedJSON?

    /// A locator for a model read from `document` (or made in code, with `nil`), naming `file`.
    public init(file: String, document: ParsedJSON?) {
        self.file = file
        self.document = document
    }

    /// `path` as the document spells it: cut after the first value on the way that is neither an object
    /// nor an array (a value written short). Members the document lacks stay in the path.
    public func writtenPath(of path: JSONPath) -> JSONPath {
        guard var value = document?.value else { return path }
        var written = JSONPath.root
        for (offset, component) in path.components.enumerated() {
            switch (value, component) {
            case (.object(let members), .key(let key)):
                guard let member = members.first(where: { $0.key == key }) else {
                    return JSONPath(written.components + path.components[offset...])
                }
                value = member.value
            case (.array(let elements), .index(let index)):
                guard elements.indices.contains(index) else {
                    return JSONPath(written.components + path.components[offset...])
                }
                value = elements[index]
            default:
                return written
            }
            written.components.append(component)
        }
        return written
    }

    /// The value the document has at `path` (as ``writtenPath(of:)`` spells it), if any.
    public func value(at path: JSONPath) -> JSONValue? {
        guard var value = document?.value else { return nil }
        for component in writtenPath(of: path).components {
            switch (value, component) {
            case (.object(let members), .key(let key)):
                guard let member = members.first(where: { $0.key == key }) else { return nil }
                value = member.value
            case (.array(let elements), .index(let index)):
                guard elements.indices.contains(index) else { return nil }
                value = elements[index]
            default:
                return nil
            }
        }
        return value
    }

    /// How to show the value at `path` in a message: the string the document has there, in quotes
    /// (`"150%"`), or `fallback` (the model's value written out) when the document has no string there.
    public func shown(at path: JSONPath, otherwise fallback: String) -> String {
        guard case .string(let text)? = value(at: path) else { return fallback }
        return JSONWriter.quoted(text)
    }

    /// Where the document has the value at `path`, or the nearest value that contains it; `nil` without a
    /// document.
    public func position(of path: JSONPath) -> SourcePosition? {
        guard let document else { return nil }
        var probe = writtenPath(of: path)
        while true {
            if let position = document.position(of: probe) { return position }
            if probe.components.isEmpty { return nil }
            probe.components.removeLast()
        }
    }

    /// An error at `path` (as written), placed at ``position(of:)``.
    public func error(
        _ kind: DocumentError.Kind, at path: JSONPath, problem: String, expected: String
    ) -> DocumentError {
        DocumentError(
            kind, file: file, path: writtenPath(of: path), position: position(of: path), problem: problem,
            expected: expected)
    }
}

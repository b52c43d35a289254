/// Where something starts in a JSON text: a 1-based line and a 1-based column.
///
/// Columns count Unicode scalars from the start of the line (a tab counts as one), so they match what
/// an editor shows for UTF-8 text. Lines end at `\n`.
public struct SourcePosition: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The line, from 1.
    public var line: Int
    /// The column, from 1, in Unicode scalars.
    public var column: Int

    /// A position at `line` and `column`, both counted from 1.
    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    /// "line 4, column 13".
    public var description: String { "line \(line), column \(column)" }

    public static func < (a: SourcePosition, b: SourcePosition) -> Bool {
        (a.line, a.column) < (b.line, b.column)
    }
}

/// A location inside a JSON document, written the JSONPath way: `$`, `$.downlink.loss.percent`,
/// `$.items[2]`, `$.loss.gilbertElliott["1-h"]` (keys that are not plain identifiers go in brackets).
public struct JSONPath: Sendable, Hashable, CustomStringConvertible {
    /// One step of a path: a key of an object or an index into an array.
    public enum Component: Sendable, Hashable {
        /// A member of an object.
        case key(String)
        /// An element of an array, from 0.
        case index(Int)
    }

    /// The steps from the document's root.
    public var components: [Component]

    /// A path made of `components`.
    public init(_ components: [Component] = []) {
        self.components = components
    }

    /// The document itself: `$`.
    public static let root = JSONPath()

    /// This path followed by the object member `key`.
    public func appending(_ key: String) -> JSONPath {
        JSONPath(components + [.key(key)])
    }

    /// This path followed by the array element at `index`.
    public func appending(index: Int) -> JSONPath {
        JSONPath(components + [.index(index)])
    }

    /// The last key of the path, if it ends in one.
    public var lastKey: String? {
        if case .key(let key)? = components.last { return key }
        return nil
    }

    public var description: String {
        var text = "$"
        for component in components {
            switch component {
            case .key(let key):
                if Self.isIdentifier(key) {
                    text += "." + key
                } else {
                    text += "[" + JSONWriter.quoted(key) + "]"
                }
            case .index(let index):
                text += "[\(index)]"
            }
        }
        return text
    }

    private static func isIdentifier(_ key: String) -> Bool {
        guard let first = key.unicodeScalars.first, !("0"..."9").contains(first) else { return false }
        return key.unicodeScalars.allSatisfy { scalar in
            ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
                || scalar == "_"
        }
    }
}

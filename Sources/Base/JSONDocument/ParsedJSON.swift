/// A parsed document: its value, and where each of its values and keys starts.
public struct ParsedJSON: Sendable {
    /// The document's value.
    public let value: JSONValue
    /// The file the text came from, as given to the parser; empty when none was given.
    public let file: String
    /// Where the value and its parts start.
    let map: SourceMap

    /// Where the value at `path` starts (its first character: `{`, `[`, `"`, a digit...); `nil` for a path
    /// the document does not have.
    public func position(of path: JSONPath) -> SourcePosition? {
        locate(path)?.map.position
    }

    /// Where the key of the member at `path` starts (its opening quote); `nil` for the root, array
    /// elements and members the document does not have.
    public func keyPosition(of path: JSONPath) -> SourcePosition? {
        guard case .key(let key)? = path.components.last,
            let parent = locate(JSONPath(Array(path.components.dropLast()))),
            case .object(let members) = parent.value, let offset = members.firstIndex(where: { $0.key == key })
        else { return nil }
        return parent.map.children[offset].keyPosition
    }

    /// The value at `path` and its map, walking down from the root.
    func locate(_ path: JSONPath) -> (value: JSONValue, map: SourceMap)? {
        var value = self.value
        var map = self.map
        for component in path.components {
            switch (value, component) {
            case (.object(let members), .key(let key)):
                guard let offset = members.firstIndex(where: { $0.key == key }) else { return nil }
                (value, map) = (members[offset].value, map.children[offset])
            case (.array(let elements), .index(let offset)):
                guard elements.indices.contains(offset) else { return nil }
                (value, map) = (elements[offset], map.children[offset])
            default:
                return nil
            }
        }
        return (value, map)
    }

    /// The document's value, ready to be read with positions (see ``JSONObjectReader``).
    public var root: JSONElement {
        JSONElement(value: value, path: .root, position: map.position, file: file, map: map)
    }
}

/// Where a parsed value starts and, shaped like the value, where each of its parts starts: the members of
/// an object or the elements of an array, in order.
struct SourceMap: Sendable {
    /// Where the value starts.
    var position: SourcePosition
    /// For a member of an object, where its key starts (otherwise where the value starts).
    var keyPosition: SourcePosition
    /// For an object or an array: the maps of its members or elements.
    var children: [SourceMap] = []

    init(position: SourcePosition) {
        self.position = position
        self.keyPosition = position
    }
}

/// Writes JSON text.
public enum JSONWriter {
    /// The JSON text of `value`. With `indent`, objects and arrays are spread over lines and nested
    /// `indent` spaces deeper, empty ones stay `{}` and `[]`, and the text ends without a newline;
    /// without it the text is compact. Members keep their order; numbers keep their literal.
    public static func text(of value: JSONValue, indent: Int? = 2) -> String {
        var output = ""
        write(value, into: &output, indent: indent, level: 0)
        return output
    }

    /// `string` in double quotes with the escapes JSON needs: `"`, `\`, and control characters
    /// (`\n`, `\t`, ... or `\u00XX`). Everything else is written as is.
    public static func quoted(_ string: String) -> String {
        var output = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case "\u{08}": output += "\\b"
            case "\u{0C}": output += "\\f"
            case "\u{00}"..."\u{1F}", "\u{7F}":
                let hex = String(scalar.value, radix: 16, uppercase: true)
                output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: output.unicodeScalars.append(scalar)
            }
        }
        return output + "\""
    }

    /// Input quoted for a message: ``quoted(_:)`` (so control characters and escape sequences are shown,
    /// never sent to the terminal), cut after `limit` characters with `…` (a 60 MB line is not echoed).
    public static func excerpt(_ input: String, limit: Int = 60) -> String {
        guard input.count > limit else { return quoted(input) }
        return quoted(String(input.prefix(limit))) + "…"
    }

    private static func write(_ value: JSONValue, into output: inout String, indent: Int?, level: Int) {
        switch value {
        case .object(let members):
            writeContainer("{", "}", members, into: &output, indent: indent, level: level) { member, output in
                output += quoted(member.key) + (indent == nil ? ":" : ": ")
                write(member.value, into: &output, indent: indent, level: level + 1)
            }
        case .array(let elements):
            writeContainer("[", "]", elements, into: &output, indent: indent, level: level) { element, output in
                write(element, into: &output, indent: indent, level: level + 1)
            }
        case .string(let string): output += quoted(string)
        case .number(let number): output += number.literal
        case .bool(let bool): output += bool ? "true" : "false"
        case .null: output += "null"
        }
    }

    /// `open`, the items written by `writeItem` and separated by commas (one a line, when indented), `close`;
    /// `open` and `close` together when there are no items.
    private static func writeContainer<Item>(
        _ open: String, _ close: String, _ items: [Item], into output: inout String, indent: Int?, level: Int,
        writeItem: (Item, inout String) -> Void
    ) {
        output += open
        guard !items.isEmpty else {
            output += close
            return
        }
        for (offset, item) in items.enumerated() {
            if offset > 0 { output += "," }
            newline(&output, indent: indent, level: level + 1)
            writeItem(item, &output)
        }
        newline(&output, indent: indent, level: level)
        output += close
    }

    private static func newline(_ output: inout String, indent: Int?, level: Int) {
        guard let indent else { return }
        output += "\n" + String(repeating: " ", count: indent * level)
    }
}

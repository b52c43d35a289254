extension CommandSpec {
    /// The help page of the command at `path` (root first, as `ParsedCommand.commandPath` and
    /// `UsageError.commandPath` give it; unknown trailing names are ignored): USAGE, OVERVIEW, ARGUMENTS,
    /// OPTIONS, SUBCOMMANDS and EXAMPLES, each present only when it has something to say. No trailing
    /// newline.
    public func helpText(for path: [String]) -> String {
        HelpFormatter(chain: chain(for: path)).helpText()
    }

    /// The one-line usage of the command at `path`, without a prefix:
    /// `linkcond up [--name <name>] [--cellular]`.
    public func usageLine(for path: [String]) -> String {
        HelpFormatter(chain: chain(for: path)).usageLine()
    }
}

/// Renders help for the last command of a chain. Plain text, aligned columns, lines kept under `width`
/// by wrapping between words where needed.
struct HelpFormatter {
    static let width = 100
    static let indent = "  "
    /// Labels longer than this push their help to the next line instead of widening the column.
    static let maxLabelWidth = 26

    let chain: [CommandSpec]
    private var command: CommandSpec { chain[chain.count - 1] }
    private var commandName: String { chain.map(\.name).concatenated(separator: " ") }

    // MARK: - Usage

    func usageLine() -> String {
        ([commandName] + usageItems()).concatenated(separator: " ")
    }

    /// The parts of the usage after the command name: positionals, options, `<subcommand>`, passthrough.
    private func usageItems() -> [String] {
        var items = command.positionals.map { positional in
            let item = "<\(positional.name)>" + (positional.isVariadic ? " ..." : "")
            return positional.isRequired ? item : "[\(item)]"
        }
        var rendered: Set<String> = []
        for option in command.options where !rendered.contains(option.name) {
            let group = command.mutuallyExclusive.first { $0.contains(option.name) } ?? [option.name]
            let members = group.compactMap { command.option(named: $0) }
            rendered.formUnion(members.map(\.name))
            items.append("[" + members.map(Self.usage(of:)).concatenated(separator: " | ") + "]")
        }
        if !command.subcommands.isEmpty {
            items.append("<subcommand>")
        }
        if let passthrough = command.passthrough {
            let item = "-- <\(passthrough.name)> ..."
            items.append(passthrough.isRequired ? item : "[\(item)]")
        }
        return items
    }

    private static func usage(of option: OptionSpec) -> String {
        var text = "--" + option.name
        if let valueName = option.valueName { text += " <\(valueName)>" }
        if option.repeatable { text += " ..." }
        return text
    }

    // MARK: - The help page

    func helpText() -> String {
        var sections: [String] = []
        let usagePrefix = "USAGE: " + commandName
        sections.append(
            Self.wrap(items: usageItems(), after: usagePrefix, continuationIndent: usagePrefix.count + 1))

        var overview: [String] = []
        if !command.abstract.isEmpty { overview.append("OVERVIEW: " + command.abstract) }
        if let discussion = command.discussion, !discussion.isEmpty {
            if !overview.isEmpty { overview.append("") }
            overview += discussion.split(separator: "\n", omittingEmptySubsequences: false).map {
                Self.wrap(String($0), after: "", continuationIndent: 0)
            }
        }
        if !overview.isEmpty { sections.append(overview.concatenated(separator: "\n")) }

        let arguments = (command.positionals + (command.passthrough.map { [$0] } ?? [])).map {
            (label: "<\($0.name)>", help: $0.help)
        }
        let options = command.options.map { (label: Self.label(of: $0), help: Self.help(of: $0)) }
            + [(label: "-h, --help", help: "Show help for this command.")]
        let subcommands = command.subcommands.map { (label: $0.name, help: $0.abstract) }
        let widest = (arguments + options + subcommands).map(\.label.count).max() ?? 0
        let labelWidth = min(widest, Self.maxLabelWidth)

        if !arguments.isEmpty {
            sections.append(Self.table("ARGUMENTS:", arguments, labelWidth: labelWidth))
        }
        sections.append(Self.table("OPTIONS:", options, labelWidth: labelWidth))
        if !subcommands.isEmpty {
            sections.append(Self.table("SUBCOMMANDS:", subcommands, labelWidth: labelWidth))
        }
        if !command.examples.isEmpty {
            let examples = command.examples.map { Self.indent + $0 }
            sections.append((["EXAMPLES:"] + examples).concatenated(separator: "\n"))
        }
        if !command.subcommands.isEmpty {
            sections.append("See '\(commandName) <subcommand> --help' for detailed help.")
        }
        return sections.concatenated(separator: "\n\n")
    }

    private static func label(of option: OptionSpec) -> String {
        var label = option.short.map { "-\($0), " } ?? ""
        label += "--" + option.name
        if let valueName = option.valueName { label += " <\(valueName)>" }
        return label
    }

    /// The option's help followed by what help should say about its values: `(values: a, b; default: a)`.
    private static func help(of option: OptionSpec) -> String {
        var notes: [String] = []
        if let allowed = option.allowedValues { notes.append("values: " + allowed.concatenated(separator: ", ")) }
        if let defaultDescription = option.defaultDescription {
            notes.append("default: " + defaultDescription)
        }
        if option.repeatable { notes.append("repeatable") }
        guard !notes.isEmpty else { return option.help }
        let note = "(" + notes.concatenated(separator: "; ") + ")"
        return option.help.isEmpty ? note : option.help + " " + note
    }

    /// A titled two-column table: labels indented, help aligned after the widest label.
    private static func table(_ title: String, _ rows: [(label: String, help: String)], labelWidth: Int)
        -> String
    {
        let helpColumn = indent.count + labelWidth + 2
        var lines = [title]
        for row in rows {
            let label = indent + row.label
            if row.help.isEmpty {
                lines.append(label)
            } else if label.count + 2 <= helpColumn {
                let padded = label + String(repeating: " ", count: helpColumn - label.count)
                lines.append(wrap(row.help, after: padded, continuationIndent: helpColumn))
            } else {
                lines.append(label)
                let blank = String(repeating: " ", count: helpColumn)
                lines.append(wrap(row.help, after: blank, continuationIndent: helpColumn))
            }
        }
        return lines.concatenated(separator: "\n")
    }

    // MARK: - Wrapping

    /// `text` after `prefix`, as is when it fits in `width`, else broken between words onto lines that
    /// start with `continuationIndent` spaces.
    static func wrap(_ text: String, after prefix: String, continuationIndent: Int) -> String {
        guard prefix.count + text.count > width else { return prefix + text }
        let words = text.split(separator: " ").map(String.init)
        return wrap(
            items: words, after: prefix, continuationIndent: continuationIndent, separatorBeforeFirst: false)
    }

    /// `items` joined by spaces after `prefix`, starting a new line (indented by `continuationIndent`)
    /// before an item that would cross `width`.
    static func wrap(
        items: [String], after prefix: String, continuationIndent: Int, separatorBeforeFirst: Bool = true
    ) -> String {
        var lines: [String] = []
        var line = prefix
        var lineHasItem = false
        for item in items {
            let separator = lineHasItem || separatorBeforeFirst ? " " : ""
            if lineHasItem, line.count + separator.count + item.count > width {
                lines.append(line)
                line = String(repeating: " ", count: continuationIndent) + item
            } else {
                line += separator + item
            }
            lineHasItem = true
        }
        lines.append(line)
        return lines.concatenated(separator: "\n")
    }
}

extension Array where Element == String {
    /// `joined(separator:)` for an array of strings, written out: the standard library's is generic over
    /// the sequence, and its first call looks up `[String]`'s conformances in every conformance record of
    /// the executable — a quarter of `linkcond --help`'s CPU time (perf record, 200 runs).
    func concatenated(separator: String) -> String {
        var text = ""
        for (index, part) in enumerated() {
            if index > 0 { text += separator }
            text += part
        }
        return text
    }
}

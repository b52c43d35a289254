/// A command of the command tree: its help, options, positional arguments and subcommands.
///
/// The root spec parses a whole command line (`parse(_:)`) and renders help for any command in the tree
/// (`helpText(for:)`, `usageLine(for:)`). Command paths are written root first: `["linkcond", "up"]`.
public struct CommandSpec: Sendable, Equatable {
    /// The word that selects the command (the program name for the root).
    public var name: String
    /// One line saying what the command does.
    public var abstract: String
    /// Longer text for the help page, printed as written.
    public var discussion: String?
    /// The options, in the order usage and help list them.
    public var options: [OptionSpec]
    /// The positional arguments, in order. A command with subcommands has none.
    public var positionals: [PositionalSpec]
    /// When set, everything after `--` is collected verbatim into `ParsedCommand.passthrough`
    /// (`linkcond exec -- curl -s …`); the spec names those arguments in usage and help.
    public var passthrough: PositionalSpec?
    /// Groups of option names of which at most one may be given (`[["name", "all"]]`).
    public var mutuallyExclusive: [[String]]
    /// The subcommands, in the order help lists them.
    public var subcommands: [CommandSpec]
    /// Example command lines, shown in help as written.
    public var examples: [String]

    /// Whether arguments after `--` are passed through verbatim.
    public var allowsPassthrough: Bool { passthrough != nil }

    public init(
        _ name: String, abstract: String, discussion: String? = nil, options: [OptionSpec] = [],
        positionals: [PositionalSpec] = [], passthrough: PositionalSpec? = nil,
        mutuallyExclusive: [[String]] = [], subcommands: [CommandSpec] = [], examples: [String] = []
    ) {
        self.name = name
        self.abstract = abstract
        self.discussion = discussion
        self.options = options
        self.positionals = positionals
        self.passthrough = passthrough
        self.mutuallyExclusive = mutuallyExclusive
        self.subcommands = subcommands
        self.examples = examples
    }

    /// The direct subcommand called `name`.
    public func subcommand(named name: String) -> CommandSpec? {
        subcommands.first { $0.name == name }
    }

    /// The option with the long name `name`.
    public func option(named name: String) -> OptionSpec? {
        options.first { $0.name == name }
    }

    /// The commands along `path`, root first, as far as they exist. `path` is written root first, as
    /// `ParsedCommand.commandPath` gives it; a path that does not start with the root's name is taken
    /// relative to the root. Names past the first unknown one are ignored.
    func chain(for path: [String]) -> [CommandSpec] {
        var chain = [self]
        for name in path.first == self.name ? Array(path.dropFirst()) : path {
            guard let next = chain[chain.count - 1].subcommand(named: name) else { break }
            chain.append(next)
        }
        return chain
    }

    /// Mistakes in the definition of this tree (duplicate names, a variadic positional that is not last,
    /// …), one sentence each; empty when the tree is sound. Meant for a unit test of the real tree.
    public var definitionProblems: [String] {
        problems(path: [name])
    }

    private func problems(path: [String]) -> [String] {
        let command = "'\(path.joined(separator: " "))'"
        var problems: [String] = []
        var longNames: Set<String> = ["help"]
        var shortNames: Set<Character> = ["h"]
        for option in options {
            if option.name.isEmpty || option.name.hasPrefix("-") || option.name.contains("=") {
                problems.append("\(command): option name '\(option.name)' needs letters, no dashes or '='")
            }
            if !longNames.insert(option.name).inserted {
                problems.append("\(command): option '--\(option.name)' is declared twice or is reserved")
            }
            if let short = option.short, !shortNames.insert(short).inserted {
                problems.append("\(command): short option '-\(short)' is declared twice or is reserved")
            }
            if let short = option.short, !short.isLetter {
                problems.append("\(command): short option '-\(short)' must be a letter")
            }
            if let allowed = option.allowedValues, option.isFlag {
                problems.append("\(command): flag '--\(option.name)' lists allowed values \(allowed)")
            } else if option.allowedValues == [] {
                problems.append("\(command): '--\(option.name)' allows no value at all")
            }
        }
        for group in mutuallyExclusive {
            for name in group where option(named: name) == nil {
                problems.append("\(command): exclusive group names unknown option '--\(name)'")
            }
        }
        var positionalNames: Set<String> = []
        var sawOptional = false
        for (index, positional) in positionals.enumerated() {
            if !positionalNames.insert(positional.name).inserted {
                problems.append("\(command): positional <\(positional.name)> is declared twice")
            }
            if positional.isVariadic && index != positionals.count - 1 {
                problems.append("\(command): variadic positional <\(positional.name)> is not the last")
            }
            if positional.isRequired && sawOptional {
                problems.append("\(command): required <\(positional.name)> follows an optional positional")
            }
            sawOptional = sawOptional || !positional.isRequired
        }
        if !subcommands.isEmpty && !positionals.isEmpty {
            problems.append("\(command): a command with subcommands cannot take positional arguments")
        }
        var subcommandNames: Set<String> = []
        for subcommand in subcommands {
            if !subcommandNames.insert(subcommand.name).inserted {
                problems.append("\(command): subcommand '\(subcommand.name)' is declared twice")
            }
            problems += subcommand.problems(path: path + [subcommand.name])
        }
        return problems
    }
}

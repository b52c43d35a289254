/// The result of parsing a command line: which command was chosen and what was given to it.
///
/// Options given before a subcommand belong to the command they follow but are read back from the same
/// result. Reading a name that no command on the path declares is a programming error and asserts.
public struct ParsedCommand: Sendable, Equatable {
    /// The chosen command, root first: `["linkcond", "up"]`.
    public let commandPath: [String]
    /// Whether help was asked for (`--help`, `-h` or `help SUBCOMMAND`). Then `commandPath` is the
    /// command to show help for, and nothing else was validated.
    public let helpRequested: Bool
    /// The arguments after `--` of a command that passes them through, verbatim.
    public let passthrough: [String]

    let flagCounts: [String: Int]
    let optionValues: [String: [String]]
    let positionalValues: [String: [String]]
    let declaredFlags: Set<String>
    let declaredValueOptions: Set<String>
    let declaredPositionals: Set<String>

    init(
        chain: [CommandSpec], helpRequested: Bool, passthrough: [String], flagCounts: [String: Int],
        optionValues: [String: [String]], positionalValues: [String: [String]]
    ) {
        self.commandPath = chain.map(\.name)
        self.helpRequested = helpRequested
        self.passthrough = passthrough
        self.flagCounts = flagCounts
        self.optionValues = optionValues
        self.positionalValues = positionalValues
        let options = chain.flatMap(\.options)
        self.declaredFlags = Set(options.filter(\.isFlag).map(\.name))
        self.declaredValueOptions = Set(options.filter { !$0.isFlag }.map(\.name))
        self.declaredPositionals = Set(chain.flatMap(\.positionals).map(\.name))
    }

    private var commandDescription: String { "'" + commandPath.joined(separator: " ") + "'" }

    /// The path below the root: `["up"]` for `linkcond up`, empty for the root itself.
    public var subcommandPath: [String] { Array(commandPath.dropFirst()) }

    /// Whether the flag `--name` was given.
    public func flag(_ name: String) -> Bool {
        assert(declaredFlags.contains(name), "'--\(name)' is not a flag of \(commandDescription)")
        return flagCounts[name, default: 0] > 0
    }

    /// How often the flag `--name` was given (for repeatable flags such as `-v -v`).
    public func flagCount(_ name: String) -> Int {
        assert(declaredFlags.contains(name), "'--\(name)' is not a flag of \(commandDescription)")
        return flagCounts[name, default: 0]
    }

    /// The value of the option `--name`, or nil when it was not given (the last one, if repeatable).
    public func value(_ name: String) -> String? {
        values(name).last
    }

    /// Every value of the option `--name`, in command-line order.
    public func values(_ name: String) -> [String] {
        assert(
            declaredValueOptions.contains(name),
            "'--\(name)' is not an option with a value of \(commandDescription)")
        return optionValues[name, default: []]
    }

    /// The value of the positional `<name>`, or nil when it was not given (the first, if variadic).
    public func positional(_ name: String) -> String? {
        positionals(name).first
    }

    /// Every value of the positional `<name>` (one at most unless it is variadic).
    public func positionals(_ name: String) -> [String] {
        assert(
            declaredPositionals.contains(name),
            "<\(name)> is not an argument of \(commandDescription)")
        return positionalValues[name, default: []]
    }
}

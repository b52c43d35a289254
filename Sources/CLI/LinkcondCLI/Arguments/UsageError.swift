import JSONDocument
/// A mistake on the command line: what is wrong, how to fix it, and which command it concerns.
///
/// `description` reads `unknown option '--nmae' for 'linkcond up'; did you mean '--name'?`. The caller
/// prints it, then the usage line of `commandPath`, and exits with the usage status.
public struct UsageError: Error, CustomStringConvertible, Sendable, Equatable {
    /// One sentence saying what is wrong, e.g. `missing value for '--name'`.
    public var message: String
    /// How to fix it, e.g. `did you mean '--name'?`; nil when there is nothing useful to add.
    public var hint: String?
    /// The command the mistake concerns, root first (`["linkcond", "up"]`).
    public var commandPath: [String]

    public init(_ message: String, hint: String? = nil, commandPath: [String]) {
        self.message = message
        self.hint = hint
        self.commandPath = commandPath
    }

    /// The message, then the hint after a semicolon.
    public var description: String {
        guard let hint else { return message }
        return "\(message); \(hint)"
    }
}

// The wording of every mistake the parser reports, in one place.
extension UsageError {
    private static func command(_ path: [String]) -> String {
        "'\(path.joined(separator: " "))'"
    }

    private static func seeHelp(_ path: [String]) -> String {
        "see '\((path + ["--help"]).joined(separator: " "))'"
    }

    static func unknownOption(_ spelled: String, suggestion: String?, ownerPath: [String]?, path: [String])
        -> UsageError
    {
        let hint: String
        if let suggestion {
            hint = "did you mean '\(suggestion)'?"
        } else if let ownerPath {
            hint = "it belongs to \(command(ownerPath)): write it after '\(ownerPath.last ?? "")'"
        } else {
            hint = seeHelp(path)
        }
        return UsageError("unknown option '\(spelled)' for \(command(path))", hint: hint, commandPath: path)
    }

    static func unknownCommand(_ name: String, suggestion: String?, path: [String]) -> UsageError {
        let hint = suggestion.map { "did you mean \(command(path + [$0]))?" } ?? seeHelp(path)
        return UsageError("\(command(path + [name])) is not a command", hint: hint, commandPath: path)
    }

    static func missingValue(_ spelled: String, option: OptionSpec, path: [String]) -> UsageError {
        UsageError(
            "missing value for '\(spelled)'",
            hint: "expected '\(spelled) <\(option.valueName ?? option.name)>'", commandPath: path)
    }

    static func unexpectedValue(_ spelled: String, path: [String]) -> UsageError {
        UsageError("'\(spelled)' does not take a value", hint: "write '\(spelled)' alone", commandPath: path)
    }

    static func repeated(_ option: OptionSpec, path: [String]) -> UsageError {
        UsageError("'--\(option.name)' was given more than once", hint: "give it once", commandPath: path)
    }

    static func invalidChoice(_ value: String, option: OptionSpec, allowed: [String], path: [String])
        -> UsageError
    {
        let suggestion = Suggestions.closest(to: value, in: allowed)
        let hint = suggestion.map { "did you mean '\($0)'?" } ?? "got '\(value)'"
        return UsageError(
            "'--\(option.name)' must be one of: \(allowed.joined(separator: ", "))", hint: hint,
            commandPath: path)
    }

    static func exclusive(_ first: String, _ second: String, path: [String]) -> UsageError {
        UsageError(
            "'--\(first)' cannot be used together with '--\(second)'", hint: "give only one of them",
            commandPath: path)
    }

    static func unexpectedArgument(_ argument: String, passthrough: Bool, path: [String]) -> UsageError {
        let hint = passthrough ? "put the arguments to pass through after '--'" : seeHelp(path)
        return UsageError(
            "unexpected argument '\(argument)' for \(command(path))", hint: hint, commandPath: path)
    }

    static func missingArgument(_ positional: PositionalSpec, afterDoubleDash: Bool, path: [String])
        -> UsageError
    {
        let hint = afterDoubleDash ? "put it after '--'" : seeHelp(path)
        return UsageError(
            "missing required argument <\(positional.name)>", hint: hint, commandPath: path)
    }
}

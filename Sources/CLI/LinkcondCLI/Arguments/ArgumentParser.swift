import JSONDocument
extension CommandSpec {
    /// Parses a command line (without the program name) against this command tree.
    ///
    /// Accepted forms: subcommand names (`up`), `--opt value`, `--opt=value`, `-o value`, flags (`--json`,
    /// `-j`), positional arguments, and `--`: after it a passthrough command collects every argument
    /// verbatim, any other command takes them as positional arguments. A value that starts with `-` must
    /// be written `--opt=-value`. `--help` or `-h` anywhere before `--`, or `help SUBCOMMAND…` in place of
    /// a subcommand, asks for help: the result has `helpRequested` set and any other mistake is ignored.
    public func parse(_ arguments: [String]) throws(UsageError) -> ParsedCommand {
        var parser = ArgumentParser(root: self, arguments: arguments)
        return try parser.parse()
    }
}

/// The state of one parse: a single pass over the arguments, then the checks that need all of them.
struct ArgumentParser {
    private let arguments: [String]
    private var index = 0
    private var chain: [CommandSpec]
    private var helpRequested = false
    private var flagCounts: [String: Int] = [:]
    private var optionValues: [String: [String]] = [:]
    private var loosePositionals: [String] = []
    private var passthrough: [String]?

    init(root: CommandSpec, arguments: [String]) {
        self.arguments = arguments
        self.chain = [root]
    }

    private var command: CommandSpec { chain[chain.count - 1] }
    private var path: [String] { chain.map(\.name) }

    private static func isHelpFlag(_ argument: String) -> Bool {
        argument == "--help" || argument == "-h"
    }

    /// Whether `argument` reads as an option rather than a value (`-` alone and `-5` are values).
    private static func looksLikeOption(_ argument: String) -> Bool {
        argument.hasPrefix("-") && argument != "-" && argument.dropFirst().first?.isNumber != true
    }

    /// Whether `argument` is an option of the chain of commands so far, `--`, or a help flag.
    private func isKnownOption(_ argument: String) -> Bool {
        guard Self.looksLikeOption(argument) else { return false }
        if argument == "--" || Self.isHelpFlag(argument) { return true }
        let name = argument.hasPrefix("--") ? String(argument.dropFirst(2).prefix { $0 != "=" }) : nil
        let short = argument.hasPrefix("--") ? nil : argument.dropFirst().first
        return chain.contains { command in
            command.options.contains { option in
                (name != nil && option.name == name) || (short != nil && option.short == short)
            }
        }
    }

    mutating func parse() throws(UsageError) -> ParsedCommand {
        let helpFlagGiven = arguments.prefix { $0 != "--" }.contains(where: Self.isHelpFlag)
        helpRequested = helpFlagGiven
        do {
            try scan()
            if helpRequested { return result(positionals: [:]) }
            let positionals = try assignPositionals()
            try checkPassthrough()
            try checkExclusions()
            return result(positionals: positionals)
        } catch {
            // `--help` wins over any mistake; `help frob` is itself the mistake.
            if helpFlagGiven { return result(positionals: [:]) }
            throw error
        }
    }

    private func result(positionals: [String: [String]]) -> ParsedCommand {
        ParsedCommand(
            chain: chain, helpRequested: helpRequested, passthrough: helpRequested ? [] : passthrough ?? [],
            flagCounts: flagCounts, optionValues: optionValues, positionalValues: positionals)
    }

    // MARK: - The pass over the arguments

    private mutating func scan() throws(UsageError) {
        var onlyPositionals = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if onlyPositionals {
                loosePositionals.append(argument)
            } else if argument == "--" {
                guard command.allowsPassthrough else {
                    onlyPositionals = true
                    continue
                }
                passthrough = Array(arguments[index...])
                return
            } else if Self.isHelpFlag(argument) {
                continue  // already seen by parse()
            } else if Self.looksLikeOption(argument) {
                do {
                    if argument.hasPrefix("--") { try longOption(argument) } else { try shortOption(argument) }
                } catch where command.allowsPassthrough && !isKnownOption(argument) {
                    // `linkcond exec curl -s URL`: the command's own options, before the `--` that passes them on.
                    throw passthroughHint(error, from: index - 1)
                }
            } else if !command.subcommands.isEmpty {
                if let subcommand = command.subcommand(named: argument) {
                    chain.append(subcommand)
                } else if argument == "help" {
                    try helpPath()
                    return
                } else {
                    let suggestion = Suggestions.closest(to: argument, in: command.subcommands.map(\.name))
                    throw .unknownCommand(argument, suggestion: suggestion, path: path)
                }
            } else {
                loosePositionals.append(argument)
            }
        }
    }

    /// `error` with the command line that was probably meant: the passthrough command's words (those taken
    /// as positionals so far, and the arguments from `offset` on) after `--`.
    private func passthroughHint(_ error: UsageError, from offset: Int) -> UsageError {
        var before = Array(arguments[..<offset])
        for name in path.dropFirst() { if let word = before.firstIndex(of: name) { before.remove(at: word) } }
        let start = before.firstIndex { loosePositionals.first == $0 } ?? before.count
        let words = (before[start...] + arguments[offset...]).map { $0.contains(" ") ? "'\($0)'" : $0 }
        let line = (path + before[..<start] + ["--"] + words).joined(separator: " ")
        return UsageError(error.message, hint: "the command to run goes after '--': \(line)", commandPath: error.commandPath)
    }

    /// `help SUBCOMMAND…`: the rest of the line names the command to show help for.
    private mutating func helpPath() throws(UsageError) {
        helpRequested = true
        while index < arguments.count {
            let name = arguments[index]
            index += 1
            if Self.isHelpFlag(name) { continue }
            if let subcommand = command.subcommand(named: name) {
                chain.append(subcommand)
            } else if command.subcommands.isEmpty {
                throw .unexpectedArgument(name, passthrough: false, path: path)
            } else {
                let suggestion = Suggestions.closest(to: name, in: command.subcommands.map(\.name))
                throw .unknownCommand(name, suggestion: suggestion, path: path)
            }
        }
    }

    private mutating func longOption(_ argument: String) throws(UsageError) {
        let body = argument.dropFirst(2)
        let name = String(body.prefix { $0 != "=" })
        let inlineValue = body.firstIndex(of: "=").map { String(body[body.index(after: $0)...]) }
        let spelled = "--" + name
        guard let option = command.option(named: name) else {
            let suggestion = Suggestions.closest(to: name, in: command.options.map(\.name)).map { "--" + $0 }
            throw .unknownOption(
                spelled, suggestion: suggestion, ownerPath: ownerPath(ofOption: name), path: path)
        }
        try record(option, spelled: spelled, inlineValue: inlineValue)
    }

    private mutating func shortOption(_ argument: String) throws(UsageError) {
        let body = argument.dropFirst()
        if body.count == 1, let option = command.options.first(where: { $0.short == body.first }) {
            try record(option, spelled: argument, inlineValue: nil)
            return
        }
        // `-name` for `--name`, or an unknown letter.
        let longName = String(body.prefix { $0 != "=" })
        let suggestion = command.option(named: longName) != nil ? "--" + longName : nil
        throw .unknownOption(argument, suggestion: suggestion, ownerPath: nil, path: path)
    }

    /// The path of a direct subcommand that declares `--name`, for "put it after the subcommand".
    private func ownerPath(ofOption name: String) -> [String]? {
        command.subcommands.first { $0.option(named: name) != nil }.map { path + [$0.name] }
    }

    private mutating func record(_ option: OptionSpec, spelled: String, inlineValue: String?)
        throws(UsageError)
    {
        let alreadyGiven = flagCounts[option.name] != nil || optionValues[option.name] != nil
        if alreadyGiven && !option.repeatable {
            throw .repeated(option, path: path)
        }
        if option.isFlag {
            if inlineValue != nil { throw .unexpectedValue(spelled, path: path) }
            flagCounts[option.name, default: 0] += 1
            return
        }
        let value: String
        if let inlineValue {
            value = inlineValue
        } else if index < arguments.count, !isKnownOption(arguments[index]) {
            // A value may start with '-' (`--name -x`): only an option this command knows, `--` or a help
            // flag counts as a missing value; anything else is the value, judged by whoever reads it.
            value = arguments[index]
            index += 1
        } else {
            throw .missingValue(spelled, option: option, path: path)
        }
        if let allowed = option.allowedValues, !allowed.contains(value) {
            throw .invalidChoice(value, option: option, allowed: allowed, path: path)
        }
        optionValues[option.name, default: []].append(value)
    }

    // MARK: - Checks after the pass

    private func assignPositionals() throws(UsageError) -> [String: [String]] {
        var remaining = loosePositionals[...]
        var assigned: [String: [String]] = [:]
        for positional in command.positionals {
            if positional.isVariadic {
                assigned[positional.name] = Array(remaining)
                remaining = []
            } else if let value = remaining.popFirst() {
                assigned[positional.name] = [value]
            }
            if positional.isRequired && assigned[positional.name, default: []].isEmpty {
                throw .missingArgument(positional, afterDoubleDash: false, path: path)
            }
        }
        if let extra = remaining.first {
            if command.allowsPassthrough, passthrough == nil {
                throw passthroughHint(.unexpectedArgument(extra, passthrough: true, path: path), from: arguments.count)
            }
            throw .unexpectedArgument(extra, passthrough: command.allowsPassthrough, path: path)
        }
        return assigned
    }

    private func checkPassthrough() throws(UsageError) {
        guard let spec = command.passthrough, spec.isRequired, passthrough?.isEmpty ?? true else { return }
        throw .missingArgument(spec, afterDoubleDash: true, path: path)
    }

    private func checkExclusions() throws(UsageError) {
        for group in chain.flatMap(\.mutuallyExclusive) {
            let given = group.filter { flagCounts[$0] != nil || optionValues[$0] != nil }
            if given.count > 1 {
                throw .exclusive(given[0], given[1], path: path)
            }
        }
    }
}

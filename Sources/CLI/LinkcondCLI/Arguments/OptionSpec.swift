/// A named option of a command: a flag (`--json`) or an option that takes a value (`--name <name>`).
public struct OptionSpec: Sendable, Equatable {
    /// The long name without dashes: `"name"` is written `--name`.
    public var name: String
    /// The short name, if any: `"n"` is written `-n`.
    public var short: Character?
    /// The placeholder shown for the value (`<name>`); nil makes the option a flag.
    public var valueName: String?
    /// One line of help.
    public var help: String
    /// What applies when the option is absent, shown in help as `(default: …)`. Only a description: the
    /// parser never substitutes it, so `ParsedCommand.value(_:)` is nil when the option was not given.
    public var defaultDescription: String?
    /// Whether the option may be given more than once (all values are kept, in order).
    public var repeatable: Bool
    /// The only values accepted, in the order help lists them; nil accepts any value.
    public var allowedValues: [String]?

    /// Whether the option is a flag, i.e. takes no value.
    public var isFlag: Bool { valueName == nil }

    public init(
        _ name: String, short: Character? = nil, valueName: String? = nil, help: String,
        defaultDescription: String? = nil, repeatable: Bool = false, allowedValues: [String]? = nil
    ) {
        self.name = name
        self.short = short
        self.valueName = valueName
        self.help = help
        self.defaultDescription = defaultDescription
        self.repeatable = repeatable
        self.allowedValues = allowedValues
    }

    /// A flag: `--name` (or `-s`) with no value.
    public static func flag(_ name: String, short: Character? = nil, help: String, repeatable: Bool = false)
        -> OptionSpec
    {
        OptionSpec(name, short: short, help: help, repeatable: repeatable)
    }

    /// An option with a value: `--name value`, `--name=value` or `-s value`. The value name defaults to
    /// the option's name.
    public static func value(
        _ name: String, short: Character? = nil, valueName: String? = nil, help: String,
        defaultDescription: String? = nil, repeatable: Bool = false, allowedValues: [String]? = nil
    ) -> OptionSpec {
        OptionSpec(
            name, short: short, valueName: valueName ?? name, help: help,
            defaultDescription: defaultDescription, repeatable: repeatable, allowedValues: allowedValues)
    }
}

/// A positional argument of a command (`<profile>`), or the arguments after `--` of a passthrough command.
public struct PositionalSpec: Sendable, Equatable {
    /// The name, used to read the value back and shown as `<name>`.
    public var name: String
    /// One line of help.
    public var help: String
    /// Whether the command line must contain it (for a variadic positional: at least one value).
    public var isRequired: Bool
    /// Whether it takes all remaining positional values; only the last positional may be variadic.
    public var isVariadic: Bool

    public init(_ name: String, help: String, isRequired: Bool = true, isVariadic: Bool = false) {
        self.name = name
        self.help = help
        self.isRequired = isRequired
        self.isVariadic = isVariadic
    }
}

import JSONDocument

/// Conditions typed as options, the way tcset and `tc qdisc … netem` users type them — `--delay 100ms
/// --jitter 10ms --loss 1% --rate 1mbit`, on both directions or one —, turned into a profile and checked
/// exactly like a profile file: the options become a profile document (each option a key of a direction),
/// which ``ProfileParser`` reads and validates; a refusal is the format's own, named by the option
/// (`--loss: "150%" is out of range: expected a percentage from 0% to 100%`).
public struct InlineConditions: Sendable, Equatable {
    /// Which directions the options condition.
    public enum Direction: String, Sendable, CaseIterable {
        /// Both: the same conditions towards the device and from it.
        case both
        /// Towards the device only.
        case downlink
        /// From the device only.
        case uplink
    }

    /// The options, as `--NAME`, and the profile format's key each one sets, in the order help lists them.
    public static let options: [(option: String, key: String, help: String)] = [
        ("delay", "delay", "added delay, such as 100ms"),
        ("jitter", "jitter", "jitter around the delay, such as 10ms"),
        ("loss", "loss", "random loss, such as 1%"),
        ("rate", "rate", "the rate, such as 1mbit or 240kbit"),
        ("duplicate", "duplicate", "duplicated packets, such as 1%"),
        ("corrupt", "corrupt", "packets with a flipped bit, such as 0.1%"),
        ("reorder", "reorder", "packets sent ahead of the queue, such as 25% (needs --delay)"),
        ("queue-limit", "queueLimit", "the queue's length in packets, such as 100"),
    ]

    /// The name of a profile made from options.
    public static let profileName = "inline"

    /// The options given, by name (`delay`, `loss`…), as typed.
    public var values: [String: String]
    /// The directions they condition.
    public var direction: Direction

    /// Conditions from `values` (option names without dashes, as typed) on `direction`.
    public init(values: [String: String], direction: Direction = .both) {
        self.values = values
        self.direction = direction
    }

    /// True when no option was given.
    public var isEmpty: Bool { values.isEmpty }

    /// One direction's members, in the order of ``options``; a queue limit that is a plain integer is a number,
    /// as the format writes it (anything else stays a string, for the reader to refuse).
    private var conditions: JSONValue {
        .object(Self.options.compactMap { option in
            guard let value = values[option.option] else { return nil }
            if option.key == "queueLimit", let number = Int(value) { return (option.key, .number(JSONNumber(number))) }
            return (option.key, .string(value))
        })
    }

    /// What the options say, e.g. `delay 100ms, loss 1% on both directions`.
    public var summary: String {
        let given = Self.options.compactMap { option in values[option.option].map { "\(option.option) \($0)" } }
        return given.joined(separator: ", ") + (direction == .both ? " on both directions" : " on the \(direction.rawValue)")
    }

    /// The profile document the options make: `{"name": "inline", "description": …, "downlink": {…}, "uplink": {…}}`.
    public var document: JSONValue {
        var members: [(key: String, value: JSONValue)] = [
            ("name", .string(Self.profileName)), ("description", .string("Conditions given as options: \(summary).")),
        ]
        if direction != .uplink { members.append(("downlink", conditions)) }
        if direction != .downlink { members.append(("uplink", conditions)) }
        return .object(members)
    }

    /// The profile, read and validated as a profile file is; a refusal names the option it is about.
    public func profile() throws(ProfileError) -> Profile {
        do {
            var profile = try ProfileParser.parse(text: JSONWriter.text(of: document), source: "the options")
            profile.source = nil
            return profile
        } catch {
            throw Self.optionError(error)
        }
    }

    /// A profile error about the document the options made, named by the option: the file becomes `--loss`
    /// (the option whose key is on the error's path), the path and position go (the user wrote no document).
    static func optionError(_ error: ProfileError) -> ProfileError {
        let keys = error.path?.components.compactMap { component -> String? in
            if case .key(let key) = component { return key }
            return nil
        } ?? []
        let option = keys.count >= 2 ? options.first { $0.key == keys[1] }?.option : nil
        var named = error
        named.file = option.map { "--" + $0 } ?? "the conditions given as options"
        named.path = nil
        named.position = nil
        return named
    }
}

/// A JSON number: its value as a `Double` and the literal text it was written as.
///
/// The literal keeps what a `Double` cannot: `9007199254740993` or the difference between `5` and `5.0`.
/// Two numbers are equal when their values are equal (`1` equals `1.0`).
public struct JSONNumber: Sendable, Equatable, CustomStringConvertible, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral
{
    /// The value, rounded to the nearest `Double`.
    public let value: Double
    /// The text of the number as written in the document, e.g. `"1.50e3"`.
    public let literal: String

    /// A number parsed from a document: `value` must be what `literal` denotes.
    public init(value: Double, literal: String) {
        self.value = value
        self.literal = literal
    }

    /// A number with the shortest literal that reads back as `value` (a whole number has no fraction).
    /// `value` must be finite.
    public init(_ value: Double) {
        precondition(value.isFinite, "JSON has no infinities or NaN")
        self.value = value
        if value == value.rounded(), abs(value) < 1e15 {
            literal = String(Int64(value))
        } else {
            literal = "\(value)"
        }
    }

    /// An integer.
    public init(_ value: Int) {
        self.value = Double(value)
        literal = String(value)
    }

    public init(integerLiteral value: Int) { self.init(value) }

    public init(floatLiteral value: Double) { self.init(value) }

    public static func == (a: JSONNumber, b: JSONNumber) -> Bool { a.value == b.value }

    /// The literal text.
    public var description: String { literal }

    /// The number as an integer of type `T`, if it is written as a plain integer (no fraction, no
    /// exponent) that fits; `nil` otherwise.
    public func integer<T: FixedWidthInteger>(as type: T.Type = T.self) -> T? {
        T(literal, radix: 10)
    }
}

/// A JSON value (RFC 8259). Objects keep their members in document order.
///
/// Equality is structural: members are compared in order, numbers by value.
public enum JSONValue: Sendable, Equatable, CustomStringConvertible {
    /// An object; its keys are unique (the parser refuses duplicates) and in document order.
    case object([(key: String, value: JSONValue)])
    /// An array.
    case array([JSONValue])
    /// A string.
    case string(String)
    /// A number, with its literal text.
    case number(JSONNumber)
    /// `true` or `false`.
    case bool(Bool)
    /// `null`.
    case null

    public static func == (a: JSONValue, b: JSONValue) -> Bool {
        switch (a, b) {
        case (.object(let x), .object(let y)):
            x.count == y.count && zip(x, y).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        case (.array(let x), .array(let y)): x == y
        case (.string(let x), .string(let y)): x == y
        case (.number(let x), .number(let y)): x == y
        case (.bool(let x), .bool(let y)): x == y
        case (.null, .null): true
        default: false
        }
    }

    /// The member `key` of an object; `nil` for a missing key or a value that is not an object.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    /// The string, if this is one.
    public var stringValue: String? {
        if case .string(let string) = self { return string }
        return nil
    }

    /// The number, if this is one.
    public var numberValue: JSONNumber? {
        if case .number(let number) = self { return number }
        return nil
    }

    /// The boolean, if this is one.
    public var boolValue: Bool? {
        if case .bool(let bool) = self { return bool }
        return nil
    }

    /// The members, if this is an object.
    public var objectMembers: [(key: String, value: JSONValue)]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// The elements, if this is an array.
    public var arrayElements: [JSONValue]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    /// What the value is, for messages: `an object`, `an array`, `the string "fast"`, `the number 400`,
    /// `true`, `false`, `null`. Long strings are shortened.
    public var summary: String {
        switch self {
        case .object: "an object"
        case .array: "an array"
        case .string(let string):
            "the string " + JSONWriter.quoted(string.count > 40 ? String(string.prefix(37)) + "..." : string)
        case .number(let number): "the number \(number.literal)"
        case .bool(let bool): bool ? "true" : "false"
        case .null: "null"
        }
    }

    /// The compact JSON text of the value.
    public var description: String { JSONWriter.text(of: self, indent: nil) }
}

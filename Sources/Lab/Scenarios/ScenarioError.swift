import JSONDocument

/// Why a scenario was refused: the file, the JSON path and line:column, what was wrong and what was
/// expected — a ``DocumentError``, like every refused document.
///
/// `description` reads like `scenarios/bad.json: $.expectations[0].after (line 12, column 16): no step named
/// "tunel" (did you mean "tunnel"?): expected the name of a step: one of "lte", "tunnel", "3g"`.
public typealias ScenarioError = DocumentError

extension DocumentError.Kind {
    /// A second step or expectation with a name already used.
    public static let duplicateName = Self("duplicateName")
    /// An expectation names a step the scenario does not have.
    public static let unknownStep = Self("unknownStep")
    /// An expectation names a state its lane never has.
    public static let unknownState = Self("unknownState")
    /// A step applies a profile the catalog does not have (or a profile file that does not exist).
    public static let unknownProfile = Self("unknownProfile")
    /// A step applies a profile that exists but is itself refused.
    public static let invalidProfile = Self("invalidProfile")
    /// A step needs the cellular link, and the scenario does not ask for it.
    public static let needsCellular = Self("needsCellular")
}

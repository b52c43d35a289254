import JSONDocument

/// Reads profile files (JSON) into ``Profile`` values, refusing anything doubtful before it can reach
/// the kernel, and writes profiles back as JSON.
///
/// The format (also in `profiles/FORMAT.md`):
///
/// ```json
/// {
///   "name": "edge",                       // required; the file name without .json
///   "description": "Edge (NLC preset)...", // optional
///   "downlink": { ... },                   // optional; towards the device; missing = no conditions
///   "uplink": { ... },                     // optional; from the device
///   "dnsDelay": "3000ms"                   // optional; extra delay for DNS queries from the device
/// }
/// ```
///
/// A direction has these keys, all optional:
///
/// - `rate`: `"240kbit"` (see ``Quantity`` for the units); absent = unlimited.
/// - `delay`: `"400ms"`.
/// - `jitter`: `"50ms"`, or `{"amount": "50ms", "correlation": "25%", "distribution": "normal"}`
///   (distribution: `uniform`, `normal`, `pareto`, `paretonormal`).
/// - `loss`: `"1%"`, or `{"percent": "1%", "correlation": "25%"}`, or
///   `{"gilbertElliott": {"p": "1%", "r": "10%", "1-h": "100%", "1-k": "0%"}}` (r, 1-h, 1-k default to
///   100%, 100%, 0% as in tc), or `{"fourState": {"p13": "1%", "p31": "10%", "p32": "0%", "p23": "100%",
///   "p14": "0%"}}` (defaults as in tc: p31 = 100% - p13, p32 0%, p23 100%, p14 0%).
/// - `duplicate`, `corrupt`: `"1%"` or `{"percent": "1%", "correlation": "25%"}`.
/// - `reorder`: `"25%"` or `{"percent": "25%", "correlation": "50%", "gap": 5}` (gap defaults to 1).
/// - `slot`: `{"min": "10ms", "max": "20ms", "packets": 10, "bytes": 1500}` (max defaults to min).
/// - `queueLimit`: packets, an integer from 1; absent = derived from the bandwidth-delay product.
/// - `ecn`: `true` to mark instead of drop.
///
/// Refused, each with a ``ProfileError`` naming the file, JSON path, line and column: invalid JSON,
/// duplicate keys, unknown keys (with a suggestion), wrong types, bad or ambiguous units, values out
/// of range, and combinations netem refuses or ignores: reorder without delay, a delay correlation
/// without jitter, a distribution without delay and jitter, a correlation or gap beside a 0%
/// probability, `ecn` without loss, a slot whose max is below its min, 4-state probabilities leaving
/// one state that add up to more than 100%. Jitter larger than the delay is allowed. `dnsDelay` goes
/// with anything.
public enum ProfileParser {
    /// Parses the UTF-8 JSON in `data`; `source` names it in errors and becomes ``Profile/source``.
    /// Reading (``ProfileReader``: keys, types, units) comes first, then every range and combination rule
    /// (``ProfileValidator``).
    public static func parse(data: [UInt8], source: String) throws(ProfileError) -> Profile {
        let document = try JSONParser.document(data, file: source, maximumDepth: 16)
        var profile = try ProfileReader(root: document.root, source: source).profile()
        profile.source = source
        try ProfileValidator(locator: DocumentLocator(file: source, document: document)).check(profile)
        return profile
    }

    /// Parses `text`; `source` names it in errors and becomes ``Profile/source``.
    public static func parse(text: String, source: String) throws(ProfileError) -> Profile {
        try parse(data: Array(text.utf8), source: source)
    }

    /// Reads a profile carried inside another document — `element`, a member of `document` — and checks it
    /// by the same rules as a file; errors name the member's JSON path (`$.profile.downlink.loss`) in
    /// `source`. A delivery trace whose path is a key of `knownTraces` is taken from there instead of being
    /// read again (a trace is named by the path it was read from, ``DeliveryTrace/path``, when the profile
    /// is written with ``json(of:tracesByPath:)``).
    public static func read(
        _ element: JSONElement, in document: ParsedJSON, source: String, knownTraces: [String: DeliveryTrace] = [:]
    ) throws(ProfileError) -> Profile {
        let profile = try ProfileReader(root: element, source: source, knownTraces: knownTraces).profile()
        try ProfileValidator(locator: DocumentLocator(file: source, document: document), base: element.path).check(profile)
        return profile
    }

    /// Reads and parses the file at `path`.
    public static func load(path: String) throws(ProfileError) -> Profile {
        try parse(data: ProfileFiles.read(path), source: path)
    }

    /// Checks a profile made in code by the same rules as a file (errors name the JSON path the
    /// offending field would have, without a position).
    public static func validate(_ profile: Profile) throws(ProfileError) {
        let file = profile.source ?? "profile \(JSONWriter.quoted(profile.name))"
        try ProfileValidator(locator: DocumentLocator(file: file, document: nil)).check(profile)
    }

    /// The profile as JSON text in the shortest form of each value; parsing it gives the profile back.
    public static func jsonText(of profile: Profile) -> String {
        JSONWriter.text(of: ProfileWriter.json(profile)) + "\n"
    }

    /// The profile as a JSON value, as ``jsonText(of:)`` writes it; with `tracesByPath` a delivery trace is
    /// named by the path it was read from rather than as the profile wrote it, so that a reader in another
    /// folder (the engine) finds it.
    public static func json(of profile: Profile, tracesByPath: Bool = false) -> JSONValue {
        ProfileWriter.json(profile, traces: tracesByPath ? .resolved : .asWritten)
    }

    /// The conditions of one direction as a profile writes them (`{"rate": "240kbit", "delay": "400ms"}`).
    public static func json(of conditions: LinkConditions) -> JSONValue {
        ProfileWriter.json(conditions)
    }
}

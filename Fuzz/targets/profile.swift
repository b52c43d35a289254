// libFuzzer target: the profile reader and validator (Profiles). Any input must be accepted or refused
// with a message; an accepted profile must validate, and must read back equal from what the writer writes.
import JSONDocument
import Profiles

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzProfile(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let profile: Profile
    do {
        profile = try ProfileParser.parse(data: bytes, source: "fuzz.json")
    } catch {
        _ = error.description
        return 0
    }
    do {
        try ProfileParser.validate(profile)
    } catch {
        fatalError("an accepted profile does not validate: \(error)")
    }
    let text = ProfileParser.jsonText(of: profile)
    let again: Profile
    do {
        again = try ProfileParser.parse(text: text, source: "fuzz.json")
    } catch {
        fatalError("the written profile is refused: \(error)\n\(text)")
    }
    guard again == profile else { fatalError("read back differently:\n\(text)") }
    return 0
}

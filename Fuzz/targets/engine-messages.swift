// libFuzzer target: the engine's control protocol (EngineControl's EngineMessageCodec, both ends), the
// bytes a client sends the engine and the engine's answers. Any input must be accepted or refused with a
// message; what is accepted must write back as text that reads back equal.
import EngineControl
import Profiles

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEngineMessages(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if var request = try? EngineMessageCodec.request(bytes) {
        request.profile?.source = nil
        let text = EngineMessageCodec.text(of: request)
        guard !text.contains("\n") else { fatalError("a request written on more than one line: \(text)") }
        guard var again = try? EngineMessageCodec.request(Array(text.utf8)) else { fatalError("the written request is refused: \(text)") }
        again.profile?.source = nil
        guard again == request else { fatalError("the request read back differently: \(text)") }
    } else {
        do {
            _ = try EngineMessageCodec.request(bytes)
        } catch {
            _ = error.description
        }
    }
    if var response = try? EngineMessageCodec.response(bytes) {
        for index in response.links.indices { response.links[index].profile?.source = nil }
        let text = EngineMessageCodec.text(of: response)
        guard var again = try? EngineMessageCodec.response(Array(text.utf8)) else { fatalError("the written answer is refused: \(text)") }
        for index in again.links.indices { again.links[index].profile?.source = nil }
        guard again == response else { fatalError("the answer read back differently: \(text)") }
    }
    return 0
}

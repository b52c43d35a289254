// libFuzzer target: the HTTP/1.x request head parser of the sandbox's server (Responders). Any input is
// parsed or refused; the end of the head is found (or not) without reading past the buffer.
@testable import Responders

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTP(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let end = HTTPRequestHead.endOfHead(in: bytes) {
        guard end <= bytes.count else { fatalError("the head ends at \(end), past \(bytes.count)") }
        _ = try? HTTPRequestHead.parse(bytes[..<end])
    }
    if let head = try? HTTPRequestHead.parse(bytes) {
        _ = head.header("host")
        _ = HTTPRequestHead.path(of: head.target)
    }
    _ = HTTPRequestHead.endOfHead(in: bytes, searchingFrom: bytes.count / 2)
    return 0
}

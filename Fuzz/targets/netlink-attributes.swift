// libFuzzer target: the netlink attribute decoder (Netlink.AttributeDecoder). The input is a run of
// attributes; every attribute is read in every typed way and, when it could be, as nested attributes.
// The decoder must never read outside the input, and must stop at its first error.
import Netlink

struct Pair: BitwiseCopyable {
    var a: UInt32
    var b: UInt64
}

func decode(_ bytes: ArraySlice<UInt8>, depth: Int) {
    var decoder = AttributeDecoder(bytes, operation: "fuzz")
    var count = 0
    while decoder.next() {
        count += 1
        let payload = decoder.payload
        guard payload.startIndex >= bytes.startIndex, payload.endIndex <= bytes.endIndex else {
            fatalError("payload \(payload.indices) outside \(bytes.indices)")
        }
        switch decoder.type % 8 {
        case 0: _ = decoder.uint8()
        case 1: _ = decoder.uint16()
        case 2: _ = decoder.uint32()
        case 3: _ = decoder.uint64()
        case 4: _ = decoder.int32()
        case 5: _ = decoder.string()
        case 6: _ = decoder.structure(Pair.self)
        default: if depth < 8 { decode(decoder.payload, depth: depth + 1) }
        }
        if decoder.isNested {
            var nested = decoder.nested()
            while nested.next() { _ = nested.uint32() }
        }
        if decoder.error != nil { break }
    }
    if decoder.error != nil, decoder.next() { fatalError("the decoder went on after an error") }
    _ = try? decoder.finish()
    _ = count
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAttributes(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    decode(bytes[...], depth: 0)
    // The same attributes at an offset that is not a multiple of 4, as inside a message.
    if bytes.count > 3 { decode(bytes[3...], depth: 0) }
    return 0
}

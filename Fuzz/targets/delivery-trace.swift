// libFuzzer target: the delivery-trace readers (Profiles): Mahimahi's one-millisecond-a-line format and the
// TIME,RATE CSV that `linkcond trace from-csv` turns into one. Any input must be accepted or refused with a
// message naming the line; an accepted trace writes back as text that reads back equal, and a trace made
// from a CSV stays within the bounds a profile reads.
import Profiles

/// The most opportunities a fuzzed CSV may make.
let fuzzedOpportunities = 100_000

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDeliveryTrace(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    do {
        let trace = try DeliveryTrace(parsing: text, source: "fuzz.trace")
        guard let again = try? DeliveryTrace(parsing: trace.text), again == trace else { fatalError("the trace read back differently") }
        _ = trace.summary
    } catch {
        _ = error.description
    }
    do {
        // Within a bound of its own: a CSV may ask for millions of opportunities, which is a few seconds'
        // work for the product and far more than libFuzzer's 10 s under its instrumentation.
        let trace = try DeliveryTrace(rateCSV: text, source: "fuzz.csv", maximumOpportunities: fuzzedOpportunities)
        guard trace.milliseconds.count <= fuzzedOpportunities + 1 else {
            fatalError("a CSV made \(trace.milliseconds.count) opportunities, beyond \(fuzzedOpportunities)")
        }
        guard let again = try? DeliveryTrace(parsing: trace.text), again == trace else { fatalError("the CSV's trace read back differently") }
    } catch {
        _ = error.description
    }
    return 0
}

// libFuzzer target: the delivery-trace readers (Profiles): Mahimahi's one-millisecond-a-line format and the
// TIME,RATE CSV that `linkcond trace from-csv` turns into one. Any input must be accepted or refused with a
// message naming the line; an accepted trace writes back as text that reads back equal, and a trace made
// from a CSV stays within the bounds a profile reads.
import Profiles

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
        let trace = try DeliveryTrace(rateCSV: text, source: "fuzz.csv")
        guard trace.milliseconds.count <= DeliveryTrace.maximumOpportunities + 1 else {
            fatalError("a CSV made \(trace.milliseconds.count) opportunities, beyond \(DeliveryTrace.maximumOpportunities)")
        }
        guard let again = try? DeliveryTrace(parsing: trace.text), again == trace else { fatalError("the CSV's trace read back differently") }
    } catch {
        _ = error.description
    }
    return 0
}

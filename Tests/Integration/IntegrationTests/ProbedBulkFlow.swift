import Foundation
import LinkcondBase
import NetNamespace

/// One bulk TCP flow with a probe every 20 ms beside it, as flent's RRUL pairs a bulk flow with a ping: what
/// a queue does to latency under load. The probes start once the flow has left slow start (`settle`
/// seconds in) and go the flow's way, so they wait in the same queue; their one-way delay is stamped by the
/// receiver's kernel.
struct ProbedBulkFlow {
    var transfer: CheckedTCPTransfer.Outcome
    var probes: NumberedDatagrams.Outcome
    /// The probes' one-way delays in seconds, sorted.
    var oneWay: [Double]

    /// The median one-way delay (NaN without probes).
    var p50: Double { Self.median(oneWay) }
    /// The 95th percentile (NaN without probes).
    var p95: Double { oneWay.isEmpty ? .nan : oneWay[oneWay.count * 95 / 100] }

    /// The middle value of `values` (the upper one of an even count); NaN for none.
    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? .nan : sorted[sorted.count / 2]
    }

    /// Sends `bytes` with `congestionControl` from `sender` (at `senderAddress`) to `receiverAddress` in
    /// `receiver` and, `settle` seconds in, `probes` 64-byte datagrams 20 ms apart the same way; returns when
    /// both are done. `stall` and `hashed` are ``CheckedTCPTransfer/run(bytes:from:to:in:port:stall:congestionControl:hashed:)``'s.
    static func run(
        bytes: Int, from sender: NamedNamespace, _ senderAddress: IPAddress, to receiver: NamedNamespace, _ receiverAddress: IPAddress,
        settle: Double, probes: Int, drain: Double, stall: Double = 20, congestionControl: String = "cubic", hashed: Bool = true
    ) throws -> ProbedBulkFlow {
        let transfer = ResultBox<CheckedTCPTransfer.Outcome>()
        let done = DispatchSemaphore(value: 0)
        Thread {
            transfer.result = Result {
                try CheckedTCPTransfer.run(
                    bytes: bytes, from: sender, to: receiverAddress, in: receiver, stall: stall, congestionControl: congestionControl, hashed: hashed)
            }
            done.signal()
        }.start()
        Thread.sleep(forTimeInterval: settle)
        let outcome = try NumberedDatagrams(count: probes, payload: 64, interval: 0.02)
            .run(from: sender, senderAddress, to: receiver, receiverAddress, drain: drain)
        done.wait()
        guard let result = transfer.result else { throw TestSocket.Failure(what: "the bulk flow gave no result", code: 0) }
        return ProbedBulkFlow(transfer: try result.get(), probes: outcome, oneWay: outcome.arrivals.map(\.oneWay).sorted())
    }
}

import EngineBenchIO
import Foundation
import LinkcondBase
import LinkEmulation

/// What the scheduler's static type costs per frame: `offer` on a model whose body is opaque (never
/// inlined, so only the call differs), called through a specialized generic parameter, through an
/// unspecialized one (what the engine's loop gets: it lives in another module than the model), and through
/// an existential. Nanoseconds per call.
enum EngineBenchDispatch {
    static func measure(calls: Int = 20_000_000) -> (specialized: Double, unspecialized: Double, existential: Double) {
        let frame = UnsafeMutableRawBufferPointer.allocate(byteCount: 1514, alignment: 64)
        defer { frame.deallocate() }
        frame.initializeMemory(as: UInt8.self, repeating: 0)
        let model = OpaqueModel()
        let specialized = time { offerAll(model, frame, calls) }
        let unspecialized = time { offerAllUnspecialized(model, frame, calls) }
        let existential = time { offerAllExistential(makeExistential(), frame, calls) }
        return (specialized / Double(calls), unspecialized / Double(calls), existential / Double(calls))
    }

    private static func time(_ body: () -> Void) -> Double {
        let start = MonotonicClock.nanoseconds()
        body()
        return Double(MonotonicClock.nanoseconds() - start)
    }

    @inline(never)
    private static func offerAll<S: FrameScheduler>(_ scheduler: S, _ frame: UnsafeMutableRawBufferPointer, _ calls: Int) {
        var forwarded = 0
        for index in 0..<calls where scheduler.offer(frame, at: UInt64(index)) == .forwardNow { forwarded += 1 }
        precondition(forwarded == calls)
    }

    @inline(never)
    @_semantics("optimize.sil.specialize.generic.never")
    private static func offerAllUnspecialized<S: FrameScheduler>(_ scheduler: S, _ frame: UnsafeMutableRawBufferPointer, _ calls: Int) {
        var forwarded = 0
        for index in 0..<calls where scheduler.offer(frame, at: UInt64(index)) == .forwardNow { forwarded += 1 }
        precondition(forwarded == calls)
    }

    @inline(never)
    private static func makeExistential() -> any FrameScheduler {
        CommandLine.arguments.count > 99 ? FixedDelayScheduler(delay: 0) : OpaqueModel()
    }

    @inline(never)
    private static func offerAllExistential(_ scheduler: any FrameScheduler, _ frame: UnsafeMutableRawBufferPointer, _ calls: Int) {
        var forwarded = 0
        for index in 0..<calls where scheduler.offer(frame, at: UInt64(index)) == .forwardNow { forwarded += 1 }
        precondition(forwarded == calls)
    }
}

/// A pass-through model whose `offer` is never inlined into its caller.
private final class OpaqueModel: FrameScheduler {
    private var offered: UInt64 = 0

    @inline(never)
    func offer(_ frame: UnsafeMutableRawBufferPointer, at now: MonotonicNanoseconds) -> FrameVerdict {
        offered &+= 1
        return .forwardNow
    }

    var nextDeparture: MonotonicNanoseconds? { nil }

    func departDue(at now: MonotonicNanoseconds, _ send: (UnsafeRawBufferPointer, MonotonicNanoseconds) -> Void) {}
}

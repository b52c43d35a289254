import Foundation
import LinkEmulation
import PacketEngine

/// How much the scheduler's type costs per frame: `offer` called through a generic parameter
/// (specialized here) and through an existential, on a 1,514-byte frame, in nanoseconds per call. The
/// engine's direction loop lives in another module and is not specialized, so it pays about the
/// existential's price; either is a few nanoseconds against the microsecond a frame costs in system calls.
enum EngineBenchDispatch {
    static func measure(calls: Int = 20_000_000) -> (generic: Double, existential: Double) {
        let frame = UnsafeMutableRawBufferPointer.allocate(byteCount: 1514, alignment: 64)
        defer { frame.deallocate() }
        frame.initializeMemory(as: UInt8.self, repeating: 0)
        let concrete = PassThroughScheduler()
        let generic = time { offerAll(concrete, frame, calls) }
        let existential = time { offerAllExistential(makeExistential(), frame, calls) }
        return (generic / Double(calls), existential / Double(calls))
    }

    private static func time(_ body: () -> Void) -> Double {
        let start = MonotonicClock.now()
        body()
        return Double(MonotonicClock.now() - start)
    }

    @inline(never)
    private static func offerAll<S: FrameScheduler>(_ scheduler: S, _ frame: UnsafeMutableRawBufferPointer, _ calls: Int) {
        var forwarded = 0
        for index in 0..<calls where scheduler.offer(frame, at: UInt64(index)) == .forwardNow { forwarded += 1 }
        precondition(forwarded == calls)
    }

    @inline(never)
    private static func makeExistential() -> any FrameScheduler {
        CommandLine.arguments.count > 99 ? FixedDelayScheduler(delay: 0) : PassThroughScheduler()
    }

    @inline(never)
    private static func offerAllExistential(_ scheduler: any FrameScheduler, _ frame: UnsafeMutableRawBufferPointer, _ calls: Int) {
        var forwarded = 0
        for index in 0..<calls where scheduler.offer(frame, at: UInt64(index)) == .forwardNow { forwarded += 1 }
        precondition(forwarded == calls)
    }
}

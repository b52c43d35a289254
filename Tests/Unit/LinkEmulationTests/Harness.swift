import LinkEmulation
import Profiles
import XCTest

/// Drives a ``DirectionEmulator`` the way the engine's I/O does, under an injected clock: before each
/// arrival it lets every frame due by then leave, then offers the frame; a forwarded frame leaves at its
/// arrival. Everything that reached the wire is recorded with its time.
final class Harness {
    /// A frame that reached the wire.
    struct Departure {
        var bytes: [UInt8]
        var time: UInt64
        var id: UInt64 { FrameBuilder.id(of: bytes) }
    }

    let emulator: DirectionEmulator
    private(set) var departures: [Departure] = []
    private(set) var verdicts: [FrameVerdict] = []
    private(set) var now: UInt64 = 0

    init(_ conditions: LinkConditions, _ options: DirectionOptions) {
        emulator = DirectionEmulator(conditions: conditions, options: options)
    }

    convenience init(_ conditions: LinkConditions, direction: LinkDirection = .uplink, seed: UInt64 = 1) {
        self.init(conditions, DirectionOptions(direction: direction, seed: seed))
    }

    /// Offers `frame` at `time` (not earlier than the previous call) and returns the verdict.
    @discardableResult
    func offer(_ frame: [UInt8], at time: UInt64) -> FrameVerdict {
        advance(to: time)
        var bytes = frame
        let verdict = bytes.withUnsafeMutableBytes { emulator.offer($0, at: time) }
        if verdict == .forwardNow { departures.append(Departure(bytes: bytes, time: time)) }
        verdicts.append(verdict)
        return verdict
    }

    /// Lets every frame due by `time` leave, checking that none leaves late or out of time order.
    func advance(to time: UInt64) {
        precondition(time >= now, "time runs forwards")
        while let next = emulator.nextDeparture, next <= time {
            let before = departures.count
            emulator.departDue(at: next) { frame, due in
                XCTAssertLessThanOrEqual(due, next, "a frame handed out before it was due")
                departures.append(Departure(bytes: Array(frame), time: due))
            }
            XCTAssertGreaterThan(departures.count, before, "departDue at nextDeparture sent nothing")
        }
        now = time
    }

    /// Lets everything still held leave.
    func drain() {
        while let next = emulator.nextDeparture { advance(to: next) }
    }

    /// The departure time of each id (the first copy).
    var departureTimes: [UInt64: UInt64] {
        var times: [UInt64: UInt64] = [:]
        for departure in departures where times[departure.id] == nil { times[departure.id] = departure.time }
        return times
    }
}

/// Statistical checks: an observation must lie within 3.29 standard deviations of its expectation
/// (two-sided 0.1%: a correct model fails about once in a thousand runs of a given seed; the seeds are
/// fixed, so a run either passes or fails deterministically).
func assertWithinBound(
    _ observed: Double, expected: Double, standardDeviation: Double, _ message: @autoclosure () -> String = "",
    file: StaticString = #filePath, line: UInt = #line
) {
    let bound = 3.29 * standardDeviation
    XCTAssert(
        abs(observed - expected) <= bound,
        "\(message()): observed \(observed), expected \(expected) ± \(bound) (3.29σ)", file: file, line: line)
}

/// Nanoseconds per millisecond and second, for readable times.
let ms: UInt64 = 1_000_000
let second: UInt64 = 1_000_000_000
/// A start time that is not 0, so nothing depends on the clock's origin.
let t0: UInt64 = 5_000 * second + 123_456

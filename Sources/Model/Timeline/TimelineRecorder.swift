import Foundation
import Glibc
import LinkcondBase
import LinkcondSystem
import Synchronization

/// The error type of the timeline layer.
public enum TimelineError: Error, Sendable, CustomStringConvertible {
    /// A file operation failed with `errno`.
    case io(path: String, operation: String, errno: Int32)
    /// A value could not be encoded or decoded.
    case encoding(String)

    /// The path, what failed and the system's reason.
    public var description: String {
        switch self {
        case let .io(path, operation, code): "\(path): cannot \(operation): \(String(cString: strerror(code)))"
        case let .encoding(detail): "cannot encode a timeline event: \(detail)"
        }
    }
}

/// Appends events to `events.jsonl` as they happen: one JSON object a line, written with `write(2)`
/// straight to the file (no user-space buffer), so a crash or a kill loses nothing already recorded.
/// Thread-safe; events from all lanes go through one recorder, in the order they are recorded.
public final class TimelineRecorder: Sendable {
    private struct State: ~Copyable {
        let file: OwnedFileDescriptor
        var count = 0
    }

    /// The file events go to.
    public let path: String
    /// CLOCK_MONOTONIC nanoseconds at the run's start: `t = now - origin`.
    public let origin: UInt64
    private let state: Mutex<State>
    private let observers: Mutex<[@Sendable (TimelineEvent) -> Void]> = Mutex([])

    /// Creates (or truncates) the file at `path` and starts the run's clock.
    public init(path: String, origin: UInt64 = MonotonicClock.nanoseconds()) throws(TimelineError) {
        let file: OwnedFileDescriptor
        do throws(SystemError) {
            file = try OwnedFileDescriptor.open(path, .writeOnly, options: [.create, .truncate, .append])
        } catch {
            throw .io(path: path, operation: "create", errno: error.errno.rawValue)
        }
        self.path = path
        self.origin = origin
        state = Mutex(State(file: file))
    }

    /// Nanoseconds since the run's start, now.
    public func now() -> UInt64 {
        MonotonicClock.nanoseconds() &- origin
    }

    /// Converts a CLOCK_MONOTONIC time (as monitors stamp their updates) into run time.
    public func runTime(ofMonotonic time: UInt64) -> UInt64 {
        time >= origin ? time - origin : 0
    }

    /// Calls `observer` with every event recorded from now on (for live progress lines).
    public func observe(_ observer: @escaping @Sendable (TimelineEvent) -> Void) {
        observers.withLock { $0.append(observer) }
    }

    /// Appends one event and returns it.
    @discardableResult
    public func record(_ event: TimelineEvent) throws(TimelineError) -> TimelineEvent {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data: Data
        do {
            data = try encoder.encode(event)
        } catch {
            throw .encoding("\(error)")
        }
        var line = [UInt8](data)
        line.append(0x0a)
        let path = self.path
        try state.withLock { (state: inout State) throws(TimelineError) in
            do throws(SystemError) {
                try state.file.descriptor.writeAll(line)
            } catch {
                throw .io(path: path, operation: "append to", errno: error.errno.rawValue)
            }
            state.count += 1
        }
        for observer in observers.withLock({ $0 }) { observer(event) }
        return event
    }

    /// Records an event stamped now.
    @discardableResult
    public func record(
        _ lane: TimelineLane, _ kind: String, _ summary: String, state: String? = nil, details: [String: TimelineValue] = [:]
    ) throws(TimelineError) -> TimelineEvent {
        try record(TimelineEvent(t: now(), lane: lane, kind: kind, summary: summary, state: state, details: details))
    }

    /// Events recorded so far.
    public var count: Int { state.withLock { $0.count } }
}

/// Reads an `events.jsonl` back, in time order. A last line cut short by a crash is skipped, not fatal;
/// any other unreadable line is reported with its line number.
public enum TimelineReader {
    /// What `read` found.
    public struct Result: Sendable {
        /// The events, in time order.
        public var events: [TimelineEvent]
        /// True when the file ended in a partial line (the writer died mid-line).
        public var truncatedTail: Bool
    }

    /// Reads the file at `path`; throws when it cannot be read or a line other than the last is not an event.
    public static func read(path: String) throws(TimelineError) -> Result {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .io(path: path, operation: "read", errno: errno == 0 ? ENOENT : errno)
        }
        let decoder = JSONDecoder()
        var events: [TimelineEvent] = []
        let lines = data.split(separator: 0x0a, omittingEmptySubsequences: false)
        var truncated = false
        for (number, line) in lines.enumerated() where !line.isEmpty {
            do {
                events.append(try decoder.decode(TimelineEvent.self, from: Data(line)))
            } catch {
                if number == lines.count - 1 {
                    truncated = true
                } else {
                    throw .encoding("\(path):\(number + 1): not a timeline event (\(error))")
                }
            }
        }
        // The file is in the order events were recorded; an event stamped with the time its cause was
        // seen (a kernel notification read a moment before it was recorded) can sit after a later one.
        // Readers get them in time order, ties kept in file order.
        let ordered = events.enumerated().sorted { ($0.element.t, $0.offset) < ($1.element.t, $1.offset) }.map(\.element)
        return Result(events: ordered, truncatedTail: truncated)
    }
}

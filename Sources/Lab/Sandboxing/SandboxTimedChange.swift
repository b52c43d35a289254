import Glibc
import JSONDocument
import LinkcondBase

extension SandboxState {
    /// Conditions put on for a while (`apply --for 30s`): what to put back on which links, and when. The
    /// process that waits (the command, the API server) puts it back at ``deadline``, or at once when it is
    /// interrupted; when that process is gone, the next command that changes the sandbox after the deadline
    /// does (``holder`` proves which process it was). Any other change of those links ends it: the newer
    /// change wins, and nothing is put back over it.
    public struct TimedChange: Sendable, Equatable {
        /// The links the timed conditions are on.
        public var links: [String]
        /// What each of them held before (a link without an entry was clear): what comes back.
        public var restore: [String: AppliedConditions]
        /// The change that put the timed conditions on (``SandboxState/generation``).
        public var generation: UInt64
        /// When the conditions end, `CLOCK_MONOTONIC` nanoseconds (this boot; the store goes with a reboot).
        public var deadline: UInt64
        /// The same moment, ISO 8601, for people.
        public var endsAt: String
        /// The process that puts the conditions back.
        public var holder: Int32
        /// Its start time (`/proc/PID/stat`), which proves it is that process and not a later one with its pid.
        public var holderStartTime: UInt64

        /// A timed change of `links` that puts `restore` back `seconds` from now, held by this process.
        public init(links: [String], restore: [String: AppliedConditions], generation: UInt64, seconds: Double) {
            self.links = links
            self.restore = restore
            self.generation = generation
            deadline = MonotonicClock.nanoseconds() &+ UInt64(max(0, seconds) * 1e9)
            var wall = time(nil) + Int(seconds.rounded(.up))
            var parts = tm()
            gmtime_r(&wall, &parts)
            var text = [CChar](repeating: 0, count: 32)
            let length = strftime(&text, text.count, "%Y-%m-%dT%H:%M:%SZ", &parts)
            endsAt = String(decoding: text.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            holder = getpid()
            holderStartTime = ProcessInspector.startTime(getpid()) ?? 0
        }

        /// True once the deadline has passed.
        public var isDue: Bool { MonotonicClock.nanoseconds() >= deadline }

        /// True while the process that holds it runs (the same process: its start time agrees).
        public var holderIsRunning: Bool {
            guard let started = ProcessInspector.startTime(holder) else { return false }
            return started == holderStartTime && ProcessInspector.stat(holder)?.state != "Z"
        }

        var jsonValue: JSONValue {
            func number(_ value: UInt64) -> JSONValue { .number(JSONNumber(value: Double(value), literal: String(value))) }
            return .object([
                ("deadline", number(deadline)), ("endsAt", .string(endsAt)), ("generation", number(generation)),
                ("holder", .number(JSONNumber(Int(holder)))), ("holderStartTime", number(holderStartTime)),
                ("links", .array(links.map(JSONValue.string))),
                ("restore", .object(restore.sorted { $0.key < $1.key }.map { ($0.key, $0.value.jsonValue) })),
            ])
        }

        init(file object: FileObject) throws(SandboxState.FileProblem) {
            links = try object.optionalStrings("links") ?? []
            generation = try object.integer("generation")
            deadline = try object.integer("deadline")
            endsAt = try object.string("endsAt")
            holder = try object.integer("holder")
            holderStartTime = try object.integer("holderStartTime")
            restore = [:]
            if let members = object.member("restore"), members != .null {
                for (link, value) in try FileObject(members, path: object.path + "restore.").members {
                    restore[link] = try AppliedConditions(file: FileObject(value, path: object.path + "restore.\(link)."))
                }
            }
        }
    }
}

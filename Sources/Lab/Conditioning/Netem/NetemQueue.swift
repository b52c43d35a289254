import Glibc
import Profiles
import RouteNetlink

/// The qdisc that holds a direction's queue when netem's own `limit` (a DropTail in packets) cannot: it
/// sits under a `tbf` that carries the direction's rate, itself under the netem (see ``NetemStack``).
enum NetemQueueQdisc: Sendable, Equatable {
    /// `bfifo limit BYTES`: DropTail by bytes (and by time: rate × time, see ``NetemMapping/queueQdisc(for:clock:)``).
    case bfifo(bytes: UInt32)
    /// `pfifo_head_drop limit N`: DropHead in packets.
    case headDrop(packets: UInt32)
    /// `codel limit N target T interval I`.
    case codel(CoDelOptions)
    /// `pie limit N target T tupdate U alpha A beta B`.
    case pie(PIEOptions)
    /// `red limit L min A max B avpkt 1000 burst N probability P bandwidth RATE [adaptive]`: RED and ARED.
    case red(REDOptions)

    /// The qdisc kind (`TCA_KIND`).
    var kind: String {
        switch self {
        case .bfifo: "bfifo"
        case .headDrop: "pfifo_head_drop"
        case .codel: "codel"
        case .pie: "pie"
        case .red: "red"
        }
    }

    /// The request's kind and options.
    var options: QdiscOptions {
        switch self {
        case .bfifo(let bytes): .bfifo(limit: bytes)
        case .headDrop(let packets): .pfifoHeadDrop(limit: packets)
        case .codel(let options): .codel(options)
        case .pie(let options): .pie(options)
        case .red(let options): .red(options)
        }
    }

    /// The most packets it can hold (a byte limit counted in 64-byte packets), for sizing netem's limit.
    var packetCapacity: UInt32 {
        switch self {
        case .bfifo(let bytes): bytes / 64 + 1
        case .headDrop(let packets): packets
        case .codel(let options): options.limit
        case .pie(let options): options.limit
        case .red(let options): options.limit / 64 + 1
        }
    }

    /// The bytes it can hold at most in `frame`-byte frames, for the tbf's own limit (which only sizes the
    /// bfifo the kernel puts under a new tbf until this qdisc is grafted in its place).
    func byteCapacity(frame: UInt32) -> UInt32 {
        if case .bfifo(let bytes) = self { return bytes }
        if case .red(let options) = self { return options.limit }
        return UInt32(clamping: UInt64(packetCapacity) * UInt64(frame))
    }

    /// The queue in profile terms (a DropTail by time reads back as the bytes it was mapped to).
    var linkQueue: LinkQueue {
        switch self {
        case .bfifo(let bytes): .dropTail(.bytes(UInt64(bytes)))
        case .headDrop(let packets): LinkQueue(.dropHead, limit: .packets(packets))
        case .codel(let options):
            LinkQueue(
                .codel(CoDelSettings(target: UInt64(options.target) * 1000, interval: UInt64(options.interval) * 1000)),
                limit: .packets(options.limit))
        case .pie(let options):
            LinkQueue(
                .pie(
                    PIESettings(
                        target: UInt64(options.target) * 1000, updateInterval: UInt64(options.updateInterval) * 1000,
                        alpha: Double(options.alpha) / 16, beta: Double(options.beta) / 16)),
                limit: .packets(options.limit))
        case .red(let options): LinkQueue(.red(Self.settings(of: options)), limit: .bytes(UInt64(options.limit)))
        }
    }

    /// A red's settings; the kernel keeps the weight the burst gave (`Wlog`), not the burst: the burst
    /// that gives that weight. The probability is the kernel's 32-bit fraction to 6 significant digits, as
    /// tc prints it (`%lg`): 1% is held as 0.0099999998.
    static func settings(of options: REDOptions) -> REDSettings {
        let scale = pow(10, 5 - floor(log10(max(options.probability, 1e-12))))
        var settings = REDSettings(
            minimum: UInt64(options.minimum), maximum: UInt64(options.maximum), probability: (options.probability * scale).rounded() / scale,
            adaptive: options.adaptive)
        settings.burst = settings.burst(givingWeightLog: Int(options.weightLog))
        return settings
    }

    /// The qdisc `qdisc` is, when it is one of these kinds.
    static func decode(_ qdisc: Qdisc) throws(RouteNetlinkError) -> NetemQueueQdisc? {
        switch qdisc.kind {
        case "bfifo": .bfifo(bytes: try FifoOptions.decodeLimit(options: qdisc.options))
        case "pfifo_head_drop": .headDrop(packets: try FifoOptions.decodeLimit(options: qdisc.options))
        case "codel": .codel(try CoDelOptions.decode(options: qdisc.options))
        case "pie": .pie(try PIEOptions.decode(options: qdisc.options))
        case "red": .red(try REDOptions.decode(options: qdisc.options))
        default: nil
        }
    }

    /// What differs between this (sent) and `read` (the kernel's). The kernel keeps codel's times in 1024 ns
    /// units (they read back up to 2 µs lower), pie's target in 64 ns ticks (up to 1 µs lower) and pie's
    /// `tupdate` in jiffies (rounded up, by at most 10 ms at HZ=100).
    func differences(read: NetemQueueQdisc) -> [String] {
        func time(_ microseconds: UInt32) -> String { TrafficControlText.time(nanoseconds: UInt64(microseconds) * 1000) }
        var differences: [String] = []
        func check(_ name: String, _ sent: UInt32, _ held: UInt32, below: UInt32 = 0, above: UInt32 = 0, times: Bool = true) {
            if held + below < sent || held > sent + above {
                differences.append("\(kind) \(name): sent \(times ? time(sent) : "\(sent)"), kernel has \(times ? time(held) : "\(held)")")
            }
        }
        switch (self, read) {
        case let (.bfifo(sent), .bfifo(held)): check("limit", sent, held, times: false)
        case let (.headDrop(sent), .headDrop(held)): check("limit", sent, held, times: false)
        case let (.codel(sent), .codel(held)):
            check("limit", sent.limit, held.limit, times: false)
            check("target", sent.target, held.target, below: 2)
            check("interval", sent.interval, held.interval, below: 2)
            if sent.ecn != held.ecn { differences.append("codel ecn: sent \(sent.ecn), kernel has \(held.ecn)") }
        case let (.pie(sent), .pie(held)):
            check("limit", sent.limit, held.limit, times: false)
            check("target", sent.target, held.target, below: 1)
            check("tupdate", sent.updateInterval, held.updateInterval, above: 10_000)
            check("alpha", sent.alpha, held.alpha, times: false)
            check("beta", sent.beta, held.beta, times: false)
            if sent.ecn != held.ecn { differences.append("pie ecn: sent \(sent.ecn), kernel has \(held.ecn)") }
        case let (.red(sent), .red(held)):
            check("limit", sent.limit, held.limit, times: false)
            check("min", sent.minimum, held.minimum, times: false)
            check("max", sent.maximum, held.maximum, times: false)
            check("Wlog", UInt32(sent.weightLog), UInt32(held.weightLog), times: false)
            check("Plog", UInt32(sent.probabilityLog), UInt32(held.probabilityLog), times: false)
            check("Scell_log", UInt32(sent.cellLog), UInt32(held.cellLog), times: false)
            // ARED moves max_P as it runs.
            if !sent.adaptive { check("max_P", sent.maxProbability, held.maxProbability, times: false) }
            if sent.adaptive != held.adaptive { differences.append("red adaptive: sent \(sent.adaptive), kernel has \(held.adaptive)") }
        default: differences.append("queue: sent \(kind), kernel has \(read.kind)")
        }
        return differences
    }
}

/// What a netem leaf of the tree carries: the netem itself and, for a queue that netem's `limit` cannot be,
/// a `tbf` with the direction's rate under the netem's class `:1` and the queue's qdisc under the tbf's
/// class `:1`:
///
/// ```
/// tc qdisc replace dev IF parent P handle 10: netem delay 50ms limit N          (no rate)
/// tc qdisc replace dev IF parent 10:1 handle 110: tbf rate 2mbit burst B limit L
/// tc qdisc replace dev IF parent 110:1 handle 210: codel limit 1000 target 5ms interval 100ms
/// ```
///
/// netem hands each packet to its child when its delay is over, so the queue forms where the rate is and
/// CoDel and PIE see how long frames wait for it, as in the userspace engine. netem's limit counts the
/// packets of its children too: it is the derived limit plus what the queue can hold.
struct NetemStack: Sendable, Equatable {
    /// The netem's parameters (without the rate when a tbf carries it).
    var netem: NetemParameters
    /// The tbf's rate in bytes per second, and the queue under it; nil when netem's `limit` is the queue.
    var rate: UInt64?
    var queue: NetemQueueQdisc?

    /// The tbf for frames of at most `frame` bytes: a bucket of one frame (a smaller one would drop every
    /// frame longer than it) plus 4 ms at the rate, so the shaper lets out no more than that at line rate
    /// after an idle moment. The 4 ms are what tbf's timer may wake late without the link losing rate —
    /// tc-tbf(8)'s minimum, rate / HZ, at the common HZ of 250: tokens above the bucket are lost, so with a
    /// bucket of one frame every late wake-up cost its lateness (in the kernel VM, 9 Mbit/s came out at
    /// 7.4–7.7 Mbit/s, and at 7.9–8.0 with a millisecond more).
    func bucket(frame: UInt32) -> TokenBucketOptions? {
        guard let rate, let queue else { return nil }
        let burst = UInt64(frame) + rate * 4 / 1000
        return TokenBucketOptions(rate: rate, burst: UInt32(clamping: burst), limit: queue.byteCapacity(frame: frame))
    }

    /// The tbf's and the queue's handles under a netem of handle `netem`: its major plus 0x100 and 0x200,
    /// so they alternate with the netem's and never meet the old tree's.
    static func handles(under netem: TrafficControlHandle) -> (bucket: TrafficControlHandle, queue: TrafficControlHandle) {
        (TrafficControlHandle(major: netem.major &+ 0x100, minor: 0), TrafficControlHandle(major: netem.major &+ 0x200, minor: 0))
    }

    /// The class a qdisc's child hangs from: `MAJOR:1`.
    static func childClass(of handle: TrafficControlHandle) -> TrafficControlHandle { TrafficControlHandle(major: handle.major, minor: 1) }
}

/// A netem leaf as the kernel holds it: the netem, and the tbf and queue under it, if any.
struct NetemStackReading: Sendable {
    var netem: NetemParameters
    var bucket: TokenBucketOptions?
    var queue: NetemQueueQdisc?
    /// A child of the tbf of a kind linkcond does not put there.
    var otherQueueKind: String?

    /// Reads the netem `qdisc` and its children among `own` (the qdiscs of its interface).
    init(netem qdisc: Qdisc, among own: [Qdisc], clock: PacketSchedulerClock) throws(RouteNetlinkError) {
        netem = try NetemParameters.decode(options: qdisc.options, clock: clock)
        let bucketClass = NetemStack.childClass(of: qdisc.handle)
        guard let tbf = own.first(where: { $0.parent == bucketClass && $0.kind == "tbf" }) else { return }
        bucket = try TokenBucketOptions.decode(options: tbf.options, clock: clock)
        let queueClass = NetemStack.childClass(of: tbf.handle)
        guard let child = own.first(where: { $0.parent == queueClass }) else { return }
        queue = try NetemQueueQdisc.decode(child)
        if queue == nil { otherQueueKind = child.kind }
    }

    /// What the leaf does, in profile terms: the netem's conditions with the tbf's rate and the queue.
    var conditions: LinkConditions {
        var conditions = NetemMapping.conditions(from: netem)
        if let bucket { conditions.rate = bucket.rate * 8 }
        if let queue {
            conditions.queue = queue.linkQueue
            conditions.queueLimit = nil
        }
        return conditions
    }

    /// What differs from `sent`; with `frame`, the tbf's bucket and limit are compared too (the installer
    /// knows the interface's frame size; a reader of the record does not).
    func differences(sent: NetemStack, frame: UInt32?, clock: PacketSchedulerClock) -> [String] {
        var differences = NetemDescription.differences(sent: sent.netem, read: netem, clock: clock)
        guard let rate = sent.rate, let queue = sent.queue else {
            if let bucket { differences.append("a tbf (rate \(TrafficControlText.rate(bitsPerSecond: bucket.rate * 8))) under the netem, not sent") }
            return differences
        }
        guard let bucket else { return differences + ["no tbf under the netem after installing it"] }
        if bucket.rate != rate {
            differences.append(
                "tbf rate: sent \(TrafficControlText.rate(bitsPerSecond: rate * 8)), kernel has \(TrafficControlText.rate(bitsPerSecond: bucket.rate * 8))")
        }
        if let frame, let expected = sent.bucket(frame: frame) {
            // The kernel reports the bucket as the time it lasts at the rate, in 64 ns ticks.
            let slack = UInt64(rate / 1_000_000 + 2)
            let (low, high) = (UInt64(min(bucket.burst, expected.burst)), UInt64(max(bucket.burst, expected.burst)))
            if high - low > slack { differences.append("tbf burst: sent \(expected.burst), kernel has \(bucket.burst)") }
            if bucket.limit != expected.limit { differences.append("tbf limit: sent \(expected.limit), kernel has \(bucket.limit)") }
        }
        guard let held = self.queue else {
            return differences + ["no \(queue.kind) under the tbf after installing it" + (otherQueueKind.map { " (the kernel has \($0))" } ?? "")]
        }
        return differences + queue.differences(read: held)
    }
}

/// Why netem cannot hold a direction's queue: what was asked and what the kernel's qdiscs lack.
struct NetemQueueRefusal: Error {
    var what: String
    var why: String
}

extension NetemMapping {
    /// The frame linkcond assumes when it does not know the interface's MTU: 1500 bytes and the Ethernet header.
    static let ethernetFrame: UInt32 = 1514

    /// The netem leaf for `conditions` (see ``NetemStack``), with `extraDelay` added to the netem's delay.
    /// `clock` is the kernel's packet-scheduler clock (a red's idle-damping table is in its ticks).
    static func stack(
        for conditions: LinkConditions, extraDelay: UInt64 = 0,
        distributions: (String) throws(RouteNetlinkError) -> [Int16] = { name throws(RouteNetlinkError) in try NetemDistribution.load(name) },
        clock: PacketSchedulerClock
    ) throws(RouteNetlinkError) -> NetemStack {
        var netem = try parameters(for: conditions, extraDelay: extraDelay, distributions: distributions)
        let queue: NetemQueueQdisc?
        do {
            queue = try queueQdisc(for: conditions, clock: clock)
        } catch {
            throw .invalidArgument("\(error.what): \(error.why)")
        }
        guard let queue, let rate = netem.rate else { return NetemStack(netem: netem) }
        netem.rate = nil
        netem.limit = UInt32(clamping: UInt64(netem.limit) + UInt64(queue.packetCapacity))
        return NetemStack(netem: netem, rate: rate, queue: queue)
    }

    /// The qdisc that carries `conditions`' queue under a tbf: nil when netem's own `limit` is the queue (no
    /// queue, or a DropTail in packets). A DropTail by time becomes a bfifo of rate × time bytes plus one
    /// full frame, so a full-size frame is accepted exactly when the engine accepts it (when what waits
    /// ahead of it leaves within the time). RED and ARED become a red with the parameters tc works out for
    /// the same arguments (``REDOptions/evaluate(limit:minimum:maximum:weightLog:probability:averagePacket:bytesPerSecond:adaptive:clock:)``,
    /// the direction's rate as its `bandwidth`). Throws what the kernel's qdiscs cannot hold: a DropHead,
    /// CoDel or PIE limit in bytes, a RED limit that is not in bytes or parameters tc would refuse, times
    /// that are not whole microseconds, PIE weights that are not sixteenths, and any of these queues
    /// without a rate.
    static func queueQdisc(for conditions: LinkConditions, clock: PacketSchedulerClock) throws(NetemQueueRefusal) -> NetemQueueQdisc? {
        guard let queue = conditions.queue else { return nil }
        let name = queue.discipline.name
        if queue.discipline == .dropTail, queue.limit.isPackets { return nil }
        guard let rate = conditions.rate else {
            throw NetemQueueRefusal(
                what: "a \(name) queue of \(queue.limit) without a rate",
                why: "linkcond puts such a queue under a tbf that carries the direction's rate, and without one netem's own "
                    + "queue (a DropTail in packets, its 'limit') is all there is; give the direction a \"rate\" or write the limit in packets")
        }
        func packets(_ discipline: String) throws(NetemQueueRefusal) -> UInt32 {
            guard case .packets(let count) = queue.limit else {
                throw NetemQueueRefusal(
                    what: "a \(name) queue limited to \(queue.limit)",
                    why: "the kernel's \(discipline) counts its limit in packets; write the limit in packets (\"1000 packets\")")
            }
            return count
        }
        func microseconds(_ nanoseconds: UInt64, _ parameter: String) throws(NetemQueueRefusal) -> UInt32 {
            guard nanoseconds % 1000 == 0, let value = UInt32(exactly: nanoseconds / 1000) else {
                throw NetemQueueRefusal(
                    what: "a \(name) \(parameter) of \(Quantity.formatTime(nanoseconds))",
                    why: "the kernel's \(name) takes whole microseconds up to \(UInt32.max) µs")
            }
            return value
        }
        func sixteenths(_ weight: Double, _ parameter: String) throws(NetemQueueRefusal) -> UInt32 {
            let scaled = weight * 16
            guard scaled == scaled.rounded(), (0...32).contains(scaled) else {
                throw NetemQueueRefusal(
                    what: "a pie \(parameter) of \(weight)",
                    why: "the kernel's pie takes \(parameter) in sixteenths from 0 to 2 (0.125 is 2/16); use a multiple of 0.0625")
            }
            return UInt32(scaled)
        }
        switch queue.discipline {
        case .dropTail:
            let bytes: UInt64
            switch queue.limit {
            case .bytes(let value): bytes = value
            case .time(let nanoseconds): bytes = UInt64((Double(rate) / 8 * Double(nanoseconds) / 1e9).rounded(.up)) + UInt64(ethernetFrame)
            case .packets: return nil
            }
            guard let limit = UInt32(exactly: bytes) else {
                throw NetemQueueRefusal(what: "a DropTail queue of \(queue.limit)", why: "the kernel's bfifo holds at most \(UInt32.max) bytes")
            }
            return .bfifo(bytes: limit)
        case .dropHead:
            return .headDrop(packets: try packets("pfifo_head_drop"))
        case .codel(let settings):
            return .codel(
                CoDelOptions(
                    target: try microseconds(settings.target, "target"), interval: try microseconds(settings.interval, "interval"),
                    limit: try packets("codel")))
        case .pie(let settings):
            return .pie(
                PIEOptions(
                    target: try microseconds(settings.target, "target"), updateInterval: try microseconds(settings.updateInterval, "tupdate"),
                    alpha: try sixteenths(settings.alpha, "alpha"), beta: try sixteenths(settings.beta, "beta"), limit: try packets("pie")))
        case .red(let settings):
            let what = "a\(settings.adaptive ? "n ARED" : " RED") queue of min \(settings.minimum) B, max \(settings.maximum) B"
            guard case .bytes(let bytes) = queue.limit, let limit = UInt32(exactly: bytes),
                let minimum = UInt32(exactly: settings.minimum), let maximum = UInt32(exactly: settings.maximum)
            else {
                throw NetemQueueRefusal(
                    what: "\(what), limited to \(queue.limit)",
                    why: "the kernel's red counts its limit and thresholds in bytes, at most \(UInt32.max) (32 bits)")
            }
            guard let weightLog = settings.weightLog else {
                throw NetemQueueRefusal(
                    what: "\(what) and a burst of \(settings.effectiveBurst) packets",
                    why: "tc refuses a burst below 1 + min/avpkt (\(1 + settings.minimum / REDSettings.averagePacket) packets of \(REDSettings.averagePacket) bytes)")
            }
            guard
                let options = REDOptions.evaluate(
                    limit: limit, minimum: minimum, maximum: maximum, weightLog: weightLog, probability: settings.probability,
                    averagePacket: UInt32(REDSettings.averagePacket), bytesPerSecond: rate / 8, adaptive: settings.adaptive, clock: clock)
            else {
                throw NetemQueueRefusal(
                    what: "\(what) at probability \(settings.probability) on \(TrafficControlText.rate(bitsPerSecond: rate))",
                    why: "tc finds no probability slope or idle-damping cell for them (Plog and Scell_log must be below 32)")
            }
            return .red(options)
        }
    }
}

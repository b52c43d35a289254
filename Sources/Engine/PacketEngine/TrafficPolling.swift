import LinkEmulation
import Synchronization

/// Whether a direction keeps polling its receive ring for a while after traffic instead of going to sleep
/// in epoll at once: a frame that finds the thread polling is read within a clock reading, where a
/// sleeping thread costs the frame a wake-up (tens of microseconds on a virtual machine, more when its
/// CPU was idle). Polling reads the ring's status word, no system call; it never lasts longer than
/// ``maximum``, stops when the thread is preempted (and for a while after a run of preempted spins,
/// ``DeparturePacer``), and does not happen when there
/// was no traffic.
public struct TrafficPolling: Sendable, Equatable {
    /// The longest a direction polls, in nanoseconds (0: never).
    ///
    /// After its own traffic a direction polls for a few times its recent gap between batches, at most
    /// this long, while most of its recent gaps were no longer than this (never after a lull).
    public var maximum: UInt64
    /// Whether a frame sent one way has the other direction poll for the reply (for at most ``maximum``,
    /// woken if it sleeps: its wake-up then overlaps the far end's work on the frame). A direction that
    /// rarely gets a frame while it polls for one is woken for that only now and then.
    public var replies: Bool

    /// Polling of at most `maximum` nanoseconds, for replies too when `replies`.
    public init(maximum: UInt64, replies: Bool) {
        self.maximum = maximum
        self.replies = replies
    }

    /// At most 100 µs, after the direction's own traffic only. Polling for replies is off: on a 2-CPU
    /// machine shared with other work it made unconditioned round trips longer, not shorter (linkcond-bench
    /// engine polling, echoes 2 ms apart, added over a bare veth pair at the median: ICMP +48.6 µs against
    /// +42.7 without polling, UDP +79.1 against +43.5, back-to-back UDP +55.1 against +42.4, with 2.3 times
    /// the engine's CPU): waking the other direction costs a system call and a context switch on a CPU
    /// the far end's work needs.
    public static let standard = TrafficPolling(maximum: 100_000, replies: false)
    /// At most 100 µs, replies included.
    public static let withReplies = TrafficPolling(maximum: 100_000, replies: true)
    /// None: a direction sleeps as soon as its ring is empty.
    public static let off = TrafficPolling(maximum: 0, replies: false)
}

/// One direction's polling: its recent gaps between batches, and the other direction's requests to poll
/// for a reply (written by that direction's thread, hence atomic).
///
/// The gaps are judged robustly, as a share: a gap no longer than the maximum is a short one, and the
/// direction polls after its traffic while at least half of its recent gaps (an average over about the
/// last eight) were short, for four times their recent length, at most the maximum. One long gap (a
/// lull, a stall) does not stop it; a run of them does, and a single frame after a lull does not start it.
final class TrafficPoller: @unchecked Sendable {
    /// How many times the recent short gap a direction polls for after its own traffic.
    static let gapsPolled: UInt64 = 4
    /// The share of short gaps (out of 256) a direction polls after its traffic from.
    static let pollingShare: UInt32 = 128
    /// A request for a reply is honoured (the direction woken for it) while at least this share of the
    /// recent ones found a frame, out of 256.
    static let acceptedScore: UInt32 = 64
    /// While it is not, one request in this many is honoured all the same, to notice when replies come back.
    static let probeEvery: UInt64 = 16

    let configuration: TrafficPolling
    /// The other direction asks this one to poll until then for a reply (monotonic nanoseconds).
    private let replyUntil = Atomic<UInt64>(0)
    /// True while this direction's thread sleeps in epoll.
    let sleeping = Atomic<Bool>(false)
    /// Whether requests for replies are worth waking this direction for.
    private let acceptsReplies = Atomic<Bool>(true)

    // The direction's own thread's: its last arrival, the share of short gaps (out of 256) and their recent
    // length, the reply request last judged and the share of requests that found a frame (out of 256).
    @exclusivity(unchecked) private var lastArrival: MonotonicNanoseconds = 0
    @exclusivity(unchecked) private(set) var shortShare: UInt32 = 0
    @exclusivity(unchecked) private(set) var shortGap: UInt64 = 0
    @exclusivity(unchecked) private var judged: MonotonicNanoseconds = 0
    /// The reply request the direction is polling for (0: none).
    @exclusivity(unchecked) private var pollingFor: MonotonicNanoseconds = 0
    @exclusivity(unchecked) private(set) var score: UInt32 = 128
    // The other direction's thread's: requests made to this one.
    @exclusivity(unchecked) private var requests: UInt64 = 0

    init(_ configuration: TrafficPolling) {
        self.configuration = configuration
    }

    // MARK: On the direction's own thread

    /// Notes a batch whose frames arrived from `first` to `last`.
    @inline(__always)
    func arrived(first: MonotonicNanoseconds, last: MonotonicNanoseconds) {
        guard configuration.maximum > 0 else { return }
        if lastArrival != 0 {
            let gap = first > lastArrival ? first - lastArrival : 0
            if gap <= configuration.maximum {
                shortShare += (256 - shortShare) / 8
                shortGap = shortGap == 0 ? gap : shortGap - shortGap / 8 + gap / 8
            } else {
                shortShare -= shortShare / 8
            }
        }
        if last > lastArrival { lastArrival = last }
    }

    /// Until when the direction polls rather than sleeps, as of `now`: after its own traffic, and for a
    /// reply the other direction asked it to poll for. 0 when it does not poll.
    @inline(__always)
    func deadline(at now: MonotonicNanoseconds) -> MonotonicNanoseconds {
        guard configuration.maximum > 0 else { return 0 }
        var until: MonotonicNanoseconds = 0
        if shortShare >= Self.pollingShare {
            until = lastArrival &+ min(configuration.maximum, shortGap &* Self.gapsPolled)
        }
        let reply = replyUntil.load(ordering: .relaxed)
        if reply > judged, reply > now, reply > until {
            until = reply
            pollingFor = reply
        }
        return until
    }

    /// Notes how a poll ended at `now`: a frame `found`, or not. A poll for a reply that ran to its end with
    /// nothing is a miss.
    @inline(__always)
    func pollEnded(found: Bool, at now: MonotonicNanoseconds) {
        guard pollingFor != 0 else { return }
        if pollingFor > judged, found || now >= pollingFor { judge(hit: found, request: pollingFor) }
        pollingFor = 0
    }

    /// Notes that frames were read at `now`: a hit for a reply request still open.
    @inline(__always)
    func received(at now: MonotonicNanoseconds) {
        let reply = replyUntil.load(ordering: .relaxed)
        if reply > judged, reply >= now { judge(hit: true, request: reply) }
    }

    /// Whether a request for a reply came after the thread decided to sleep (it then polls instead).
    @inline(__always)
    func replyRequested(after now: MonotonicNanoseconds) -> Bool {
        let reply = replyUntil.load(ordering: .sequentiallyConsistent)
        return reply > judged && reply > now
    }

    private func judge(hit: Bool, request: MonotonicNanoseconds) {
        judged = request
        score = hit ? score + (256 - score) / 8 : score - score / 8
        acceptsReplies.store(score >= Self.acceptedScore, ordering: .relaxed)
    }

    // MARK: On the other direction's thread

    /// Asks this direction to poll for a reply until `deadline`; true when it sleeps and must be woken for it.
    @inline(__always)
    func requestReply(until deadline: MonotonicNanoseconds) -> Bool {
        requests &+= 1
        guard acceptsReplies.load(ordering: .relaxed) || requests % Self.probeEvery == 0 else { return false }
        if replyUntil.load(ordering: .relaxed) < deadline { replyUntil.store(deadline, ordering: .sequentiallyConsistent) }
        return sleeping.load(ordering: .sequentiallyConsistent)
    }
}

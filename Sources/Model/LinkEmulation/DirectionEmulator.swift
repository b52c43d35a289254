import Profiles

/// One direction of the userspace engine's wire: decides for each Ethernet frame whether it is lost,
/// duplicated, corrupted, queued, delayed or reordered, and when it leaves — netem's semantics where the
/// kernel has no `sch_netem`.
///
/// Per frame, in this order:
/// 1. classify: DNS queries on the uplink (UDP or TCP to port 53), and ``DirectionOptions/targets``;
///    frames outside the targets are forwarded at once, untouched;
/// 2. loss (`loss random`, `loss gemodel`, `loss state`), or an ECN mark with `ecn`;
/// 3. duplicate and corrupt (one bit in the transport segment);
/// 4. the transmitter: the `rate` serializer or a delivery trace, then `slot`; the queue limit counts the
///    frames waiting here, and tail-drops;
/// 5. the propagation delay line: `delay`, `jitter`, `distribution`, correlation and the jitter model;
///    order kept within a delay line (under the `ordered` jitter model) unless `reorder` sends a frame
///    ahead of it; DNS queries get their own line with the DNS delay added.
///
/// Latency is therefore delay + serialization + queueing, as on a real link, where netem lets the time a
/// packet waits behind others for the rate absorb part of its delay (netem measures the delay from the
/// previous packet's departure). And jitter does not reorder under the default `ordered` model (netem
/// reorders on jitter: 65 inversions in 200 packets at `delay 30ms 15ms`): the delay is a smooth process
/// in time with the profile's distribution (``SmoothJitter``), so frames close together get close delays
/// and the spread is the profile's at any packet rate. The `netem` jitter model draws each frame's delay
/// anew and lets frames overtake, as netem does.
///
/// Smaller differences from netem, each chosen so the model says what a profile means:
/// - loss is decided before duplication, so a lost frame has no copy (netem draws both first and sends a
///   frame picked for both once); the duplicate goes through corruption, the transmitter and the delay
///   line on its own, as netem's re-enqueued copy does, but not through the loss model again;
/// - a reordered frame skips the delay line but not the transmitter (netem puts it at the head of its
///   queue, past the rate too), so reordering never lets a link carry more than its rate;
/// - slots gate the transmitter, before propagation (see `SlotGate`);
/// - correlated random loss is the Gilbert model `NetemMapping` also gives the kernel (see
///   `LossGenerator`); correlation elsewhere is netem's own (see `CorrelatedRandom`).
///
/// Time is always passed in (`CLOCK_MONOTONIC` nanoseconds); the model never reads a clock. An instance
/// belongs to one thread (see ``FrameScheduler``), `replace` included: a control thread hands the new
/// conditions to the direction's thread, which swaps them between two frames. `send` must not call back
/// into the emulator.
public final class DirectionEmulator: FrameScheduler {
    // One thread owns the emulator (see FrameScheduler), so the runtime's exclusivity checks on this
    // property would only cost time: about 25 ns of every frame's 40, measured.
    @exclusivity(unchecked) private var core: EmulatorCore

    /// An emulator applying `conditions` with `options`.
    public init(conditions: LinkConditions, options: DirectionOptions) {
        core = EmulatorCore(conditions: conditions, options: options)
    }

    /// An emulator for one direction of `profile`: its uplink (with its DNS delay) or its downlink.
    public convenience init(
        profile: Profile, direction: LinkDirection, targets: [TrafficTarget] = [],
        seed: UInt64 = UInt64.random(in: .min ... .max)
    ) {
        self.init(
            conditions: direction == .uplink ? profile.uplink : profile.downlink,
            options: DirectionOptions(direction: direction, dnsDelay: profile.dnsDelay, targets: targets, seed: seed))
    }

    /// Decides what happens to `frame`, which arrived at `now`. `.forwardNow` may come with bytes changed
    /// in place (an ECN mark, a flipped bit). A duplicate is held even when the original is forwarded.
    @inline(__always)
    public func offer(_ frame: UnsafeMutableRawBufferPointer, at now: MonotonicNanoseconds) -> FrameVerdict {
        core.offer(frame, at: now)
    }

    /// The earliest time a held frame is due, or the transmitter takes the next frame from a waiting queue
    /// (a departure may then send nothing); `nil` when nothing is held.
    public var nextDeparture: MonotonicNanoseconds? { core.nextDeparture }

    /// Hands every held frame due by `now` to `send`, in departure order (ties in the order offered).
    public func departDue(
        at now: MonotonicNanoseconds, _ send: (_ frame: UnsafeRawBufferPointer, _ due: MonotonicNanoseconds) -> Void
    ) {
        core.departDue(at: now, send)
    }

    /// Puts new conditions and options in force for frames offered from now on, at once (netem's `change`).
    ///
    /// Frames already held keep their departure times (a lower rate or a longer delay does not move
    /// them); the transmitter finishes the frames it has before new ones, at the new rate; new frames
    /// under a different delay go to a fresh delay line and may overtake held ones, as after a netem
    /// change. Loss, duplicate, corrupt and reorder state restarts only for the settings that changed; the
    /// random generator runs on (``DirectionOptions/seed`` is not reapplied); a delivery trace restarts at
    /// the next frame unless it is the same trace.
    public func replace(conditions: LinkConditions, options: DirectionOptions) {
        core.configure(conditions, options)
        previousBaseline = baseline
        baseline = core.snapshot
    }

    /// Puts back the conditions and options a ``replace(conditions:options:)`` just replaced, for a change
    /// that could not be completed (the engine rolls back an apply that came too late on another
    /// direction): the counters since the last change count again from the change before, since nothing
    /// changed for the user; only the sojourn histogram stays restarted.
    public func restore(conditions: LinkConditions, options: DirectionOptions) {
        core.configure(conditions, options)
        baseline = previousBaseline
    }

    /// Puts new conditions in force, keeping the options (see ``replace(conditions:options:)``).
    public func replace(conditions: LinkConditions) {
        replace(conditions: conditions, options: core.options)
    }

    /// The counters when the conditions were last replaced (zero before any replace), and before that.
    private var baseline = DirectionCounters()
    private var previousBaseline = DirectionCounters()

    /// The conditions in force (read-back for `show` and verification).
    public var conditions: LinkConditions { core.conditions }

    /// The options in force.
    public var options: DirectionOptions { core.options }

    /// What the direction has done since it was built, with the backlog as of now.
    public var counters: DirectionCounters { core.snapshot }

    /// What the direction has done since its conditions were last replaced (as tc counts a new qdisc), with
    /// the backlog as of now.
    public var countersSinceChange: DirectionCounters { core.snapshot.since(baseline) }

    /// Whether frames go straight through with no work: neutral conditions, no targets, no trace and no
    /// DNS delay.
    public var isPassThrough: Bool { core.isPassThrough }

    /// The queue limit in frames in force: the conditions' `queueLimit`, or the limit derived from the
    /// bandwidth-delay product that netem would get (``LinkConditions/derivedQueueLimit(extraDelay:)``).
    public var queueLimit: UInt32 { core.conditions.effectiveQueueLimit() }
}

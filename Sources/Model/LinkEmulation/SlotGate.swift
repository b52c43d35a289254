import Profiles

/// Slotting (netem's `slot MIN [MAX] [packets N] [bytes N]`): frames leave in bursts, as on Wi-Fi or
/// cellular links where the medium is granted in slots.
///
/// netem's rule (`get_slot_next` and `netem_dequeue`): a frame that becomes ready after the current slot
/// opened waits for a new slot, drawn uniformly between `MIN` and `MAX` from that moment; every frame ready
/// by the time a slot opens leaves in it. A slot closes early once it has carried `packets` frames or at
/// least `bytes` bytes (the frame that crosses the byte limit still goes, as in netem); the next slot is
/// then drawn from the moment it closed.
///
/// One difference in where, not how: netem gates slots at dequeue, after the delay line; here the gate is
/// part of the transmitter, before propagation, so its waiting frames count against the queue limit and
/// its bursts then cross the delay line. With a constant delay the departures are the same (the rule does
/// not depend on absolute time); with jitter the bursts are spread by the jitter.
struct SlotGate {
    /// The shortest wait for a slot, in nanoseconds.
    let minDelay: UInt64
    /// The longest wait, in nanoseconds; at least ``minDelay``.
    let maxDelay: UInt64
    /// The most frames per slot (netem's `INT_MAX` when unset).
    let packetsPerSlot: Int64
    /// The bytes per slot after which it closes (netem's `INT_MAX` when unset).
    let bytesPerSlot: Int64

    /// When the current slot opens (or opened); `nil` before the first frame.
    private(set) var opensAt: MonotonicNanoseconds?
    private var packetsLeft: Int64
    private var bytesLeft: Int64

    /// A gate for `slot`.
    init(_ slot: Slot) {
        minDelay = slot.minDelay
        maxDelay = max(slot.maxDelay, slot.minDelay)
        packetsPerSlot = Int64(slot.packets.map { $0 == 0 ? UInt32(Int32.max) : $0 } ?? UInt32(Int32.max))
        bytesPerSlot = Int64(slot.bytes.map { $0 == 0 ? UInt32(Int32.max) : $0 } ?? UInt32(Int32.max))
        packetsLeft = packetsPerSlot
        bytesLeft = bytesPerSlot
    }

    /// Whether `slot` describes this gate's slots.
    func isConfigured(as slot: Slot) -> Bool {
        let other = SlotGate(slot)
        return other.minDelay == minDelay && other.maxDelay == maxDelay && other.packetsPerSlot == packetsPerSlot
            && other.bytesPerSlot == bytesPerSlot
    }

    /// When a frame of `length` bytes, ready to go at `ready`, leaves. Frames must be passed in the order
    /// they become ready.
    @inline(__always)
    mutating func departure(ready: MonotonicNanoseconds, length: Int, _ random: inout EmulatorRandom) -> MonotonicNanoseconds {
        let opening: MonotonicNanoseconds
        if let opensAt, opensAt >= ready {
            opening = opensAt
        } else {
            opening = ready + wait(&random)
            startSlot(at: opening)
        }
        packetsLeft -= 1
        bytesLeft -= Int64(length)
        if packetsLeft <= 0 || bytesLeft <= 0 {
            startSlot(at: opening + wait(&random))
        }
        return opening
    }

    private mutating func startSlot(at time: MonotonicNanoseconds) {
        opensAt = time
        packetsLeft = packetsPerSlot
        bytesLeft = bytesPerSlot
    }

    /// A wait drawn uniformly from [MIN, MAX) (exactly MIN when they are equal), as netem draws it.
    private func wait(_ random: inout EmulatorRandom) -> UInt64 {
        maxDelay > minDelay ? minDelay + random.next(below: maxDelay - minDelay) : minDelay
    }
}

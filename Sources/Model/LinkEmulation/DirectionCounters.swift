/// What a direction did, since it was built (``DirectionEmulator/counters``, a swap keeps counting) or
/// since its last swap (``DirectionEmulator/countersSinceChange``). Every frame is accounted for:
/// `offeredFrames + duplicatedFrames == passedFrames + lostFrames + queueDroppedFrames + backlogFrames`
/// (since a swap too: the frames held across it count as offered after it).
public struct DirectionCounters: Sendable, Equatable {
    /// Frames offered by the I/O.
    public var offeredFrames: UInt64 = 0
    /// Bytes offered by the I/O.
    public var offeredBytes: UInt64 = 0
    /// Frames handed to the wire (forwarded at once or departed), duplicates included.
    public var passedFrames: UInt64 = 0
    /// Bytes handed to the wire.
    public var passedBytes: UInt64 = 0
    /// Frames forwarded untouched because no target matched them (or the direction is unconditioned);
    /// included in ``passedFrames``.
    public var untouchedFrames: UInt64 = 0
    /// Frames dropped by the loss model (netem's `loss`), ECN marks excluded.
    public var lostFrames: UInt64 = 0
    /// Bytes dropped by the loss model.
    public var lostBytes: UInt64 = 0
    /// Frames the queue dropped, for any reason (tail, head, CoDel, PIE, RED, or the held-bytes limit).
    public var queueDroppedFrames: UInt64 = 0
    /// Bytes the queue dropped.
    public var queueDroppedBytes: UInt64 = 0
    /// Of ``queueDroppedFrames``, those dropped because the direction held its most bytes
    /// (``DirectionOptions/heldBytesLimit``) rather than at the queue limit.
    public var heldLimitDroppedFrames: UInt64 = 0
    /// Of ``queueDroppedFrames``, arriving frames dropped by a full queue (its limit in packets, bytes or
    /// time; the hard limit of CoDel, PIE and RED).
    public var tailDroppedFrames: UInt64 = 0
    /// Of ``queueDroppedFrames``, the oldest frames a DropHead queue dropped to make room.
    public var headDroppedFrames: UInt64 = 0
    /// Of ``queueDroppedFrames``, frames CoDel dropped at the head.
    public var codelDroppedFrames: UInt64 = 0
    /// Of ``queueDroppedFrames``, arriving frames PIE dropped early.
    public var pieDroppedFrames: UInt64 = 0
    /// Of ``queueDroppedFrames``, arriving frames RED dropped (probabilistic and forced).
    public var redDroppedFrames: UInt64 = 0
    /// Of ``redDroppedFrames``, those dropped because the average was above the maximum threshold.
    public var redForcedDroppedFrames: UInt64 = 0
    /// How long frames waited in the queue before the transmitter took them (DropTail: the wait known on
    /// arrival; the other disciplines: measured when the frame is taken), since the last swap.
    public var sojourn = SojournHistogram()
    /// Extra copies made (netem's `duplicate`).
    public var duplicatedFrames: UInt64 = 0
    /// Frames with a flipped bit (netem's `corrupt`).
    public var corruptedFrames: UInt64 = 0
    /// Frames sent ahead of the delay line (netem's `reorder`).
    public var reorderedFrames: UInt64 = 0
    /// Frames that waited for an earlier frame of their delay line so as not to overtake it: under the
    /// `ordered` jitter model, the rare frame whose delay fell faster than time passed (or after a swap to a
    /// shorter delay with no fresh line free).
    public var orderHolds: UInt64 = 0
    /// Under the `netem` jitter model, frames that left before a frame offered earlier (netem reorders on
    /// jitter).
    public var jitterReorderedFrames: UInt64 = 0
    /// Frames the loss model picked that went on marked Congestion Experienced (netem's `ecn`).
    public var ecnMarkedFrames: UInt64 = 0
    /// DNS queries seen on an uplink with a DNS delay (UDP or TCP to port 53), lost ones included.
    public var dnsFrames: UInt64 = 0
    /// Frames held now (in the transmit queue or the delay lines).
    public var backlogFrames: UInt64 = 0
    /// Bytes held now.
    public var backlogBytes: UInt64 = 0
    /// Of the backlog, frames that have not left the transmitter (what the queue limit counts), as of
    /// the last offer or departure.
    public var transmitQueueFrames: UInt64 = 0
    /// Bytes of ``transmitQueueFrames``.
    public var transmitQueueBytes: UInt64 = 0

    /// No frames yet.
    public init() {}

    /// What was counted since `baseline` (an earlier reading of the same direction): every count less the
    /// baseline's, except that the frames the baseline held count as offered (so that the counters still
    /// account for every frame); the backlog and the sojourn histogram as they are (the histogram restarts
    /// at each swap).
    public func since(_ baseline: DirectionCounters) -> DirectionCounters {
        var result = self
        result.offeredFrames = offeredFrames &- baseline.offeredFrames &+ baseline.backlogFrames
        result.offeredBytes = offeredBytes &- baseline.offeredBytes &+ baseline.backlogBytes
        result.passedFrames &-= baseline.passedFrames
        result.passedBytes &-= baseline.passedBytes
        result.untouchedFrames &-= baseline.untouchedFrames
        result.lostFrames &-= baseline.lostFrames
        result.lostBytes &-= baseline.lostBytes
        result.queueDroppedFrames &-= baseline.queueDroppedFrames
        result.queueDroppedBytes &-= baseline.queueDroppedBytes
        result.heldLimitDroppedFrames &-= baseline.heldLimitDroppedFrames
        result.tailDroppedFrames &-= baseline.tailDroppedFrames
        result.headDroppedFrames &-= baseline.headDroppedFrames
        result.codelDroppedFrames &-= baseline.codelDroppedFrames
        result.pieDroppedFrames &-= baseline.pieDroppedFrames
        result.redDroppedFrames &-= baseline.redDroppedFrames
        result.redForcedDroppedFrames &-= baseline.redForcedDroppedFrames
        result.duplicatedFrames &-= baseline.duplicatedFrames
        result.corruptedFrames &-= baseline.corruptedFrames
        result.reorderedFrames &-= baseline.reorderedFrames
        result.orderHolds &-= baseline.orderHolds
        result.jitterReorderedFrames &-= baseline.jitterReorderedFrames
        result.ecnMarkedFrames &-= baseline.ecnMarkedFrames
        result.dnsFrames &-= baseline.dnsFrames
        return result
    }
}

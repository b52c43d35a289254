import CPacket
import LinkEmulation

// The spinning of a direction's loop: to a departure's due time, and on the ring after traffic.
extension DirectionLoop {
    /// Spins on the clock until `deadline` (`now` follows it); the pacer learns whether it was preempted.
    @inline(__always)
    func spin(until deadline: MonotonicNanoseconds, _ now: inout MonotonicNanoseconds) {
        let start = now
        var previous = now
        var preempted = false
        while now < deadline {
            cpk_cpu_relax()
            now = clock.now()
            if now &- previous > DeparturePacer.preemptionGap { preempted = true }
            previous = now
        }
        statistics.departureSpin &+= now &- start
        spinEnded(preempted: preempted, at: now)
    }

    /// Polls the source until the poller's deadline (at most `limit`) while it may spin: true when a frame
    /// came (or a control job, or a stop request). `now` follows the clock.
    @inline(__always)
    func pollForTraffic(_ now: inout MonotonicNanoseconds, before limit: MonotonicNanoseconds) -> Bool {
        guard source.canPoll, pacer.maySpin(at: now) else { return false }
        let deadline = min(poller.deadline(at: now), limit)
        guard deadline > now else {
            poller.pollEnded(found: false, at: now)
            return false
        }
        let start = now
        var previous = now
        var found = false
        var preempted = false
        while now < deadline {
            if source.hasFrames() || mailbox.hasPending || stopRequested.load(ordering: .relaxed) {
                found = true
                break
            }
            cpk_cpu_relax()
            now = clock.now()
            if now &- previous > DeparturePacer.preemptionGap {
                preempted = true
                break
            }
            previous = now
        }
        statistics.pollSpin &+= now &- start
        spinEnded(preempted: preempted, at: now)
        if found { statistics.pollHits &+= 1 }
        poller.pollEnded(found: found, at: now)
        return found
    }

    /// Asks the other direction to poll for the reply to what this one is about to send.
    @inline(__always)
    func askForReply(_ partner: DirectionLoop) {
        guard poller.configuration.replies else { return }
        if partner.poller.requestReply(until: clock.now() &+ poller.configuration.maximum) { partner.wake() }
    }

    private func spinEnded(preempted: Bool, at now: MonotonicNanoseconds) {
        if preempted { statistics.spinPreemptions &+= 1 }
        pacer.spinEnded(preempted: preempted, at: now)
    }
}

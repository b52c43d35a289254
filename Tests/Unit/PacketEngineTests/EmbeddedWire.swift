import LinkEmulation

@testable import PacketEngine

/// One direction's I/O on the test's own thread, in the spirit of swift-nio's `EmbeddedEventLoop`: the
/// test pushes frames in, the loop's sends are collected with the virtual time they left, the clock moves
/// only when the test advances it, and the timer's arming can be read. The waiter never blocks: when
/// nothing is ready, `DirectionLoop.run()` returns to the test.
///
/// Frames pushed in wait in preallocated slots and are lent to the loop by reference, as a ring's are;
/// every frame the loop sends by reference must still be lent (sent before the batch was released).
/// With `recordsFrames` off, sends are only counted, so a steady flow allocates nothing here.
final class EmbeddedWire: FrameSource, FrameSink, DirectionWaiter, @unchecked Sendable {
    /// A frame the loop sent.
    struct SentFrame: Equatable {
        var bytes: [UInt8]
        /// The virtual time of the send.
        var time: MonotonicNanoseconds
        /// When it was due (0: forwarded at once).
        var due: UInt64
    }

    private struct Inbound {
        var length = 0
        var arrival: MonotonicNanoseconds?
        var truncated = false
        var outgoing = false
        var copied = false
    }

    // MARK: Inbound frames

    /// Frames a batch holds at most.
    let batchCapacity: Int
    private let slotCount: Int
    private let slotSize: Int
    private let arena: UnsafeMutableRawPointer
    private let inbound: UnsafeMutablePointer<Inbound>
    private var head = 0
    private var waiting = 0
    private var taken = 0

    // MARK: Time

    /// The virtual clock (starts at 1 s: a due time of 0 means "forwarded at once" to the loop).
    var now: MonotonicNanoseconds = 1_000_000_000
    /// How far each reading of the clock moves it (0: it stands still), so a spin on the clock ends.
    var clockTick: UInt64 = 0
    private(set) var clockReadings = 0
    /// The deadline the timer is armed for (nil: disarmed or fired), and how often it was armed.
    private(set) var timerDeadline: MonotonicNanoseconds?
    private(set) var timerArmings = 0

    // MARK: Outbound frames

    /// Whether sent frames are kept in ``sent`` (off: only counted).
    var recordsFrames = true
    private(set) var sent: [SentFrame] = []
    /// Frames sent, and the number of frames each send call took (recorded with ``recordsFrames``).
    private(set) var sentCount = 0
    private(set) var sendCalls: [Int] = []
    /// Frames sent by reference that were no longer lent to the loop.
    private(set) var referenceViolations = 0

    // MARK: Failures and events to inject

    /// What the next receives return before any frame is read.
    var receiveResults: [ReceiveResult] = []
    /// What the next sends return before anything is sent.
    var sendResults: [SendResult] = []
    /// The most frames one send takes (a partial `sendmmsg`).
    var sendLimit = Int.max
    /// The error the source reports besides reads (level-triggered until taken, like `EPOLLERR`).
    var pendingError: Int32 = 0
    /// Frames reported lost before the source saw them, until taken.
    var overruns: UInt64 = 0
    private var woken = false
    private(set) var wakeRequests = 0
    private(set) var closes = 0

    // MARK: Slot sizes

    /// The MTU both ends report (the wire is the source and the sink).
    var mtu = 1500
    /// The longest frame the source's slots hold; a frame pushed `copied` was longer and read whole another way.
    var sourceSlotBytes = 1518
    /// Each size the loop asked the source to grow to.
    private(set) var growRequests: [Int] = []
    /// What a grow throws (nil: it succeeds and the slots hold the size asked for).
    var growFailure: PacketEngineError?
    /// The descriptor a successful grow returns for the waiter (nil: none to watch).
    var grownDescriptor: Int32? = 77
    /// Times an end's MTU was read (the wire is both ends).
    private(set) var mtuReadings = 0
    /// The descriptors the waiter was asked to watch.
    private(set) var watchedDescriptors: [Int32] = []
    private var copiedTaken: UInt64 = 0

    /// A wire holding up to `slots` frames of up to `slotSize` bytes, lent `batchCapacity` at a time.
    init(batchCapacity: Int, slots: Int = 1024, slotSize: Int = 2048) {
        self.batchCapacity = batchCapacity
        slotCount = slots
        self.slotSize = slotSize
        arena = .allocate(byteCount: slots * slotSize, alignment: 64)
        inbound = .allocate(capacity: slots)
        inbound.initialize(repeating: Inbound(), count: slots)
    }

    deinit {
        arena.deallocate()
        inbound.deallocate()
    }

    /// Frames pushed and not yet read.
    var waitingCount: Int { waiting }

    /// Puts `frame` on the wire, arriving at `arrival` (nil: whenever the loop reads it).
    /// `copied`: the frame was longer than the source's slots and read whole another way (as a ring's
    /// long frames are, from the socket).
    func push(
        _ frame: UnsafeRawBufferPointer, arrival: MonotonicNanoseconds? = nil, truncated: Bool = false, outgoing: Bool = false,
        copied: Bool = false
    ) {
        precondition(waiting < slotCount && frame.count <= slotSize, "the embedded wire is full")
        let slot = (head + waiting) % slotCount
        if let base = frame.baseAddress { (arena + slot * slotSize).copyMemory(from: base, byteCount: frame.count) }
        inbound[slot] = Inbound(length: frame.count, arrival: arrival, truncated: truncated, outgoing: outgoing, copied: copied)
        waiting += 1
    }

    func push(_ frame: [UInt8], arrival: MonotonicNanoseconds? = nil, truncated: Bool = false, outgoing: Bool = false, copied: Bool = false) {
        frame.withUnsafeBytes { push($0, arrival: arrival, truncated: truncated, outgoing: outgoing, copied: copied) }
    }

    /// Forgets the frames sent so far (their count too).
    func forgetSent() {
        if recordsFrames {
            sent.removeAll(keepingCapacity: true)
            sendCalls.removeAll(keepingCapacity: true)
        }
        sentCount = 0
    }

    /// The first byte after the Ethernet, IPv4 and UDP headers of every frame sent: the tests' frame ids.
    var sentIDs: [UInt8] { sent.map { $0.bytes.count > TestFrame.idOffset ? $0.bytes[TestFrame.idOffset] : 0 } }

    // MARK: FrameSource

    func receive() -> ReceiveResult {
        if !receiveResults.isEmpty { return receiveResults.removeFirst() }
        let count = min(batchCapacity, waiting)
        guard count > 0 else { return .empty }
        taken = count
        for index in 0..<count where inbound[slotIndex(index)].copied { copiedTaken += 1 }
        return .frames(count, more: waiting > count)
    }

    private func slotIndex(_ index: Int) -> Int { (head + index) % slotCount }

    func frame(_ index: Int) -> UnsafeMutableRawBufferPointer {
        let slot = slotIndex(index)
        return UnsafeMutableRawBufferPointer(start: arena + slot * slotSize, count: inbound[slot].length)
    }

    func isTruncated(_ index: Int) -> Bool { inbound[slotIndex(index)].truncated }

    func isOutgoing(_ index: Int) -> Bool { inbound[slotIndex(index)].outgoing }

    func arrival(_ index: Int, readAt: MonotonicNanoseconds) -> MonotonicNanoseconds { inbound[slotIndex(index)].arrival ?? readAt }

    func release() {
        head = (head + taken) % slotCount
        waiting -= taken
        taken = 0
    }

    func takeError() -> Int32 {
        defer { pendingError = 0 }
        return pendingError
    }

    func takeOverruns() -> UInt64 {
        defer { overruns = 0 }
        return overruns
    }

    func close() {
        closes += 1
    }

    var slotBytes: Int { sourceSlotBytes }

    func takeCopied() -> UInt64 {
        defer { copiedTaken = 0 }
        return copiedTaken
    }

    func currentMTU() -> Int {
        mtuReadings += 1
        return mtu
    }

    func grow(toSlotBytes slotBytes: Int) throws(PacketEngineError) -> Int32? {
        growRequests.append(slotBytes)
        if let growFailure { throw growFailure }
        sourceSlotBytes = slotBytes
        return grownDescriptor
    }

    // MARK: FrameSink

    func send(_ batch: SendBatch, from start: Int) -> SendResult {
        if !sendResults.isEmpty { return sendResults.removeFirst() }
        let count = min(batch.count - start, sendLimit)
        for entry in start..<(start + count) {
            let frame = batch.frame(entry)
            if let base = frame.baseAddress, base >= UnsafeRawPointer(arena), base < UnsafeRawPointer(arena + slotCount * slotSize) {
                let slot = (base - UnsafeRawPointer(arena)) / slotSize
                let position = (slot - head + slotCount) % slotCount
                if position >= taken { referenceViolations += 1 }
            }
            if recordsFrames { sent.append(SentFrame(bytes: Array(frame), time: now, due: batch.due(entry))) }
        }
        if recordsFrames { sendCalls.append(count) }
        sentCount += count
        return .sent(count)
    }

    // MARK: DirectionWaiter

    func armTimer(at deadline: MonotonicNanoseconds) {
        timerDeadline = deadline
        timerArmings += 1
    }

    func wait(_ report: (WaitEvent) -> Void) -> Bool {
        var reported = false
        if woken {
            woken = false
            report(.woken)
            reported = true
        }
        if pendingError != 0 {
            report(.sourceError)
            reported = true
        } else if waiting > 0 {
            report(.readable)
            reported = true
        }
        if let deadline = timerDeadline, now >= deadline {
            timerDeadline = nil
            report(.timer)
            reported = true
        }
        return reported
    }

    func wake() {
        woken = true
        wakeRequests += 1
    }

    func watchSource(_ descriptor: Int32) throws(PacketEngineError) {
        watchedDescriptors.append(descriptor)
    }

    /// Reads the clock for the loop, moving it on by ``clockTick``.
    func readClock() -> MonotonicNanoseconds {
        clockReadings += 1
        defer { now += clockTick }
        return now
    }
}

/// The embedded wire's clock.
struct VirtualClock: EngineClock {
    let wire: EmbeddedWire

    func now() -> MonotonicNanoseconds { wire.readClock() }
}

/// A direction's loop over an embedded wire, driven from the test's thread.
final class EmbeddedDirection<Scheduler: FrameScheduler> {
    typealias Loop = DirectionLoop<Scheduler, EmbeddedWire, EmbeddedWire, VirtualClock, EmbeddedWire>

    let wire: EmbeddedWire
    let loop: Loop

    /// A loop sending up to `batchSize` frames per send, reading as many per batch; its mailbox is open, as
    /// the runtime opens it before the thread starts. The send batch's copy slots have `sendSlotSize` bytes
    /// (the wire's `slotSize` when nil).
    init(_ scheduler: Scheduler, batchSize: Int = 64, spin: UInt64 = 0, slots: Int = 1024, slotSize: Int = 2048, sendSlotSize: Int? = nil) {
        wire = EmbeddedWire(batchCapacity: batchSize, slots: slots, slotSize: slotSize)
        batch = SendBatch(capacity: batchSize, slotSize: sendSlotSize ?? slotSize)
        loop = DirectionLoop(
            direction: .uplink, scheduler: scheduler, source: wire, sink: wire, batch: batch, clock: VirtualClock(wire: wire), waiter: wire,
            spin: spin)
        loop.mailbox.open()
    }

    /// The loop's send batch.
    let batch: SendBatch

    /// Runs the loop until it would sleep (false) or has stopped (true).
    @discardableResult
    func run() -> Bool { loop.run() }

    /// Moves the clock on by `nanoseconds` and runs the loop.
    @discardableResult
    func advanceTime(by nanoseconds: UInt64) -> Bool {
        wire.now += nanoseconds
        return loop.run()
    }

    /// Moves the clock to `time` and runs the loop.
    @discardableResult
    func advanceTime(to time: MonotonicNanoseconds) -> Bool {
        precondition(time >= wire.now, "the clock never goes back")
        wire.now = time
        return loop.run()
    }

    var statistics: DirectionStatistics { loop.statistics }

    /// Queues a control job as another thread would, without waiting for it; true when it was queued
    /// (false: the mailbox is closed, and it ran at once).
    @discardableResult
    func enqueue(_ body: @escaping (any DirectionControl<Scheduler>, _ onDirectionThread: Bool) -> Void) -> Bool {
        loop.mailbox.enqueue(DirectionJob(body), loop: loop)
    }
}

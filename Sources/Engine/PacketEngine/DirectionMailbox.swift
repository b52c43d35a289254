import LinkEmulation
import Synchronization

/// A direction's loop as control jobs and the runtime see it, whatever its I/O.
protocol DirectionControl<Scheduler>: ThreadBody {
    associatedtype Scheduler: FrameScheduler
    /// Which way the direction forwards.
    var direction: Direction { get }
    /// The queue of control jobs the direction runs between batches.
    var mailbox: DirectionMailbox<Scheduler> { get }
    /// The direction's model (its own thread's while it runs).
    var scheduler: Scheduler { get set }
    /// The direction's counters (same ownership as the scheduler).
    var statistics: DirectionStatistics { get }
    /// Copies the thread's CPU time and the source's overruns into the statistics.
    func recordThreadCounters()
    /// Gives the slots room for a full frame of the ends' MTU now (on the direction's thread).
    func adaptToMTU()
    /// Wakes the direction's thread (from any thread).
    func wake()
    /// Asks the direction's thread to end after its current iteration (from any thread).
    func requestStop()
    /// Lets go of the direction's descriptors, after its thread has ended.
    func close()
}

/// Work another thread hands to a direction's thread, run between batches; the submitter waits for it.
final class DirectionJob<Scheduler: FrameScheduler>: @unchecked Sendable {
    /// The work; its second argument is true when it runs on the direction's own thread.
    private var body: ((any DirectionControl<Scheduler>, Bool) -> Void)?
    private let done = CompletionSignal()

    init(_ body: @escaping (any DirectionControl<Scheduler>, _ onDirectionThread: Bool) -> Void) {
        self.body = body
    }

    /// Runs the body once, releases it (so nothing it captured outlives the submitter's wait), and
    /// signals completion.
    func run(_ loop: any DirectionControl<Scheduler>, onDirectionThread: Bool) {
        body?(loop, onDirectionThread)
        body = nil
        done.signal()
    }

    /// Waits until ``run(_:onDirectionThread:)`` has finished.
    func wait() {
        done.wait()
    }
}

/// The queue of ``DirectionJob``s of one direction.
///
/// While the direction's thread runs, the mailbox is open: a job is queued, the thread is woken, and it
/// runs the job at its next iteration. While it does not run (before start, after stop), the job runs at
/// once on the submitting thread, under the mailbox's lock — in both cases exactly one thread touches the
/// scheduler at a time. The hot path reads one atomic flag per iteration and takes no lock.
final class DirectionMailbox<Scheduler: FrameScheduler>: Sendable {
    private struct State {
        var open = false
        var jobs: [DirectionJob<Scheduler>] = []
    }

    private let state = Mutex(State())
    private let pending = Atomic<Bool>(false)

    /// True when jobs may be waiting (checked by the direction's thread on every iteration).
    @inline(__always)
    var hasPending: Bool { pending.load(ordering: .acquiring) }

    /// Queues `job` and wakes the thread, or runs it now when the thread is not running; returns when the
    /// job has run.
    func submit(_ job: DirectionJob<Scheduler>, loop: any DirectionControl<Scheduler>) {
        if enqueue(job, loop: loop) { job.wait() }
    }

    /// Queues `job` and wakes the thread (under the lock, so never after ``close(_:)``) and returns true;
    /// or, when the thread is not running, runs the job at once and returns false.
    func enqueue(_ job: DirectionJob<Scheduler>, loop: any DirectionControl<Scheduler>) -> Bool {
        state.withLock { state -> Bool in
            guard state.open else {
                job.run(loop, onDirectionThread: false)
                return false
            }
            state.jobs.append(job)
            pending.store(true, ordering: .releasing)
            loop.wake()
            return true
        }
    }

    /// Opens the mailbox, before the thread starts.
    func open() {
        state.withLock { $0.open = true }
    }

    /// Runs the queued jobs (by the direction's thread).
    func runPending(_ loop: any DirectionControl<Scheduler>) {
        pending.store(false, ordering: .relaxed)
        let jobs = state.withLock { state -> [DirectionJob<Scheduler>] in
            defer { state.jobs.removeAll(keepingCapacity: true) }
            return state.jobs
        }
        for job in jobs { job.run(loop, onDirectionThread: true) }
    }

    /// Closes the mailbox as the thread's last act, running what is still queued; from then on jobs run
    /// on their submitters.
    func close(_ loop: any DirectionControl<Scheduler>) {
        state.withLock { state in
            state.open = false
            for job in state.jobs { job.run(loop, onDirectionThread: true) }
            state.jobs.removeAll()
        }
    }
}

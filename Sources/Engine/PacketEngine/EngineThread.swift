import CPacket
import Glibc

/// Something that runs on a plain pthread of its own.
protocol ThreadBody: AnyObject, Sendable {
    func runThread()
}

/// Plain pthreads for the engine (never Dispatch or Swift-concurrency threads: the engine's loops block in
/// epoll and own their state for their whole life).
enum EngineThread {
    /// Starts `body.runThread()` on a new joinable thread.
    static func start(_ body: any ThreadBody, operation: String) throws(PacketEngineError) -> pthread_t {
        let context = Unmanaged.passRetained(body as AnyObject).toOpaque()
        var thread = pthread_t()
        let created = pthread_create(&thread, nil, { raw in
            let object = Unmanaged<AnyObject>.fromOpaque(raw!).takeRetainedValue()
            (object as! any ThreadBody).runThread()
            return nil
        }, context)
        guard created == 0 else {
            Unmanaged<AnyObject>.fromOpaque(context).release()
            throw PacketEngineError(operation: operation, errno: created)
        }
        return thread
    }

    /// Switches `thread` to `SCHED_FIFO` at `priority`.
    static func makeRealtime(_ thread: pthread_t, priority: Int32, name: String) throws(PacketEngineError) {
        var parameters = sched_param()
        parameters.sched_priority = priority
        let result = pthread_setschedparam(thread, SCHED_FIFO, &parameters)
        guard result == 0 else {
            throw PacketEngineError(operation: "set SCHED_FIFO priority \(priority) on \(name)", errno: result)
        }
    }

    /// Names the calling thread (15 bytes at most are kept) and gives it a timer slack of 1 ns, so its
    /// timerfd and epoll wake-ups are not deferred to batch them with others.
    static func configureCurrent(name: String) {
        _ = cpk_set_thread_name(String(name.prefix(15)))
        _ = cpk_set_timer_slack(1)
    }
}

/// A one-shot completion a thread waits on until another signals it (pthread mutex and condition).
final class CompletionSignal: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var done = false

    init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        condition.deallocate()
    }

    func signal() {
        pthread_mutex_lock(mutex)
        done = true
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
    }

    func wait() {
        pthread_mutex_lock(mutex)
        while !done { pthread_cond_wait(condition, mutex) }
        pthread_mutex_unlock(mutex)
    }
}

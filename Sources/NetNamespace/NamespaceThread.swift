import CMnl
import Glibc

/// Runs code inside a network namespace on a thread of its own.
///
/// `setns(2)` changes the namespace of the calling *thread*. Doing it on a thread that Dispatch or Swift
/// concurrency may hand to the next task would silently move that task into the wrong namespace, so every
/// call here starts a fresh pthread, switches it into the namespace, runs the body, and lets the thread
/// end. Sockets opened in the body stay bound to the namespace and may be used from any thread afterwards.
public enum NamespaceThread {
    /// Runs `body` on a new thread that first joins the namespace at `path` (e.g. `/run/netns/lc-client`),
    /// and returns its result. Blocks the caller until the thread ends.
    public static func run<T>(inNamespaceAt path: String, _ body: () throws -> T) throws -> T {
        try runOnFreshThread {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            if fd < 0 {
                let code = errno
                throw code == ENOENT
                    ? NamespaceError.notFound(name: String(path.split(separator: "/").last ?? Substring(path)))
                    : NamespaceError.system(operation: "open \(path)", errno: code)
            }
            defer { close(fd) }
            if cmnl_setns(fd, cmnl_clone_newnet()) != 0 {
                throw NamespaceError.system(operation: "setns \(path)", errno: errno)
            }
            return try body()
        }
    }

    /// Runs `body(i)` inside each namespace of `paths` in turn, all on one new thread that joins them one
    /// after the other, and returns each outcome in order: a namespace that cannot be joined gives its
    /// error, and the thread goes on with the next. One thread instead of one per namespace: starting and
    /// joining a thread is most of the cost of opening a socket in a namespace, and on a loaded machine each
    /// one waits for a CPU.
    public static func run<T>(inEachNamespaceAt paths: [String], _ body: (Int) throws -> T) throws -> [Result<T, any Error>] {
        try runOnFreshThread {
            paths.indices.map { index in
                Result {
                    let path = paths[index]
                    let fd = open(path, O_RDONLY | O_CLOEXEC)
                    if fd < 0 {
                        let code = errno
                        throw code == ENOENT
                            ? NamespaceError.notFound(name: String(path.split(separator: "/").last ?? Substring(path)))
                            : NamespaceError.system(operation: "open \(path)", errno: code)
                    }
                    defer { close(fd) }
                    if cmnl_setns(fd, cmnl_clone_newnet()) != 0 {
                        throw NamespaceError.system(operation: "setns \(path)", errno: errno)
                    }
                    return try body(index)
                }
            }
        }
    }

    /// Runs `body` on a new thread that has first been moved into a brand-new network namespace
    /// (`unshare(CLONE_NEWNET)`), and returns its result.
    public static func runInNewNamespace<T>(_ body: () throws -> T) throws -> T {
        try runOnFreshThread {
            if cmnl_unshare(cmnl_clone_newnet()) != 0 {
                throw NamespaceError.system(operation: "unshare(CLONE_NEWNET)", errno: errno)
            }
            return try body()
        }
    }

    fileprivate final class Job<T> {
        let body: () throws -> T
        var result: Result<T, any Error>?
        init(_ body: @escaping () throws -> T) { self.body = body }
    }

    private static func runOnFreshThread<T>(_ body: () throws -> T) throws -> T {
        try withoutActuallyEscaping(body) { escapable in
            let job = Job(escapable)
            let context = Unmanaged.passRetained(job as AnyObject).toOpaque()
            var thread = pthread_t()
            let created = pthread_create(&thread, nil, { raw in
                let object = Unmanaged<AnyObject>.fromOpaque(raw!).takeRetainedValue()
                (object as! any RunnableJob).runJob()
                return nil
            }, context)
            if created != 0 {
                Unmanaged<AnyObject>.fromOpaque(context).release()
                throw NamespaceError.system(operation: "start a namespace thread", errno: created)
            }
            pthread_join(thread, nil)
            return try job.result!.get()
        }
    }
}

private protocol RunnableJob: AnyObject {
    func runJob()
}

extension NamespaceThread.Job: RunnableJob {
    func runJob() {
        result = Result { try body() }
    }
}

import CMnl
import Glibc
import LinkcondSystem

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
            try join(path)
            return try body()
        }
    }

    /// Runs `body(i)` inside each namespace of `paths` in turn, all on one new thread that joins them one
    /// after the other; a namespace that cannot be joined is passed to `failed(i, error)` instead, and the
    /// thread goes on with the next. One thread instead of one per namespace: starting and joining a thread
    /// is most of the cost of opening a socket in a namespace, and on a loaded machine each one waits for a
    /// CPU. (Callbacks rather than an array of `Result`: a generic type with a protocol requirement costs a
    /// scan of every conformance record the first time a process uses it.)
    public static func run(
        inEachNamespaceAt paths: [String], _ body: (Int) throws -> Void, failed: (Int, any Error) -> Void
    ) throws {
        try runOnFreshThread {
            for index in paths.indices {
                do {
                    try join(paths[index])
                    try body(index)
                } catch {
                    failed(index, error)
                }
            }
        }
    }

    /// Moves the calling thread into the namespace at `path` (`setns(2)` on the namespace file).
    private static func join(_ path: String) throws(NamespaceError) {
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(path, .readOnly)
        } catch {
            throw error.errno == .noSuchFileOrDirectory
                ? .notFound(name: String(path.split(separator: "/").last ?? Substring(path)))
                : .system(operation: error.operation, errno: error.errno.rawValue)
        }
        defer { try? file.close() }
        if cmnl_setns(file.rawValue, cmnl_clone_newnet()) != 0 {
            throw .system(operation: "setns \(path)", errno: errno)
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

    /// The body of a namespace thread, type-erased to a closure, so that starting a thread needs no
    /// dynamic cast (a cast to a protocol scans every conformance record of the executable the first time,
    /// a measurable part of a short-lived `linkcond` process).
    fileprivate final class Job {
        let run: () -> Void
        init(_ run: @escaping () -> Void) { self.run = run }
    }

    private static func runOnFreshThread<T>(_ body: () throws -> T) throws -> T {
        try withoutActuallyEscaping(body) { escapable in
            var value: T?
            var failure: (any Error)?
            let job = Job {
                do {
                    value = try escapable()
                } catch {
                    failure = error
                }
            }
            let context = Unmanaged.passRetained(job).toOpaque()
            var thread = pthread_t()
            let created = pthread_create(&thread, nil, { raw in
                Unmanaged<Job>.fromOpaque(raw!).takeRetainedValue().run()
                return nil
            }, context)
            if created != 0 {
                Unmanaged<Job>.fromOpaque(context).release()
                throw NamespaceError.system(operation: "start a namespace thread", errno: created)
            }
            pthread_join(thread, nil)
            if let failure { throw failure }
            return value!
        }
    }
}

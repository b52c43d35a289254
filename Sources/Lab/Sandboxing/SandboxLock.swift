import Foundation
import Glibc
import JSONDocument
import LinkcondBase
import LinkcondSystem
import Synchronization

/// One writer at a time per sandbox: an exclusive `flock(2)` on `STORE/NAME.lock`, held by every operation
/// that changes the sandbox (up, down, apply, clear, a scenario run).
///
/// A second command waits, up to a bound, telling who holds the lock, then proceeds on the result (an `up`
/// that waited for another `up` finds the sandbox up). The lock is owned by a thread: the thread that holds it
/// may take it again (reentry, counted), and any other thread — of this process or another — waits, so two
/// threads of one process (two labs, a test and a lab) never both believe they hold it. Commands take it once
/// and pass it on in a ``SandboxTransaction``. `down` removes the lock file while holding it;
/// a waiter that then gets the lock notices the file is gone (the inode it locked is no longer the path's)
/// and locks the new file instead, so two commands never both believe they hold the lock.
public final class SandboxLock: @unchecked Sendable {
    private let path: String
    private let fd: Int32
    private var released = false

    private struct Held {
        var fd: Int32
        var count: Int
        /// The thread that holds it.
        var owner: pthread_t
    }

    /// Locks this process holds, by path, with their owning threads and reentry counts.
    private static let held = Mutex<[String: Held]>([:])

    /// Who holds a lock, as its file says.
    public struct Holder: Sendable, Equatable, CustomStringConvertible {
        /// The holder's process id.
        public var pid: Int32
        /// What it is doing (`up`, `run tunnel`…).
        public var command: String
        /// When the process that wrote the file has exited and others hold the lock through descriptors they
        /// inherited from it: those processes' ids.
        public var inheritedBy: [Int32] = []

        public var description: String {
            guard !inheritedBy.isEmpty else { return "pid \(pid) (\(command))" }
            let heirs = inheritedBy.map(String.init).joined(separator: ", ")
            return "pid \(heirs), which inherited it from pid \(pid) (\(command), exited)"
        }
    }

    /// How long a command waits for another one: `LINKCOND_LOCK_TIMEOUT` seconds when set, else 60; nil when
    /// the variable is set to something that is not a number of seconds (``acquire`` refuses then).
    public static let defaultTimeout: Double? = {
        guard let text = getenv("LINKCOND_LOCK_TIMEOUT").map({ String(cString: $0) }) else { return 60 }
        guard let seconds = Double(text), seconds.isFinite, seconds >= 0 else { return nil }
        return seconds
    }()

    private init(path: String, fd: Int32) {
        self.path = path
        self.fd = fd
    }

    /// Takes the lock of sandbox `name`, waiting at most `timeout` seconds (default ``defaultTimeout``) for
    /// another holder. `waiting` is called once, with the holder, when the lock is not free at once. Throws
    /// ``SandboxError/busy(name:holder:waited:)`` when the bound passes.
    public static func acquire(
        _ name: String, store: SandboxStore, command: String, timeout: Double? = nil,
        waiting: (Holder?) -> Void = { _ in }
    ) throws(SandboxError) -> SandboxLock {
        guard let timeout = timeout ?? defaultTimeout else {
            let text = getenv("LINKCOND_LOCK_TIMEOUT").map { String(cString: $0) } ?? ""
            throw .unsupported(
                detail: "LINKCOND_LOCK_TIMEOUT=\(JSONWriter.excerpt(text)) is not a number of seconds: unset it, or give one such as 60")
        }
        let path = store.lockPath(for: name)
        let thread = pthread_self()
        if let reentered = held.withLock({ (locks: inout [String: Held]) -> SandboxLock? in
            guard var entry = locks[path], pthread_equal(entry.owner, thread) != 0 else { return nil }
            entry.count += 1
            locks[path] = entry
            return SandboxLock(path: path, fd: entry.fd)
        }) {
            return reentered
        }
        if mkdir(store.directory, 0o755) != 0 && errno != EEXIST {
            do {
                try FileManager.default.createDirectory(atPath: store.directory, withIntermediateDirectories: true)
            } catch {
                throw .state(path: store.directory, detail: "cannot be created (\(error.localizedDescription))")
            }
        }
        let deadline = MonotonicClock.seconds() + timeout
        var announced = false
        while true {
            let file: FileDescriptor
            do {
                file = try FileDescriptor.open(path, .readWrite, options: [.create, .noFollow])
            } catch {
                throw .state(path: path, detail: "cannot be opened (\(error.errno))")
            }
            let fd = file.rawValue
            if flock(fd, LOCK_EX | LOCK_NB) == 0 {
                // Locked: but is it still the file at `path`? A `down` may have removed it in between.
                var current = stat()
                if let opened = try? file.status(), stat(path, &current) == 0, opened.st_ino == current.st_ino, opened.st_dev == current.st_dev {
                    // Who holds it, as the file's first line, written over what an earlier holder wrote
                    // (readers take the first line): no truncation, so no block freed and allocated again
                    // for every command (with a filesystem mounted `discard`, each free waits on the disk).
                    _ = try? file.writeAll("\(getpid()) \(command)\n".utf8)
                    held.withLock { $0[path] = Held(fd: fd, count: 1, owner: thread) }
                    return SandboxLock(path: path, fd: fd)
                }
                try? file.close()
                continue
            }
            // Without blocking, flock fails only with EWOULDBLOCK while another holds the lock.
            let code = Errno.current
            try? file.close()
            guard code == .wouldBlock else { throw .state(path: path, detail: "cannot be locked (\(code))") }
            if !announced {
                waiting(holder(of: path))
                announced = true
            }
            guard MonotonicClock.seconds() < deadline else { throw .busy(name: name, holder: holder(of: path), waited: timeout) }
            usleep(20_000)
        }
    }

    /// Who holds the lock of sandbox `name` now; nil when it is free (or nobody wrote who they are).
    public static func holder(of name: String, store: SandboxStore) -> Holder? {
        let path = store.lockPath(for: name)
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        if flock(fd, LOCK_SH | LOCK_NB) == 0 {
            flock(fd, LOCK_UN)
            return nil
        }
        return holder(of: path)
    }

    /// The holder the lock file names — and, when that process has exited while the lock is still held,
    /// the processes that hold the file open (children that inherited the locked descriptor).
    private static func holder(of path: String) -> Holder? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        let line = text.split(separator: "\n").first ?? ""
        let parts = line.split(separator: " ", maxSplits: 1)
        guard let first = parts.first, let pid = Int32(first) else { return nil }
        var holder = Holder(pid: pid, command: parts.count > 1 ? String(parts[1]) : "?")
        if kill(pid, 0) != 0 && errno == ESRCH { holder.inheritedBy = processes(holding: path) }
        return holder
    }

    /// The processes (other than this one) with `path` open, from `/proc/PID/fd`.
    public static func processes(holding path: String) -> [Int32] {
        var target = stat()
        guard stat(path, &target) == 0, let proc = opendir("/proc") else { return [] }
        defer { closedir(proc) }
        var found: [Int32] = []
        while let entry = readdir(proc) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let pid = Int32(name), pid != getpid(), let fds = opendir("/proc/\(name)/fd") else { continue }
            defer { closedir(fds) }
            while let fd = readdir(fds) {
                let number = withUnsafeBytes(of: fd.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                var opened = stat()
                if stat("/proc/\(name)/fd/\(number)", &opened) == 0, opened.st_ino == target.st_ino, opened.st_dev == target.st_dev {
                    found.append(pid)
                    break
                }
            }
        }
        return found.sorted()
    }

    /// Releases the lock (the outermost release of a reentered lock unlocks the file).
    public func release() {
        guard !released else { return }
        released = true
        let close = Self.held.withLock { (locks: inout [String: Held]) -> Bool in
            guard var entry = locks[path] else { return false }
            entry.count -= 1
            if entry.count > 0 {
                locks[path] = entry
                return false
            }
            locks[path] = nil
            return true
        }
        if close {
            flock(fd, LOCK_UN)
            Glibc.close(fd)
        }
    }

    /// Removes the lock file while still holding the lock (`down`: nothing of the sandbox may be left), then
    /// releases it. Waiters notice and lock a new file.
    public func removeFileAndRelease() {
        unlink(path)
        release()
    }

    deinit { release() }
}

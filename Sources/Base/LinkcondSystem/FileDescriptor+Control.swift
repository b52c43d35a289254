import Glibc

extension FileDescriptor {
    /// True when the descriptor is closed in a process image started with `execve` (`FD_CLOEXEC` of
    /// `fcntl(F_GETFD)`).
    public func isCloseOnExec() throws(SystemError) -> Bool {
        try systemCall("fcntl F_GETFD") { fcntl(rawValue, F_GETFD) } & FD_CLOEXEC != 0
    }

    /// Sets or clears `FD_CLOEXEC` (`fcntl(F_SETFD)`). Opening with it set is better: between an open and
    /// this call, another thread's `fork` and `exec` would inherit the descriptor.
    public func setCloseOnExec(_ enabled: Bool = true) throws(SystemError) {
        let flags = try systemCall("fcntl F_GETFD") { fcntl(rawValue, F_GETFD) }
        let wanted = enabled ? flags | FD_CLOEXEC : flags & ~FD_CLOEXEC
        if wanted != flags { _ = try systemCall("fcntl F_SETFD") { fcntl(rawValue, F_SETFD, wanted) } }
    }

    /// True when calls on the descriptor fail with ``Errno/wouldBlock`` instead of waiting (`O_NONBLOCK`
    /// of `fcntl(F_GETFL)`).
    public func isNonBlocking() throws(SystemError) -> Bool {
        try systemCall("fcntl F_GETFL") { fcntl(rawValue, F_GETFL) } & O_NONBLOCK != 0
    }

    /// Sets or clears `O_NONBLOCK` (`fcntl(F_SETFL)`).
    public func setNonBlocking(_ enabled: Bool = true) throws(SystemError) {
        let flags = try systemCall("fcntl F_GETFL") { fcntl(rawValue, F_GETFL) }
        let wanted = enabled ? flags | O_NONBLOCK : flags & ~O_NONBLOCK
        if wanted != flags { _ = try systemCall("fcntl F_SETFL") { fcntl(rawValue, F_SETFL, wanted) } }
    }

    /// A second descriptor for the same open file, close-on-exec (`fcntl(F_DUPFD_CLOEXEC)`), owned by the
    /// caller.
    public func duplicate() throws(SystemError) -> FileDescriptor {
        FileDescriptor(rawValue: try systemCall("fcntl F_DUPFD_CLOEXEC") { fcntl(rawValue, F_DUPFD_CLOEXEC, 0) })
    }

    /// The file's type, size, owner and times (`fstat(2)`).
    public func status() throws(SystemError) -> stat {
        var info = stat()
        _ = try systemCall("fstat") { fstat(rawValue, &info) }
        return info
    }

    /// Waits until the descriptor is ready for `events` (`POLLIN`, `POLLOUT`), for at most
    /// `timeoutMilliseconds` (-1: no limit); returns the events that are ready (`revents`), none on timeout.
    public func poll(for events: Int16, timeoutMilliseconds: Int32) throws(SystemError) -> Int16 {
        var descriptors = [pollfd(fd: rawValue, events: events, revents: 0)]
        _ = try LinkcondSystem.poll(&descriptors, timeoutMilliseconds: timeoutMilliseconds)
        return descriptors[0].revents
    }
}

/// Waits until one of `descriptors` is ready for its events, for at most `timeoutMilliseconds` (-1: no
/// limit), and returns how many are (0: the time ran out); each `revents` says what is ready. A signal
/// does not end the wait early: `poll(2)` is called again with the time that is left.
public func poll(_ descriptors: inout [pollfd], timeoutMilliseconds: Int32) throws(SystemError) -> Int {
    let deadline = timeoutMilliseconds >= 0 ? monotonicMilliseconds() + Int64(timeoutMilliseconds) : nil
    while true {
        var remaining = Int32(-1)
        if let deadline { remaining = Int32(clamping: max(0, deadline - monotonicMilliseconds())) }
        let ready = Glibc.poll(&descriptors, nfds_t(descriptors.count), remaining)
        if ready >= 0 { return Int(ready) }
        let code = Errno.current
        if code != .interrupted { throw systemFailure("poll", code) }
    }
}

/// CLOCK_MONOTONIC in milliseconds, for deadlines.
private func monotonicMilliseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
}

/// Waits for the child `pid` to change state (`wait4(2)`, retrying `EINTR`) and returns its process id
/// (0 with `WNOHANG` when it has not changed yet) and wait status; fills `usage` with its resource use
/// when given.
public func waitForChild(
    _ pid: pid_t, options: Int32 = 0, usage: UnsafeMutablePointer<rusage>? = nil
) throws(SystemError) -> (pid: pid_t, status: Int32) {
    var status: Int32 = 0
    let reaped = try systemCall("wait for process \(pid)") { wait4(pid, &status, options, usage) }
    return (reaped, status)
}

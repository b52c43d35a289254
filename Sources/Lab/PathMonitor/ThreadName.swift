import Glibc
import LinkcondSystem

/// Names the calling thread as the kernel shows it (`comm`: /proc, `top -H`, `gdb`), so the monitor's and
/// the prober's threads can be told apart and counted.
enum ThreadName {
    /// Writes `name` (at most 15 bytes are kept) to /proc/thread-self/comm. Foundation's `Thread.name` is no
    /// substitute on Linux: set before `start` it never reaches the kernel, and set inside the thread it
    /// races with `start` recording the thread.
    static func setCurrent(_ name: String) {
        guard let file = try? FileDescriptor.open("/proc/thread-self/comm", .writeOnly) else { return }
        _ = file.closeAfter { try? file.writeAll(name.utf8.prefix(15)) }
    }
}

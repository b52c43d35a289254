import Glibc
import Synchronization

/// Ctrl-C handling for long operations: SIGINT and SIGTERM set a flag that the operation checks between
/// steps, so it can undo what it made instead of dying half-way.
enum Interrupts {
    private static let flag = Atomic<Bool>(false)

    /// Turns SIGINT/SIGTERM into the flag for the rest of the process's life.
    static func install() {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in
            Interrupts.flag.store(true, ordering: .relaxed)
        }
        sigemptyset(&action.sa_mask)
        sigaction(SIGINT, &action, nil)
        sigaction(SIGTERM, &action, nil)
    }

    /// True once SIGINT or SIGTERM arrived.
    static var received: Bool { flag.load(ordering: .relaxed) }

    /// Ignores SIGINT and SIGQUIT while a child runs in the foreground (as `system(3)` does): the
    /// terminal sends them to the child too, and the child decides.
    static func ignoreWhileChildRuns() {
        signal(SIGINT, SIG_IGN)
        signal(SIGQUIT, SIG_IGN)
    }
}

import Glibc
import NetNamespace

/// What a teardown removed, and what it found odd.
public struct TeardownReport: Sendable, Equatable {
    /// Processes stopped, as `server pid 123`.
    public var stoppedProcesses: [String] = []
    /// Namespaces deleted (with their interfaces, addresses, routes and qdiscs).
    public var removedNamespaces: [String] = []
    /// Files removed from the store (state, logs, portal flag, engine socket, half-written state).
    public var removedFiles: [String] = []
    /// Things worth saying: an unreadable state file, a recorded process that was not provably linkcond's.
    public var notes: [String] = []

    /// True when nothing of the sandbox was there.
    public var isEmpty: Bool { stoppedProcesses.isEmpty && removedNamespaces.isEmpty && removedFiles.isEmpty }
}

extension Sandbox {
    /// Removes everything of this sandbox that exists, by name and by proof, whatever the state file says:
    /// processes recorded *and* provably linkcond's (``RecordedProcess/isRunning``) or found by their marker;
    /// the namespaces named after the sandbox (``SandboxTopology/allNamespaces``) that carry its mark
    /// (``NamespaceMark``) — never a name the state lists beyond those, nor a namesake of another store's or
    /// made by hand; the sandbox's own files in the store. The caller holds the lock.
    @discardableResult
    func teardown(_ record: SandboxStore.Record) -> TeardownReport {
        var report = TeardownReport()
        var processes = RecordedProcess.discover(marker: marker)
        switch record {
        case .missing:
            break
        case let .unreadable(detail):
            report.notes.append("the state file \(detail): cleaned up by the sandbox's names instead")
        case let .state(state):
            for recorded in state.processes where !processes.contains(where: { $0.pid == recorded.pid }) {
                if recorded.isRunning {
                    processes.append(recorded)
                } else if recorded.isUnreapedChild {
                    recorded.collectIfChild()
                } else if ProcessInspector.startTime(recorded.pid) != nil {
                    report.notes.append("left pid \(recorded.pid) alone: it is not the \(recorded.role.rawValue) this sandbox started")
                }
            }
            let foreign = state.namespaces.filter { !topology.allNamespaces.contains($0) }
            if !foreign.isEmpty {
                report.notes.append("the state file names namespaces that are not this sandbox's (\(foreign.joined(separator: ", "))): left alone")
            }
        }
        for process in processes where process.terminate() {
            report.stoppedProcesses.append("\(process.role.rawValue) pid \(process.pid)")
        }
        let names = topology.allNamespaces
        for (name, owner) in zip(names, NamespaceMark.owners(of: names, marker: marker)).reversed() {
            guard owner.isRemovable else {
                report.notes.append("left \(name) alone: it is \(NamespaceMark.whose(owner))")
                continue
            }
            if (try? NamedNamespace.removeLeftovers(of: name)) == true { report.removedNamespaces.append(name) }
        }
        report.removedFiles = store.remove(topology.name)
        return report
    }
}

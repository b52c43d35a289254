import Dispatch
import Foundation
import Glibc
import JSONDocument

/// A container as the runtime that knows it describes it.
public struct ContainerLookup: Sendable, Equatable {
    /// The runtime that answered (`podman`, `docker`, `nerdctl`, `crictl`).
    public var runtime: String
    /// The container's id and name, as the runtime gives them.
    public var id: String
    public var name: String
    /// Its first process (0 when it does not run).
    public var pid: Int32
    /// True while it runs.
    public var running: Bool
    /// Its network namespace's file, when the runtime names one (podman's and docker's `SandboxKey`, the
    /// `network` namespace of a CRI container's spec); nil: `/proc/PID/ns/net`.
    public var namespacePath: String?
}

/// Finds a container by id or name through whichever container runtime is installed and knows it:
/// `podman inspect`, `docker inspect`, `nerdctl inspect` (each `--type container --format …`) and
/// `crictl inspect -o json`, in that order; the first that knows the container answers. Each is given
/// ``timeout`` seconds (a daemon that does not answer counts as not knowing it).
public enum ContainerRuntimes {
    /// The runtimes asked, in order.
    public static let names = ["podman", "docker", "nerdctl", "crictl"]
    /// Seconds each runtime is given to answer.
    public static let timeout = 15.0

    /// What one runtime said about the container.
    public struct Answer: Sendable, Equatable {
        public var runtime: String
        /// The container, when the runtime knows it.
        public var container: ContainerLookup?
        /// Why not, in the runtime's words (its last line of error output), when it does not.
        public var refusal: String?
    }

    /// The container `reference` names: the first runtime's answer that knows it. Throws, naming what each
    /// installed runtime said, when none does, or when the container does not run.
    public static func find(_ reference: String) throws(SandboxError) -> ContainerLookup {
        var answers: [Answer] = []
        var missing: [String] = []
        for runtime in names {
            guard let executable = executable(runtime) else {
                missing.append(runtime)
                continue
            }
            let answer = ask(runtime, executable: executable, reference: reference)
            if let container = answer.container {
                guard container.running, container.pid > 0 else {
                    throw .unsupported(detail: "container '\(reference)' (\(runtime), \(container.id.prefix(12))) is not running: start it first; nothing was changed")
                }
                return container
            }
            answers.append(answer)
        }
        var said = answers.map { "\($0.runtime): \($0.refusal ?? "does not know it")" }
        if !missing.isEmpty { said.append("\(missing.joined(separator: ", ")) \(missing.count == 1 ? "is" : "are") not installed") }
        throw .unsupported(detail: "no container '\(reference)' is known to any container runtime here (\(said.joined(separator: "; "))); nothing was changed")
    }

    /// The runtime's executable in `PATH` (or the usual directories), nil when it is not installed.
    public static func executable(_ runtime: String) -> String? {
        let path = getenv("PATH").map { String(cString: $0) } ?? ""
        let directories = path.split(separator: ":").map(String.init) + ["/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"]
        return directories.map { "\($0)/\(runtime)" }.first { access($0, X_OK) == 0 }
    }

    /// Asks one runtime.
    static func ask(_ runtime: String, executable: String, reference: String) -> Answer {
        let template = "{{.Id}}\t{{.Name}}\t{{.State.Pid}}\t{{.State.Running}}"
        let arguments: [String]
        switch runtime {
        case "crictl": arguments = ["inspect", "-o", "json", reference]
        case "nerdctl": arguments = ["inspect", "--type", "container", "--format", template, reference]
        default: arguments = ["inspect", "--type", "container", "--format", template + "\t{{.NetworkSettings.SandboxKey}}", reference]
        }
        guard let result = run(executable, arguments, timeout: timeout) else {
            return Answer(runtime: runtime, refusal: "did not answer within \(Int(timeout)) s")
        }
        guard result.status == 0 else {
            let line = result.error.split(separator: "\n").last.map(String.init) ?? "exit \(result.status)"
            return Answer(runtime: runtime, refusal: JSONWriter.excerpt(line, limit: 160))
        }
        let container = runtime == "crictl" ? parseCRI(result.output) : parseTemplate(result.output, runtime: runtime)
        return Answer(runtime: runtime, container: container, refusal: container == nil ? "an answer linkcond cannot read" : nil)
    }

    /// The line the `--format` template printed: id, name, pid, running, and the sandbox key where asked.
    static func parseTemplate(_ output: String, runtime: String) -> ContainerLookup? {
        let fields = output.split(separator: "\n").first?.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) ?? []
        guard fields.count >= 4, let pid = Int32(fields[2].trimmingCharacters(in: .whitespaces)) else { return nil }
        let key = fields.count > 4 ? fields[4].trimmingCharacters(in: .whitespaces) : ""
        let name = fields[1].hasPrefix("/") ? String(fields[1].dropFirst()) : fields[1]
        return ContainerLookup(
            runtime: runtime, id: fields[0], name: name, pid: pid, running: fields[3].trimmingCharacters(in: .whitespaces) == "true",
            namespacePath: key.isEmpty || key == "<no value>" ? nil : key)
    }

    /// `crictl inspect -o json`: `status.id`, `status.metadata.name`, `status.state`, `info.pid`, and the
    /// network namespace in `info.runtimeSpec.linux.namespaces`.
    static func parseCRI(_ output: String) -> ContainerLookup? {
        guard let root = try? JSONParser.value(of: Array(output.utf8)) else { return nil }
        func member(_ value: JSONValue?, _ key: String) -> JSONValue? {
            guard case let .object(members)? = value else { return nil }
            return members.first { $0.key == key }?.value
        }
        func text(_ value: JSONValue?) -> String? {
            if case let .string(string)? = value { return string }
            return nil
        }
        let status = member(root, "status")
        let info = member(root, "info")
        guard let id = text(member(status, "id")), case let .number(number)? = member(info, "pid"), let pid = number.integer(as: Int32.self) else {
            return nil
        }
        var namespacePath: String?
        if case let .array(namespaces)? = member(member(member(info, "runtimeSpec"), "linux"), "namespaces") {
            namespacePath = namespaces.first { text(member($0, "type")) == "network" }.flatMap { text(member($0, "path")) }
        }
        return ContainerLookup(
            runtime: "crictl", id: id, name: text(member(member(status, "metadata"), "name")) ?? id, pid: pid,
            running: text(member(status, "state")) == "CONTAINER_RUNNING", namespacePath: namespacePath)
    }

    /// Runs a runtime's command in this process's namespace and collects what it prints; nil when it did
    /// not end within `timeout` seconds (it is killed then).
    static func run(_ executable: String, _ arguments: [String], timeout: Double) -> (status: Int32, output: String, error: String)? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        process.standardInput = FileHandle.nullDevice
        let done = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in done.signal() }
        do {
            try process.run()
        } catch {
            return (127, "", "\(error)")
        }
        // Read both pipes as the process writes, so a long answer never blocks it.
        let collected = Collected()
        let group = DispatchGroup()
        for (pipe, isError) in [(output, false), (error, true)] {
            DispatchQueue.global().async(group: group) {
                let data = pipe.fileHandleForReading.readDataToEndOfFile()
                collected.store(String(decoding: data, as: UTF8.self), error: isError)
            }
        }
        guard done.wait(timeout: .now() + timeout) == .success else {
            kill(process.processIdentifier, SIGKILL)
            done.wait()
            group.wait()
            return nil
        }
        group.wait()
        return (process.terminationStatus, collected.output, collected.error)
    }

    private final class Collected: @unchecked Sendable {
        private let lock = NSLock()
        private var texts = ("", "")
        func store(_ text: String, error: Bool) {
            lock.lock()
            if error { texts.1 = text } else { texts.0 = text }
            lock.unlock()
        }
        var output: String { lock.lock(); defer { lock.unlock() }; return texts.0 }
        var error: String { lock.lock(); defer { lock.unlock() }; return texts.1 }
    }
}

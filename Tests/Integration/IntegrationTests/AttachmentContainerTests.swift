import Conditioning
import Foundation
import Glibc
import NetNamespace
import Sandboxing
import XCTest

/// Real containers: podman (Debian's 4.3, with runc and the cgroupfs manager — crun refuses this host's
/// hybrid cgroups) running an image built `FROM scratch` with Debian's busybox-static (no registry is
/// reachable), each joined to a container-like test namespace with `--network ns:PATH` (never the host's),
/// found by `linkcond attach --container NAME`, conditioned, measured from inside the container with
/// busybox's ping, and detached. Two at once, with different profiles. Every container is removed however
/// the test ends.
final class AttachmentContainerTests: SandboxTestCase {
    static let image = "localhost/linkcond-test-busybox:latest"
    static let podmanGlobal = ["--runtime", "runc", "--cgroup-manager=cgroupfs"]

    /// `podman ARGUMENTS`, its output through files: `podman run -d` leaves conmon holding the output it was
    /// given until the container exits.
    private func podman(_ arguments: [String]) throws -> CommandResult {
        guard let podman = ContainerRuntimes.executable("podman") else { throw MissingTool(path: "podman") }
        return try Command.runThroughFiles(podman, Self.podmanGlobal + arguments)
    }

    override func setUpWithError() throws {
        try super.setUpWithError()
        // A missing witness fails the test (it never passes without one): scripts/install-deps --test installs them.
        guard ContainerRuntimes.executable("podman") != nil else { throw MissingTool(path: "podman") }
        guard ContainerRuntimes.executable("runc") != nil else { throw MissingTool(path: "runc") }
        guard Command.isAvailable("/bin/busybox") else { throw MissingTool(path: "/bin/busybox (busybox-static)") }
        try Self.buildImage(podman)
    }

    /// Builds the image once per test process: busybox-static alone, `FROM scratch`.
    private static let built = ResultBox<Bool>()
    private static func buildImage(_ podman: ([String]) throws -> CommandResult) throws {
        if built.result != nil { return }
        let context = FileManager.default.temporaryDirectory.appendingPathComponent("lcit-image-\(getpid())").path
        try FileManager.default.createDirectory(atPath: context, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: context) }
        try FileManager.default.copyItem(atPath: "/bin/busybox", toPath: "\(context)/busybox")
        try "FROM scratch\nCOPY busybox /bin/busybox\nENTRYPOINT [\"/bin/busybox\"]\n".write(toFile: "\(context)/Containerfile", atomically: true, encoding: .utf8)
        let result = try podman(["build", "-q", "-t", image, context])
        guard result.status == 0 else { throw MissingTool(path: "a podman image of busybox-static: \(result.errorOutput)") }
        built.result = .success(true)
    }

    /// Runs a container (busybox `sleep`) in `namespace`; removed when the test ends.
    private func runContainer(in namespace: NamedNamespace) throws -> String {
        let name = "lcit\(getpid())-\(UniqueName.next())"
        addTeardownBlock { [self] in _ = try? podman(["rm", "-f", "-t", "0", name]) }
        let result = try podman([
            "run", "-d", "--name", name, "--ulimit", "nofile=20000:20000", "--ulimit", "nproc=4096:4096", "--network", "ns:\(namespace.path)",
            "--cap-add", "NET_RAW", Self.image, "sleep", "600",
        ])
        XCTAssertEqual(result.status, 0, "podman run: \(result.errorOutput)")
        return name
    }

    /// busybox's ping from inside the container: the median round trip in milliseconds.
    private func ping(_ container: String, _ address: String, count: Int = 5) throws -> Double? {
        let result = try podman(["exec", container, "/bin/busybox", "ping", "-c", "\(count)", "-W", "5", address])
        let times = result.output.split(separator: "\n").compactMap { line -> Double? in
            guard let range = line.range(of: "time=") else { return nil }
            return Double(line[range.upperBound...].split(separator: " ").first ?? "")
        }.sorted()
        return times.isEmpty ? nil : times[times.count / 2]
    }

    /// `linkcond ARGUMENTS` with a store of the test's own.
    private func linkcond(_ arguments: [String], store: String) throws -> CommandResult {
        try Command.run(try linkcondExecutable(), arguments, environment: ["LINKCOND_STORE": store])
    }

    func testContainersFoundByNameAreConditionedTwoAtOnce() throws {
        // Stop at the first failure: `apply --name` of an attachment that failed to attach would make a sandbox.
        continueAfterFailure = false
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("lcit-store-\(getpid())-\(UniqueName.next())").path
        try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: true)
        let first = try ContainerLikeTopology.make(in: self, tag: "a")
        let second = try ContainerLikeTopology.make(in: self, tag: "b")
        var befores: [NamespaceSnapshot] = []
        for topology in [first, second] {
            try NamespaceSnapshot.settle(topology.app)
            befores.append(try NamespaceSnapshot.take(topology.app))
        }
        let containers = [try runContainer(in: first.app), try runContainer(in: second.app)]
        let names = containers.map { _ in "c\(UniqueName.next())-\(getpid() % 10000)" }
        addTeardownBlock { [self] in
            for name in names { _ = try? linkcond(["detach", "--name", name], store: store) }
            try? FileManager.default.removeItem(atPath: store)
        }
        let server = ContainerLikeTopology.serverIPv4.address.description
        let unconditioned = try ping(containers[0], server)
        XCTAssertNotNil(unconditioned, "the container does not reach the server before the attach")

        for (container, name) in zip(containers, names) {
            let attach = try linkcond(["attach", "--container", container, "--name", name, "--backend", "userspace"], store: store)
            XCTAssertEqual(attach.status, 0, attach.errorOutput)
            XCTAssertTrue(attach.output.contains("container '\(container)' (podman, "), "the runtime that answered: \(attach.output)")
            XCTAssertTrue(attach.output.contains("network namespace /proc/"), "the namespace found: \(attach.output)")
        }
        // `status` lists the attachments beside the sandboxes (its exit code speaks for every sandbox on the
        // machine, other developers' too); `status --name` for one.
        let status = try linkcond(["status"], store: store)
        for (container, name) in zip(containers, names) {
            XCTAssertTrue(status.output.contains("attachment \(name): healthy"), status.output)
            XCTAssertTrue(status.output.contains("container '\(container)'"), status.output)
            let one = try linkcond(["status", "--name", name], store: store)
            XCTAssertEqual(one.status, 0, one.output + one.errorOutput)
            XCTAssertTrue(one.output.contains("attachment \(name): healthy") && one.output.contains("container '\(container)'"), one.output)
        }
        // A scenario that needs a sandbox's routes is refused on an attachment, with nothing made.
        let reports = "\(store)/reports"
        let run = try linkcond(["run", "ipv6-outage", "--name", names[0], "--report", reports], store: store)
        XCTAssertEqual(run.status, 1, run.output + run.errorOutput)
        XCTAssertTrue(run.errorOutput.contains("scenario 'ipv6-outage' cannot run on attachment '\(names[0])': step 'no-ipv6'"), run.errorOutput)
        XCTAssertFalse(FileManager.default.fileExists(atPath: reports), "a refused run made its report directory")
        // One that conditions the link and watches the path runs: `run SCENARIO --name ATTACHMENT`.
        let scenario = "\(store)/attached-edge.json"
        try #"""
            {"name": "attached-edge", "description": "edge on a container's attachment",
             "steps": [{"name": "edge", "apply": "edge", "hold": "2s"}, {"name": "back", "clear": true, "hold": "1s"}],
             "expectations": [{"name": "path satisfied under edge", "lane": "path", "holds": "satisfied", "during": "edge"}]}
            """#.write(toFile: scenario, atomically: true, encoding: .utf8)
        let scenarioRun = try linkcond(["run", scenario, "--name", names[1], "--report", reports], store: store)
        XCTAssertEqual(scenarioRun.status, 0, scenarioRun.output + scenarioRun.errorOutput)
        XCTAssertTrue(scenarioRun.output.contains("1/1 expectations passed"), scenarioRun.output)
        XCTAssertTrue(scenarioRun.errorOutput.contains("on attachment '\(names[1])'"), scenarioRun.errorOutput)
        try? FileManager.default.removeItem(atPath: reports)
        for (name, profile) in zip(names, ["edge", "3g"]) {
            let apply = try linkcond(["apply", profile, "--name", name], store: store)
            XCTAssertEqual(apply.status, 0, apply.output + apply.errorOutput)
        }
        // Edge: 400 + 440 ms; 3G: 100 + 100 ms; each container sees its own, both directions.
        let edge = try ping(containers[0], server)
        let threeG = try ping(containers[1], server)
        XCTAssertTrue((840...900).contains(edge ?? 0), "edge round trip from the first container: \(edge.map { "\($0) ms" } ?? "none")")
        XCTAssertTrue((200...260).contains(threeG ?? 0), "3g round trip from the second container: \(threeG.map { "\($0) ms" } ?? "none")")
        print("linkcond-attach: podman containers attached at once: unconditioned \(unconditioned ?? -1) ms, edge \(edge ?? -1) ms, 3g \(threeG ?? -1) ms (busybox ping, median of 5)")
        let show = try linkcond(["show", "--name", names[0]], store: store)
        XCTAssertTrue(show.output.contains("profile 'edge'") && show.output.contains("rate 240kbit delay 400ms"), show.output)
        // exec runs in the container's namespace: its eth0 (the stand-in) with its address.
        let exec = try linkcond(["exec", "--name", names[0], "--", "/bin/busybox", "ip", "-4", "addr", "show", "eth0"], store: store)
        XCTAssertEqual(exec.status, 0, exec.errorOutput)
        XCTAssertTrue(exec.output.contains(ContainerLikeTopology.appIPv4.address.description), exec.output)
        // monitor watches the container's path (it streams until stopped: 3 s of it).
        let monitor = try Command.runThroughFiles("/usr/bin/timeout", ["3", try linkcondExecutable(), "monitor", "--name", names[0], "--json"], environment: ["LINKCOND_STORE": store])
        XCTAssertTrue(monitor.output.contains("eth0") && monitor.output.contains("satisfied"), "monitor --name: \(monitor.output) \(monitor.errorOutput)")
        // clear takes the second container back to unconditioned while the first keeps edge.
        let clear = try linkcond(["clear", "--name", names[1]], store: store)
        XCTAssertTrue(clear.status == 0 && clear.output.contains("cleared the conditions of attachment '\(names[1])'"), clear.output + clear.errorOutput)
        let cleared = try ping(containers[1], server)
        XCTAssertTrue((cleared ?? 1000) < 100, "the second container is not unconditioned after clear: \(cleared ?? -1) ms")
        // Which conditions the first container has after the second's clear: the engine still holds edge (read
        // back), and its round trip is edge's — never below its 840 ms of delays, and short of edge with 3g's
        // 200 ms on top (or edge twice). The timing itself is judged above (840–900 ms, median of 5) and, with
        // controls, in the conditioning suite; here a CI-loaded machine once took the slower of two pings past
        // 900 ms, which says nothing about which profile the container has.
        let kept = try linkcond(["show", "--name", names[0]], store: store)
        XCTAssertTrue(kept.output.contains("profile 'edge'") && kept.output.contains("rate 240kbit delay 400ms"), "after the second's clear: \(kept.output)")
        let after = try ping(containers[0], server, count: 3)
        XCTAssertTrue((840..<1040).contains(after ?? 0), "the first container lost its edge at the second's clear: \(after.map { "\($0) ms" } ?? "no answer") (median of 3)")

        for (index, name) in names.enumerated() {
            // `down --name` reaches an attachment's detach.
            let down = try linkcond([index == 0 ? "down" : "detach", "--name", name], store: store)
            XCTAssertEqual(down.status, 0, down.output + down.errorOutput)
            XCTAssertTrue(down.output.contains("the original interface is home"), down.output)
        }
        for (topology, before) in zip([first, second], befores) {
            var after = try NamespaceSnapshot.take(topology.app)
            _ = try eventually(timeout: 5) {
                after = try NamespaceSnapshot.take(topology.app)
                return after == before
            }
            XCTAssertTrue(before == after, "\(topology.app.name) differs after detach:\n\(before.differences(after))")
        }
        let again = try ping(containers[0], server)
        XCTAssertTrue((again ?? 1000) < 100, "the container is not back to unconditioned: \(again ?? -1) ms")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: "\(store)/attached"), [], "files left in the store")
    }
}

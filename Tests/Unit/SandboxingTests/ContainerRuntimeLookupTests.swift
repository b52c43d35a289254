import Foundation
import Glibc
@testable import Sandboxing
import XCTest

/// How `attach --container` reads each runtime's answer, through fake runtimes (shell scripts that check the
/// arguments linkcond passes and print what docker, nerdctl and crictl print): only podman runs on the
/// project's machine, so these are the other three's only check here.
final class ContainerRuntimeLookupTests: XCTestCase {
    private var directory = ""

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("lc-runtimes-\(getpid())-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A fake runtime: prints `output` when called with exactly `arguments`, else complains and exits 2.
    private func fake(_ runtime: String, expecting arguments: [String], prints output: String, error: String = "", status: Int32 = 0) throws -> String {
        let path = "\(directory)/\(runtime)"
        let expected = arguments.joined(separator: "|")
        let script = """
            #!/bin/sh
            IFS='|'
            if [ "$*" != '\(expected)' ]; then echo "unexpected arguments: $*" >&2; exit 2; fi
            printf '%s' '\(output)'
            printf '%s' '\(error)' >&2
            exit \(status)

            """
        try script.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o755)
        return path
    }

    private let template = "{{.Id}}\t{{.Name}}\t{{.State.Pid}}\t{{.State.Running}}"

    func testDockerAnswersWithItsSandboxKeyAndASlashedName() throws {
        let docker = try fake(
            "docker", expecting: ["inspect", "--type", "container", "--format", template + "\t{{.NetworkSettings.SandboxKey}}", "web"],
            prints: "0123abcd\t/web\t4242\ttrue\t/var/run/docker/netns/8b1c\n")
        let answer = ContainerRuntimes.ask("docker", executable: docker, reference: "web")
        XCTAssertEqual(answer.refusal, nil)
        XCTAssertEqual(answer.container, ContainerLookup(
            runtime: "docker", id: "0123abcd", name: "web", pid: 4242, running: true, namespacePath: "/var/run/docker/netns/8b1c"))
    }

    func testNerdctlAnswersWithoutASandboxKey() throws {
        let nerdctl = try fake(
            "nerdctl", expecting: ["inspect", "--type", "container", "--format", template, "api"], prints: "f00d\tapi\t77\tfalse\n")
        let answer = ContainerRuntimes.ask("nerdctl", executable: nerdctl, reference: "api")
        XCTAssertEqual(answer.container, ContainerLookup(runtime: "nerdctl", id: "f00d", name: "api", pid: 77, running: false, namespacePath: nil))
    }

    func testCrictlAnswersInJSONWithThePodsNetworkNamespace() throws {
        let json = #"{"status": {"id": "c0ffee", "metadata": {"name": "app"}, "state": "CONTAINER_RUNNING"}, "info": {"pid": 9001, "runtimeSpec": {"linux": {"namespaces": [{"type": "pid"}, {"type": "network", "path": "/var/run/netns/cni-1234"}]}}}}"#
        let crictl = try fake("crictl", expecting: ["inspect", "-o", "json", "app"], prints: json)
        let answer = ContainerRuntimes.ask("crictl", executable: crictl, reference: "app")
        XCTAssertEqual(answer.container, ContainerLookup(
            runtime: "crictl", id: "c0ffee", name: "app", pid: 9001, running: true, namespacePath: "/var/run/netns/cni-1234"))
    }

    func testARuntimeThatDoesNotKnowTheContainerIsQuotedByItsLastLine() throws {
        let docker = try fake(
            "docker", expecting: ["inspect", "--type", "container", "--format", template + "\t{{.NetworkSettings.SandboxKey}}", "nosuch"], prints: "",
            error: "warning: something\nError: No such container: nosuch\n", status: 1)
        let answer = ContainerRuntimes.ask("docker", executable: docker, reference: "nosuch")
        XCTAssertNil(answer.container)
        // Quoted (and escaped): a runtime's words reach the terminal as text, never as control sequences.
        XCTAssertEqual(answer.refusal, #""Error: No such container: nosuch""#)
    }

    func testAnAnswerThatCannotBeReadIsSaidSo() throws {
        let crictl = try fake("crictl", expecting: ["inspect", "-o", "json", "app"], prints: "not json")
        XCTAssertEqual(ContainerRuntimes.ask("crictl", executable: crictl, reference: "app").refusal, "an answer linkcond cannot read")
        let docker = try fake(
            "docker", expecting: ["inspect", "--type", "container", "--format", template + "\t{{.NetworkSettings.SandboxKey}}", "web"],
            prints: "0123abcd\t/web\tnot-a-pid\ttrue\n")
        XCTAssertEqual(ContainerRuntimes.ask("docker", executable: docker, reference: "web").refusal, "an answer linkcond cannot read")
    }
}

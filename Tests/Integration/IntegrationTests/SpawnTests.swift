import Foundation
import Glibc
import NetNamespace
import Netlink
import RouteNetlink
import XCTest

/// Processes started inside a namespace, as `ip netns exec` starts them.
final class SpawnTests: IntegrationTestCase {
    func testExitCodesPassThrough() throws {
        let namespace = try makeNamespace("exit")
        for code in [0, 1, 7, 255] {
            let process = try namespace.spawn("/bin/sh", arguments: ["-c", "exit \(code)"])
            XCTAssertEqual(try process.wait(), Int32(code))
        }
        // Looked up in PATH.
        XCTAssertEqual(try namespace.spawn("true").wait(), 0)
        XCTAssertEqual(try namespace.spawn("false").wait(), 1)
    }

    func testKilledBySignalIs128PlusTheSignal() throws {
        let namespace = try makeNamespace("signal")
        XCTAssertEqual(try namespace.spawn("/bin/sh", arguments: ["-c", "kill -KILL $$"]).wait(), 128 + SIGKILL)
        XCTAssertEqual(try namespace.spawn("/bin/sh", arguments: ["-c", "kill -TERM $$"]).wait(), 128 + SIGTERM)

        // A signal sent from outside.
        let sleeper = try namespace.spawn("/bin/sleep", arguments: ["30"])
        sleeper.send(signal: SIGINT)
        XCTAssertEqual(try sleeper.wait(), 128 + SIGINT)
    }

    func testChildRunsInTheNamespace() throws {
        let namespace = try makeNamespace("inside")
        let (status, output) = try spawnCapturing(namespace, "/bin/sh", ["-c", "readlink /proc/self/ns/net"])
        XCTAssertEqual(status, 0)
        XCTAssertEqual(output.trimmingCharacters(in: .whitespacesAndNewlines), "net:[\(namespaceInode(namespace.path))]")
    }

    func testResolvConfInsideIsTheNamespacesEtcNetnsFile() throws {
        let namespace = try makeNamespace("resolv")
        let contents = "# lcit \(getpid())\nnameserver 198.18.0.53\nnameserver 2001:2::53\nsearch lcit.test\n"
        try namespace.writeEtcFile("resolv.conf", contents: contents)
        // A file with no /etc twin is skipped, not an error (as in iproute2).
        try namespace.writeEtcFile("lcit-no-such-etc-file.conf", contents: "x\n")
        let hostResolv = try? String(contentsOfFile: "/etc/resolv.conf", encoding: .utf8)

        let (status, output) = try spawnCapturing(namespace, "/bin/cat", ["/etc/resolv.conf"])
        XCTAssertEqual(status, 0)
        XCTAssertEqual(output, contents)
        // Only the child's private mount namespace sees it.
        XCTAssertEqual(try? String(contentsOfFile: "/etc/resolv.conf", encoding: .utf8), hostResolv)
        XCTAssertFalse(FileManager.default.fileExists(atPath: "/etc/lcit-no-such-etc-file.conf"))

        // iproute2 agrees about what `ip netns exec` shows.
        let witness = try Command.ip(["netns", "exec", namespace.name, "/bin/cat", "/etc/resolv.conf"])
        XCTAssertEqual(witness.output, contents, witness.errorOutput)
    }

    func testSysClassNetShowsTheNamespacesInterfaces() throws {
        let namespace = try makeNamespace("sysfs")
        try netlink(namespace).createVeth(name: "sv0", peerName: "sv1")
        let (status, output) = try spawnCapturing(namespace, "/bin/ls", ["/sys/class/net"])
        XCTAssertEqual(status, 0)
        let names = Set(output.split(whereSeparator: \.isWhitespace).map(String.init))
        XCTAssertEqual(names, ["lo", "sv0", "sv1"])
        XCTAssertFalse(names.contains("eth0"))
        // The parent's /sys is unchanged.
        XCTAssertFalse(FileManager.default.fileExists(atPath: "/sys/class/net/sv0"))
    }

    func testEnvironmentIsPassedWhenGiven() throws {
        let namespace = try makeNamespace("env")
        let (status, output) = try spawnCapturing(
            namespace, "/bin/sh", ["-c", "printf '%s|%s' \"$LCIT_VALUE\" \"${HOME:-unset}\""],
            environment: ["LCIT_VALUE": "hello there", "PATH": "/usr/bin:/bin"])
        XCTAssertEqual(status, 0)
        XCTAssertEqual(output, "hello there|unset")
    }

    func testMissingProgramIsExecutableNotFound() throws {
        let namespace = try makeNamespace("missing")
        let byName = expectError(NamespaceError.self) { try namespace.spawn("lcit-no-such-program") }
        XCTAssertEqual(byName, .executableNotFound("lcit-no-such-program"))
        XCTAssertEqual(byName?.description, "lcit-no-such-program: command not found")
        let byPath = expectError(NamespaceError.self) { try namespace.spawn("/nonexistent/lcit-program") }
        XCTAssertEqual(byPath, .executableNotFound("/nonexistent/lcit-program"))
        // A PATH without it.
        let emptyPath = expectError(NamespaceError.self) { try namespace.spawn("sh", environment: ["PATH": "/nonexistent"]) }
        XCTAssertEqual(emptyPath, .executableNotFound("sh"))
    }

    func testSpawnIntoADeletedNamespaceFailsCleanly() throws {
        let namespace = try makeNamespace("deleted")
        try namespace.delete()
        let error = expectError(NamespaceError.self) { try namespace.spawn("/bin/true") }
        guard case let .system(operation, code)? = error else {
            return XCTFail("expected .system, got \(String(describing: error))")
        }
        XCTAssertEqual(code, ENOENT)
        XCTAssertTrue(operation.contains("open the namespace"), operation)
        // The child that failed before execve was reaped.
        assertNoZombieChildren()
    }
}

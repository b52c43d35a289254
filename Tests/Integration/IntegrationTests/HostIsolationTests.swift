import Conditioning
import Foundation
import Glibc
import LinkcondBase
import NetNamespace
import RouteNetlink
import XCTest

/// A whole sandbox life (up with its server, traffic, down) leaves the host's namespace exactly as it was.
final class HostIsolationTests: SandboxTestCase {
    func testSandboxUpAndDownLeaveTheHostNamespaceUntouched() throws {
        let sandbox = try makeSandbox()
        let launch = try serverLaunch(sandbox)
        let sysctls = ["net/ipv4/ip_forward", "net/ipv6/conf/all/forwarding"].map { "/proc/sys/\($0)" }
        let sysctlsBefore = sysctls.map(readTrimmed)
        let resolvBefore = try? String(contentsOfFile: "/etc/resolv.conf", encoding: .utf8)
        let before = try HostSnapshot.take()
        XCTAssertFalse(before.links.isEmpty)
        XCTAssertFalse(before.routes.isEmpty)

        XCTAssertEqual(try sandbox.up(cellular: true, server: launch), .created)
        // Traffic inside the sandbox.
        let client = try sandbox.clientNamespace()
        for server in [SandboxPlan.serverIPv4, SandboxPlan.serverIPv6] {
            XCTAssertNotNil(try waitUntilReachable(client, server, port: SandboxPlan.httpPort), "\(server) unreachable")
        }
        let during = try HostSnapshot.take()
        assertSame(before, during, "while the sandbox is up")
        XCTAssertTrue(try netlink(client).links().contains { $0.name == "ww0" })

        XCTAssertTrue(try sandbox.down())
        let after = try HostSnapshot.take()
        assertSame(before, after, "after down")
        XCTAssertEqual(sysctls.map(readTrimmed), sysctlsBefore)
        XCTAssertEqual(try? String(contentsOfFile: "/etc/resolv.conf", encoding: .utf8), resolvBefore)
        try assertNothingLeft(sandbox)
    }

    private func assertSame(_ expected: HostSnapshot, _ actual: HostSnapshot, _ when: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(expected.links, actual.links, "host links changed \(when)", file: file, line: line)
        XCTAssertEqual(expected.addresses, actual.addresses, "host addresses changed \(when)", file: file, line: line)
        XCTAssertEqual(expected.routes, actual.routes, "host routes changed \(when)", file: file, line: line)
        XCTAssertEqual(expected.qdiscs, actual.qdiscs, "host qdiscs changed \(when)", file: file, line: line)
        XCTAssertEqual(expected.ipLinks, actual.ipLinks, "`ip -d link` changed \(when)", file: file, line: line)
        XCTAssertEqual(expected.ipAddresses, actual.ipAddresses, "`ip addr` changed \(when)", file: file, line: line)
        XCTAssertEqual(expected.ipRoutes, actual.ipRoutes, "`ip route show table all` changed \(when)", file: file, line: line)
        XCTAssertEqual(expected.tcQdiscs, actual.tcQdiscs, "`tc qdisc` changed \(when)", file: file, line: line)
    }
}

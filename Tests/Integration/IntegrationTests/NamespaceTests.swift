import Foundation
import Glibc
import NetNamespace
import Netlink
import RouteNetlink
import XCTest

/// Named namespaces, as iproute2 sees them.
final class NamespaceTests: IntegrationTestCase {
    func testCreateListInspectDeleteAgreesWithIproute2() throws {
        let name = UniqueName.namespace("life")
        addTeardownBlock { Cleanup.removeNamespace(name) }

        let namespace = try NamedNamespace.create(name)
        XCTAssertEqual(namespace.name, name)
        XCTAssertEqual(namespace.path, "/run/netns/\(name)")
        XCTAssertTrue(NamedNamespace.exists(name))
        XCTAssertTrue(NamedNamespace.list().contains(name), "NamedNamespace.list() lacks \(name)")
        XCTAssertTrue(try Command.ipNetnsList().contains(name), "`ip netns list` lacks \(name)")
        XCTAssertEqual(try NamedNamespace(existing: name), namespace)

        // iproute2 can work on it: a fresh namespace has exactly one link, lo, and it is down.
        let links = try Command.ip(["-n", name, "-o", "link", "show"])
        XCTAssertEqual(links.status, 0, links.errorOutput)
        let lines = links.output.split(separator: "\n")
        XCTAssertEqual(lines.count, 1, links.output)
        XCTAssertTrue(links.output.contains(": lo: "), links.output)
        XCTAssertTrue(links.output.contains("state DOWN"), links.output)

        try namespace.delete()
        XCTAssertFalse(NamedNamespace.exists(name))
        XCTAssertFalse(NamedNamespace.list().contains(name))
        XCTAssertFalse(try Command.ipNetnsList().contains(name), "`ip netns list` still shows \(name)")
        let afterDelete = try Command.ip(["-n", name, "link", "show"])
        XCTAssertNotEqual(afterDelete.status, 0, "ip -n \(name) still works after delete")
        let notFound = expectError(NamespaceError.self) { try NamedNamespace(existing: name) }
        XCTAssertEqual(notFound, .notFound(name: name))
        // Deleting what is gone is not an error (ENOENT is ignored), as for `ip netns del` racing a cleanup.
        XCTAssertNoThrow(try namespace.delete())
    }

    func testNamespaceMadeByIproute2IsVisibleAndUsable() throws {
        let name = UniqueName.namespace("ipadd")
        addTeardownBlock { Cleanup.removeNamespace(name) }
        let added = try Command.ip(["netns", "add", name])
        XCTAssertEqual(added.status, 0, added.errorOutput)
        XCTAssertTrue(NamedNamespace.list().contains(name))
        let namespace = try NamedNamespace(existing: name)
        XCTAssertEqual(try netlink(namespace).links().map(\.name), ["lo"])
        try namespace.delete()
        XCTAssertFalse(try Command.ipNetnsList().contains(name))
    }

    func testCreatingTwiceIsAlreadyExistsAndLeavesTheFirstIntact() throws {
        let namespace = try makeNamespace("twice")
        let inode = namespaceInode(namespace.path)
        XCTAssertNotEqual(inode, 0)
        let error = expectError(NamespaceError.self) { try NamedNamespace.create(namespace.name) }
        XCTAssertEqual(error, .alreadyExists(name: namespace.name))
        XCTAssertEqual(error?.description.contains(namespace.name), true)
        // The existing namespace is still the same one (still mounted, same inode).
        XCTAssertTrue(NamedNamespace.exists(namespace.name))
        XCTAssertEqual(namespaceInode(namespace.path), inode)
        XCTAssertEqual(try netlink(namespace).links().map(\.name), ["lo"])
    }

    /// A plain file in /run/netns (what a crash between creating the file and mounting the namespace leaves)
    /// exists but is not a namespace; a real one is.
    func testAPlainFileWhereANamespaceShouldBeIsNotMounted() throws {
        let namespace = try makeNamespace("mounted")
        XCTAssertTrue(namespace.isMounted)
        let name = "lcit\(getpid())-\(UniqueName.next())-plain"
        let path = "\(NamedNamespace.runDirectory)/\(name)"
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: nil))
        defer { unlink(path) }
        let plain = try NamedNamespace(existing: name)
        XCTAssertFalse(plain.isMounted, "a plain file is taken for a namespace")
        XCTAssertTrue(try NamedNamespace.removeLeftovers(of: name))
        XCTAssertFalse(NamedNamespace.exists(name))
    }

    func testInvalidNamesAreRejectedBeforeAnythingIsMade() throws {
        let tooLong = "lcit" + String(repeating: "x", count: 61)  // 65 characters
        for name in ["", ".", "..", "a/b", "../etc", "with space", "tab\tname", "ümlaut", tooLong] {
            let error = expectError(NamespaceError.self) { try NamedNamespace.create(name) }
            XCTAssertEqual(error, .invalidName(name), "name \(name.debugDescription)")
            XCTAssertEqual(error?.description.contains("not a usable namespace name"), true)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: "/run/netns/with space"))

        // 64 characters is the limit and works.
        var longest = UniqueName.namespace("max")
        longest += String(repeating: "m", count: 64 - longest.count)
        XCTAssertEqual(longest.count, 64)
        addTeardownBlock { [longest] in Cleanup.removeNamespace(longest) }
        let namespace = try NamedNamespace.create(longest)
        XCTAssertTrue(try Command.ipNetnsList().contains(longest))
        try namespace.delete()
    }

    func testRunSeesOnlyTheNamespacesLinksWhileTheHostSeesItsOwn() throws {
        let namespace = try makeNamespace("run")
        let callerInode = currentThreadNamespaceInode()
        let namespaceFileInode = namespaceInode(namespace.path)
        XCTAssertNotEqual(callerInode, namespaceFileInode)

        let (insideInode, insideLinks) = try namespace.run { () throws -> (UInt, [Link]) in
            let client = RouteNetlinkClient(connection: try NetlinkConnection(), namespace: namespace.name)
            return (currentThreadNamespaceInode(), try client.links())
        }
        XCTAssertEqual(insideInode, namespaceFileInode, "run{} did not execute inside \(namespace.path)")
        XCTAssertEqual(insideLinks.map(\.name), ["lo"])
        XCTAssertEqual(insideLinks.first?.isLoopback, true)
        XCTAssertEqual(insideLinks.first?.isUp, false)
        // The caller's thread never moved.
        XCTAssertEqual(currentThreadNamespaceInode(), callerInode)

        // The host (the test thread's namespace), read over netlink, has its own links.
        let hostLinks = try RouteNetlinkClient(connection: try NetlinkConnection(), namespace: nil).links().map(\.name)
        XCTAssertTrue(hostLinks.contains("lo"))
        XCTAssertGreaterThan(hostLinks.count, 1, "the host namespace shows only \(hostLinks)")
        if FileManager.default.fileExists(atPath: "/sys/class/net/eth0") {
            XCTAssertTrue(hostLinks.contains("eth0"), "host links: \(hostLinks)")
        }
        XCTAssertFalse(insideLinks.map(\.name).contains("eth0"))

        // Errors thrown inside come out unchanged.
        struct Marker: Error, Equatable {}
        XCTAssertThrowsError(try namespace.run { () throws -> Int in throw Marker() }) { error in
            XCTAssertEqual(error as? Marker, Marker())
        }
    }

    func testNetlinkConnectionStaysBoundToItsNamespace() throws {
        let namespace = try makeNamespace("bound")
        // Opened inside, used from the test thread (which is in the host namespace).
        let client = try netlink(namespace)
        try client.setLink("lo", up: true)
        XCTAssertTrue(try client.link(named: "lo").isUp)
        let shown = try Command.ip(["-n", namespace.name, "-o", "link", "show", "dev", "lo"])
        XCTAssertEqual(shown.status, 0, shown.errorOutput)
        XCTAssertTrue(shown.output.contains("<LOOPBACK,UP,LOWER_UP>"), shown.output)
        // The host's lo was up before and is untouched; its index differs from nothing we could have confused it with.
        let hostLo = try RouteNetlinkClient(connection: try NetlinkConnection(), namespace: nil).link(named: "lo")
        XCTAssertTrue(hostLo.isUp)
    }

    func testRunOnAMissingNamespaceIsNotFound() throws {
        let name = UniqueName.namespace("absent")
        let error = expectError(NamespaceError.self) {
            try NamespaceThread.run(inNamespaceAt: "/run/netns/\(name)") { 1 }
        }
        XCTAssertEqual(error, .notFound(name: name))
    }

    func testSetSysctlChangesOnlyTheNamespace() throws {
        let namespace = try makeNamespace("sysctl")
        let hostBefore = readTrimmed("/proc/sys/net/ipv4/ip_forward")
        let read = { () throws -> String? in try namespace.run { readTrimmed("/proc/sys/net/ipv4/ip_forward") } }
        XCTAssertEqual(try read(), "0", "a fresh namespace forwards nothing")
        try namespace.setSysctl("net.ipv4.ip_forward", "1")
        XCTAssertEqual(try read(), "1")
        try namespace.setSysctl("net/ipv6/conf/all/forwarding", "1")
        XCTAssertEqual(try namespace.run { readTrimmed("/proc/sys/net/ipv6/conf/all/forwarding") }, "1")
        XCTAssertEqual(readTrimmed("/proc/sys/net/ipv4/ip_forward"), hostBefore, "the host's ip_forward changed")

        let missing = expectError(NamespaceError.self) { try namespace.setSysctl("net.ipv4.lcit_no_such_key", "1") }
        if case let .system(operation, code)? = missing {
            XCTAssertEqual(code, ENOENT)
            XCTAssertTrue(operation.contains(namespace.name), operation)
        } else {
            XCTFail("expected .system(ENOENT), got \(String(describing: missing))")
        }
    }

    func testEtcFilesLiveUnderEtcNetnsAndGoWithTheNamespace() throws {
        let namespace = try makeNamespace("etc")
        try namespace.writeEtcFile("resolv.conf", contents: "nameserver 198.18.0.53\n")
        XCTAssertEqual(
            try String(contentsOfFile: "/etc/netns/\(namespace.name)/resolv.conf", encoding: .utf8),
            "nameserver 198.18.0.53\n")
        XCTAssertFalse(FileManager.default.fileExists(atPath: "/etc/netns/\(namespace.name)/resolv.conf.tmp"))
        try namespace.delete()
        XCTAssertFalse(FileManager.default.fileExists(atPath: namespace.etcPath), "\(namespace.etcPath) outlived delete()")
    }
}

import Foundation
import Glibc
import LinkcondBase
import NetNamespace
import Netlink
import RouteNetlink
import XCTest

/// Qdiscs, and requests the kernel refuses: its own words (extended ack) must reach the error, next to the
/// equivalent `ip`/`tc` command.
final class KernelRefusalTests: IntegrationTestCase {
    /// A namespace with a veth pair `q0`/`q1`, both up.
    private func makeVethNamespace(_ tag: String) throws -> (NamedNamespace, RouteNetlinkClient) {
        let namespace = try makeNamespace(tag)
        let links = try netlink(namespace)
        try links.createVeth(name: "q0", peerName: "q1")
        try links.setLink("q0", up: true)
        try links.setLink("q1", up: true)
        return (namespace, links)
    }

    private func rootQdisc(_ links: RouteNetlinkClient, on name: String) throws -> Qdisc? {
        let index = try links.index(of: name)
        return try links.qdiscs().first { $0.interfaceIndex == index && $0.parent == .root }
    }

    func testUnknownQdiscKindCarriesTheKernelsWords() throws {
        let (namespace, links) = try makeVethNamespace("qunknown")
        let error = expectError(RouteNetlinkError.self) {
            try links.replaceQdisc(on: "q0", handle: TrafficControlHandle(major: 1, minor: 0), kind: "lcnonexistent")
        }
        guard let refusal = kernelRefusal(error) else { return }
        XCTAssertEqual(refusal.errno, ENOENT)
        XCTAssertEqual(error?.errno, ENOENT)
        let words = refusal.kernelMessage ?? ""
        XCTAssertTrue(words.contains("unknown"), "kernel message: \(words.debugDescription)")
        let description = error?.description ?? ""
        XCTAssertTrue(description.contains("Specified qdisc kind is unknown"), description)
        XCTAssertTrue(description.contains("tc -n \(namespace.name) qdisc replace dev q0 root handle 1: lcnonexistent"), description)
        XCTAssertTrue(description.contains(words), description)
        // Nothing changed: the veth keeps its default.
        XCTAssertEqual(try rootQdisc(links, on: "q0")?.kind, "noqueue")
    }

    func testPfifoReplaceReadBackAndDeleteRestoresTheDefault() throws {
        let (namespace, links) = try makeVethNamespace("qpfifo")
        let q0 = try links.index(of: "q0")
        let before = try rootQdisc(links, on: "q0")
        XCTAssertEqual(before?.kind, "noqueue", "a veth's default root qdisc")
        XCTAssertEqual(before?.handle.rawValue, 0)

        let handle = TrafficControlHandle(major: 1, minor: 0)
        try links.replaceQdisc(on: "q0", handle: handle, kind: "pfifo")
        var installed = try rootQdisc(links, on: "q0")
        XCTAssertEqual(installed?.kind, "pfifo")
        XCTAssertEqual(installed?.handle, handle)
        XCTAssertEqual(installed?.handle.description, "1:")
        XCTAssertEqual(installed?.parent, .root)
        XCTAssertEqual(installed?.interfaceIndex, q0)
        // q1 is untouched.
        XCTAssertEqual(try rootQdisc(links, on: "q1")?.kind, "noqueue")

        // Replace in place with an explicit limit (struct tc_fifo_qopt { __u32 limit; } in TCA_OPTIONS = 2).
        let limit: UInt32 = 42
        try links.replaceQdisc(on: "q0", handle: handle, options: .pfifo(limit: limit))
        installed = try rootQdisc(links, on: "q0")
        XCTAssertEqual(installed?.kind, "pfifo")
        XCTAssertEqual(installed?.handle, handle)
        let options = installed?.options ?? []
        XCTAssertEqual(options.count, 4, "TCA_OPTIONS \(options)")
        if options.count == 4 {
            XCTAssertEqual(options.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }, limit)
        }
        let shown = try Command.tc(["-n", namespace.name, "qdisc", "show", "dev", "q0"])
        XCTAssertTrue(shown.output.contains("qdisc pfifo 1: root"), shown.output)
        XCTAssertTrue(shown.output.contains("limit 42p"), shown.output)

        // Counters move when packets go through it: send a few limited broadcasts out of q0 (bound to q0's
        // address, the kernel sends 255.255.255.255 out of that address's device).
        let source = IPAddress("198.18.60.1")!
        try links.addAddress(IPPrefix(address: source, length: 24)!, to: "q0")
        let fd = try namespace.run { () throws -> Int32 in
            let fd = try TestSocket.open(for: source, type: Int32(SOCK_DGRAM.rawValue))
            var on: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_BROADCAST, &on, socklen_t(MemoryLayout<Int32>.size))
            try TestSocket.bind(fd, source, port: 0)
            return fd
        }
        defer { close(fd) }
        for _ in 0..<3 {
            XCTAssertEqual(TestSocket.send(fd, [0xaa], to: IPAddress("255.255.255.255")!, port: 9), 0)
        }
        XCTAssertTrue(
            try eventually { (try rootQdisc(links, on: "q0")?.statistics.packets ?? 0) >= 3 },
            "pfifo counted \(String(describing: (try? rootQdisc(links, on: "q0"))??.statistics))")

        try links.deleteRootQdisc(on: "q0")
        let after = try rootQdisc(links, on: "q0")
        XCTAssertEqual(after?.kind, "noqueue", "deleting the root should restore the default")
        XCTAssertEqual(after?.handle.rawValue, 0)
        XCTAssertTrue(try Command.tc(["-n", namespace.name, "qdisc", "show", "dev", "q0"]).output.contains("noqueue"))
    }

    func testDeletingTheDefaultRootQdiscIsRefused() throws {
        let (namespace, links) = try makeVethNamespace("qdel")
        let error = expectError(RouteNetlinkError.self) { try links.deleteRootQdisc(on: "q0") }
        guard let refusal = kernelRefusal(error) else { return }
        XCTAssertNotEqual(refusal.errno, 0)
        let description = error?.description ?? ""
        XCTAssertTrue(description.contains("tc -n \(namespace.name) qdisc del dev q0 root"), description)
        if let words = refusal.kernelMessage, !words.isEmpty {
            XCTAssertTrue(words.contains("handle of zero"), words)
            XCTAssertTrue(description.contains(words), description)
        }
        XCTAssertEqual(try rootQdisc(links, on: "q0")?.kind, "noqueue")
    }

    func testUnknownLinkKindIsRefused() throws {
        let namespace = try makeNamespace("lkind")
        let links = try netlink(namespace)
        let error = expectError(RouteNetlinkError.self) { try links.createLink(name: "lk0", kind: "lcnonexistent") }
        guard let refusal = kernelRefusal(error) else { return }
        XCTAssertEqual(refusal.errno, EOPNOTSUPP)
        let description = error?.description ?? ""
        XCTAssertTrue(description.contains("ip -n \(namespace.name) link add lk0 type lcnonexistent"), description)
        if let words = refusal.kernelMessage, !words.isEmpty {
            XCTAssertTrue(words.lowercased().contains("unknown device type"), words)
            XCTAssertTrue(description.contains(words), description)
        }
        XCTAssertEqual(try links.links().map(\.name), ["lo"])
    }

    func testRouteThroughAnUnreachableGatewayIsRefused() throws {
        let (namespace, links) = try makeVethNamespace("gw")
        try links.addAddress(IPPrefix("198.18.70.1/24")!, to: "q0")
        let error = expectError(RouteNetlinkError.self) {
            // 198.19.70.1 is on no link of this namespace.
            try links.addRoute(destination: IPPrefix("198.18.71.0/24"), gateway: IPAddress("198.19.70.1"), interface: "q0")
        }
        guard let refusal = kernelRefusal(error) else { return }
        XCTAssertEqual(refusal.errno, ENETUNREACH)
        let description = error?.description ?? ""
        XCTAssertTrue(description.contains("ip -n \(namespace.name) route add 198.18.71.0/24 via 198.19.70.1 dev q0"), description)
        if let words = refusal.kernelMessage, !words.isEmpty {
            XCTAssertTrue(description.contains(words), description)
        }
        XCTAssertFalse(try links.routes().contains { $0.destination == IPPrefix("198.18.71.0/24") })
    }

    func testQdiscOnAMissingInterfaceNamesTheNamespace() throws {
        let namespace = try makeNamespace("qmiss")
        let links = try netlink(namespace)
        let error = expectError(RouteNetlinkError.self) {
            try links.replaceQdisc(on: "nope0", handle: TrafficControlHandle(major: 1, minor: 0), kind: "pfifo")
        }
        XCTAssertEqual(error, .noSuchInterface(name: "nope0", namespace: namespace.name))
    }
}

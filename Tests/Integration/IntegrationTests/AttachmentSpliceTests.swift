import Foundation
import Glibc
import LinkcondBase
import NetNamespace
import RouteNetlink
import Sandboxing
import XCTest

/// The splice itself, joined with `mirred` redirects (the netem backend's wire, which needs no netem to
/// carry traffic unconditioned): on a namespace built like a container, attach and detach leave the target
/// as it was — `ip -j link`, `addr`, `route`, `-6 route` (every table) and the interface's sysctls equal
/// before, during (but for the stand-in's link-netnsid) and after — the peer's namespace the same but for
/// its link-netnsid while attached, the host's untouched, and a TCP connection opened before keeps talking
/// throughout.
final class AttachmentSpliceTests: IntegrationTestCase {
    func testTheSpliceKeepsTheTargetAsItWasAndConnectionsFlowing() throws {
        let topology = try ContainerLikeTopology.make(in: self, extras: true)
        let attachment = try makeAttachment()
        for namespace in [topology.app, topology.gateway] { try NamespaceSnapshot.settle(namespace) }
        let host = try HostSnapshot.take()
        let before = try NamespaceSnapshot.take(topology.app)
        let gatewayBefore = try NamespaceSnapshot.take(topology.gateway, interfaces: ["app0"])
        let v4 = try TalkingConnection(from: topology.app, to: topology.server, address: ContainerLikeTopology.serverIPv4.address)
        defer { v4.stop() }
        let v6 = try TalkingConnection(from: topology.app, to: topology.server, address: ContainerLikeTopology.serverIPv6.address, port: 7778)
        defer { v6.stop() }
        XCTAssertTrue(v4.flows() && v6.flows(), "the connections do not flow before the attach: \(v4.failure ?? v6.failure ?? "-")")

        let target = try AttachmentTarget.namespace(topology.app.name).resolve()
        let record = try attachment.attach(target, Attachment.Configuration(join: .redirect, backend: "netem"))
        XCTAssertEqual(record.interface, "eth0", "the interface of the default route")
        XCTAssertTrue(v4.flows(), "IPv4 stopped at the attach: \(v4.failure ?? "stalled")")
        XCTAssertTrue(v6.flows(), "IPv6 stopped at the attach: \(v6.failure ?? "stalled")")

        // The stand-in reads as the original did, but for its peer: the wire's end, in another namespace (its
        // link-netnsid, and its index where the original took the peer's in the wire, as here, where both are 2),
        // and the id the wire gets in the target's and the peer's lists of namespaces.
        let peerless = NamespaceSnapshot.take
        let during = try peerless(topology.app, ["eth0"], []).dropping(["link_netnsid", "link_index"], sections: ["netns-ids"])
        let expected = before.dropping(["link_netnsid", "link_index"], sections: ["netns-ids"])
        XCTAssertTrue(expected == during, "the target differs while attached:\n\(expected.differences(during))")
        let gatewayDuring = try peerless(topology.gateway, ["app0"], []).dropping(["link_netnsid"], sections: ["netns-ids"])
        let gatewayExpected = gatewayBefore.dropping(["link_netnsid"], sections: ["netns-ids"])
        XCTAssertTrue(gatewayExpected == gatewayDuring, "the peer's namespace differs while attached:\n\(gatewayExpected.differences(gatewayDuring))")
        let wire = try netlink(NamedNamespace(existing: attachment.wireNamespace)).links()
        XCTAssertEqual(wire.first { $0.name == "eth0" }?.index, before.interfaceIndex("eth0"), "the original keeps its index in the wire")
        XCTAssertEqual(try netlink(topology.app).link(named: "eth0").linkNamespaceID.map { _ in true }, true, "the stand-in's peer is in the wire")

        let report = try attachment.detach()
        XCTAssertTrue(report.movedHome, "\(report)")
        XCTAssertEqual(report.notes, [])
        XCTAssertTrue(v4.flows(), "IPv4 stopped at the detach: \(v4.failure ?? "stalled")")
        XCTAssertTrue(v6.flows(), "IPv6 stopped at the detach: \(v6.failure ?? "stalled")")
        var after = try NamespaceSnapshot.take(topology.app)
        // The wire's id in the target goes when the wire namespace is freed, which the kernel does a moment later.
        _ = try eventually(timeout: 5) {
            after = try NamespaceSnapshot.take(topology.app)
            return after == before
        }
        XCTAssertTrue(before == after, "the target differs after detach:\n\(before.differences(after))")
        var gatewayAfter = try NamespaceSnapshot.take(topology.gateway, interfaces: ["app0"])
        _ = try eventually(timeout: 5) {
            gatewayAfter = try NamespaceSnapshot.take(topology.gateway, interfaces: ["app0"])
            return gatewayAfter == gatewayBefore
        }
        XCTAssertTrue(gatewayBefore == gatewayAfter, "the peer's namespace differs after detach:\n\(gatewayBefore.differences(gatewayAfter))")
        XCTAssertEqual(host, try HostSnapshot.take(), "the host namespace changed")
        XCTAssertFalse(NamedNamespace.exists(attachment.wireNamespace))
        XCTAssertFalse(NamedNamespace.exists(attachment.targetNamespace))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: attachment.store.directory), [], "files left in the store")
        XCTAssertNil(v4.failure)
        XCTAssertNil(v6.failure)
        print("linkcond-attach: TCP through attach and detach (mirred wire): IPv4 \(v4.echoed) lines, longest echo wait \(Int(v4.longestGap * 1000)) ms; "
            + "IPv6 \(v6.echoed) lines, longest \(Int(v6.longestGap * 1000)) ms")
    }

}

extension NamespaceSnapshot {
    /// The index `ip -j link` gave `name`.
    func interfaceIndex(_ name: String) -> Int32? {
        guard let text = sections["link"], let links = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]] else { return nil }
        return (links.first { $0["ifname"] as? String == name }?["ifindex"] as? NSNumber).map { Int32($0.intValue) }
    }
}

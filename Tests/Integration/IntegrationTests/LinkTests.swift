import Foundation
import Glibc
import NetNamespace
import Netlink
import RouteNetlink
import XCTest

/// veth pairs across namespaces: creation, read-back, flaps, rename, move, delete.
final class LinkTests: IntegrationTestCase {
    /// A veth made from namespace A with one end (`vb0`) in B and the peer (`vc0`) in C.
    private struct Triangle {
        var a, b, c: NamedNamespace
        var linksA, linksB, linksC: RouteNetlinkClient
    }

    private func makeTriangle() throws -> Triangle {
        let a = try makeNamespace("a")
        let b = try makeNamespace("b")
        let c = try makeNamespace("c")
        let triangle = Triangle(a: a, b: b, c: c, linksA: try netlink(a), linksB: try netlink(b), linksC: try netlink(c))
        try withDescriptor(b) { inB in
            try withDescriptor(c) { inC in
                try triangle.linksA.createVeth(name: "vb0", in: inB, peerName: "vc0", peerIn: inC)
            }
        }
        return triangle
    }

    func testVethCreatedFromAThirdNamespaceReadsBackInBothEnds() throws {
        let t = try makeTriangle()
        // Neither end ever appears where the request was sent from.
        XCTAssertEqual(try t.linksA.links().map(\.name), ["lo"])
        XCTAssertEqual(Set(try t.linksB.links().map(\.name)), ["lo", "vb0"])
        XCTAssertEqual(Set(try t.linksC.links().map(\.name)), ["lo", "vc0"])

        let endB = try t.linksB.link(named: "vb0")
        let endC = try t.linksC.link(named: "vc0")
        for end in [endB, endC] {
            XCTAssertEqual(end.kind, "veth", "\(end.name)")
            XCTAssertEqual(end.mtu, 1500, "\(end.name)")
            XCTAssertEqual(end.hardwareType, .ether, "\(end.name): ARPHRD_ETHER expected")
            XCTAssertEqual(end.hardwareAddress.count, 6, "\(end.name)")
            XCTAssertNotEqual(end.hardwareAddress, [0, 0, 0, 0, 0, 0], "\(end.name)")
            XCTAssertEqual(end.hardwareAddress[0] & 0x01, 0, "\(end.name): a unicast MAC expected")
            XCTAssertNotNil(end.linkIndex, "\(end.name): IFLA_LINK missing")
            XCTAssertFalse(end.isUp, "\(end.name) is up before anyone set it up")
            XCTAssertFalse(end.carrier, "\(end.name)")
            XCTAssertFalse(end.isLoopback)
        }
        XCTAssertNotEqual(endB.hardwareAddress, endC.hardwareAddress)
        // IFLA_LINK of each end is the index of its peer in the peer's namespace.
        XCTAssertEqual(endB.linkIndex, endC.index)
        XCTAssertEqual(endC.linkIndex, endB.index)
        // The dump decodes the same link as the single get.
        XCTAssertEqual(try t.linksB.links().first { $0.name == "vb0" }, endB)

        // iproute2 agrees.
        let shown = try Command.ip(["-n", t.b.name, "-o", "-d", "link", "show", "dev", "vb0"])
        XCTAssertEqual(shown.status, 0, shown.errorOutput)
        XCTAssertTrue(shown.output.contains("link/ether \(endB.hardwareAddressText)"), shown.output)
        XCTAssertTrue(shown.output.contains("mtu 1500"), shown.output)
        XCTAssertTrue(shown.output.contains("veth"), shown.output)
        XCTAssertTrue(shown.output.hasPrefix("\(endB.index): vb0@"), shown.output)
    }

    func testFlapCarrierAndOperationalStateFollowThePeer() throws {
        let t = try makeTriangle()
        try t.linksB.setLink("vb0", up: true)
        // Only one end up: no carrier yet.
        XCTAssertTrue(try t.linksB.link(named: "vb0").isUp)
        XCTAssertFalse(try t.linksB.link(named: "vb0").carrier, "carrier without the peer being up")

        try t.linksC.setLink("vc0", up: true)
        let bothUp = try eventually {
            let b = try t.linksB.link(named: "vb0")
            let c = try t.linksC.link(named: "vc0")
            return b.carrier && c.carrier && b.operationalState == .up && c.operationalState == .up
        }
        XCTAssertTrue(bothUp, "after both set up: \(String(describing: try? t.linksB.link(named: "vb0"))), \(String(describing: try? t.linksC.link(named: "vc0")))")
        XCTAssertTrue(try Command.ip(["-n", t.b.name, "-o", "link", "show", "dev", "vb0"]).output.contains("state UP"))

        // The far end goes down: the near end stays administratively up but loses carrier. Its operational
        // state leaves UP; whether the kernel says LOWERLAYERDOWN or DOWN depends on finding the peer by
        // IFLA_LINK in the near end's *own* namespace (default_operstate() in net/core/link_watch.c), which
        // it cannot for a peer in another namespace (DOWN). The same-namespace case below is exact.
        try t.linksC.setLink("vc0", up: false)
        let lostCarrier = try eventually {
            let b = try t.linksB.link(named: "vb0")
            return b.isUp && !b.carrier && b.operationalState != .up
        }
        XCTAssertTrue(lostCarrier, "after the peer went down: \(String(describing: try? t.linksB.link(named: "vb0")))")
        XCTAssertTrue([.down, .lowerLayerDown].contains(try t.linksB.link(named: "vb0").operationalState))
        let c = try t.linksC.link(named: "vc0")
        XCTAssertFalse(c.isUp)
        XCTAssertEqual(c.operationalState, .down)
        let witness = try Command.ip(["-n", t.b.name, "-o", "link", "show", "dev", "vb0"])
        XCTAssertTrue(witness.output.contains("NO-CARRIER"), witness.output)

        // And back.
        try t.linksC.setLink("vc0", up: true)
        let backUp = try eventually {
            let b = try t.linksB.link(named: "vb0")
            let c = try t.linksC.link(named: "vc0")
            return b.carrier && c.carrier && b.operationalState == .up && c.operationalState == .up
        }
        XCTAssertTrue(backUp, "after the peer came back: \(String(describing: try? t.linksB.link(named: "vb0")))")
    }

    func testPeerDownInTheSameNamespaceIsLowerLayerDown() throws {
        let namespace = try makeNamespace("flap1")
        let links = try netlink(namespace)
        try links.createVeth(name: "f0", peerName: "f1")
        try links.setLink("f0", up: true)
        try links.setLink("f1", up: true)
        XCTAssertTrue(try eventually { try links.link(named: "f0").operationalState == .up && links.link(named: "f1").operationalState == .up })
        try links.setLink("f1", up: false)
        let lowerDown = try eventually {
            let f0 = try links.link(named: "f0")
            return f0.isUp && !f0.carrier && f0.operationalState == .lowerLayerDown
        }
        XCTAssertTrue(lowerDown, "f0 after f1 went down: \(String(describing: try? links.link(named: "f0")))")
        let witness = try Command.ip(["-n", namespace.name, "-o", "link", "show", "dev", "f0"])
        XCTAssertTrue(witness.output.contains("state LOWERLAYERDOWN"), witness.output)
        try links.setLink("f1", up: true)
        XCTAssertTrue(try eventually { try links.link(named: "f0").operationalState == .up && links.link(named: "f0").carrier })
    }

    func testRenameMoveAndDeleteBothEnds() throws {
        let t = try makeTriangle()
        let original = try t.linksB.link(named: "vb0")
        XCTAssertFalse(original.isUp)

        // Rename (down).
        try t.linksB.renameLink("vb0", to: "vbr0")
        let renamed = try t.linksB.link(named: "vbr0")
        XCTAssertEqual(renamed.index, original.index)
        XCTAssertEqual(renamed.hardwareAddress, original.hardwareAddress)
        let gone = expectError(RouteNetlinkError.self) { try t.linksB.link(named: "vb0") }
        XCTAssertEqual(gone, .noSuchInterface(name: "vb0", namespace: t.b.name))
        XCTAssertEqual(gone?.description.contains("ip -n \(t.b.name) link"), true)
        XCTAssertTrue(try Command.ip(["-n", t.b.name, "-o", "link", "show", "dev", "vbr0"]).status == 0)

        // Move B's end into A.
        try withDescriptor(t.a) { inA in try t.linksB.moveLink("vbr0", to: inA) }
        XCTAssertEqual(try t.linksB.links().map(\.name), ["lo"])
        let moved = try t.linksA.link(named: "vbr0")
        XCTAssertEqual(moved.kind, "veth")
        XCTAssertEqual(moved.hardwareAddress, original.hardwareAddress)
        XCTAssertEqual(try t.linksC.link(named: "vc0").linkIndex, moved.index, "the peer does not point at the moved end")

        // Delete it in A: the peer in C goes too.
        try t.linksA.deleteLink("vbr0")
        XCTAssertEqual(try t.linksA.links().map(\.name), ["lo"])
        let peerGone = try eventually { try t.linksC.links().map(\.name) == ["lo"] }
        XCTAssertTrue(peerGone, "C still has \(String(describing: try? t.linksC.links().map(\.name)))")
        let deleteAgain = expectError(RouteNetlinkError.self) { try t.linksA.deleteLink("vbr0") }
        XCTAssertEqual(deleteAgain, .noSuchInterface(name: "vbr0", namespace: t.a.name))
    }

    func testDuplicateNamesAreRefusedWithTheKernelsAnswer() throws {
        let namespace = try makeNamespace("dup")
        let links = try netlink(namespace)
        try links.createVeth(name: "d0", peerName: "d1")

        for (name, peer) in [("d0", "d9"), ("d8", "d1")] {
            let error = expectError(RouteNetlinkError.self) { try links.createVeth(name: name, peerName: peer) }
            XCTAssertEqual(error?.errno, EEXIST, "\(String(describing: error))")
            let refusal = kernelRefusal(error)
            let description = error?.description ?? ""
            XCTAssertTrue(description.contains("ip -n \(namespace.name) link add \(name) type veth peer name \(peer)"), description)
            XCTAssertTrue(description.contains(String(cString: strerror(EEXIST))), description)
            if let words = refusal?.kernelMessage, !words.isEmpty {
                XCTAssertTrue(description.contains(words), description)
            }
        }
        // Nothing half-made was left behind by the refused requests.
        XCTAssertEqual(Set(try links.links().map(\.name)), ["lo", "d0", "d1"])
    }

    func testNamesAreCheckedBeforeAnythingIsSent() throws {
        let namespace = try makeNamespace("names")
        let links = try netlink(namespace)
        for bad in ["", "sixteen-chars-xx", "a/b", "a:b", "a b"] {
            let error = expectError(RouteNetlinkError.self) { try links.createVeth(name: bad, peerName: "ok0") }
            if case .invalidArgument? = error {} else { XCTFail("\(bad.debugDescription): expected .invalidArgument, got \(String(describing: error))") }
        }
        XCTAssertEqual(try links.links().map(\.name), ["lo"])
        XCTAssertEqual(
            expectError(RouteNetlinkError.self) { try links.setLink("nope0", up: true) },
            .noSuchInterface(name: "nope0", namespace: namespace.name))

        // 15 bytes is the longest name the kernel takes.
        try links.createVeth(name: "fifteen-chars-x", peerName: "p0")
        XCTAssertEqual(try links.link(named: "fifteen-chars-x").kind, "veth")
    }
}

import Conditioning
import Foundation
import Glibc
import LinkcondBase
import NetNamespace
import Profiles
import Sandboxing
import XCTest

/// Catalog profiles through an attachment, measured as the conditioning suite measures a sandbox
/// (ConditioningChecks: read-back, round trip, loss and throughput each way, the engine's counters), between
/// a container-like namespace and a server namespace beyond its gateway — the profile on the spliced link of
/// a namespace linkcond did not make. Each backend has a class of its own (the engine on this host, every
/// profile; netem in the kernel VM, one profile per kind of netem tree; LINKCOND_BACKENDS as for the sandbox
/// suite). Each test attaches to a topology of its own and
/// detaches, pass or fail; the target is checked to be as it was afterwards.
class AttachmentProfileTests: ConditioningTestCase {
    /// The profiles with a test method of their own in each backend's class (the sandbox suite's list).
    static var measuredProfiles: [String] { ConditioningProfileTests.measuredProfiles }

    /// A container-like topology with this class's backend attached to its app namespace, and a measurement
    /// between the app and the server namespace (IPv4).
    func makeMeasuredAttachment() throws -> (measured: MeasuredSandbox, topology: ContainerLikeTopology, attachment: Attachment) {
        let topology = try ContainerLikeTopology.make(in: self)
        try NamespaceSnapshot.settle(topology.app)
        let attachment = try makeAttachment()
        let conditioning = AttachmentConditioning(attachment: attachment, engineExecutable: try linkcondExecutable())
        let (record, kind) = try conditioning.attach(.namespace(topology.app.name), backend: self.kind == .netem ? .netem : .userspace)
        XCTAssertEqual(kind, self.kind)
        let measurement = LinkMeasurement(
            client: topology.app, clientAddress: ContainerLikeTopology.appIPv4.address, server: topology.server,
            serverAddress: ContainerLikeTopology.serverIPv4.address)
        var measured = MeasuredSandbox(sandbox: attachment.sandbox, kind: kind, backend: try conditioning.backend(), measurement: measurement)
        measured.uplinkSite = (record.wireNamespace, record.interface)
        measured.downlinkSite = (record.wireNamespace, record.wireEnd)
        measured.wireNamespace = record.wireNamespace
        measured.spliced = true
        let warmUp = try measurement.roundTrips(count: 3, timeout: 2)
        guard !warmUp.samples.isEmpty else {
            throw ConditioningRequirementError("the unconditioned attachment \(attachment.name) (\(kind.rawValue)) carries no packets")
        }
        return (measured, topology, attachment)
    }

    /// Measures a catalog profile through an attachment, then detaches and checks the target is as before.
    func measureThroughAttachment(named name: String, file: StaticString = #filePath, line: UInt = #line) throws {
        try measuredAgainIfTheMachineStalled { try measureOnceThroughAttachment(named: name, file: file, line: line) }
    }

    private func measureOnceThroughAttachment(named name: String, file: StaticString, line: UInt) throws {
        let profile = try catalog().profile(named: name)
        let (measured, topology, attachment) = try makeMeasuredAttachment()
        let before = attachment.record?.snapshot
        try measure(profile, on: measured, baseline: try baseline(measured, path: "attachment"), title: "profile \(profile.name) through an attachment",
                    file: file, line: line)
        let report = try attachment.detach()
        XCTAssertTrue(report.movedHome, "\(report)", file: file, line: line)
        XCTAssertEqual(report.notes, [], file: file, line: line)
        let after = try InterfaceConfiguration.read("eth0", from: netlink(topology.app), namespace: topology.app)
        XCTAssertEqual(before.map { $0.differences(from: after) } ?? ["no snapshot"], [], "the target's eth0 after detach", file: file, line: line)
    }
}

final class EngineAttachmentProfileTests: AttachmentProfileTests {
    override class var backendKind: BackendKind { .userspace }

    func testProfile100Loss() throws { try measureThroughAttachment(named: "100-loss") }
    func testProfile2g() throws { try measureThroughAttachment(named: "2g") }
    func testProfile3g() throws { try measureThroughAttachment(named: "3g") }
    func testProfile3gLossy() throws { try measureThroughAttachment(named: "3g-lossy") }
    func testProfile4g() throws { try measureThroughAttachment(named: "4g") }
    func testProfileCable() throws { try measureThroughAttachment(named: "cable") }
    func testProfileDsl() throws { try measureThroughAttachment(named: "dsl") }
    func testProfileEdge() throws { try measureThroughAttachment(named: "edge") }
    func testProfileEdgeLossy() throws { try measureThroughAttachment(named: "edge-lossy") }
    func testProfileHighLatencyDns() throws { try measureThroughAttachment(named: "high-latency-dns") }
    func testProfileLossy() throws { try measureThroughAttachment(named: "lossy") }
    func testProfileLte() throws { try measureThroughAttachment(named: "lte") }
    func testProfileVeryBadNetwork() throws { try measureThroughAttachment(named: "very-bad-network") }
    func testProfileWifi() throws { try measureThroughAttachment(named: "wifi") }
    func testProfileWifi80211ac() throws { try measureThroughAttachment(named: "wifi-80211ac") }
    func testEveryCatalogProfileHasAMethod() throws {
        XCTAssertEqual(try catalog().names().filter { !Self.measuredProfiles.contains($0) }, [], "a catalog profile no attachment test measures")
    }
}

/// netem through an attachment, in the kernel VM: one profile for each kind of netem tree the mapping makes
/// on the mirred wire — delay and rate (3g), loss at a low rate (edge-lossy), jitter with a distribution and
/// correlated loss (lossy), the targeted tree of a per-destination delay (high-latency-dns), and 100% loss.
/// Every catalog profile's netem mapping is measured on a sandbox by NetemProfileTests, and every profile
/// through an attachment by EngineAttachmentProfileTests; what is left to show here is the splice with netem,
/// which each kind of tree shows once.
final class NetemAttachmentProfileTests: AttachmentProfileTests {
    override class var backendKind: BackendKind { .netem }

    func testProfile100Loss() throws { try measureThroughAttachment(named: "100-loss") }
    func testProfile3g() throws { try measureThroughAttachment(named: "3g") }
    func testProfileEdgeLossy() throws { try measureThroughAttachment(named: "edge-lossy") }
    func testProfileHighLatencyDns() throws { try measureThroughAttachment(named: "high-latency-dns") }
    func testProfileLossy() throws { try measureThroughAttachment(named: "lossy") }

    /// A queue beyond netem's limit on the mirred wire: the same tree as on a sandbox (netem → tbf → codel on
    /// both of the wire's egress sides), read back from the kernel as sent, and gone with a switch back to a
    /// profile without one. (NetemQueueTests measures what the queue does.)
    func testCoDelGoesUnderTheNetemOnTheWireToo() throws {
        let (measured, _, attachment) = try makeMeasuredAttachment()
        let codel = #"{"rate": "2mbit", "delay": "20ms", "queue": {"discipline": "codel"}}"#
        for (name, conditions, child) in [("codel", codel, "codel"), ("plain", #"{"rate": "2mbit", "delay": "20ms"}"#, "none")] {
            let profile = try ProfileParser.parse(text: #"{"name": "\#(name)", "downlink": \#(conditions), "uplink": \#(conditions)}"#, source: "\(name).json")
            _ = try measured.backend.apply(profile, links: nil)
            let sites = try measured.backend.installed()
            XCTAssertEqual(sites.count, 2)
            for site in sites {
                let netem = try XCTUnwrap(site.stages.first { $0.kind == "netem" && ($0.parent == "root" || $0.parent == "1:1") }, "\(site.site)")
                let tbf = site.stages.first { $0.kind == "tbf" && $0.parent == netem.handle + "1" }
                let queue = tbf.flatMap { tbf in site.stages.first { $0.parent == tbf.handle + "1" } }
                XCTAssertEqual(queue?.kind ?? "none", child, "\(name) on \(site.site): \(site.stages.map { "\($0.kind) \($0.handle) \($0.parent)" })")
                XCTAssertEqual(netem.agreesWithRecord, true, "\(name) on \(site.site): \(netem.text ?? "-")")
                XCTAssertEqual(netem.conditions?.rate, 2_000_000, "\(site.site)")
            }
        }
        XCTAssertTrue(try attachment.detach().movedHome)
    }
}

import Conditioning
import Foundation
import Glibc
import NetNamespace
import Netlink
import RouteNetlink
import XCTest

/// `linkcond doctor`: features tried for real in a throwaway namespace, removed again.
final class KernelDoctorTests: IntegrationTestCase {
    func testDoctorProbesInAThrowawayNamespaceAndLeavesNothing() throws {
        // Creating an ifb link makes the kernel load the ifb module when it is not loaded yet, and the module
        // creates ifb0/ifb1 in the host namespace as it loads. Only run where ifb is there already.
        let hostLinks = try RouteNetlinkClient(connection: try NetlinkConnection(), namespace: nil).links()
        guard hostLinks.contains(where: { $0.kind == "ifb" }) || FileManager.default.fileExists(atPath: "/sys/module/ifb/initstate")
        else {
            throw XCTSkip("ifb is not loaded: the doctor's ifb probe would load it, and loading it creates ifb0/ifb1 in the host namespace")
        }
        let before = try HostSnapshot.take()
        let features = try KernelDoctor.check()
        let byName = Dictionary(features.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        XCTAssertEqual(byName["namespaces"]?.present, true)
        XCTAssertEqual(byName["veth"]?.present, true, "\(String(describing: byName["veth"]))")
        XCTAssertEqual(byName["ifb"]?.present, true, "\(String(describing: byName["ifb"]))")
        for kind in ["netem", "tbf", "htb"] {
            guard let feature = byName[kind] else {
                XCTFail("no \(kind) in \(features.map(\.name))")
                continue
            }
            // Cross-check against the kernel directly: a missing qdisc kind is "unknown" (ENOENT).
            if feature.present {
                XCTAssertNil(feature.remedy, kind)
            } else {
                XCTAssertTrue(feature.detail.contains("Specified qdisc kind is unknown"), "\(kind): \(feature.detail)")
                XCTAssertNotNil(feature.remedy, kind)
            }
            XCTAssertEqual(feature.present, try qdiscKindExists(kind), "\(kind): doctor says \(feature.present)")
        }
        XCTAssertFalse(NamedNamespace.exists("lc-doctor-\(getpid())"), "the doctor's namespace was left behind")
        XCTAssertEqual(try HostSnapshot.take(), before, "the doctor changed the host namespace")
    }

    /// Asks the kernel in a namespace of our own whether it knows a qdisc kind (tc as the witness).
    private func qdiscKindExists(_ kind: String) throws -> Bool {
        let namespace = try makeNamespace("doc")
        let links = try netlink(namespace)
        try links.createVeth(name: "k0", peerName: "k1")
        let result = try Command.tc(["-n", namespace.name, "qdisc", "replace", "dev", "k0", "root", "handle", "1:", kind])
        return !result.errorOutput.contains("Specified qdisc kind is unknown")
    }
}

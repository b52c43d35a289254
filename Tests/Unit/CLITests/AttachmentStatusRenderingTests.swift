@testable import Sandboxing
import XCTest

@testable import LinkcondCLI

/// `linkcond status` of an attachment whose cable is pulled says so, and what plugs it back when no run
/// holds it.
final class AttachmentStatusRenderingTests: XCTestCase {
    private func status(cablePulled: Bool, busy: String?) -> AttachmentStatus {
        AttachmentStatus(
            name: "web", target: "container 'web' (podman)", request: "--container web", interface: "eth0", backend: "userspace",
            wireNamespace: "lca-web-wire", targetNamespace: "lca-web-target", step: "attached", complete: true, healthy: true,
            createdAt: "2026-12-02T07:00:00Z", processes: [], problems: [], busy: busy, cablePulled: cablePulled)
    }

    func testAPulledCableIsShownWithWhatPlugsItBack() {
        let left = AttachCommands.render(status(cablePulled: true, busy: nil))
        XCTAssertTrue(left.contains("  cable: pulled, eth0 in the target has no carrier (left so by a run that did not end: "
            + "the next run, or 'linkcond detach --name web', plugs it back)"), left)
        let running = AttachCommands.render(status(cablePulled: true, busy: "run cable"))
        XCTAssertTrue(running.contains("  cable: pulled, eth0 in the target has no carrier (by the run)"), running)
        XCTAssertFalse(AttachCommands.render(status(cablePulled: false, busy: nil)).contains("cable"))
    }
}

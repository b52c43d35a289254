import Foundation
import Glibc
import LinkcondBase
import NetNamespace
import XCTest

/// `apply` on an attachment as on a sandbox: conditions given as options (`--delay …`), and `--for`, after
/// which what was there comes back. The real executable, a store of its own, a container-like namespace.
final class AttachmentCommandLineTests: SandboxTestCase {
    private func linkcond(_ arguments: [String], store: String) throws -> CommandResult {
        try Command.run(try linkcondExecutable(), arguments, environment: ["LINKCOND_STORE": store])
    }

    func testInlineConditionsAndForOnAnAttachment() throws {
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("lcit-store-\(getpid())-\(UniqueName.next())").path
        try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: true)
        let topology = try ContainerLikeTopology.make(in: self)
        try NamespaceSnapshot.settle(topology.app)
        let name = "a\(UniqueName.next())-\(getpid() % 10000)"
        addTeardownBlock { [self] in
            _ = try? linkcond(["detach", "--name", name], store: store)
            try? FileManager.default.removeItem(atPath: store)
        }
        let attach = try linkcond(["attach", "--netns", topology.app.name, "--dev", "eth0", "--name", name, "--backend", "userspace"], store: store)
        XCTAssertEqual(attach.status, 0, attach.output + attach.errorOutput)
        guard attach.status == 0 else { return }

        // Conditions as options, as on a sandbox.
        let inline = try linkcond(["apply", "--delay", "30ms", "--name", name], store: store)
        XCTAssertEqual(inline.status, 0, inline.output + inline.errorOutput)
        XCTAssertTrue(inline.output.contains("applied 'inline' to attachment '\(name)'"), inline.output)
        let held = try linkcond(["show", "--name", name], store: store)
        XCTAssertTrue(held.output.contains("profile 'inline'") && held.output.contains("delay 30ms"), held.output)
        // Bad input changes nothing: no profile and no conditions, or a --for of 0.
        let empty = try linkcond(["apply", "--name", name], store: store)
        XCTAssertEqual(empty.status, 2, empty.output + empty.errorOutput)
        XCTAssertTrue(empty.errorOutput.contains("missing the profile"), empty.errorOutput)
        let zero = try linkcond(["apply", "3g", "--for", "0", "--name", name], store: store)
        XCTAssertEqual(zero.status, 2, zero.output + zero.errorOutput)

        // --for: 3g for a second, then the inline conditions again.
        let timed = try linkcond(["apply", "3g", "--for", "1s", "--name", name], store: store)
        XCTAssertEqual(timed.status, 0, timed.output + timed.errorOutput)
        XCTAssertTrue(timed.output.contains("then back to 'inline'"), timed.output)
        XCTAssertTrue(timed.output.contains("after 1 s: put back what was there (back to 'inline')"), timed.output)
        let after = try linkcond(["show", "--name", name], store: store)
        XCTAssertTrue(after.output.contains("profile 'inline'") && after.output.contains("delay 30ms"), "not back to the inline conditions:\n\(after.output)")
        XCTAssertFalse(after.output.contains("rate"), "3g's rate left behind:\n\(after.output)")

        let detach = try linkcond(["detach", "--name", name], store: store)
        XCTAssertEqual(detach.status, 0, detach.output + detach.errorOutput)
    }
}

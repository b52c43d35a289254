import Conditioning
import Foundation
import Glibc
import NetNamespace
import RouteNetlink
import Sandboxing
import XCTest

/// Bad targets are refused with a sentence that says what was wrong, and nothing changes: no namespace of
/// linkcond's is left, no state, the target (and the host) read exactly as before.
final class AttachmentRefusalTests: IntegrationTestCase {
    /// Attaches `target` with the mirred wire (no engine needed) and expects a refusal containing `words`;
    /// checks that nothing of the attachment exists afterwards.
    @discardableResult
    private func assertRefused(
        _ target: @autoclosure () throws -> FoundTarget, interface: String? = nil, attachment: Attachment? = nil, _ words: String,
        file: StaticString = #filePath, line: UInt = #line
    ) throws -> String {
        // An attachment given by the test may be one that exists (a name in use): it must be left as it was.
        let existed = attachment?.exists ?? false
        let attachment = try attachment ?? makeAttachment()
        var message = ""
        do {
            try attachment.attach(target(), Attachment.Configuration(interface: interface, join: .redirect, backend: "netem"))
            XCTFail("attached, expected a refusal containing '\(words)'", file: file, line: line)
        } catch {
            message = "\(error)"
        }
        XCTAssertTrue(message.contains(words), "the refusal says: \(message)", file: file, line: line)
        if existed { return message }
        XCTAssertFalse(attachment.exists, "something of the attachment is left: \(attachment.leftovers())", file: file, line: line)
        XCTAssertFalse(NamedNamespace.exists(attachment.wireNamespace), file: file, line: line)
        XCTAssertFalse(NamedNamespace.exists(attachment.targetNamespace), file: file, line: line)
        let files = (try? FileManager.default.contentsOfDirectory(atPath: attachment.store.directory)) ?? []
        XCTAssertEqual(files.filter { !$0.hasSuffix(".lock") }, [], "files left in the store", file: file, line: line)
        return message
    }

    func testTheHostNamespaceIsRefused() throws {
        let host = try HostSnapshot.take()
        // This process's namespace (the tests run in the host's), and the initial one through a kernel thread.
        try assertRefused(try AttachmentTarget.process(getpid()).resolve(), "the host's own network namespace")
        try assertRefused(try AttachmentTarget.namespacePath("/proc/self/ns/net").resolve(), "the host's own network namespace")
        if readTrimmed("/proc/2/comm") == "kthreadd" {
            try assertRefused(try AttachmentTarget.process(2).resolve(), "the host's own network namespace")
        }
        XCTAssertEqual(host, try HostSnapshot.take(), "the host namespace changed")
    }

    func testAMissingProcessIsRefused() throws {
        // A process that has run and exited: its pid names nothing now.
        let app = try makeNamespace("gone")
        let process = try app.spawn("/bin/true")
        _ = try process.wait()
        XCTAssertThrowsError(try AttachmentTarget.process(process.pid).resolve()) { error in
            XCTAssertTrue("\(error)".contains("there is no process \(process.pid)"), "\(error)")
        }
        XCTAssertThrowsError(try AttachmentTarget.namespace("lcit-no-such-\(getpid())").resolve()) { error in
            XCTAssertTrue("\(error)".contains("does not exist"), "\(error)")
        }
        XCTAssertThrowsError(try AttachmentTarget.namespacePath("/etc/hostname").resolve()) { error in
            XCTAssertTrue("\(error)".contains("is not a network namespace"), "\(error)")
        }
    }

    /// The process the target was found through exits in the middle of the attach (here, right after the
    /// original interface left it): linkcond notices at the next step, puts everything back, and says so.
    func testAProcessThatExitsMidAttachIsRefusedAndEverythingPutBack() throws {
        let topology = try ContainerLikeTopology.make(in: self)
        try NamespaceSnapshot.settle(topology.app)
        let before = try NamespaceSnapshot.take(topology.app)
        let sleeper = try topology.app.spawn("/bin/sleep", arguments: ["60"], grouping: .newGroup)
        defer { sleeper.terminate(grace: 0) }
        let attachment = try makeAttachment()
        let target = try AttachmentTarget.process(sleeper.pid).resolve()
        var steps: [String] = []
        XCTAssertThrowsError(
            try attachment.attach(target, Attachment.Configuration(join: .redirect, backend: "netem"), progress: { step in
                steps.append(step)
                if step.hasPrefix("moving") { _ = sleeper.terminate(grace: 0) }
            })
        ) { error in
            XCTAssertTrue("\(error)".contains("exited while linkcond was attaching"), "\(error)")
        }
        XCTAssertTrue(steps.contains("moving eth0 out") && steps.contains("putting everything back"), "\(steps)")
        XCTAssertFalse(attachment.exists, "\(attachment.leftovers())")
        var after = try NamespaceSnapshot.take(topology.app)
        _ = try eventually(timeout: 5) {
            after = try NamespaceSnapshot.take(topology.app)
            return after == before
        }
        XCTAssertTrue(before == after, "the target differs:\n\(before.differences(after))")
    }

    func testALoopbackOnlyNamespaceAndTheLoopbackAreRefused() throws {
        let lonely = try makeNamespace("lonely")
        try netlink(lonely).setLink("lo", up: true)
        try assertRefused(try AttachmentTarget.namespace(lonely.name).resolve(), "has no interface but lo")
        let topology = try ContainerLikeTopology.make(in: self)
        // Settled first: a CI run once saw eth0 change under the refusals, the kernel still adding what it adds
        // to a fresh interface (the refusals touch nothing; other tests here settle the same way).
        let before = try settledSnapshot(topology.app, interfaces: ["eth0"])
        try assertRefused(try AttachmentTarget.namespace(topology.app.name).resolve(), interface: "lo", "is the loopback device")
        try assertRefused(try AttachmentTarget.namespace(topology.app.name).resolve(), interface: "eth7", "has no interface 'eth7' (it has eth0)")
        let after = try NamespaceSnapshot.take(topology.app)
        XCTAssertTrue(before == after, "the target differs:\n\(before.differences(after))")
    }

    /// Without --dev, the interface of the default route; when that is ambiguous the refusal lists the candidates.
    /// A snapshot of interfaces just made or set up, once the kernel has finished with them (their operational
    /// state, the IPv6 multicast and link-local routes it adds): two snapshots in a row that are the same.
    private func settledSnapshot(_ namespace: NamedNamespace, interfaces: [String]) throws -> NamespaceSnapshot {
        try NamespaceSnapshot.settle(namespace)  // DAD over: no address still tentative (slow on a loaded machine)
        var last = try NamespaceSnapshot.take(namespace, interfaces: interfaces)
        let settled = try eventually(timeout: 5) {
            Thread.sleep(forTimeInterval: 0.05)
            let now = try NamespaceSnapshot.take(namespace, interfaces: interfaces)
            defer { last = now }
            return now == last
        }
        XCTAssertTrue(settled, "\(namespace.name): its interfaces keep changing")
        return last
    }

    func testAnAmbiguousDefaultInterfaceIsRefusedListingTheCandidates() throws {
        let pair = try makeNamespace("pair")
        XCTAssertEqual(try Command.ip(["-n", pair.name, "link", "add", "d0", "type", "veth", "peer", "name", "d1"]).status, 0)
        let message = try assertRefused(try AttachmentTarget.namespace(pair.name).resolve(), "has no default route, and several interfaces (")
        XCTAssertTrue(message.contains("d0") && message.contains("d1") && message.contains("name one with --dev"), message)
        let topology = try ContainerLikeTopology.make(in: self)
        for arguments in [["link", "add", "eth1", "type", "veth", "peer", "name", "eth1p"], ["link", "set", "eth1", "up"],
            ["route", "add", "default", "dev", "eth1", "metric", "500"]] {
            let result = try Command.ip(["-n", topology.app.name] + arguments)
            XCTAssertEqual(result.status, 0, "ip \(arguments.joined(separator: " ")): \(result.errorOutput)")
        }
        let before = try settledSnapshot(topology.app, interfaces: ["eth0", "eth1"])
        try assertRefused(try AttachmentTarget.namespace(topology.app.name).resolve(), "has default routes through several interfaces (eth0, eth1): name one with --dev")
        let after = try NamespaceSnapshot.take(topology.app, interfaces: ["eth0", "eth1"])
        XCTAssertTrue(before == after, "the target changed:\n\(before.differences(after))")
    }

    func testADeviceThatCannotChangeNamespaceIsRefused() throws {
        let topology = try ContainerLikeTopology.make(in: self)
        let result = try Command.ip(["-n", topology.app.name, "link", "add", "br0", "type", "bridge"])
        guard result.status == 0 else { throw XCTSkip("this kernel cannot make a bridge (\(result.errorOutput)): no device that cannot change namespace to try") }
        let before = try settledSnapshot(topology.app, interfaces: ["eth0", "br0"])
        try assertRefused(try AttachmentTarget.namespace(topology.app.name).resolve(), interface: "br0", "a bridge device, which cannot change namespace")
        let after = try NamespaceSnapshot.take(topology.app, interfaces: ["eth0", "br0"])
        XCTAssertTrue(before == after, "the target changed:\n\(before.differences(after))")
    }

    func testAnInterfaceWithQdiscsOfTheUsersOwnIsRefused() throws {
        let topology = try ContainerLikeTopology.make(in: self)
        let result = try Command.tc(["-n", topology.app.name, "qdisc", "add", "dev", "eth0", "root", "handle", "1:", "htb"])
        XCTAssertEqual(result.status, 0, result.errorOutput)
        try assertRefused(try AttachmentTarget.namespace(topology.app.name).resolve(), "carries tc qdiscs (htb 1:)")
    }

    func testAnUnknownContainerIsRefusedNamingWhatEachRuntimeSaid() throws {
        let installed = ContainerRuntimes.names.filter { ContainerRuntimes.executable($0) != nil }
        guard !installed.isEmpty else { throw XCTSkip("no container runtime is installed (scripts/install-deps --test installs podman)") }
        let name = "lcit-no-such-container-\(getpid())"
        XCTAssertThrowsError(try AttachmentTarget.container(name).resolve()) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("no container '\(name)' is known to any container runtime here"), text)
            for runtime in installed { XCTAssertTrue(text.contains("\(runtime):"), "\(runtime)'s answer is missing: \(text)") }
        }
    }

    func testLinkcondsOwnNamespacesAreRefused() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lcit-store-\(getpid())-\(UniqueName.next())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let name = UniqueName.sandbox()
        addTeardownBlock { SandboxCleanup.remove(name: name, storeDirectory: directory) }
        let sandbox = Sandbox(topology: try SandboxTopology(name: name), store: SandboxStore(directory: directory))
        try sandbox.up()
        try assertRefused(try AttachmentTarget.namespace(sandbox.topology.clientNamespace).resolve(), "the client namespace of linkcond's sandbox '\(name)'")

        // A target attached once cannot be attached again, under another name or through linkcond's name for it.
        let topology = try ContainerLikeTopology.make(in: self)
        let first = try makeAttachment()
        try first.attach(try AttachmentTarget.namespace(topology.app.name).resolve(), Attachment.Configuration(join: .redirect, backend: "netem"))
        try assertRefused(try AttachmentTarget.namespace(topology.app.name).resolve(), "already attached, as linkcond's attachment '\(first.name)'")
        try assertRefused(try AttachmentTarget.namespace(first.targetNamespace).resolve(), "already attached, as linkcond's attachment '\(first.name)'")
        try assertRefused(try AttachmentTarget.namespace(first.wireNamespace).resolve(), "the wire namespace of linkcond's attachment '\(first.name)'")
        // A name in use is refused too (the attachment's own, and a sandbox's).
        let other = try ContainerLikeTopology.make(in: self, tag: "b")
        let message = try assertRefused(
            try AttachmentTarget.namespace(other.app.name).resolve(), attachment: try Attachment(name: first.name, store: first.sandboxStore),
            "attachment '\(first.name)' exists already")
        XCTAssertTrue(first.exists, "the refusal touched the attachment it named: \(message)")
        try assertRefused(
            try AttachmentTarget.namespace(other.app.name).resolve(), attachment: try Attachment(name: name, store: SandboxStore(directory: directory)),
            "is the name of a sandbox")
        XCTAssertTrue(try first.detach().movedHome)
    }
}

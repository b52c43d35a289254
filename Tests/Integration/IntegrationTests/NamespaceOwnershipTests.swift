import Foundation
import Glibc
import NetNamespace
import RouteNetlink
import Sandboxing
import XCTest

/// linkcond deletes only namespaces it can prove it made for the sandbox or attachment at hand: each carries
/// a mark (its lo's alias) written before it had its name. A namesake in another store, or one made by hand,
/// is refused by `up` before anything changes and left alone by `down` and `detach`.
final class NamespaceOwnershipTests: SandboxTestCase {
    /// The alias of `namespace`'s lo, read back from the kernel.
    private func loAlias(_ namespace: String) throws -> String? {
        try netlink(try NamedNamespace(existing: namespace)).link(named: "lo").alias
    }

    /// Two stores, one sandbox name (a test's sandbox and the user's): the second store's `up` is refused
    /// naming the first's, its `down` removes none of the first's namespaces, and the first stays healthy.
    func testASandboxOfTheSameNameInAnotherStoreIsRefusedAndLeftAlone() throws {
        let first = try makeSandbox()
        try first.up()
        for namespace in first.topology.allNamespaces where NamedNamespace.exists(namespace) {
            XCTAssertEqual(try loAlias(namespace), "linkcond \(first.store.directory)/\(first.topology.name)", namespace)
        }
        let otherStore = try makeStore(prefix: "lcit-store-other")
        let second = Sandbox(topology: first.topology, store: SandboxStore(directory: otherStore))
        XCTAssertThrowsError(try second.up()) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("not its own") && text.contains("of the store \(first.store.directory)") && text.contains("Nothing was changed"), text)
        }
        XCTAssertEqual(second.store.record(first.topology.name), .missing, "the refused up left a state file")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: otherStore), [], "the refused up left files in its store")

        let report = try second.remove()
        XCTAssertEqual(report.removedNamespaces, [], "down in another store deleted the sandbox's namespaces")
        XCTAssertTrue(report.notes.contains { $0.contains("alone") && $0.contains(first.store.directory) }, "\(report.notes)")
        guard case let .state(state) = first.store.record(first.topology.name) else { return XCTFail("the first sandbox lost its state") }
        XCTAssertEqual(first.problems(state), [], "the first sandbox is not whole any more")
        XCTAssertEqual(try first.remove().removedNamespaces.sorted(), first.topology.namespaces.sorted())
    }

    /// A namespace made by hand under one of a sandbox's names: `up` refuses (saying linkcond did not make
    /// it) and it is still there after `up` and `down`.
    func testANamespaceMadeByHandUnderASandboxNameIsRefusedAndKept() throws {
        let sandbox = try makeSandbox()
        let name = sandbox.topology.namespace(.router)
        let added = try Command.ip(["netns", "add", name])
        XCTAssertEqual(added.status, 0, added.errorOutput)
        addTeardownBlock { Cleanup.removeNamespace(name) }
        XCTAssertThrowsError(try sandbox.up()) { error in
            XCTAssertTrue("\(error)".contains("\(name): a namespace linkcond did not make"), "\(error)")
        }
        XCTAssertTrue(NamedNamespace.exists(name))
        XCTAssertEqual(sandbox.topology.namespaces.filter { $0 != name && NamedNamespace.exists($0) }, [], "the refused up made namespaces")
        let report = try sandbox.remove()
        XCTAssertTrue(NamedNamespace.exists(name), "down deleted a namespace made by hand")
        XCTAssertTrue(report.notes.contains { $0.contains("left \(name) alone") }, "\(report.notes)")
        XCTAssertNil(try loAlias(name), "linkcond marked a namespace it did not make")
    }

    /// An attachment's namesake in another store, with no state there: its detach is refused and changes
    /// nothing; the attachment stays whole and detaches from its own store.
    func testADetachInAnotherStoreLeavesTheAttachmentAlone() throws {
        let topology = try ContainerLikeTopology.make(in: self)
        let attachment = try makeAttachment()
        try attachment.attach(try AttachmentTarget.namespace(topology.app.name).resolve(), Attachment.Configuration(join: .redirect, backend: "netem"))
        XCTAssertEqual(try loAlias(attachment.wireNamespace), "linkcond \(attachment.marker)")
        let otherStore = try makeStore(prefix: "lcit-store-other")
        let namesake = try Attachment(name: attachment.name, store: SandboxStore(directory: otherStore))
        XCTAssertThrowsError(try namesake.detach()) { error in
            XCTAssertTrue("\(error)".contains("of the store \(attachment.sandboxStore.directory)") && "\(error)".contains("nothing was changed"), "\(error)")
        }
        XCTAssertTrue(NamedNamespace.exists(attachment.wireNamespace) && NamedNamespace.exists(attachment.targetNamespace))
        XCTAssertEqual(attachment.status()?.healthy, true, "the attachment is not whole after its namesake's detach")
        let report = try attachment.detach()
        XCTAssertEqual(Set(report.removedNamespaces), [attachment.wireNamespace, attachment.targetNamespace])
        XCTAssertTrue(report.movedHome)
    }
}

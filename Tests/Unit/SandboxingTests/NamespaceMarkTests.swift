import Sandboxing
import XCTest

/// The mark a namespace of linkcond's carries (its lo's alias) and what is said of a namespace that is not
/// the sandbox's.
final class NamespaceMarkTests: XCTestCase {
    func testTheMarkNamesTheStoreAndTheSandbox() {
        XCTAssertEqual(NamespaceMark.text(for: "/run/linkcond/edge1"), "linkcond /run/linkcond/edge1")
    }

    /// A store path too long for the kernel's 255-byte alias becomes a digest: still one per marker.
    func testATooLongStorePathBecomesADigestThatFitsAnAlias() {
        let long = "/tmp/" + String(repeating: "s", count: 300) + "/edge1"
        let mark = NamespaceMark.text(for: long)
        XCTAssertTrue(mark.hasPrefix("linkcond #"), mark)
        XCTAssertEqual(mark.utf8.count, "linkcond #".utf8.count + 16)
        XCTAssertTrue(mark.dropFirst("linkcond #".count).allSatisfy(\.isHexDigit), mark)
        XCTAssertEqual(NamespaceMark.text(for: long), mark, "the same marker, the same mark")
        XCTAssertNotEqual(NamespaceMark.text(for: long + "2"), mark)
        let longest = "/" + String(repeating: "s", count: 255 - "linkcond /".utf8.count)
        XCTAssertEqual(NamespaceMark.text(for: longest), "linkcond " + longest, "a mark of exactly 255 bytes is kept as it is")
        XCTAssertTrue(NamespaceMark.text(for: longest + "s").hasPrefix("linkcond #"))
    }

    func testOnlyNothingAndOursMayBeRemoved() {
        XCTAssertTrue(NamespaceMark.Owner.nothing.isRemovable)
        XCTAssertTrue(NamespaceMark.Owner.ours.isRemovable)
        XCTAssertFalse(NamespaceMark.Owner.unmarked.isRemovable)
        XCTAssertFalse(NamespaceMark.Owner.other(mark: "linkcond /run/a/x").isRemovable)
    }

    /// A refusal says whose each namespace is, namespaces of one owner together, and how to work in its store.
    func testAForeignNamespaceIsDescribedWithItsOwner() {
        XCTAssertEqual(
            NamespaceMark.whose(.other(mark: "linkcond /run/a/x")), "linkcond's sandbox 'x' of the store /run/a (LINKCOND_STORE=/run/a)")
        XCTAssertTrue(NamespaceMark.whose(.unmarked).contains("linkcond did not make"))
        XCTAssertTrue(NamespaceMark.whose(.other(mark: "linkcond #0123456789abcdef")).contains("marked 'linkcond #0123456789abcdef'"))
        let text = NamespaceMark.describe([
            ("lc-x-client", .other(mark: "linkcond /run/a/x")), ("lc-x-router", .unmarked), ("lc-x-server", .other(mark: "linkcond /run/a/x")),
        ])
        XCTAssertEqual(
            text,
            "lc-x-client, lc-x-server: linkcond's sandbox 'x' of the store /run/a (LINKCOND_STORE=/run/a); "
                + "lc-x-router: a namespace linkcond did not make (its lo carries no mark of linkcond's)")
    }
}

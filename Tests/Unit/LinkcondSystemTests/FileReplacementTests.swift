import Foundation
import Glibc
import LinkcondSystem
import XCTest

/// ``FileReplacement``: the new file takes the old one's place whole, the written name is gone afterwards, and a
/// reader that had the old file open still reads all of the old contents.
final class FileReplacementTests: XCTestCase {
    private var directory = ""

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("linkcond-replace-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func inode(_ path: String) -> ino_t? {
        var status = stat()
        return stat(path, &status) == 0 ? status.st_ino : nil
    }

    func testAnExistingFileIsReplacedAndTheWrittenNameIsGone() throws {
        let target = directory + "/state.json", written = directory + "/.state.json.1"
        try "old contents".write(toFile: target, atomically: false, encoding: .utf8)
        try "new".write(toFile: written, atomically: false, encoding: .utf8)
        let writtenInode = inode(written)
        let reader = open(target, O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(reader, 0)
        defer { close(reader) }

        try FileReplacement.replace(target, with: written)

        XCTAssertEqual(try String(contentsOfFile: target, encoding: .utf8), "new")
        XCTAssertEqual(inode(target), writtenInode, "the written file itself is now the target")
        XCTAssertNil(inode(written), "the old file is left at the written name")
        var bytes = [UInt8](repeating: 0, count: 64)
        let count = read(reader, &bytes, bytes.count)
        XCTAssertEqual(String(decoding: bytes[..<max(count, 0)], as: UTF8.self), "old contents", "a reader of the old file lost it")
    }

    func testAMissingTargetIsMadeByRenaming() throws {
        let target = directory + "/state.json", written = directory + "/.state.json.1"
        try "first".write(toFile: written, atomically: false, encoding: .utf8)
        try FileReplacement.replace(target, with: written)
        XCTAssertEqual(try String(contentsOfFile: target, encoding: .utf8), "first")
        XCTAssertNil(inode(written))
    }

    func testAMissingWrittenFileIsAnErrorThatNamesIt() {
        let target = directory + "/state.json", written = directory + "/.never-written"
        XCTAssertThrowsError(try FileReplacement.replace(target, with: written)) { error in
            let failure = error as? SystemError
            XCTAssertEqual(failure?.errno, .noSuchFileOrDirectory)
            XCTAssertTrue(failure?.operation.contains(written) ?? false, "\(error)")
        }
        XCTAssertNil(inode(target))
    }
}

import Foundation
import Glibc
import XCTest

/// A package of a user's own, built against this checkout, runs the README's `LinkLab` example as a user would:
/// the README's `Package.swift` (its path pointed at this checkout) and its test, `swift build --build-tests`
/// and `swift test` as root with no `LINKCOND_*` variable, in a folder outside the checkout (so no `profiles/`
/// is found above it: the catalog must be the one built into the library, and the engine the `linkcond`
/// SwiftPM builds beside the test binary). The package's build folder is kept between runs
/// (`/var/tmp/linkcond-external-<checkout>`), so only the first run builds linkcond from scratch.
final class ExternalPackageTests: IntegrationTestCase {
    private static let checkout = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    /// The fenced block of README.md that opens with `fence` and contains `marker`.
    private static func block(_ readme: String, fence: String, containing marker: String) -> String? {
        var blocks: [[Substring]] = []
        var current: [Substring]?
        for line in readme.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line == fence {
                current = []
            } else if current != nil, line == "```" {
                blocks.append(current!)
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks.map { $0.joined(separator: "\n") + "\n" }.first { $0.contains(marker) }
    }

    /// A folder for the package named after this checkout, outside it.
    private static var packageFolder: String {
        var hash: UInt64 = 1469598103934665603
        for byte in checkout.utf8 { hash = (hash ^ UInt64(byte)) &* 1099511628211 }
        return "/var/tmp/linkcond-external-\(String(hash, radix: 16))"
    }

    func testAPackageOfItsOwnRunsTheReadmesLinkLabExample() throws {
        let toolchains: [String] = ["/opt/swift/usr/bin/swift", "/usr/bin/swift", "/usr/local/bin/swift"]
        guard let swift = toolchains.first(where: { access($0, X_OK) == 0 }) else {
            throw XCTSkip("no swift toolchain to build a package with")
        }
        let readme = try String(contentsOfFile: Self.checkout + "/README.md", encoding: .utf8)
        let manifest = try XCTUnwrap(Self.block(readme, fence: "```swift Package.swift", containing: "PackageDescription"), "README.md has no Package.swift")
        let example = try XCTUnwrap(Self.block(readme, fence: "```swift", containing: "LinkLab.with"), "README.md has no LinkLab example")
        XCTAssertTrue(manifest.contains(#"path: "../linkcond""#), "the README's Package.swift no longer depends on ../linkcond")
        let folder = Self.packageFolder
        try FileManager.default.createDirectory(atPath: folder + "/Tests/MyAppTests", withIntermediateDirectories: true)
        try manifest.replacingOccurrences(of: #"path: "../linkcond""#, with: "path: \"\(Self.checkout)\"")
            .write(toFile: folder + "/Package.swift", atomically: true, encoding: .utf8)
        try example.write(toFile: folder + "/Tests/MyAppTests/MyAppUnderLossTests.swift", atomically: true, encoding: .utf8)

        // As a user runs it: no LINKCOND_* variable, the usual PATH, root.
        // The build (minutes of compiling on every core) runs at nice 19 in a session of its own: the tests
        // running beside this one, and the kernel VM tier, measure time, and a compiler at their priority is
        // load they need not carry. With the kernel's autogroups a session shares the CPU as one whatever
        // its processes' nice, so the session's group is given the niceness too (/proc/self/autogroup; as
        // scripts/test does). What is checked is that it builds, not how fast.
        func run(_ arguments: String, niceness: Int = 0) throws -> (status: Int32, output: String) {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            let command = "cd '\(folder)' && exec nice -n \(niceness) '\(swift)' \(arguments) 2>&1"
            process.arguments = niceness == 0
                ? ["-c", command]
                : ["-c", "exec setsid -w sh -c \"echo \(niceness) >/proc/self/autogroup 2>/dev/null; \(command)\""]
            process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("LINKCOND_") }
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardInput = FileHandle.nullDevice
            try process.run()
            let output = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: output, as: UTF8.self))
        }
        let build = try run("build --build-tests", niceness: 19)
        XCTAssertEqual(build.status, 0, "the package does not build against this checkout:\n\(build.output.suffix(4000))")
        guard build.status == 0 else { return }
        XCTAssertTrue(access(folder + "/.build/debug/linkcond", X_OK) == 0, "SwiftPM did not build linkcond beside the tests")
        var isDirectory: ObjCBool = false
        for above in [folder, "/var/tmp", "/var", ""] {
            XCTAssertFalse(FileManager.default.fileExists(atPath: above + "/profiles/edge.json", isDirectory: &isDirectory),
                           "a profiles/ folder above the package would hide the built-in catalog")
        }
        let test = try run("test --skip-build --disable-swift-testing")
        XCTAssertEqual(test.status, 0, "the README's example failed in a package of its own:\n\(test.output.suffix(4000))")
        XCTAssertTrue(test.output.contains("Executed 1 test, with 0 failures"), test.output.suffix(2000).description)
    }
}

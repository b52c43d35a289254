import Profiles
import XCTest

@testable import LinkcondCLI

/// The real command tree: sound, documented, and mapping mistakes to exit code 2 before touching anything.
final class CommandTreeTests: XCTestCase {
    func testTheTreeHasNoDefinitionProblems() {
        XCTAssertEqual(CommandTree.root.definitionProblems, [])
    }

    func testEveryCommandExplainsItself() {
        for command in CommandTree.root.subcommands {
            XCTAssertFalse(command.abstract.isEmpty, command.name)
            let help = CommandTree.root.helpText(for: ["linkcond", command.name])
            XCTAssertTrue(help.contains("USAGE: linkcond \(command.name)"), help)
            for option in command.options {
                XCTAssertTrue(help.contains("--\(option.name)"), "\(command.name) help lacks --\(option.name)")
            }
            // The discussion's lines are printed as written: one past 100 characters breaks into a ragged pair.
            for line in (command.discussion ?? "").split(separator: "\n") {
                XCTAssertLessThanOrEqual(line.count, 100, "\(command.name)'s discussion: reflow \"\(line)\"")
            }
        }
    }

    func testRootHelpListsEveryCommand() {
        let help = CommandTree.root.helpText(for: ["linkcond"])
        for name in ["up", "down", "status", "exec", "apply", "clear", "show", "profiles", "monitor", "run", "doctor", "serve"] {
            XCTAssertTrue(help.contains("\n  \(name) "), "root help lacks \(name):\n\(help)")
        }
    }

    func testUsageMistakesExitWithTwo() {
        XCTAssertEqual(LinkcondCLI.run(["frob"]), 2)
        XCTAssertEqual(LinkcondCLI.run(["up", "--nmae", "x"]), 2)
        XCTAssertEqual(LinkcondCLI.run(["down", "--name", "a", "--all"]), 2)
        XCTAssertEqual(LinkcondCLI.run(["apply"]), 2)
        XCTAssertEqual(LinkcondCLI.run(["apply", "edge", "--backend", "tc"]), 2)
        XCTAssertEqual(LinkcondCLI.run([]), 2)
    }

    func testHelpExitsWithZero() {
        XCTAssertEqual(LinkcondCLI.run(["--help"]), 0)
        XCTAssertEqual(LinkcondCLI.run(["run", "--help"]), 0)
        XCTAssertEqual(LinkcondCLI.run(["help", "apply"]), 0)
    }

    func testAMalformedProfileIsRefusedWithExitOneBeforeAnythingIsTouched() throws {
        let directory = NSTemporaryDirectory() + "linkcond-cli-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/bad.json"
        try #"{"name": "bad", "downlink": {"dealy": "10ms"}}"#.write(toFile: path, atomically: false, encoding: .utf8)
        // A fresh sandbox name that does not exist: a refusal must not create it.
        let name = "clitest\(getpid() % 10000)"
        XCTAssertEqual(LinkcondCLI.run(["apply", path, "--name", name]), 1)
        XCTAssertFalse(FileManager.default.fileExists(atPath: "/run/netns/lc-\(name)-client"))
    }
}

import JSONDocument
import XCTest

@testable import LinkcondCLI

/// A command tree shaped like linkcond's own.
private let spec: CommandSpec = {
    let name = OptionSpec.value("name", short: "n", help: "Sandbox name.", defaultDescription: "default")
    return CommandSpec(
        "linkcond",
        abstract: "A network-condition lab for Linux.",
        discussion: """
            Builds a sandbox of network namespaces, puts emulated network conditions on its links
            and records how software on the link reacts.
            """,
        options: [.flag("version", help: "Show the version and exit.")],
        subcommands: [
            CommandSpec(
                "up", abstract: "Create the sandbox.",
                options: [name, .flag("cellular", help: "Add a cellular interface (ww0) beside wifi.")]),
            CommandSpec(
                "down", abstract: "Remove the sandbox and everything linkcond made for it.",
                options: [name, .flag("all", help: "Remove every sandbox.")],
                mutuallyExclusive: [["name", "all"]]),
            CommandSpec(
                "status", abstract: "Show the sandboxes and the conditions on their links.",
                options: [.flag("json", short: "j", help: "Print JSON instead of text.")]),
            CommandSpec(
                "exec", abstract: "Run a command in the client namespace, as the device.",
                options: [name],
                passthrough: PositionalSpec("command", help: "The command to run and its arguments."),
                examples: ["linkcond exec -- curl -s http://server.linkcond.test/"]),
            CommandSpec(
                "apply", abstract: "Put a network profile on the sandbox's links.",
                discussion: """
                    The sandbox is created on first use. Switching profiles replaces the qdiscs in place,
                    so there is never a moment without conditions.
                    """,
                options: [
                    name,
                    .value(
                        "backend", help: "How the conditions are made.", defaultDescription: "auto",
                        allowedValues: ["auto", "netem", "userspace"]),
                    .value(
                        "set", valueName: "key=value", help: "Override one value of the profile.",
                        repeatable: true),
                ],
                positionals: [PositionalSpec("profile", help: "A catalog profile name or a profile file.")],
                examples: [
                    "linkcond apply edge",
                    "linkcond apply profiles/lossy.json --backend userspace",
                ]),
        ],
        examples: ["linkcond apply 3g", "linkcond exec -- curl http://server.linkcond.test/", "linkcond down"])
}()

final class ArgumentParserTests: XCTestCase {
    private func parse(_ arguments: String...) throws -> ParsedCommand {
        try spec.parse(arguments)
    }

    /// The error that parsing `arguments` throws; fails the test when parsing succeeds.
    private func usageError(_ arguments: String..., file: StaticString = #filePath, line: UInt = #line)
        -> UsageError?
    {
        do {
            let parsed = try spec.parse(arguments)
            XCTFail("expected a usage error, got \(parsed)", file: file, line: line)
            return nil
        } catch {
            return error
        }
    }

    private func assertError(
        _ arguments: String..., is expected: String, path: [String], file: StaticString = #filePath,
        line: UInt = #line
    ) {
        do {
            let parsed = try spec.parse(arguments)
            XCTFail("expected a usage error, got \(parsed)", file: file, line: line)
        } catch {
            XCTAssertEqual(error.description, expected, file: file, line: line)
            XCTAssertEqual(error.commandPath, path, file: file, line: line)
        }
    }

    func testTheTreeIsSound() {
        XCTAssertEqual(spec.definitionProblems, [])
    }

    func testDefinitionProblemsAreFound() {
        let broken = CommandSpec(
            "x", abstract: "",
            options: [
                .flag("help", help: ""), .value("a", short: "h", help: ""), .flag("b", help: ""),
                .flag("b", help: ""), OptionSpec("c", help: "", allowedValues: ["1"]),
            ],
            positionals: [
                PositionalSpec("rest", help: "", isVariadic: true),
                PositionalSpec("later", help: "", isRequired: false), PositionalSpec("last", help: ""),
            ],
            mutuallyExclusive: [["a", "zz"]])
        XCTAssertEqual(
            broken.definitionProblems,
            [
                "'x': option '--help' is declared twice or is reserved",
                "'x': short option '-h' is declared twice or is reserved",
                "'x': option '--b' is declared twice or is reserved",
                "'x': flag '--c' lists allowed values [\"1\"]",
                "'x': exclusive group names unknown option '--zz'",
                "'x': variadic positional <rest> is not the last",
                "'x': required <last> follows an optional positional",
            ])
    }

    // MARK: - Syntax forms

    func testSubcommandWithOptionAndSeparateValue() throws {
        let parsed = try parse("up", "--name", "lab", "--cellular")
        XCTAssertEqual(parsed.commandPath, ["linkcond", "up"])
        XCTAssertEqual(parsed.subcommandPath, ["up"])
        XCTAssertEqual(parsed.value("name"), "lab")
        XCTAssertTrue(parsed.flag("cellular"))
        XCTAssertFalse(parsed.helpRequested)
        XCTAssertEqual(parsed.passthrough, [])
    }

    func testAbsentOptionsAreNilAndFalse() throws {
        let parsed = try parse("up")
        XCTAssertNil(parsed.value("name"))
        XCTAssertEqual(parsed.values("name"), [])
        XCTAssertFalse(parsed.flag("cellular"))
        XCTAssertFalse(parsed.flag("version"))
    }

    func testOptionWithEqualsSign() throws {
        XCTAssertEqual(try parse("up", "--name=lab").value("name"), "lab")
        XCTAssertEqual(try parse("up", "--name=a=b").value("name"), "a=b")
        XCTAssertEqual(try parse("up", "--name=").value("name"), "")
    }

    func testShortOption() throws {
        XCTAssertEqual(try parse("up", "-n", "lab").value("name"), "lab")
        XCTAssertTrue(try parse("status", "-j").flag("json"))
    }

    func testValuesThatLookLikeOptions() throws {
        XCTAssertEqual(try parse("up", "--name=-odd").value("name"), "-odd")
        XCTAssertEqual(try parse("up", "--name", "-").value("name"), "-")
        XCTAssertEqual(try parse("up", "--name", "-5").value("name"), "-5")
    }

    func testPositionalAndOptionsInAnyOrder() throws {
        for arguments in [["apply", "edge", "--backend", "netem"], ["apply", "--backend", "netem", "edge"]] {
            let parsed = try spec.parse(arguments)
            XCTAssertEqual(parsed.commandPath, ["linkcond", "apply"])
            XCTAssertEqual(parsed.positional("profile"), "edge")
            XCTAssertEqual(parsed.positionals("profile"), ["edge"])
            XCTAssertEqual(parsed.value("backend"), "netem")
        }
    }

    func testRootOptionBeforeSubcommand() throws {
        let parsed = try parse("--version")
        XCTAssertEqual(parsed.commandPath, ["linkcond"])
        XCTAssertEqual(parsed.subcommandPath, [])
        XCTAssertTrue(parsed.flag("version"))
        XCTAssertTrue(try parse("--version", "status").flag("version"))
    }

    func testRepeatableOptionKeepsEveryValue() throws {
        let parsed = try parse("apply", "3g", "--set", "delay=100ms", "--set=loss=1%")
        XCTAssertEqual(parsed.values("set"), ["delay=100ms", "loss=1%"])
        XCTAssertEqual(parsed.value("set"), "loss=1%")
    }

    func testPassthroughKeepsEverythingAfterDoubleDashVerbatim() throws {
        let parsed = try parse("exec", "--name", "lab", "--", "curl", "--json", "-h", "--help", "--", "x")
        XCTAssertEqual(parsed.commandPath, ["linkcond", "exec"])
        XCTAssertEqual(parsed.value("name"), "lab")
        XCTAssertEqual(parsed.passthrough, ["curl", "--json", "-h", "--help", "--", "x"])
        XCTAssertFalse(parsed.helpRequested)
    }

    func testDoubleDashEndsOptionsOfOtherCommands() throws {
        let parsed = try parse("apply", "--", "--odd.json")
        XCTAssertEqual(parsed.positional("profile"), "--odd.json")
        XCTAssertEqual(parsed.passthrough, [])
    }

    // MARK: - Mistakes

    func testUnknownOptionSuggestsTheNearestName() {
        assertError(
            "up", "--nmae", "x", is: "unknown option '--nmae' for 'linkcond up'; did you mean '--name'?",
            path: ["linkcond", "up"])
        assertError(
            "up", "--cellular=yes", "--nmae=x",
            is: "'--cellular' does not take a value; write '--cellular' alone", path: ["linkcond", "up"])
        assertError(
            "up", "-name", "x", is: "unknown option '-name' for 'linkcond up'; did you mean '--name'?",
            path: ["linkcond", "up"])
    }

    func testUnknownOptionWithoutSuggestion() {
        assertError(
            "status", "--frobnicate",
            is: "unknown option '--frobnicate' for 'linkcond status'; see 'linkcond status --help'",
            path: ["linkcond", "status"])
        assertError(
            "status", "-x", is: "unknown option '-x' for 'linkcond status'; see 'linkcond status --help'",
            path: ["linkcond", "status"])
    }

    func testOptionOfASubcommandGivenBeforeIt() {
        assertError(
            "--name", "lab", "up",
            is: "unknown option '--name' for 'linkcond'; it belongs to 'linkcond up': write it after 'up'",
            path: ["linkcond"])
    }

    func testMissingValue() {
        assertError(
            "up", "--name", is: "missing value for '--name'; expected '--name <name>'", path: ["linkcond", "up"])
        assertError(
            "up", "--name", "--cellular", is: "missing value for '--name'; expected '--name <name>'",
            path: ["linkcond", "up"])
        assertError("up", "-n", is: "missing value for '-n'; expected '-n <name>'", path: ["linkcond", "up"])
        assertError(
            "apply", "x", "--set", is: "missing value for '--set'; expected '--set <key=value>'",
            path: ["linkcond", "apply"])
    }

    func testOptionGivenTwice() {
        assertError(
            "up", "--name", "a", "-n", "b", is: "'--name' was given more than once; give it once",
            path: ["linkcond", "up"])
    }

    func testMissingRequiredPositional() {
        assertError(
            "apply", "--backend", "netem",
            is: "missing required argument <profile>; see 'linkcond apply --help'", path: ["linkcond", "apply"])
    }

    func testMissingPassthrough() {
        assertError("exec", is: "missing required argument <command>; put it after '--'", path: ["linkcond", "exec"])
        assertError(
            "exec", "--", is: "missing required argument <command>; put it after '--'", path: ["linkcond", "exec"])
    }

    func testUnexpectedArgument() {
        assertError(
            "status", "x", is: "unexpected argument 'x' for 'linkcond status'; see 'linkcond status --help'",
            path: ["linkcond", "status"])
        assertError(
            "apply", "edge", "3g",
            is: "unexpected argument '3g' for 'linkcond apply'; see 'linkcond apply --help'",
            path: ["linkcond", "apply"])
        assertError(
            "exec", "curl",
            is: "unexpected argument 'curl' for 'linkcond exec'; the command to run goes after '--': linkcond exec -- curl",
            path: ["linkcond", "exec"])
        // The command's own options before `--` are the usual slip: the hint spells the line that was meant.
        assertError(
            "exec", "--name", "lab", "curl", "-s", "-o", "/dev/null", "http://server.linkcond.test/",
            is: "unknown option '-s' for 'linkcond exec'; the command to run goes after '--': "
                + "linkcond exec --name lab -- curl -s -o /dev/null http://server.linkcond.test/",
            path: ["linkcond", "exec"])
    }

    func testUnknownSubcommand() {
        assertError("frob", is: "'linkcond frob' is not a command; see 'linkcond --help'", path: ["linkcond"])
        assertError(
            "stauts", "--json", is: "'linkcond stauts' is not a command; did you mean 'linkcond status'?",
            path: ["linkcond"])
    }

    func testInvalidChoice() {
        assertError(
            "apply", "edge", "--backend", "netm",
            is: "'--backend' must be one of: auto, netem, userspace; did you mean 'netem'?",
            path: ["linkcond", "apply"])
        assertError(
            "apply", "edge", "--backend=tc", is: "'--backend' must be one of: auto, netem, userspace; got 'tc'",
            path: ["linkcond", "apply"])
    }

    func testMutuallyExclusiveOptions() throws {
        assertError(
            "down", "--all", "--name", "lab",
            is: "'--name' cannot be used together with '--all'; give only one of them", path: ["linkcond", "down"])
        XCTAssertTrue(try parse("down", "--all").flag("all"))
        XCTAssertEqual(try parse("down", "--name", "lab").value("name"), "lab")
    }

    func testErrorParts() throws {
        let error = try XCTUnwrap(usageError("up", "--nmae"))
        XCTAssertEqual(error.message, "unknown option '--nmae' for 'linkcond up'")
        XCTAssertEqual(error.hint, "did you mean '--name'?")
        XCTAssertEqual(spec.usageLine(for: error.commandPath), "linkcond up [--name <name>] [--cellular]")
    }

    // MARK: - Help

    func testHelpFlagAnywhere() throws {
        for arguments in [["up", "--help"], ["up", "-h"], ["--help", "up"], ["up", "--nmae", "x", "-h"]] {
            let parsed = try spec.parse(arguments)
            XCTAssertTrue(parsed.helpRequested, "\(arguments)")
            XCTAssertEqual(parsed.commandPath, ["linkcond", "up"], "\(arguments)")
        }
        let root = try parse("--help")
        XCTAssertTrue(root.helpRequested)
        XCTAssertEqual(root.commandPath, ["linkcond"])
    }

    func testHelpFlagSkipsValidation() throws {
        let parsed = try parse("apply", "--backend", "tc", "--help")
        XCTAssertTrue(parsed.helpRequested)
        XCTAssertEqual(parsed.commandPath, ["linkcond", "apply"])
        XCTAssertNil(parsed.positional("profile"))
        XCTAssertEqual(try parse("frob", "--help").commandPath, ["linkcond"])
    }

    func testHelpAfterDoubleDashIsPassedThrough() throws {
        let parsed = try parse("exec", "--", "curl", "--help")
        XCTAssertFalse(parsed.helpRequested)
        XCTAssertEqual(parsed.passthrough, ["curl", "--help"])
    }

    func testHelpSubcommand() throws {
        let up = try parse("help", "up")
        XCTAssertTrue(up.helpRequested)
        XCTAssertEqual(up.commandPath, ["linkcond", "up"])
        let root = try parse("help")
        XCTAssertTrue(root.helpRequested)
        XCTAssertEqual(root.commandPath, ["linkcond"])
        assertError("help", "frob", is: "'linkcond frob' is not a command; see 'linkcond --help'", path: ["linkcond"])
        assertError(
            "help", "up", "x", is: "unexpected argument 'x' for 'linkcond up'; see 'linkcond up --help'",
            path: ["linkcond", "up"])
    }

    func testUsageLines() {
        XCTAssertEqual(spec.usageLine(for: ["linkcond"]), "linkcond [--version] <subcommand>")
        XCTAssertEqual(spec.usageLine(for: ["linkcond", "up"]), "linkcond up [--name <name>] [--cellular]")
        XCTAssertEqual(spec.usageLine(for: ["linkcond", "down"]), "linkcond down [--name <name> | --all]")
        XCTAssertEqual(spec.usageLine(for: ["linkcond", "status"]), "linkcond status [--json]")
        XCTAssertEqual(spec.usageLine(for: ["linkcond", "exec"]), "linkcond exec [--name <name>] -- <command> ...")
        XCTAssertEqual(
            spec.usageLine(for: ["linkcond", "apply"]),
            "linkcond apply <profile> [--name <name>] [--backend <backend>] [--set <key=value> ...]")
        // A path without the root's name is relative to it; unknown names are ignored.
        XCTAssertEqual(spec.usageLine(for: ["status"]), "linkcond status [--json]")
        XCTAssertEqual(spec.usageLine(for: ["linkcond", "status", "x"]), "linkcond status [--json]")
    }

    func testRootHelpSnapshot() {
        XCTAssertEqual(
            spec.helpText(for: ["linkcond"]),
            """
            USAGE: linkcond [--version] <subcommand>

            OVERVIEW: A network-condition lab for Linux.

            Builds a sandbox of network namespaces, puts emulated network conditions on its links
            and records how software on the link reacts.

            OPTIONS:
              --version   Show the version and exit.
              -h, --help  Show help for this command.

            SUBCOMMANDS:
              up          Create the sandbox.
              down        Remove the sandbox and everything linkcond made for it.
              status      Show the sandboxes and the conditions on their links.
              exec        Run a command in the client namespace, as the device.
              apply       Put a network profile on the sandbox's links.

            EXAMPLES:
              linkcond apply 3g
              linkcond exec -- curl http://server.linkcond.test/
              linkcond down

            See 'linkcond <subcommand> --help' for detailed help.
            """)
    }

    func testSubcommandHelpSnapshots() {
        XCTAssertEqual(
            spec.helpText(for: ["linkcond", "apply"]),
            """
            USAGE: linkcond apply <profile> [--name <name>] [--backend <backend>] [--set <key=value> ...]

            OVERVIEW: Put a network profile on the sandbox's links.

            The sandbox is created on first use. Switching profiles replaces the qdiscs in place,
            so there is never a moment without conditions.

            ARGUMENTS:
              <profile>            A catalog profile name or a profile file.

            OPTIONS:
              -n, --name <name>    Sandbox name. (default: default)
              --backend <backend>  How the conditions are made. (values: auto, netem, userspace; default: auto)
              --set <key=value>    Override one value of the profile. (repeatable)
              -h, --help           Show help for this command.

            EXAMPLES:
              linkcond apply edge
              linkcond apply profiles/lossy.json --backend userspace
            """)
        XCTAssertEqual(
            spec.helpText(for: ["linkcond", "exec"]),
            """
            USAGE: linkcond exec [--name <name>] -- <command> ...

            OVERVIEW: Run a command in the client namespace, as the device.

            ARGUMENTS:
              <command>          The command to run and its arguments.

            OPTIONS:
              -n, --name <name>  Sandbox name. (default: default)
              -h, --help         Show help for this command.

            EXAMPLES:
              linkcond exec -- curl -s http://server.linkcond.test/
            """)
        XCTAssertEqual(
            spec.helpText(for: ["linkcond", "down"]),
            """
            USAGE: linkcond down [--name <name> | --all]

            OVERVIEW: Remove the sandbox and everything linkcond made for it.

            OPTIONS:
              -n, --name <name>  Sandbox name. (default: default)
              --all              Remove every sandbox.
              -h, --help         Show help for this command.
            """)
    }

    func testLongUsageAndHelpAreWrapped() {
        let wide = CommandSpec(
            "tool", abstract: "",
            options: [
                .value("first-long-option", valueName: "value", help: "Short help."),
                .value("second-long-option", valueName: "value", help: "Short help."),
                .value("a-label-longer-than-the-column", valueName: "value", help: "Help on its own line."),
                .flag(
                    "wordy", short: "w",
                    help: """
                        A help text that goes on and on, well past the hundredth column, so it must be \
                        wrapped onto a second line.
                        """),
            ])
        XCTAssertEqual(
            wide.helpText(for: ["tool"]),
            """
            USAGE: tool [--first-long-option <value>] [--second-long-option <value>]
                        [--a-label-longer-than-the-column <value>] [--wordy]

            OPTIONS:
              --first-long-option <value>
                                          Short help.
              --second-long-option <value>
                                          Short help.
              --a-label-longer-than-the-column <value>
                                          Help on its own line.
              -w, --wordy                 A help text that goes on and on, well past the hundredth column, so it
                                          must be wrapped onto a second line.
              -h, --help                  Show help for this command.
            """)
    }

    // MARK: - Edit distance

    /// The parser's suggestions come from JSONDocument's `Suggestions` (one edit-distance for all of linkcond).
    func testSuggestions() {
        XCTAssertEqual(Suggestions.editDistance("nmae", "name"), 1)
        XCTAssertEqual(Suggestions.closest(to: "stauts", in: ["up", "down", "status"]), "status")
        XCTAssertEqual(Suggestions.closest(to: "frob", in: ["up", "down", "status"]), nil)
        XCTAssertEqual(Suggestions.closest(to: "js", in: ["json"]), nil)
    }
}
